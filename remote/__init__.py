"""``ovsperf-remote``: the Beaker job's plan on pre-provisioned hosts over SSH (paramiko), without Beaker."""
