"""VSperf's default pod ``Papi`` (``POD = 'Papi'`` in conf/12_k8s.conf), as it behaves on a lab host.

The real one calls ``kubernetes.config.load_kube_config(K8S_CONFIG_FILEPATH)`` when it is made; on a
host without Kubernetes that raises the exception below, and VSperf fails the test.
"""

from pods.pod.pod import IPod


class ConfigException(Exception):  # noqa: N818 kubernetes' name
    """``kubernetes.config.config_exception.ConfigException``."""


class Papi(IPod):
    """Class for controlling the pod through PAPI."""

    def __init__(self):
        super().__init__()
        raise ConfigException("Invalid kube-config file. No configuration found.")
