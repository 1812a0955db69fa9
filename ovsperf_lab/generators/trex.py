"""Drive a running TRex stateless server (v3.x) as the lab's traffic generator (the ``trex`` backend).

``ovsperf-lab run --generator trex --trex-server HOST`` (docs/lab.md "Traffic generators"): TRex
runs on its own host with its own NIC ports, so the DUT meets it on NIC ports too — the backend
declares :attr:`~ovsperf_lab.generators.api.AttachmentKind.WIRE` and needs two-host mode
(``--dut-port`` twice for OVS's ports; ``--tg-port`` twice names TRex's ports by the PCI
address TRex reports, checked against it). Which TRex ports: ``--trex-ports A,B`` (default
``0,1``; A is west, B east). The client is TRex's own Python client (PyPI ``lbr-trex-client``, or
the server installation's with ``--trex-client-dir``), run in a child process
(:mod:`ovsperf_common.trexclient`): :attr:`TrexGenerator.pid` is that child's, so the run tracks
and renices it like any generator process.

A session: connect, refuse a server whose major version is not 3 (both versions named), acquire
the two ports (refused, naming the owner, when another user holds one; taken over only with
``--trex-force-acquire``), then one trial per :meth:`TrexGenerator.run_trial` (streams, counts
and latency: :mod:`~ovsperf_lab.generators.trex_trial`); at the end release and disconnect.
Every exchange waits at most its deadline (the RPC timeout ``--trex-timeout`` inside, the trial's
traffic plus margins outside); a server that goes away mid-trial is a
:class:`~ovsperf_lab.errors.TrafficGeneratorError` naming TRex, never a row of zeros.

Tested against a protocol stand-in (``tests/ovsperf_lab/trex_standin.py``), not a real TRex.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from dataclasses import dataclass
from typing import Any, Self

from ovsperf_common.trexclient import REPLY_MARGIN_S, START_TIMEOUT_S, TrexError, TrexProcess, TrexServer
from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators.api import (
    AttachmentKind,
    GeneratorBackend,
    GeneratorFactory,
    GeneratorRequest,
    PortInfo,
    Readiness,
    TrafficGenerator,
)
from ovsperf_lab.generators.trex_trial import trial_request, trial_result
from ovsperf_lab.model import TrialResult, TrialSpec

log = logging.getLogger(__name__)

NAME = "trex"
"""What ``--generator`` takes."""

INSTALL_HINT = "pip install 'ovsperf[trex]'"
"""The command that installs the client (``lbr-trex-client``)."""

_PCI_RE = re.compile(r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\Z")


@dataclass(frozen=True)
class TrexOptions:
    """The ``--trex-*`` options of a run: the server and which of its ports.

    :raises LabError: naming the option, for ports that are not two different indexes.
    """

    server: TrexServer
    """Where TRex listens (``--trex-server``, ``--trex-async-port``, ``--trex-client-dir``,
    ``--trex-force-acquire``, ``--trex-timeout``)."""
    ports: tuple[int, int] = (0, 1)
    """TRex's port indexes, west then east (``--trex-ports``)."""

    def __post_init__(self) -> None:
        if len(self.ports) != 2 or self.ports[0] == self.ports[1] or any(p < 0 for p in self.ports):
            raise LabError(
                f"Option '--trex-ports' must name two different TRex ports, got {list(self.ports)!r}."
            )


def parse_ports(text: str) -> tuple[int, int]:
    """Parse ``--trex-ports A,B``.

    :raises LabError: naming the option.
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(p.isdigit() and len(p) < 4 for p in parts):
        raise LabError(f"Option '--trex-ports': {text[:40]!r} is not two TRex port indexes such as '0,1'.")
    return (int(parts[0]), int(parts[1]))


def _translate(err: TrexError, what: str) -> TrafficGeneratorError:
    """Return the lab's error for a TRex failure while ``what``."""
    return TrafficGeneratorError(f"Traffic generator 'trex' failed while {what}: {err}")


class TrexGenerator(TrafficGenerator):
    """A session with a TRex server on two of its ports; use as a context manager.

    :raises TrafficGeneratorError: when TRex does not answer, runs another major version, a port
        is missing or held by another user, or a port's PCI address differs from ``--tg-port``.
    """

    def __init__(self, options: TrexOptions, tg_devargs: tuple[str, str] | None = None) -> None:
        self.options = options
        server = options.server
        self.host = server.address
        self._process = TrexProcess(server)
        self.pid = self._process.pid
        self._index_of = {options.ports[0]: 0, options.ports[1]: 1}
        try:
            reply = self._process.call(
                {"cmd": "connect", "ports": list(options.ports), **server.request()},
                START_TIMEOUT_S + server.timeout_s,
                "connect and acquire its ports",
            )
        except TrexError as err:
            self.close()
            raise _translate(err, f"connecting to {server.address}") from err
        self.server_version = str(reply.get("server_version", "unknown"))
        self.client = str(reply.get("client", "unknown"))
        try:
            self._ports = self._port_infos(reply["ports"], tg_devargs)
        except BaseException:
            self.close()
            raise
        log.info(
            "TRex %s at %s (client %s): ports %s acquired.",
            self.server_version,
            server.address,
            self.client,
            list(options.ports),
        )

    def _port_infos(
        self, found: list[dict[str, Any]], tg_devargs: tuple[str, str] | None
    ) -> tuple[PortInfo, ...]:
        """Return the two ports as the lab sees them (index 0 west, 1 east); check ``--tg-port``.

        :raises TrafficGeneratorError: naming ``--tg-port`` when its PCI address is not the port's.
        """
        by_index = {int(p["index"]): p for p in found}
        infos = []
        for role, index in enumerate(self.options.ports):
            port = by_index[index]
            pci = str(port.get("pci_addr") or "")
            if tg_devargs is not None:
                wanted = tg_devargs[role].split(",")[0].lower()
                if _PCI_RE.match(wanted) and pci and not pci.lower().endswith(wanted):
                    raise TrafficGeneratorError(
                        f"Option '--tg-port' names {tg_devargs[role]!r} for generator port {role}, but TRex "
                        f"port {index} on {self.host} is {pci}; name TRex's ports in '--trex-ports' order."
                    )
            infos.append(
                PortInfo(
                    index=role,
                    mac=str(port.get("mac", "")),
                    link_speed_mbps=port.get("speed_mbps"),
                    link_up=bool(port.get("link_up")),
                    name=f"TRex port {index}" + (f" ({pci})" if pci else ""),
                )
            )
        return tuple(infos)

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the two ports (as TRex reported them when the session began)."""
        return self._ports

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Return the ports; a TRex port whose link is down is refused (TRex reports, it does not wait).

        :raises TrafficGeneratorError: naming the port whose link is down.
        """
        down = [p for p in self._ports if not p.link_up]
        if down:
            raise TrafficGeneratorError(f"{down[0].name} on {self.host} reports its link down.")
        return self._ports

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run one trial on TRex and return its counters, port 0 → 1 first.

        :raises TrafficGeneratorError: for a frame TRex cannot send, or when TRex fails, goes away
            or does not answer within the trial's time plus margins (the client is then killed).
        """
        server = self.options.server
        request = trial_request(spec, server.timeout_s)
        budget = spec.warmup_s + spec.duration_s + 2 * spec.drain_s + 6 * server.timeout_s + REPLY_MARGIN_S
        try:
            reply = self._process.call(request, budget, f"a {spec.duration_s:g} s trial")
        except TrexError as err:
            raise _translate(err, f"running a trial at {spec.rate_pps:.0f} pps on {server.address}") from err
        return trial_result(spec, reply, self._index_of)

    def close(self) -> None:
        """Stop traffic, release the ports, disconnect and end the client process; idempotent."""
        self._process.close()

    def __enter__(self) -> Self:
        return self


def factory(options: TrexOptions) -> GeneratorFactory:
    """Return the generator factory of a run with ``options`` (what ``run`` and ``compare`` start).

    :raises LabError: from the factory, when the testbed's ports are not NIC ports (two-host mode).
    """

    def start_trex(request: GeneratorRequest) -> TrafficGenerator:
        if not request.wire:
            raise LabError(
                "Traffic generator 'trex' drives NIC ports on the TRex host: run in two-host mode "
                "('--dut-port' twice for OVS's NICs cabled to TRex, '--tg-port' twice for TRex's ports)."
            )
        return TrexGenerator(options, request.devargs())

    return start_trex


def start(request: GeneratorRequest) -> TrafficGenerator:
    """Refuse: the backend needs its server (``--trex-server``); :func:`factory` starts it.

    :raises LabError: always, naming the option.
    """
    raise LabError("Traffic generator 'trex' needs '--trex-server HOST[:PORT]'.")


def readiness() -> Readiness:
    """Return whether TRex's client package is installed, without importing it.

    Found, not imported: importing it rewrites ``sys.modules``. The server is checked only when
    asked (``doctor --trex-server``).
    """
    if importlib.util.find_spec("lbr_trex_client") is None:
        return Readiness(False, "the Python package 'lbr-trex-client' is not installed", INSTALL_HINT)
    from importlib.metadata import version

    return Readiness(True, f"lbr-trex-client {version('lbr-trex-client')} (server: --trex-server)")


def server_line(server: TrexServer) -> tuple[bool, str]:
    """Return (reachable, one line): the server's version and ports, for ``doctor --trex-server``."""
    from ovsperf_common.trexclient import probe

    try:
        found = probe(server)
    except TrexError as err:
        return False, str(err)
    return True, describe(found)


def describe(found: dict[str, Any]) -> str:
    """Return ``'v3.04 (client …): port 0 0000:03:00.0 02:00:… 10000 Mb/s up, owner -; …'``."""
    ports = "; ".join(
        f"port {p['index']} {p.get('pci_addr') or '-'} {p.get('mac') or '-'} "
        f"{p.get('speed_mbps') or '?'} Mb/s {'up' if p.get('link_up') else 'DOWN'}, "
        f"owner {p.get('owner') or '-'}"
        for p in found.get("ports", [])
    )
    return f"{found.get('server_version')} (client {found.get('client')}): {ports or 'no ports'}"


BACKEND = GeneratorBackend(
    name=NAME,
    summary="a running TRex v3.x stateless server (--trex-server; NIC ports, two-host mode): paced, "
    "mixes, flows, latency in whole µs",
    label="TRex",
    attachment=AttachmentKind.WIRE,
    paced=True,
    start=start,
    readiness=readiness,
    wire=True,
)
"""The registry entry (:mod:`ovsperf_lab.generators.registry`)."""
