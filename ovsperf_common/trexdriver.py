"""Drive a TRex stateless server with its own Python client, in a child process (``python3 -m``).

TRex's client (PyPI ``lbr-trex-client``, or the ``trex_stl_lib``/``trex`` directory of a server's
installation) replaces ``yaml``, ``zmq`` and ``scapy`` in ``sys.modules`` with the copies it
bundles when it is imported (``trex/__init__.py``, ``__import_ext_libs``). So it never runs in an
``ovsperf-lab`` or ``ovsperf-remote`` process: :mod:`ovsperf_common.trexclient` starts this
module as a child and speaks one JSON object per line with it over stdin/stdout.

Requests (``{"cmd": ...}``) and replies (``{"ok": true, ...}`` or ``{"ok": false, "error": KIND,
"message": TEXT}``, ``KIND`` one of :data:`ERROR_KINDS`):

- ``probe`` (server, sync_port, async_port, timeout_s, client_dir, majors: the server major
  versions accepted, default [:data:`SUPPORTED_MAJOR`]): the server's version
  (``get_version``) and ports (``get_system_info``, ``get_port_status``), nothing acquired;
- ``connect`` (the same, plus ports, force_acquire): connect, check the version, acquire the two
  ports (refused when another user holds one, unless ``force_acquire``); replies the probe's data;
- ``trial`` (frames: [[size incl. FCS [B], weight], ...], rate_pps per direction, duration_s,
  drain_s, warmup_s, bidirectional, flows, latency, latency_pps): one stream per frame size and
  direction, continuous at its share of ``rate_pps``, flows through field-engine variables, and
  with ``latency`` one latency stream (flow stats, ``STLFlowLatencyStats``) per direction inside
  the same rate; replies per-port ``opackets``/``ipackets``/``oerrors``/``ierrors`` and per
  direction TRex's latency record (µs, its histogram and encoded HdrHistogram as TRex sends them);
- ``quit``: stop traffic, release the ports, disconnect, exit.

Every RPC waits at most ``timeout_s`` (the client's ``sync_timeout``); the parent bounds every
reply as well and kills this process when one is late. Sources: trex-core
``doc/trex_rpc_server_spec.asciidoc``, ``trex/stl/trex_stl_client.py`` (``STLClient``).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import time
import traceback
from typing import Any

from ovsperf_common.errors import OvsperfError

ERROR_KINDS = ("connection", "version", "busy", "ports", "trial", "client", "request")
"""What a failed reply's ``error`` names: the server did not answer or went away; its version is
not one this client speaks; a port is held by another user; a port is missing or down; the trial
failed; the client library is missing; the request was malformed."""

SUPPORTED_MAJOR = 3
"""TRex server major version this driver speaks (``v3.xx``: STL API 5)."""

UDP_SOURCE_PORT_BASE = 1024
"""First UDP source port of the flows [1]."""

MAX_SOURCE_PORT_FLOWS = 64_000
"""Most flows told apart by the UDP source port alone; above, (IPv4 source, UDP destination) tuples."""


class DriverError(OvsperfError):
    """A request failed; ``kind`` is one of :data:`ERROR_KINDS`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _load_api(client_dir: str | None) -> Any:
    """Import TRex's STL API: from ``client_dir`` (a server installation) or ``lbr_trex_client``.

    :raises DriverError: ``client`` when neither can be imported.
    """
    try:
        if client_dir:
            path = client_dir.rstrip("/")
            if os.path.basename(path) in ("trex_stl_lib", "trex"):
                path = os.path.dirname(path)
            if not os.path.isdir(os.path.join(path, "trex")):
                raise DriverError(
                    "client",
                    f"'{client_dir}' holds no TRex client ('trex/' beside 'trex_stl_lib/'; in a TRex "
                    "installation: automation/trex_control_plane/interactive).",
                )
            sys.path.insert(0, path)
        else:
            importlib.import_module("lbr_trex_client")
        return importlib.import_module("trex.stl.api")
    except ImportError as err:
        raise DriverError("client", f"the TRex client cannot be imported: {err}") from err


def _client_package(client_dir: str | None) -> str:
    """Return which client runs: ``"lbr-trex-client 3.4.0"`` or the server installation's directory."""
    if client_dir:
        return f"the TRex client in '{client_dir}'"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"lbr-trex-client {version('lbr-trex-client')}"
    except PackageNotFoundError:
        return "lbr-trex-client (version unknown)"


class Session:
    """One connection to a TRex server, driven by the requests of :func:`main`."""

    def __init__(self) -> None:
        self.api: Any = None
        self.client: Any = None
        self.ports: list[int] = []
        self.acquired = False
        self.server = ""
        self.package = ""

    # -- connection --------------------------------------------------------------------------

    def _open(self, req: dict[str, Any]) -> dict[str, Any]:
        """Connect to the server ``req`` names, check its version; return version and ports."""
        self.api = _load_api(req.get("client_dir"))
        self.package = _client_package(req.get("client_dir"))
        host, sync_port, async_port = str(req["server"]), int(req["sync_port"]), int(req["async_port"])
        timeout_s = float(req["timeout_s"])
        self.server = f"{host}:{sync_port}"
        client = self.api.STLClient(
            server=host,
            sync_port=sync_port,
            async_port=async_port,
            verbose_level="none",
            sync_timeout=timeout_s,
            async_timeout=timeout_s,
        )
        self.client = client
        ours = self._ours()
        try:
            probe = client.conn.probe_server()
        except Exception as err:
            raise DriverError("connection", f"TRex server at {self.server} did not answer: {err}") from err
        if not probe:
            raise DriverError(
                "connection", f"TRex server at {self.server} did not answer 'get_version': {probe.err()}"
            )
        version = str(probe.data().get("version", "unknown"))
        match = re.match(r"v?(\d+)\.", version)
        majors = [int(m) for m in req.get("majors") or [SUPPORTED_MAJOR]]
        if match is None or int(match.group(1)) not in majors:
            accepted = " or ".join(f"v{m}.x" for m in majors)
            raise DriverError(
                "version",
                f"TRex server at {self.server} runs version '{version}'; this client ({ours}) speaks "
                f"TRex {accepted} only.",
            )
        try:
            client.connect()
        except self.api.TRexError as err:
            text = str(err).strip().replace("\n", " ")
            if re.search(r"version|api", text, re.IGNORECASE):
                raise DriverError(
                    "version",
                    f"TRex server at {self.server} (version '{version}') refused this client's API "
                    f"({ours}): {text}",
                ) from err
            raise DriverError("connection", f"TRex server at {self.server}: {text}") from err
        info = client.get_server_system_info()
        ports = []
        for port in client.get_port_info():
            ports.append(
                {
                    "index": int(port["index"]),
                    "mac": str(port.get("src_mac") or port.get("hw_mac") or ""),
                    "speed_mbps": int(float(port.get("speed", 0)) * 1000) or None,
                    "link_up": str(port.get("link", "")).upper() == "UP",
                    "owner": str(client.ports[int(port["index"])].get_owner() or ""),
                    "driver": str(port.get("driver", "")),
                    "pci_addr": str(port.get("pci_addr", "")),
                    "description": str(port.get("description", "")),
                }
            )
        return {
            "server_version": version,
            "build_date": str(probe.data().get("build_date", "")),
            "client": ours,
            "hostname": str(info.get("hostname", "")),
            "ports": ports,
        }

    def _ours(self) -> str:
        """Return the client and the API version it asks for: ``"lbr-trex-client 3.4.0, STL API 5.1"``."""
        ver = self.client.ctx.api_ver
        return f"{self.package}, STL API {ver['major']}.{ver['minor']}"

    def probe(self, req: dict[str, Any]) -> dict[str, Any]:
        """Return the server's version and ports; acquire nothing."""
        try:
            return self._open(req)
        finally:
            self.close()

    def connect(self, req: dict[str, Any]) -> dict[str, Any]:
        """Connect, check the version and acquire the two ports ``req['ports']``.

        :raises DriverError: ``ports`` for a port the server lacks; ``busy`` for a port another
            user holds (unless ``force_acquire``).
        """
        found = self._open(req)
        self.ports = [int(p) for p in req["ports"]]
        by_index = {p["index"]: p for p in found["ports"]}
        missing = [p for p in self.ports if p not in by_index]
        if missing:
            raise DriverError(
                "ports",
                f"TRex server at {self.server} has no port {missing[0]} (it has {sorted(by_index)}).",
            )
        me = self.client.ctx.username
        held = [(p, by_index[p]["owner"]) for p in self.ports if by_index[p]["owner"] not in ("", me)]
        if held and not req.get("force_acquire"):
            port, owner = held[0]
            raise DriverError(
                "busy",
                f"TRex port {port} on {self.server} is acquired by user '{owner}'; it was left alone "
                "(give '--trex-force-acquire' to take it over, which stops their traffic).",
            )
        try:
            self.client.acquire(ports=self.ports, force=bool(req.get("force_acquire")))
        except self.api.TRexError as err:
            raise DriverError(
                "busy", f"TRex server at {self.server} refused to hand over ports {self.ports}: {err}"
            ) from err
        self.acquired = True
        self.client.stop(ports=self.ports)
        self.client.remove_all_streams(ports=self.ports)
        return found

    def close(self) -> None:
        """Stop traffic, release the ports and disconnect; never raises."""
        client, self.client = self.client, None
        if client is None:
            return
        try:
            client.disconnect(stop_traffic=self.acquired, release_ports=self.acquired)
        except Exception:  # noqa: BLE001 - a server already gone leaves nothing to release
            pass
        self.acquired = False

    # -- trials ------------------------------------------------------------------------------

    def _streams(self, req: dict[str, Any], direction: int, rate_pps: float) -> tuple[list[Any], int | None]:
        """Return the streams of ``direction`` (0: port 0 → 1) and its latency pg_id (or ``None``)."""
        api = self.api
        frames = [(int(size), float(weight)) for size, weight in req["frames"]]
        total_weight = sum(w for _, w in frames)
        flows = int(req["flows"])
        latency_pps = min(float(req["latency_pps"]), rate_pps) if req["latency"] else 0.0
        streams = []
        pg_id = None
        for number, (size, weight) in enumerate(frames):
            share = (rate_pps - latency_pps) * weight / total_weight
            if share > 0:
                streams.append(
                    api.STLStream(
                        packet=self._packet(size, flows, direction),
                        mode=api.STLTXCont(pps=share),
                        name=f"d{direction}s{number}",
                    )
                )
        if latency_pps > 0:
            pg_id = 100 + direction
            size = max(frames, key=lambda f: f[1])[0]
            streams.append(
                api.STLStream(
                    packet=self._packet(size, 1, direction),
                    mode=api.STLTXCont(pps=latency_pps),
                    flow_stats=api.STLFlowLatencyStats(pg_id=pg_id),
                    name=f"d{direction}lat",
                )
            )
        return streams, pg_id

    def _packet(self, frame_size_bytes: int, flows: int, direction: int) -> Any:
        """Return the UDP/IPv4 packet of ``frame_size_bytes`` (incl. FCS) with ``flows`` flows."""
        api = self.api
        src, dst = (f"16.0.{direction}.1", f"48.0.{direction}.1")
        base = (
            api.Ether() / api.IP(src=src, dst=dst) / api.UDP(sport=UDP_SOURCE_PORT_BASE, dport=4791, chksum=0)
        )
        pad = max(0, frame_size_bytes - 4 - len(base))
        pkt = base / (b"\x00" * pad)
        if flows <= 1:
            return api.STLPktBuilder(pkt=pkt)
        if flows <= MAX_SOURCE_PORT_FLOWS:
            program = [
                api.STLVmFlowVar(
                    name="sport",
                    min_value=UDP_SOURCE_PORT_BASE,
                    max_value=UDP_SOURCE_PORT_BASE + flows - 1,
                    size=2,
                    op="inc",
                ),
                api.STLVmWrFlowVar(fv_name="sport", pkt_offset="UDP.sport"),
            ]
        else:
            ports = 64_000
            addresses = -(-flows // ports)
            program = [
                api.STLVmTupleGen(
                    ip_min=src,
                    ip_max=_add_ipv4(src, addresses - 1),
                    port_min=1024,
                    port_max=1024 + ports - 1,
                    limit_flows=flows,
                    name="tuple",
                ),
                api.STLVmWrFlowVar(fv_name="tuple.ip", pkt_offset="IP.src"),
                api.STLVmWrFlowVar(fv_name="tuple.port", pkt_offset="UDP.dport"),
            ]
        program.append(api.STLVmFixIpv4(offset="IP"))
        return api.STLPktBuilder(pkt=pkt, vm=api.STLScVmRaw(program))

    def trial(self, req: dict[str, Any]) -> dict[str, Any]:
        """Run one trial (warm-up, counted traffic, drain); return per-port and latency counters."""
        client, ports = self.client, self.ports
        directions = [(ports[0], ports[1])] + ([(ports[1], ports[0])] if req["bidirectional"] else [])
        rate = float(req["rate_pps"])
        pg_ids = self._load(req, directions, rate)
        sending = [tx for tx, _ in directions]
        warmup_tx = 0
        if float(req["warmup_s"]) > 0:
            client.clear_stats(ports=ports)
            self._send(sending, float(req["warmup_s"]), float(req["drain_s"]), float(req["timeout_s"]))
            stats = client.get_stats(ports=ports)
            warmup_tx = sum(int(stats[p]["opackets"]) for p in sending)
            if req["latency"]:  # streams added anew: TRex restarts their latency records
                pg_ids = self._load(req, directions, rate)
        client.clear_stats(ports=ports)
        tx_s = self._send(sending, float(req["duration_s"]), float(req["drain_s"]), float(req["timeout_s"]))
        stats = client.get_stats(ports=ports)
        latency: dict[int, Any] = {}
        wanted = [p for p in pg_ids if p is not None]
        if wanted:
            latency = client.get_pgid_stats(wanted).get("latency", {})
        out = []
        for (tx, rx), pg_id in zip(directions, pg_ids):
            record = latency.get(pg_id) if pg_id is not None else None
            out.append(
                {
                    "tx_port": tx,
                    "rx_port": rx,
                    "opackets": int(stats[tx]["opackets"]),
                    "ipackets": int(stats[rx]["ipackets"]),
                    "oerrors": int(stats[tx].get("oerrors", 0)),
                    "ierrors": int(stats[rx].get("ierrors", 0)),
                    "obytes": int(stats[tx].get("obytes", 0)),
                    "latency": _latency_record(record),
                }
            )
        return {"directions": out, "tx_duration_s": tx_s, "warmup_tx_packets": warmup_tx}

    def _load(self, req: dict[str, Any], directions: list[tuple[int, int]], rate: float) -> list[int | None]:
        """Replace the ports' streams with this trial's; return each direction's latency pg_id."""
        client = self.client
        client.stop(ports=self.ports)
        client.remove_all_streams(ports=self.ports)
        pg_ids: list[int | None] = []
        for number, (tx, _) in enumerate(directions):
            streams, pg_id = self._streams(req, number, rate)
            client.add_streams(streams, ports=[tx])
            pg_ids.append(pg_id)
        return pg_ids

    def _send(self, ports: list[int], duration_s: float, drain_s: float, timeout_s: float) -> float:
        """Send for ``duration_s`` [s], wait for the end and ``drain_s`` [s] more; return the TX time [s].

        TRex times the transmission itself (``start``'s ``duration``; the server stops the
        streams), so the TX time is ``duration_s``. The drain: with latency streams the client
        keeps their RX filters for ``rx_delay_ms`` after TX ends; the rest of ``drain_s`` is slept.
        """
        client = self.client
        client.start(ports=ports, mult="1", duration=duration_s, force=True)
        client.wait_on_traffic(ports=ports, timeout=duration_s + timeout_s, rx_delay_ms=int(drain_s * 1000))
        ended = time.monotonic()
        time.sleep(max(0.0, drain_s - (time.monotonic() - ended)))
        return duration_s


def _add_ipv4(address: str, offset: int) -> str:
    """Return ``address`` + ``offset`` as a dotted IPv4 address."""
    value = sum(int(part) << (8 * (3 - i)) for i, part in enumerate(address.split("."))) + offset
    return ".".join(str((value >> (8 * (3 - i))) & 0xFF) for i in range(4))


def _latency_record(record: Any) -> dict[str, Any] | None:
    """Return TRex's latency record of one pg_id as plain JSON (µs), or ``None``."""
    if not record:
        return None
    lat = record.get("latency", {})
    errors = record.get("err_cntrs", {})

    def number(key: str) -> float | None:
        value = lat.get(key)
        return float(value) if isinstance(value, (int, float)) else None

    return {
        "total_min_us": number("total_min"),
        "total_max_us": number("total_max"),
        "average_us": number("average"),
        "histogram_us": {str(k): int(v) for k, v in (lat.get("histogram") or {}).items()},
        "hdrh": lat.get("hdrh") if isinstance(lat.get("hdrh"), str) else None,
        "dup": int(errors.get("dup", 0) or 0),
        "out_of_order": int(errors.get("out_of_order", 0) or 0),
        "dropped": int(errors.get("dropped", 0) or 0),
    }


def _reply(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main() -> int:
    """Serve requests from stdin until ``quit`` or end of input; return the exit code."""
    session = Session()
    # The client prints to stdout in places; the protocol owns the real stdout.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(protocol_fd, "w", buffering=1)
    try:
        handlers = {"probe": session.probe, "connect": session.connect, "trial": session.trial}
        for line in sys.stdin:
            try:
                req = json.loads(line)
                cmd = req.get("cmd") if isinstance(req, dict) else None
            except json.JSONDecodeError as err:
                req, cmd = {}, f"not JSON: {err}"
            if cmd == "quit":
                _reply({"ok": True})
                return 0
            if cmd not in handlers:
                _reply({"ok": False, "error": "request", "message": f"bad request {line[:200]!r} ({cmd})"})
                continue
            try:
                _reply({"ok": True, **handlers[cmd](req)})
            except DriverError as err:
                _reply({"ok": False, "error": err.kind, "message": str(err)})
            except Exception as err:  # noqa: BLE001 - the client's own errors, reported to the parent
                traceback.print_exc(file=sys.stderr)
                text = str(err).strip().replace("\n", " ")[:500]
                kind = "connection" if _connection_lost(session, text) else "trial"
                _reply({"ok": False, "error": kind, "message": f"{type(err).__name__}: {text}"})
        return 0
    finally:
        session.close()


def _connection_lost(session: Session, text: str) -> bool:
    """Return whether ``text`` (or the client's state) says the server went away."""
    client = session.client
    if client is not None:
        try:
            if not client.conn.is_connected() or client.conn.is_marked_for_disconnect():
                return True
        except Exception:  # noqa: BLE001
            return True
    return bool(re.search(r"Failed to (get server response|send message)|not connected|timeout", text, re.I))


if __name__ == "__main__":
    sys.exit(main())
