"""Read interactive ``dpdk-testpmd``'s answers: pure text parsers, no process.

The answers are what DPDK 22.11's testpmd prints (``app/test-pmd/config.c``, ``testpmd.c``,
``cmdline.c``); the ``testpmd`` backend (:mod:`~ovsperf_lab.generators.testpmd`) feeds them in.
Every parser raises :class:`~ovsperf_lab.errors.TrafficGeneratorError` quoting (bounded, control
characters escaped: :func:`excerpt`) an answer it cannot read, never guesses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.api import PortInfo

EXCERPT_CHARS = 300
"""Most characters of an answer an error message quotes [1]."""

_PORT_INFO_RE = re.compile(r"Infos for port (\d+)")
_PORT_STATS_RE = re.compile(r"NIC statistics for port (\d+)")
_FWD_STATS_RE = re.compile(r"Forward statistics for port (\d+)")
_SPEED_RE = re.compile(r"(\d+(?:\.\d+)?) ([MG])bps")
_STARTED_RE = re.compile(r"^(\w+) packet forwarding - ports=\d+", re.MULTILINE)
_ERROR_LINE_RE = re.compile(
    r"^\s*(?:Bad arguments|Command not found|Ambiguous command|Invalid\b|Error\b|Fail|Cannot\b"
    r"|Not all ports were started|Packet forwarding (?:not|already) started|.*\bgive up\b).*$",
    re.MULTILINE | re.IGNORECASE,
)


@dataclass(frozen=True)
class PortStats:
    """One port's counters from ``show port stats`` [1]."""

    rx_packets: int
    """``RX-packets``."""
    tx_packets: int
    """``TX-packets``."""
    tx_bytes: int
    """``TX-bytes`` (frames without FCS) [B]."""


def excerpt(text: str) -> str:
    """Return ``text`` stripped, cut to :data:`EXCERPT_CHARS` and quoted with control characters escaped."""
    text = text.strip()
    cut = text[:EXCERPT_CHARS]
    return repr(cut) + (f" (+{len(text) - len(cut)} characters)" if len(text) > len(cut) else "")


def number(block: str, name: str, where: str) -> int:
    """Return the integer after ``name:`` in ``block``.

    :raises TrafficGeneratorError: when it is not there.
    """
    match = re.search(rf"{re.escape(name)}:\s*(\d+)", block)
    if match is None:
        raise TrafficGeneratorError(f"testpmd's answer to '{where}' has no '{name}': {excerpt(block)}.")
    return int(match.group(1))


def blocks(text: str, header: re.Pattern[str]) -> dict[int, str]:
    """Split ``text`` into port number → the text after that port's ``header`` line."""
    found = list(header.finditer(text))
    return {
        int(m.group(1)): text[m.end() : found[i + 1].start() if i + 1 < len(found) else len(text)]
        for i, m in enumerate(found)
    }


def error_lines(answer: str) -> list[str]:
    """Return the lines of ``answer`` that say a command failed, in order.

    testpmd answers a command it cannot parse with ``Bad arguments``, ``Command not found`` or
    ``Ambiguous command`` (DPDK's ``cmdline``), and a refused one with a line of its own
    (``Invalid port 3``, ``total packet length=0 < 42 - give up``, ``Not all ports were
    started``, ``Packet forwarding not started``); a successful answer has none of these.
    """
    return [m.group(0).strip() for m in _ERROR_LINE_RE.finditer(answer)]


def check_started(answer: str, mode: str) -> None:
    """Check the answer to ``start``: forwarding runs in ``mode`` (``'flowgen'``, ``'rxonly'``).

    Source: ``start_packet_forwarding``/``rxtx_config_display`` in ``app/test-pmd/testpmd.c``
    (``flowgen packet forwarding - ports=2 - …``).

    :raises TrafficGeneratorError: quoting the answer when it does not say so.
    """
    found = _STARTED_RE.search(answer)
    if found is None or found.group(1) != mode:
        raise TrafficGeneratorError(
            f"testpmd did not start {mode} forwarding; its answer to 'start': {excerpt(answer)}."
        )


def forward_refused(answer: str) -> dict[int, int]:
    """Return port → frames its TX queue refused (``TX-dropped``) from the answer to ``stop``.

    Source: ``fwd_stats_display`` in ``app/test-pmd/testpmd.c`` (one ``Forward statistics for
    port N`` block per port). Both ports 0 and 1 must be there: an answer without them (forwarding
    was not started, another wording) cannot show that the TX queues were at full load.

    :raises TrafficGeneratorError: quoting the answer when port 0's or port 1's block, or its
        ``TX-dropped``, is missing.
    """
    found = blocks(answer, _FWD_STATS_RE)
    if sorted(found) != [0, 1]:
        raise TrafficGeneratorError(
            f"testpmd's answer to 'stop' has the forward statistics of ports {sorted(found)}, not 0 and 1: "
            f"{excerpt(answer)}."
        )
    return {port: number(block, "TX-dropped", "stop") for port, block in found.items()}


def parse_port_stats(text: str) -> dict[int, PortStats]:
    """Return port → counters from the answer to ``show port stats all``.

    Source: ``nic_stats_display`` in DPDK's ``app/test-pmd/config.c``.

    :raises TrafficGeneratorError: when a port's block lacks a counter, or there is no port.
    """
    found = blocks(text, _PORT_STATS_RE)
    if not found:
        raise TrafficGeneratorError(f"testpmd's 'show port stats all' shows no port: {excerpt(text)}.")
    where = "show port stats all"
    return {
        port: PortStats(
            number(block, "RX-packets", where),
            number(block, "TX-packets", where),
            number(block, "TX-bytes", where),
        )
        for port, block in found.items()
    }


def parse_port_info(text: str, rx_descriptors: int, tx_descriptors: int) -> tuple[PortInfo, ...]:
    """Return the ports, index order, from the answer to ``show port info all``.

    ``Link speed`` is ``'10 Gbps'``, ``'Unknown'`` or ``'None'`` (``rte_eth_link_speed_to_str``);
    anything but a number is ``None``. The rings are the ones the backend configured.
    Source: ``port_infos_display`` in ``app/test-pmd/config.c``.

    :raises TrafficGeneratorError: when a port lacks its MAC address or link status, or there is no port.
    """
    found = blocks(text, _PORT_INFO_RE)
    if not found:
        raise TrafficGeneratorError(f"testpmd's 'show port info all' shows no port: {excerpt(text)}.")
    ports = []
    for index, block in sorted(found.items()):
        mac = re.search(r"MAC address:\s*([0-9A-Fa-f:]{17})", block)
        link = re.search(r"Link status:\s*(up|down)", block)
        if mac is None or link is None:
            raise TrafficGeneratorError(
                f"testpmd's 'show port info' of port {index} has no MAC address or link status."
            )
        speed_line = re.search(r"Link speed:\s*([^\n]*)", block)
        speed = _SPEED_RE.match(speed_line.group(1).strip()) if speed_line else None
        mbps = round(float(speed.group(1)) * (1000 if speed.group(2) == "G" else 1)) if speed else None
        ports.append(
            PortInfo(
                index=index,
                mac=mac.group(1).lower(),
                link_speed_mbps=mbps,
                link_up=link.group(1) == "up",
                rx_descriptors=rx_descriptors,
                tx_descriptors=tx_descriptors,
            )
        )
    return tuple(ports)
