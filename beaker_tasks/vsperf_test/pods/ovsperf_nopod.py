"""VSperf pod ``OvsperfNoPod``: the pod of a lab without Kubernetes, which does nothing.

VSperf (opnfv-10.0.0, the pinned 90ef48d4) makes a pod for every ``p2p`` test
(``core/pod_controller.py``: one instance of the class named ``POD`` among the modules of
``POD_DIR``, ``core/loader/loader.py`` ``LoaderServant``; ``create()`` when the test's
deployment starts, ``terminate()`` when it ends). Its default ``POD = 'Papi'`` reads a
kube-config file when it is made and fails with "Invalid kube-config file" on a host without
Kubernetes, before any traffic. ``vsperf-config`` sets ``POD_DIR`` to this directory and
``POD = 'OvsperfNoPod'``: the test then runs OVS and MoonGen as it did before VSperf had pods.

The module's name is unique on purpose: VSperf imports each module of ``POD_DIR`` under its
bare file name and reuses any module of that name already imported.

Runs inside VSperf's Python (3.6 or later, standard library and VSperf only).
"""

from pods.pod.pod import IPod


class OvsperfNoPod(IPod):
    """A pod that is never deployed: ``create()`` and ``terminate()`` do nothing."""

    def __init__(self):
        """Count this pod as VSperf's ``IPod`` does (its index names it in VSperf's log)."""
        super().__init__()

    def create(self):
        """Deploy nothing: the test's vSwitch and traffic generator need no Kubernetes pod."""
        self._logger.debug("%sno pod to create (ovsperf: no Kubernetes on this host)", self._log_prefix)

    def terminate(self):
        """Remove nothing."""
        self._logger.debug("%sno pod to terminate", self._log_prefix)
