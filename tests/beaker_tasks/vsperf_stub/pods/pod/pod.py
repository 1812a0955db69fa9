"""VSperf's ``pods/pod/pod.py`` (opnfv-10.0.0), reduced to what a pod class uses: ``IPod``."""

import logging


class IPod:
    """Interface for POD (VSperf's derives from ``tools.tasks.Process``, whose ``_logger`` it uses)."""

    _number_pods = 0
    _logger = logging.getLogger("tools.tasks")

    def __init__(self):
        self._number = IPod._number_pods
        self._logger.debug("Initializing %s. Pod with index %s", self._number + 1, self._number)
        IPod._number_pods = IPod._number_pods + 1
        self._log_prefix = f"pod_{self._number}_cmd : "

    def create(self):
        raise NotImplementedError()

    def terminate(self):
        raise NotImplementedError()

    @staticmethod
    def reset_pod_counter():
        IPod._number_pods = 0
