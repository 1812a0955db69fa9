"""Generate a VSperf ``--conf-file`` from defaults, a catalog scenario and a host inventory."""
