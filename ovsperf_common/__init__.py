"""Share the small pieces every ovsperf package needs: units, exit codes, logging, atomic I/O, deadlines.

Nothing here knows about Beaker, VSperf, OVS or DPDK; packages import this, never the reverse.
"""
