"""A virtual lab of two Debian 12 VMs (TG and DUT) under QEMU, for the Beaker tasks (docs/vlab.md)."""
