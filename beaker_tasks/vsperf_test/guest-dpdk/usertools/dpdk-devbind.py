#!/usr/bin/env python3
"""Run the guest's packaged ``dpdk-devbind.py`` with the arguments VSperf gives this one.

Part of the ovsperf "DPDK source tree" adapter that the vsperf_test task installs on the DUT and
VSperf copies into each guest as ``DPDK/`` (``PATHS['dpdk']['src']['path']``). VSperf 90ef48d4
(``vnfs/qemu/qemu.py``, ``_configure_testpmd`` and ``_bind_dpdk_driver``) runs
``./*tools/dpdk*bind.py --status``, ``-u PCI...`` and ``-b vfio-pci PCI...`` from that tree; the
guest's DPDK package has the tool on ``PATH``, so this script replaces itself with the first
``dpdk-devbind.py`` on ``PATH`` that is not this file. Runs on the guest's python3 (3.6 and later).
Exit code: the packaged tool's; 2 when there is none.
"""

import os
import sys

TOOL = "dpdk-devbind.py"
"""The packaged tool's name (dpdk-tools on RHEL, dpdk on Debian)."""


def packaged_tool(own_path):
    """Return the first executable ``TOOL`` on ``PATH`` that is not ``own_path``, else None."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(entry or os.curdir, TOOL)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if os.path.realpath(candidate) != own_path:
            return candidate
    return None


def main():
    """Exec the packaged tool with this script's arguments; return 2 when there is none."""
    tool = packaged_tool(os.path.realpath(__file__))
    if tool is None:
        sys.stderr.write(
            "dpdk-devbind.py (ovsperf adapter): no packaged '{}' on PATH '{}'; install the guest's "
            "DPDK tools (dpdk-tools on RHEL).\n".format(TOOL, os.environ.get("PATH", ""))
        )
        return 2
    os.execv(tool, [tool, *sys.argv[1:]])
    return 2  # not reached: execv replaces this process or raises


if __name__ == "__main__":
    sys.exit(main())
