"""Run catalog scenarios on one machine: sandboxed OVS-DPDK, a DPDK traffic generator, RFC 2544 search.

Results are written in VSperf's results-directory format so ``reporting`` treats them exactly
like results from the Beaker lab.
"""
