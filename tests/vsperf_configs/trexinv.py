"""A host inventory whose DUT drives TRex: the example inventory's hosts plus a TRex TG (tests only)."""

from __future__ import annotations

import textwrap
from pathlib import Path

TREX_DUT = "dut02.example.com"
"""The DUT whose peer's generator is ``trex``."""
TREX_TG = "trex01.example.com"
"""Its traffic generator, with the ``trex:`` record."""
TREX_NICS = ("0000:03:00.0", "0000:03:00.1")
"""The TG's test NICs (the fake lab machine's, tests/beaker_tasks/shims.py)."""
TREX_URL = "https://trex-tgn.cisco.com/trex/release/v3.04.tar.gz"
TREX_SHA256 = "a" * 64


def trex_inventory_text(
    *,
    url: str = TREX_URL,
    sha256: str = TREX_SHA256,
    install_dir: str = "/opt/trex",
    tg_ports: str = "[1, 0]",
    peer_ports: str = "[1, 0]",
    generator_cpus: str = '"2-6"',
    peer_address: str = "192.0.2.20",
) -> str:
    """Return the YAML of a two-host inventory: :data:`TREX_DUT` driving TRex on :data:`TREX_TG`.

    The ports are crossed (``[1, 0]``): TRex's port 0 is the TG's second NIC.
    """
    return textwrap.dedent(
        f"""\
        hosts:
          {TREX_DUT}:
            role: dut
            nics: ["0000:03:00.0", "0000:03:00.1"]
            numa_node: 0
            numa_nodes: 2
            cpus:
              ovs_lcore: "0"
              pmd: "2,4,6,8"
              guest: "10,12,14,16,18"
            guest_image: /var/lib/libvirt/images/ovsperf-guest.qcow2
            trafficgen:
              host: {TREX_TG}
              address: {peer_address}
              user: root
              generator: trex
              ports: {peer_ports}
          {TREX_TG}:
            role: trafficgen
            nics: ["{TREX_NICS[0]}", "{TREX_NICS[1]}"]
            numa_node: 1
            cpus:
              isolated: "2-7"
              generator: {generator_cpus}
            trex:
              url: {url}
              sha256: "{sha256}"
              install_dir: {install_dir}
              ports: {tg_ports}
        """
    )


def write_trex_inventory(path: Path, **fields: str) -> Path:
    """Write :func:`trex_inventory_text` to ``path`` and return it."""
    path.write_text(trex_inventory_text(**fields), encoding="utf-8")
    return path
