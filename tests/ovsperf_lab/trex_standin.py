"""A TRex stateless server stand-in for tests: the real client library talks to it.

No TRex server can run here (it needs DPDK NICs and its own build), so this speaks TRex's
protocol (trex-core ``doc/trex_rpc_server_spec.asciidoc``): JSON-RPC 2.0 over a ZMQ REP socket on
the sync port (requests zlib-compressed behind TRex's 8-byte header, ``utils/zipmsg.py``) and a
ZMQ PUB socket on the async port whose ``{}`` messages tell the client to fetch events
(``get_async_events``). It answers the calls ``STLClient`` makes (connect, acquire, add streams,
start, stats, latency flow stats) with counters that follow the offered load: a direction whose
rate is above ``capacity_pps`` loses the excess, plus ``loss_ratio`` of the rest.
Faults on demand: another owner on a port, another server version or API major, and a connection
that goes away mid-trial (``drop_after_start``).
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import zmq
from hdrh.histogram import HdrHistogram

ZIP_MAGIC = 0xABE85CEA


@dataclass
class StandinPort:
    """One port: its streams, counters and state."""

    index: int
    owner: str = ""
    handler: str = ""
    streams: dict[int, dict[str, Any]] = field(default_factory=dict)
    state: str = "IDLE"
    started_at: float = 0.0
    duration_s: float = 0.0
    mult: float = 1.0
    opackets: int = 0
    ipackets: int = 0
    obytes: int = 0
    ibytes: int = 0


class TrexStandin:
    """The stand-in server on 127.0.0.1 with free ports; ``start()``, then ``stop()``."""

    def __init__(
        self,
        *,
        capacity_pps: float = 1_000_000.0,
        loss_ratio: float = 0.0,
        version: str = "v3.04",
        api_major: int = 5,
        owners: dict[int, str] | None = None,
        latency_us: tuple[tuple[int, int], ...] = ((8, 900), (15, 90), (120, 10)),
        drop_after_start: bool = False,
    ) -> None:
        self.capacity_pps = capacity_pps
        self.loss_ratio = loss_ratio
        self.version = version
        self.api_major = api_major
        self.latency_us = latency_us
        self.drop_after_start = drop_after_start
        self.ports = {i: StandinPort(i) for i in range(2)}
        for index, owner in (owners or {}).items():
            self.ports[index].owner = owner
            self.ports[index].handler = "foreign"
        self.calls: list[str] = []
        self.trials: list[dict[str, Any]] = []
        self._ctx = zmq.Context()
        self._rep = self._ctx.socket(zmq.REP)
        self._pub = self._ctx.socket(zmq.PUB)
        self.sync_port = self._rep.bind_to_random_port("tcp://127.0.0.1")
        self.async_port = self._pub.bind_to_random_port("tcp://127.0.0.1")
        self._events: list[dict[str, Any]] = []
        self._latency_counts: dict[int, dict[int, int]] = {}
        self._ver_id: dict[int, int] = {}
        self._seq = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="trex-standin")
        self._handlers = 0
        self.dropped = False

    # -- life ----------------------------------------------------------------------------------

    def start(self) -> TrexStandin:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._ctx.destroy(linger=0)

    def __enter__(self) -> TrexStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._rep, zmq.POLLIN)
        last_pub = 0.0
        while not self._stop.is_set():
            if self.dropped:
                time.sleep(0.05)
                continue
            if dict(poller.poll(50)).get(self._rep):
                raw = self._rep.recv()
                if self.dropped:
                    continue  # never answered: the client's REQ times out
                reply = self._answer(raw)
                if reply is not None:
                    self._rep.send(reply)
            now = time.monotonic()
            self._tick(now)
            if now - last_pub > 0.5:
                self._pub.send(b"{}")
                last_pub = now

    # -- protocol ------------------------------------------------------------------------------

    def _answer(self, raw: bytes) -> bytes | None:
        zipped = len(raw) >= 8 and struct.unpack(">II", raw[:8])[0] == ZIP_MAGIC
        text = zlib.decompress(raw[8:]) if zipped else raw
        msg = json.loads(text)
        replies = [self._one(m) for m in msg] if isinstance(msg, list) else self._one(msg)
        if self.dropped:
            return None
        out = json.dumps(replies).encode()
        return struct.pack(">II", ZIP_MAGIC, len(out)) + zlib.compress(out) if zipped else out

    def _one(self, msg: dict[str, Any]) -> dict[str, Any]:
        method, params = msg["method"], msg.get("params") or {}
        self.calls.append(method)
        handler = getattr(self, f"rpc_{method}", None)
        if handler is None:
            return self._error(msg, -32601, f"Method not found: {method}")
        try:
            result = handler(params)
        except RpcFaultError as fault:
            return self._error(msg, fault.code, str(fault))
        return {"jsonrpc": "2.0", "id": msg["id"], "result": result}

    @staticmethod
    def _error(msg: dict[str, Any], code: int, text: str) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": msg["id"],
            "error": {"code": code, "message": text, "specific_err": text},
        }

    def _event(self, name: str, kind: int | str, data: dict[str, Any]) -> None:
        self._events.append({"name": name, "type": kind, "data": data, "seq": self._seq, "baseline": False})
        self._seq += 1

    def _port(self, params: dict[str, Any], *, owned: bool = True) -> StandinPort:
        port = self.ports.get(int(params["port_id"]))
        if port is None:
            raise RpcFaultError(-32000, f"invalid port id: {params['port_id']}")
        if owned and port.handler != params.get("handler"):
            raise RpcFaultError(-32000, "port is not owned by you or your current executing session")
        return port

    # -- traffic model -------------------------------------------------------------------------

    def _rate(self, port: StandinPort) -> float:
        return (
            float(sum(s["mode"]["rate"]["value"] for s in port.streams.values() if s["enabled"])) * port.mult
        )

    def _tick(self, now: float) -> None:
        for port in self.ports.values():
            if port.state == "TX" and now - port.started_at >= port.duration_s > 0:
                self._finish(port)

    def _finish(self, port: StandinPort) -> None:
        """Count the whole transmission at once, as the NICs would have by its end."""
        peer = self.ports[port.index ^ 1]
        rate = self._rate(port)
        sent = round(rate * port.duration_s)
        passed = min(rate, self.capacity_pps) / rate if rate else 1.0
        received = round(sent * passed * (1 - self.loss_ratio))
        size = self._frame_bytes(port)
        port.opackets += sent
        port.obytes += sent * size
        peer.ipackets += received
        peer.ibytes += received * size
        for stream in port.streams.values():
            flow = stream.get("flow_stats") or {}
            if stream["enabled"] and flow.get("enabled") and flow.get("rule_type") == "latency":
                frames = stream["mode"]["rate"]["value"] * port.mult * port.duration_s * passed
                counts = self._latency_counts.setdefault(int(flow["stream_id"]), {})
                weights = sum(w for _, w in self.latency_us)
                for value, weight in self.latency_us:
                    counts[value] = counts.get(value, 0) + round(frames * weight / weights)
        port.state = "STREAMS"
        self.trials.append({"port": port.index, "rate_pps": rate, "sent": sent, "received": received})
        self._event("trex-event", 14, {"port_id": port.index, "profile_id": "_"})  # EVENT_PROFILE_FINISHED_TX
        self._event("trex-event", 4, {"port_id": port.index})  # EVENT_PORT_JOB_DONE

    @staticmethod
    def _frame_bytes(port: StandinPort) -> int:
        for s in port.streams.values():
            return len(base64.b64decode(s["packet"]["binary"])) + 4
        return 64

    def _latency(self, pg_id: int) -> dict[str, Any]:
        """Return the latency record of ``pg_id``: every frame of its streams so far (cumulative)."""
        samples = sorted((v, c) for v, c in self._latency_counts.get(pg_id, {}).items() if c > 0)
        if not samples:
            lat = {"total_min": 0, "total_max": 0, "average": 0, "jit": 0, "last_max": 0, "histogram": {}}
            return {"lat": lat, "er": {"drp": 0, "ooo": 0, "dup": 0, "sth": 0, "stl": 0}}
        received = sum(count for _, count in samples)
        hist = HdrHistogram(1, 1_000_000, 3)
        coarse: dict[str, int] = {}
        for value, count in samples:
            hist.record_value(value, count)
            bucket = 10 ** (len(str(value)) - 1)
            key = value // bucket * bucket if value >= 10 else 0
            coarse[str(key)] = coarse.get(str(key), 0) + count
        values = [v for v, _ in samples]
        avg = sum(v * c for v, c in samples) / received
        return {
            "lat": {
                "total_min": min(values), "total_max": max(values), "average": avg, "jit": 1,
                "last_max": max(values), "histogram": coarse, "hdrh": hist.encode().decode(),
            },
            "er": {"drp": 0, "ooo": 0, "dup": 0, "sth": 0, "stl": 0},
        }  # fmt: skip

    # -- RPC methods ---------------------------------------------------------------------------

    def rpc_api_sync_v2(self, params: dict[str, Any]) -> dict[str, Any]:
        if int(params.get("major", -1)) != self.api_major:
            raise RpcFaultError(
                -32000,
                f"API version mismatch: server API '{params.get('name')}' is {self.api_major}.1, "
                f"client asks {params.get('major')}.{params.get('minor')}",
            )
        return {"api_h": "standinH"}

    def rpc_get_version(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "version": self.version,
            "build_date": "Nov 26 2026",
            "build_time": "20:00:00",
            "built_by": "standin",
            "mode": "STL",
        }

    def rpc_ping(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ts": time.time()}

    def rpc_get_system_info(self, params: dict[str, Any]) -> dict[str, Any]:
        ports = [
            {
                "description": "stand-in port", "driver": "net_standin", "numa": 0,
                "pci_addr": f"0000:00:0{i}.0",
                "hw_macaddr": f"02:00:00:00:00:0{i}", "src_macaddr": f"02:00:00:00:00:0{i}",
                "dst_macaddr": f"02:00:00:00:00:0{i ^ 1}", "is_virtual": True, "is_fc_supported": False,
                "is_led_supported": False, "is_link_supported": False, "is_prom_supported": True,
                "is_vxlan_supported": False, "is_ieee1588_supported": False, "index": i, "speed": 10,
                "supp_speeds": [10000], "stack": "legacy",
                "rx": {"caps": ["flow_stats", "latency", "rx_bytes"], "counters": 127},
            }
            for i in self.ports
        ]  # fmt: skip
        return {
            "core_type": "stand-in", "dp_core_count": 1, "dp_core_count_per_port": 1,
            "hostname": "trex-standin", "port_count": len(ports), "ports": ports, "uptime": "now",
            "is_multiqueue_mode": False, "advanced_per_stream_stats": False,
        }  # fmt: skip

    def rpc_get_supported_cmds(self, params: dict[str, Any]) -> list[str]:
        return sorted(name[4:] for name in dir(self) if name.startswith("rpc_"))

    def rpc_get_port_xstats_names(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"xstats_names": ["rx_good_packets", "tx_good_packets"]}

    def rpc_get_port_xstats_values(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params, owned=False)
        return {"xstats_values": [port.ipackets, port.opackets]}

    def rpc_get_port_status(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params, owned=False)
        return {
            "attr": {
                "fc": {"mode": 0}, "link": {"up": True}, "promiscuous": {"enabled": False},
                "multicast": {"enabled": False}, "speed": 10, "rx_filter_mode": "hw",
                "vxlan_fs": [], "layer_cfg": {"ether": {"src": f"02:00:00:00:00:0{port.index}",
                "dst": f"02:00:00:00:00:0{port.index ^ 1}", "state": "configured"},
                "ipv4": {"state": "none"}, "ipv6": {"enabled": False}}, "vlan": {"tags": []},
            },
            "max_stream_id": max(port.streams, default=0), "owner": port.owner, "speed": 10000,
            "state": port.state, "service": False, "service_filtered": False,
            "rx_info": {
                "queue": {"is_active": False, "count": 0, "size": 0}, "grat_arp": {"is_active": False},
            },
            "profile_count": 1,
            "state_profile": {"_": port.state},
        }  # fmt: skip

    def rpc_acquire(self, params: dict[str, Any]) -> str:
        port = self._port(params, owned=False)
        if port.owner and port.owner != params.get("user") and not params.get("force"):
            raise RpcFaultError(-32000, f"port is already owned by '{port.owner}'")
        self._handlers += 1
        port.owner, port.handler = str(params.get("user")), f"h{self._handlers}"
        return port.handler

    def rpc_release(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params)
        port.owner, port.handler = "", ""
        return {}

    def rpc_get_stream_list(self, params: dict[str, Any]) -> list[int]:
        return sorted(self._port(params, owned=False).streams)

    def rpc_get_all_streams(self, params: dict[str, Any]) -> dict[str, Any]:
        streams = {str(k): v for k, v in self._port(params, owned=False).streams.items()}
        return {"profiles": {"_": streams}, "streams": streams}

    def rpc_get_profile_list(self, params: dict[str, Any]) -> list[str]:
        return ["_"]

    def rpc_add_stream(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params)
        stream = params["stream"]
        port.streams[int(params["stream_id"])] = stream
        flow = stream.get("flow_stats") or {}
        if flow.get("enabled") and flow.get("rule_type") == "latency":  # a new stream: its stats restart
            pg_id = int(flow["stream_id"])
            self._latency_counts[pg_id] = {}
            self._ver_id[pg_id] = self._ver_id.get(pg_id, 0) + 1
        port.state = "STREAMS"
        return {}

    def rpc_remove_all_streams(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params)
        port.streams.clear()
        port.state = "IDLE"
        return {}

    def rpc_start_traffic(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params)
        mul = params["mul"]
        rate = sum(s["mode"]["rate"]["value"] for s in port.streams.values() if s["enabled"])
        port.mult = float(mul["value"]) / rate if mul["type"] == "pps" and rate else float(mul["value"])
        port.started_at, port.duration_s, port.state = time.monotonic(), float(params["duration"]), "TX"
        self._event("trex-event", 10, {"port_id": port.index, "profile_id": "_"})  # EVENT_PROFILE_STARTED
        if self.drop_after_start:
            self.dropped = True
        return {"multiplier": port.mult, "ts": time.time()}

    def rpc_stop_traffic(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params)
        if port.state == "TX":
            port.duration_s = max(time.monotonic() - port.started_at, 1e-6)
            self._finish(port)
        return {}

    def rpc_remove_rx_filters(self, params: dict[str, Any]) -> dict[str, Any]:
        self._port(params)
        return {}

    def rpc_get_port_stats(self, params: dict[str, Any]) -> dict[str, Any]:
        port = self._port(params, owned=False)
        return {
            "opackets": port.opackets, "ipackets": port.ipackets, "obytes": port.obytes,
            "ibytes": port.ibytes, "oerrors": 0, "ierrors": 0, "m_total_tx_bps": 0.0,
            "m_total_tx_pps": 0.0, "m_total_rx_bps": 0.0, "m_total_rx_pps": 0.0,
            "m_cpu_util": 0.0, "m_total_tx_bps_L1": 0.0, "m_total_rx_bps_L1": 0.0,
        }  # fmt: skip

    def rpc_get_global_stats(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"m_cpu_util": 0.0, "m_rx_cpu_util": 0.0, "m_bw_per_core": 0.0, "m_tx_bps": 0.0,
                "m_rx_bps": 0.0, "m_tx_pps": 0.0, "m_rx_pps": 0.0, "m_total_tx_pkts": 0,
                "m_total_rx_pkts": 0, "m_total_tx_bytes": 0, "m_total_rx_bytes": 0,
                "m_rx_drop_bps": 0.0, "m_active_flows": 0, "m_open_flows": 0, "m_total_alloc_error": 0,
                "m_total_queue_full": 0, "m_total_queue_drop": 0, "m_platform_factor": 1.0}  # fmt: skip

    def rpc_get_pgid_stats(self, params: dict[str, Any]) -> dict[str, Any]:
        latency: dict[str, Any] = {}
        flow: dict[str, Any] = {}
        for pg_id in params.get("pgids", []):
            latency[str(pg_id)] = self._latency(int(pg_id))
            flow[str(pg_id)] = {
                key: {"0": 0, "1": 0} for key in ("tp", "rp", "tb", "rb", "tps", "rps", "tbs", "rbs")
            }
        return {
            "latency": latency,
            "flow_stats": flow,
            "ver_id": {str(p): self._ver_id.get(int(p), 0) for p in params.get("pgids", [])},
        }

    def rpc_get_active_pgids(self, params: dict[str, Any]) -> dict[str, Any]:
        latency = sorted(
            s["flow_stats"]["stream_id"]
            for port in self.ports.values()
            for s in port.streams.values()
            if s.get("flow_stats", {}).get("enabled") and s["flow_stats"].get("rule_type") == "latency"
        )
        return {"ids": {"flow_stats": [], "latency": latency}}

    def rpc_publish_now(self, params: dict[str, Any]) -> dict[str, Any]:
        self._event("trex-barrier", params.get("key", 0), {})
        self._pub.send(b"{}")
        return {}

    def rpc_get_async_events(self, params: dict[str, Any]) -> dict[str, Any]:
        events, self._events = self._events, []
        return {"data": events}

    def rpc_get_tpg_status(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"enabled": False}

    def rpc_service(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}


class RpcFaultError(Exception):
    """An RPC error reply: ``code`` and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
