"""Find new OVS/DPDK builds in Koji, build a yum repo of their RPMs and submit the Beaker jobs."""
