"""Drive ``ovsperf-trafficgen`` (``trafficgen/``), the local lab's DPDK traffic generator.

One generator process serves a whole measurement session: :class:`DpdkTrafficGenerator` starts
it with the EAL arguments of :class:`GeneratorConfig`, talks to it over stdin/stdout with one JSON
object per line (protocol: ``docs/trafficgen.md``), turns its trial results into
:class:`~ovsperf_lab.model.TrialResult`, bounds every reply by a deadline (a hung generator is
killed) and always cleans up: the process (by PID), its hugepage files and its DPDK runtime
directory.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import secrets
import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovsperf_common.deadline import Deadline
from ovsperf_common.framemix import reduced_weights
from ovsperf_common.spec import SpecEnum
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.api import (
    MAX_RING_SIZE,
    MIN_RING_SIZE,
    AttachmentKind,
    GeneratorBackend,
    GeneratorRequest,
    PortInfo,
    Readiness,
    TrafficGenerator,
)
from ovsperf_lab.generators.api import pool_mbufs as pool_mbufs  # re-exported: run, testbed, benchmarks
from ovsperf_lab.generators.api import pool_memory_mb as pool_memory_mb
from ovsperf_lab.model import MAX_FLOWS_SRC_PORT, DirectionResult, GeneratorCounters, TrialResult, TrialSpec

log = logging.getLogger(__name__)

BINARY_ENV = "OVSPERF_TRAFFICGEN"
"""Environment variable that overrides the generator binary path."""
DEFAULT_BINARY = Path(__file__).resolve().parent.parent / "trafficgen" / "build" / "ovsperf-trafficgen"
"""The binary ``make -C trafficgen`` builds in this checkout."""
_STDERR_TAIL_LINES = 30
_QUIT_TIMEOUT_S = 10.0
_TERM_TIMEOUT_S = 5.0
_PROGRESS_EVERY_S = 60.0


class FlowField(SpecEnum):
    """Which header field varies between the flows of a direction."""

    SRC_PORT = "src_port"
    """UDP source port 1024 + flow."""
    SRC_IP = "src_ip"
    """IPv4 source address base + flow."""
    TUPLE = "tuple"
    """IPv4 source address's low 16 bits = flow mod 65536, UDP destination port 1024 + flow / 65536:
    up to 1,048,576 flows (docs/trafficgen.md)."""


class TxFullPolicy(SpecEnum):
    """What the generator does with a frame the port's TX queue refuses at its due time."""

    LOSS = "loss"
    """Count it as sent and lost (virtual ports: the DUT did not take it)."""
    RETRY = "retry"
    """Retry it; a full queue slows the generator (physical NICs, max-rate measurements)."""


def default_binary() -> Path:
    """Return ``$OVSPERF_TRAFFICGEN``, else the binary ``make -C trafficgen`` builds in this checkout."""
    env = os.environ.get(BINARY_ENV)
    return Path(env) if env else DEFAULT_BINARY


def _default_lcore() -> str:
    """Return the highest CPU this process may run on, as an EAL ``-l`` list."""
    return str(max(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class GeneratorConfig:
    """How to start one generator process (EAL arguments) and how it runs trials.

    :raises TrafficGeneratorError: when there is no port, or a field is out of range (the
        message names the field).
    """

    vdevs: tuple[str, ...] = ()
    """EAL ``--vdev`` values, e.g. ``'net_virtio_user0,path=/run/x/vhu0.sock,server=1'``."""
    pci_allow: tuple[str, ...] = ()
    """PCI addresses to use (EAL ``-a``); when empty, ``--no-pci`` is passed."""
    lcores: str | None = None
    """EAL ``-l`` core list, or an ``--lcores`` map when it contains ``@`` (``'0@1,1@1,2@2'``);
    ``None`` picks the highest CPU in this process's affinity. One lcore does everything; with
    more, the worker lcores share the ports (TX and RX) and the first only drives the protocol."""
    memory_mb: int = 256
    """Hugepage memory for EAL ``-m`` [MiB]."""
    file_prefix: str | None = None
    """EAL ``--file-prefix``; ``None`` makes a unique ``ovsperf-tg-<pid>-<random>``."""
    extra_eal_args: tuple[str, ...] = ()
    """Further EAL arguments, passed through unchanged."""
    jumbo: bool = False
    """Start with ``--jumbo`` (frames up to 9018 B)."""
    ring_size: int | None = None
    """RX and TX descriptors per queue (``--rxd``/``--txd``, 64 to 32768); ``None`` keeps the
    generator's 1024. A virtio_user ring holds the smaller of this and the vdev's ``queue_size``,
    so give both the same value. See :func:`pool_memory_mb` for the ``memory_mb`` it needs."""
    queues: int = 1
    """RX and TX queues per port (``--queues``, 1 to 8): flow ``f`` is sent on TX queue
    ``f % queues`` and every RX queue is polled. Give virtio_user vdevs ``queues=<n>`` too."""
    netns: str | None = None
    """Run the generator in this network namespace (``ip netns exec``), e.g. for
    ``net_af_packet`` on veth interfaces that live there."""
    binary: Path | None = None
    """Generator binary; ``None`` means ``$OVSPERF_TRAFFICGEN`` or this checkout's build."""
    startup_timeout_s: float = 60.0
    """Time allowed for EAL init until the ``ready`` line [s] (a virtio_user port in server
    mode waits here for its peer)."""
    reply_margin_s: float = 10.0
    """Allowance on top of a command's expected duration before the generator is declared hung [s]."""
    link_timeout_s: float = 5.0
    """Time a trial waits for the links before failing [s]."""
    flow_field: FlowField = FlowField.SRC_PORT
    """Header field that varies between flows."""
    on_tx_full: TxFullPolicy = TxFullPolicy.LOSS
    """Treatment of frames the TX queue refuses."""
    tx_tolerance_ratio: float = 0.005
    """Allowed shortfall of the achieved TX rate before a trial is invalid [1]."""
    drain_early_exit: bool = False
    """End the drain once every sent frame has arrived (faster searches; duplicates that
    arrive later are then not counted). ``False`` waits the full ``drain_s`` (RFC 2544 §23)."""
    hugepage_dir: Path = Path("/dev/hugepages")
    """hugetlbfs mount where DPDK would leave ``<file_prefix>map_*`` files."""
    runtime_dir: Path = Path("/var/run/dpdk")
    """DPDK runtime directory root (``<runtime_dir>/<file_prefix>`` is removed on close)."""

    def __post_init__(self) -> None:
        if not self.vdevs and not self.pci_allow:
            raise TrafficGeneratorError("Give at least one 'vdevs' entry or one 'pci_allow' address.")
        if isinstance(self.queues, bool) or not isinstance(self.queues, int) or not 1 <= self.queues <= 8:
            raise TrafficGeneratorError(f"Field 'queues' must be an integer in [1, 8], got {self.queues!r}.")
        if self.ring_size is not None and not MIN_RING_SIZE <= self.ring_size <= MAX_RING_SIZE:
            raise TrafficGeneratorError(
                f"Field 'ring_size' must be in [{MIN_RING_SIZE}, {MAX_RING_SIZE}], got {self.ring_size!r}."
            )
        if self.memory_mb < 16:
            raise TrafficGeneratorError(f"Field 'memory_mb' must be >= 16, got {self.memory_mb!r}.")
        for name in ("startup_timeout_s", "reply_margin_s"):
            if not getattr(self, name) > 0:
                raise TrafficGeneratorError(f"Field {name!r} must be positive, got {getattr(self, name)!r}.")
        if not 0 <= self.tx_tolerance_ratio < 1:
            raise TrafficGeneratorError(
                f"Field 'tx_tolerance_ratio' must lie in [0, 1), got {self.tx_tolerance_ratio!r}."
            )
        if self.file_prefix is not None and (not self.file_prefix or "/" in self.file_prefix):
            raise TrafficGeneratorError(f"Field 'file_prefix' is not a file name: {self.file_prefix!r}.")

    def resolved_binary(self) -> Path:
        """Return the generator binary to run (see :attr:`binary`)."""
        return self.binary if self.binary is not None else default_binary()

    def command(self, file_prefix: str) -> list[str]:
        """Return the full command line: binary, EAL arguments, ``--``, application options.

        ``--in-memory --single-file-segments`` keeps hugepage files off the filesystem and lets
        virtio_user share its memory with a vhost-user peer in one region.
        """
        lcores = self.lcores if self.lcores is not None else _default_lcore()
        eal = ["--lcores" if "@" in lcores else "-l", lcores]
        eal += ["--file-prefix", file_prefix, "-m", str(self.memory_mb)]
        eal += ["--in-memory", "--single-file-segments"]
        if self.pci_allow:
            for address in self.pci_allow:
                eal += ["-a", address]
        else:
            eal.append("--no-pci")
        for vdev in self.vdevs:
            eal += ["--vdev", vdev]
        eal += list(self.extra_eal_args)
        app = ["--jumbo"] if self.jumbo else []
        if self.ring_size is not None:
            app += ["--rxd", str(self.ring_size), "--txd", str(self.ring_size)]
        if self.queues > 1:
            app += ["--queues", str(self.queues)]
        netns = ["ip", "netns", "exec", self.netns] if self.netns else []
        return [*netns, str(self.resolved_binary()), *eal, "--", *app]


def _require(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """Return ``obj[key]`` after checking its JSON type.

    :raises TrafficGeneratorError: when the key is missing or has another type.
    """
    if key not in obj:
        raise TrafficGeneratorError(f"Generator reply has no key {key!r} in {where}.")
    value = obj[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise TrafficGeneratorError(
            f"Generator reply key {key!r} in {where} has type {type(value).__name__}."
        )
    return value


def _optional_float(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    """Return ``obj[key]`` as float, or ``None`` when the generator sent ``null`` (not measured)."""
    if obj.get(key, 0) is None:
        return None
    return float(_require(obj, key, (int, float), where))


def _optional_int(obj: Mapping[str, Any], key: str) -> int | None:
    """Return ``obj[key]`` when it is a JSON integer, else ``None`` (older generators omit it)."""
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_direction(obj: Mapping[str, Any], index: int) -> DirectionResult:
    """Convert one ``directions[i]`` object of a trial reply into a :class:`DirectionResult`.

    Source: ``RESULT.directions`` in ``docs/trafficgen.md``.

    :raises TrafficGeneratorError: when a key is missing or has the wrong type.
    """
    where = f"'directions[{index}]'"
    return DirectionResult(
        tx_port=int(_require(obj, "tx_port", int, where)),
        rx_port=int(_require(obj, "rx_port", int, where)),
        tx_packets=int(_require(obj, "tx_packets", int, where)),
        rx_packets=int(_require(obj, "rx_packets", int, where)),
        tx_pps=float(_require(obj, "tx_pps", (int, float), where)),
        tx_duration_s=float(_require(obj, "tx_duration_s", (int, float), where)),
        reordered_packets=int(_require(obj, "reordered_packets", int, where)),
        duplicate_packets=int(_require(obj, "duplicate_packets", int, where)),
        latency_min_ns=_optional_float(obj, "latency_min_ns", where),
        latency_avg_ns=_optional_float(obj, "latency_avg_ns", where),
        latency_max_ns=_optional_float(obj, "latency_max_ns", where),
        latency_p50_ns=_optional_float(obj, "latency_p50_ns", where),
        latency_p99_ns=_optional_float(obj, "latency_p99_ns", where),
        latency_p999_ns=_optional_float(obj, "latency_p999_ns", where),
        latency_histogram=_histogram(obj, where),
        per_size=_per_size(obj, where),
    )


def _per_size(obj: Mapping[str, Any], where: str) -> tuple[tuple[int, int, int], ...] | None:
    """Return ``obj['per_size']`` as (frame size [B], sent, received) triples, ``None`` when absent.

    :raises TrafficGeneratorError: when it is not a list of objects with whole
        ``frame_size_bytes``, ``tx_packets`` and ``rx_packets``.
    """
    raw = obj.get("per_size")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise TrafficGeneratorError(f"Generator reply: {where}.per_size is not a list.")
    triples = []
    for i, entry in enumerate(raw):
        place = f"{where}.per_size[{i}]"
        if not isinstance(entry, dict):
            raise TrafficGeneratorError(f"Generator reply: {place} is not an object.")
        triples.append(
            (
                int(_require(entry, "frame_size_bytes", int, place)),
                int(_require(entry, "tx_packets", int, place)),
                int(_require(entry, "rx_packets", int, place)),
            )
        )
    return tuple(triples)


def _histogram(obj: Mapping[str, Any], where: str) -> tuple[tuple[float, int], ...] | None:
    """Return ``obj['latency_histogram']`` as ``(middle [ns], count)`` pairs, ``None`` when absent.

    :raises TrafficGeneratorError: when it is not a list of ``[number >= 0, integer >= 1]`` pairs.
    """
    raw = obj.get("latency_histogram")
    if raw is None:
        return None
    pairs: list[tuple[float, int]] = []
    ok = isinstance(raw, list)
    for pair in raw if ok else ():
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], int | float)
            and not isinstance(pair[0], bool)
            and pair[0] >= 0
            and isinstance(pair[1], int)
            and not isinstance(pair[1], bool)
            and pair[1] >= 1
        ):
            ok = False
            break
        pairs.append((float(pair[0]), int(pair[1])))
    if not ok:
        raise TrafficGeneratorError(
            f"Generator reply field {where}.latency_histogram is not a list of [ns, count] pairs."
        )
    return tuple(pairs)


def parse_trial_result(spec: TrialSpec, result: Mapping[str, Any]) -> TrialResult:
    """Convert the ``result`` object of a trial reply into a :class:`TrialResult` for ``spec``.

    :raises TrafficGeneratorError: when a key is missing, has the wrong type, or there are no
        directions.
    """
    directions = _require(result, "directions", list, "'result'")
    if not directions:
        raise TrafficGeneratorError("Generator trial result has no directions.")
    parsed = tuple(
        parse_direction(_require({"d": d}, "d", dict, "'directions'"), i) for i, d in enumerate(directions)
    )
    reason = result.get("invalid_reason")
    return TrialResult(
        spec=spec,
        directions=parsed,
        valid=bool(_require(result, "valid", bool, "'result'")),
        invalid_reason=str(reason) if reason is not None else None,
        generator_counters=parse_counters(result, directions),
    )


def parse_counters(result: Mapping[str, Any], directions: list[Any]) -> GeneratorCounters:
    """Return the refused, foreign and warm-up frames of a trial ``result`` object.

    Source: ``RESULT`` in ``docs/trafficgen.md`` (``directions[i].tx_refused_packets``,
    ``rx_foreign_packets``, ``warmup_tx_packets``); a key an older generator omits counts 0.
    """

    def count(obj: Mapping[str, Any], key: str) -> int:
        return max(_optional_int(obj, key) or 0, 0)

    foreign = result.get("rx_foreign_packets")
    return GeneratorCounters(
        tx_refused_packets=tuple(count(d, "tx_refused_packets") for d in directions),
        rx_foreign_packets=tuple(
            count({"n": n}, "n") for n in (foreign if isinstance(foreign, list) else ())
        ),
        warmup_tx_packets=count(result, "warmup_tx_packets"),
    )


def parse_port(obj: Mapping[str, Any], index: int) -> PortInfo:
    """Convert one ``PORT`` object of a reply into a :class:`PortInfo`.

    :raises TrafficGeneratorError: when a key is missing or has the wrong type.
    """
    where = f"'ports[{index}]'"
    speed = obj.get("link_speed_mbps")
    return PortInfo(
        index=int(_require(obj, "port", int, where)),
        mac=str(_require(obj, "mac", str, where)).lower(),
        link_speed_mbps=int(speed) if isinstance(speed, int) and not isinstance(speed, bool) else None,
        link_up=bool(_require(obj, "link_up", bool, where)),
        rx_descriptors=_optional_int(obj, "rx_descriptors"),
        tx_descriptors=_optional_int(obj, "tx_descriptors"),
    )


class DpdkTrafficGenerator(TrafficGenerator):
    """One running ``ovsperf-trafficgen`` process; use as a context manager.

    Construction starts the process and waits (at most ``config.startup_timeout_s``) for its
    ``ready`` line. Every later reply is awaited with a deadline; a generator that misses one is
    killed and :class:`TrafficGeneratorError` is raised.

    :raises TrafficGeneratorError: when the binary is missing, the process exits during start-up,
        or it is not ready in time.
    """

    def __init__(self, config: GeneratorConfig) -> None:
        self.config = config
        self.file_prefix = config.file_prefix or f"ovsperf-tg-{os.getpid()}-{secrets.token_hex(3)}"
        self.tsc_hz: int | None = None
        self._ports: tuple[PortInfo, ...] = ()
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr_tail: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._next_id = 1
        self._closed = False
        binary = config.resolved_binary()
        if not binary.is_file():
            raise TrafficGeneratorError(
                f"Traffic generator binary '{binary}' not found; build it with 'make -C trafficgen'."
            )
        cmd = config.command(self.file_prefix)
        log.info("Starting traffic generator (file prefix '%s').", self.file_prefix)
        log.debug("Generator command: %s", " ".join(cmd))
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                start_new_session=True,
            )
        except OSError as err:
            raise TrafficGeneratorError(f"Cannot start traffic generator '{binary}': {err}.") from err
        self.pid = self._proc.pid
        threading.Thread(target=self._pump_stdout, daemon=True, name=f"tg-out-{self.pid}").start()
        self._stderr_thread = threading.Thread(
            target=self._pump_stderr, daemon=True, name=f"tg-err-{self.pid}"
        )
        self._stderr_thread.start()
        try:
            ready = self._read_reply(
                Deadline.in_seconds(config.startup_timeout_s, f"traffic generator PID {self.pid} to start")
            )
            if ready.get("event") != "ready":
                raise TrafficGeneratorError(f"Generator's first line is not the ready event: {ready!r}.")
            self.tsc_hz = int(_require(ready, "tsc_hz", int, "the ready event"))
            self._ports = self._parse_ports(ready)
        except BaseException:
            self.close()
            raise
        log.info("Traffic generator PID %d ready with %d port(s).", self.pid, len(self._ports))

    # -- process plumbing ------------------------------------------------------------------

    def _pump_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            line = line.rstrip("\n")
            self._stderr_tail.append(line)
            log.debug("trafficgen[%d]: %s", self.pid, line)

    def stderr_tail(self) -> str:
        """Return the generator's last stderr lines, newline-separated (for error messages)."""
        return "\n".join(self._stderr_tail)

    def _died(self, what: str) -> TrafficGeneratorError:
        try:
            code: int | None = self._proc.wait(timeout=_TERM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        self._stderr_thread.join(timeout=_TERM_TIMEOUT_S)  # its last lines explain the exit
        tail = self.stderr_tail().strip().splitlines()[-5:]
        detail = "; ".join(tail) if tail else "no stderr output"
        return TrafficGeneratorError(
            f"Traffic generator PID {self.pid} exited (code {code}) while {what}: {detail}"
        )

    def _read_reply(self, deadline: Deadline) -> dict[str, Any]:
        """Return the next JSON reply line, waiting at most until ``deadline``.

        :raises TrafficGeneratorError: on timeout (the process is killed), exit, or a line that
            is not a JSON object.
        """
        while True:
            try:
                line = self._lines.get(timeout=max(min(deadline.remaining_s(), _PROGRESS_EVERY_S), 0.001))
                break
            except queue.Empty:
                if deadline.expired():
                    self._kill()
                    self.close()
                    raise TrafficGeneratorError(
                        f"Timed out after {deadline.elapsed_s():.1f} s waiting for {deadline.what}; "
                        f"the generator was killed."
                    ) from None
                log.info(
                    "Still waiting for %s: %.0f s elapsed, %.0f s left.",
                    deadline.what,
                    deadline.elapsed_s(),
                    deadline.remaining_s(),
                )
        if line is None:
            raise self._died(f"waiting for {deadline.what}")
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as err:
            self.close()
            raise TrafficGeneratorError(
                f"Generator wrote a line that is not JSON: {line.strip()!r}."
            ) from err
        if not isinstance(reply, dict):
            self.close()
            raise TrafficGeneratorError(
                f"Generator wrote a JSON line that is not an object: {line.strip()!r}."
            )
        return reply

    def command(self, cmd: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one command object and return its successful reply.

        ``timeout_s`` bounds the wait for the reply [s]; on expiry the generator is killed.

        :raises TrafficGeneratorError: when the generator is closed, replies with an error (the
            generator keeps running), times out, exits, or sends a reply with another id.
        """
        if self._closed:
            raise TrafficGeneratorError(f"Traffic generator PID {self.pid} is already closed.")
        request = dict(cmd)
        request["id"] = self._next_id
        self._next_id += 1
        name = str(cmd.get("cmd"))
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(f"sending command '{name}'") from None
        deadline = Deadline.in_seconds(timeout_s, f"the reply to command '{name}' from PID {self.pid}")
        reply = self._read_reply(deadline)
        if reply.get("id") != request["id"]:
            self.close()
            raise TrafficGeneratorError(
                f"Generator reply id {reply.get('id')!r} does not match command id {request['id']}."
            )
        if reply.get("ok") is not True:
            raise TrafficGeneratorError(f"Traffic generator refused command '{name}': {reply.get('error')}")
        return reply

    def _kill(self) -> None:
        if self._proc.poll() is None:
            log.warning("Killing traffic generator PID %d.", self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=_TERM_TIMEOUT_S)

    # -- TrafficGenerator ------------------------------------------------------------------

    @staticmethod
    def _parse_ports(reply: Mapping[str, Any]) -> tuple[PortInfo, ...]:
        ports = _require(reply, "ports", list, "the reply")
        return tuple(parse_port(_require({"p": p}, "p", dict, "'ports'"), i) for i, p in enumerate(ports))

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the generator's ports with their current link state, index order.

        :raises TrafficGeneratorError: when the generator does not answer in time.
        """
        self._ports = self._parse_ports(self.command({"cmd": "ports"}, self.config.reply_margin_s))
        return self._ports

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait until all links are up (at most ``timeout_s`` [s]) and return the ports.

        :raises TrafficGeneratorError: when a link stays down (the generator keeps running) or
            the generator does not answer.
        """
        reply = self.command(
            {"cmd": "wait_link", "timeout_s": timeout_s}, timeout_s + self.config.reply_margin_s
        )
        self._ports = self._parse_ports(reply)
        return self._ports

    def port_stats(self) -> list[dict[str, Any]]:
        """Return the DPDK port counters, port order.

        Each dict holds ``port``, ``ipackets``, ``opackets``, ``imissed``, ``ierrors``,
        ``oerrors``, ``rx_nombuf`` [1] and the per-queue lists ``q_ipackets``/``q_opackets`` [1].

        :raises TrafficGeneratorError: when the generator does not answer in time.
        """
        reply = self.command({"cmd": "stats"}, self.config.reply_margin_s)
        ports = _require(reply, "ports", list, "the stats reply")
        return [dict(p) for p in ports]

    def trial_command(self, spec: TrialSpec) -> dict[str, Any]:
        """Return the ``trial`` command object for ``spec`` under this configuration."""
        frame = spec.frame_size_bytes
        return {
            "cmd": "trial",
            **(
                {"frame_size_bytes": frame}
                if isinstance(frame, int)
                else {"frame_mix": [list(pair) for pair in reduced_weights(frame)]}
            ),
            "rate_pps": spec.rate_pps,
            "duration_s": spec.duration_s,
            "bidirectional": spec.bidirectional,
            "flows": spec.flows,
            "flow_field": (
                FlowField.TUPLE if spec.flows > MAX_FLOWS_SRC_PORT else self.config.flow_field
            ).value,
            "warmup_s": spec.warmup_s,
            "drain_s": spec.drain_s,
            "link_timeout_s": self.config.link_timeout_s,
            "tx_tolerance_ratio": self.config.tx_tolerance_ratio,
            "on_tx_full": self.config.on_tx_full.value,
            "drain_early_exit": self.config.drain_early_exit,
            "latency_histogram": spec.latency_histogram,
        }

    def run_raw_trial(self, cmd: Mapping[str, Any]) -> dict[str, Any]:
        """Run a ``trial`` command given as protocol fields and return its ``result`` object.

        For fields :class:`TrialSpec` does not carry (``rate_pps`` 0 = unpaced, ``loopback``,
        ``burst_packets``); the reply deadline is computed from the fields.

        :raises TrafficGeneratorError: as :meth:`command`.
        """
        fields = {"cmd": "trial", **cmd}
        expected_s = sum(
            float(fields.get(key, default))
            for key, default in (
                ("warmup_s", 0.0),
                ("duration_s", 0.0),
                ("drain_s", 2.0),
                ("link_timeout_s", 5.0),
            )
        )
        reply = self.command(fields, expected_s + self.config.reply_margin_s)
        result = _require(reply, "result", dict, "the trial reply")
        return dict(result)

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run one trial and return its counters, port 0 → 1 first.

        The reply deadline is warm-up + duration + drain + link timeout + ``reply_margin_s``.

        :raises TrafficGeneratorError: when the generator refuses the trial (e.g. a link is down
            or went down during it: the message says which port), does not reply in time (it is
            then killed), exits, or replies with a malformed result.
        """
        result = self.run_raw_trial(self.trial_command(spec))
        trial = parse_trial_result(spec, result)
        refused = trial.generator_counters.tx_refused_packets if trial.generator_counters else ()
        log.info(
            "Trial %s at %.0f pps x %.2f s: loss %.6f, valid %s%s.",
            trial.frame_text,
            spec.rate_pps,
            spec.duration_s,
            trial.loss_ratio,
            trial.valid,
            f" ({trial.invalid_reason})" if trial.invalid_reason else "",
        )
        if any(refused):
            log.debug("Frames refused by a full TX queue, per direction: %s", refused)
        return trial

    def close(self) -> None:
        """Stop the generator and remove what it may leave behind; idempotent.

        Sends ``quit`` and waits; then SIGTERM, then SIGKILL, always by PID. Afterwards removes
        ``<hugepage_dir>/<file_prefix>map_*`` and ``<runtime_dir>/<file_prefix>``.
        """
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc.poll() is None and proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write('{"cmd": "quit"}\n')
                proc.stdin.flush()
        with contextlib.suppress(OSError, ValueError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=_QUIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("Traffic generator PID %d ignored 'quit'; sending SIGTERM.", self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=_TERM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
        if proc.returncode not in (0, None):
            log.warning("Traffic generator PID %d exited with code %s.", self.pid, proc.returncode)
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        for path in sorted(self.config.hugepage_dir.glob(f"{self.file_prefix}map_*")):
            log.info("Removing leftover hugepage file '%s'.", path)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        runtime = self.config.runtime_dir / self.file_prefix
        if runtime.is_dir():
            shutil.rmtree(runtime, ignore_errors=True)

    @property
    def returncode(self) -> int | None:
        """Return the process's exit code, ``None`` while it runs."""
        return self._proc.poll()

    def __enter__(self) -> DpdkTrafficGenerator:
        return self


def start(request: GeneratorRequest) -> TrafficGenerator:
    """Start ``ovsperf-trafficgen`` serving the request's vhost-user sockets.

    Each port is a ``net_virtio_user`` vdev with ``server=1`` (OVS connects as a
    ``dpdkvhostuserclient``); the EAL memory is raised to what the rings need (:func:`pool_memory_mb`).

    :raises LabError: when a port's attachment is not a vhost-user server.
    :raises TrafficGeneratorError: when the generator does not start.
    """
    ring = request.ring_size
    vdevs = tuple(
        f"net_virtio_user{i},path={sock},server=1,queues={request.queues},queue_size={ring}"
        for i, sock in enumerate(request.sockets())
    )
    return DpdkTrafficGenerator(
        GeneratorConfig(
            vdevs=vdevs,
            lcores=str(request.cpu),
            memory_mb=max(request.memory_mb, pool_memory_mb(len(vdevs), request.queues, ring)),
            file_prefix=request.file_prefix,
            queues=request.queues,
            ring_size=ring,
        )
    )


def readiness() -> Readiness:
    """Return whether the generator binary (``$OVSPERF_TRAFFICGEN`` or this checkout's build) is there."""
    binary = default_binary()
    built = binary.is_file() and os.access(binary, os.X_OK)
    return Readiness(
        built,
        str(binary) if built else f"{binary} not built",
        None if built else "make -C trafficgen (needs libdpdk-dev, libjansson-dev)",
    )


BACKEND = GeneratorBackend(
    name="trafficgen",
    summary="ovsperf-trafficgen (trafficgen/, DPDK): paced RFC 2544 trials, flows, mixes, latency",
    label="ovsperf-trafficgen",
    attachment=AttachmentKind.VHOST_USER_SERVER,
    paced=True,
    start=start,
    readiness=readiness,
)
"""The registry entry (:mod:`ovsperf_lab.generators.registry`)."""
