"""Drive ``ovsperf-trafficgen`` (``trafficgen/``), the local lab's DPDK traffic generator.

One generator process serves a whole measurement session: :class:`DpdkTrafficGenerator` starts
it with the EAL arguments of :class:`GeneratorConfig`, talks to it over stdin/stdout with one JSON
object per line (protocol: ``docs/trafficgen.md``), turns its trial results into
:class:`~ovsperf_lab.model.TrialResult`, bounds every reply by a deadline (a hung generator is
killed) and always cleans up: the process (by PID), its hugepage files and its DPDK runtime
directory.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import secrets
import threading
from collections.abc import Mapping
from typing import Any

from ovsperf_common.deadline import Deadline
from ovsperf_common.framemix import reduced_weights
from ovsperf_lab.devargs import parse_devargs
from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators.api import (
    AttachmentKind,
    GeneratorBackend,
    GeneratorRequest,
    PortInfo,
    Readiness,
    TrafficGenerator,
)
from ovsperf_lab.generators.api import pool_mbufs as pool_mbufs  # re-exported: run, testbed, benchmarks
from ovsperf_lab.generators.api import pool_memory_mb as pool_memory_mb
from ovsperf_lab.generators.dpdk_config import FlowField, GeneratorConfig, default_binary
from ovsperf_lab.generators.dpdk_protocol import parse_ports, parse_trial_result, require
from ovsperf_lab.generators.process import DpdkProcess, ProcessGenerator, ProcessKind
from ovsperf_lab.generators.sshhost import SshTarget, stop_remote
from ovsperf_lab.model import MAX_FLOWS_SRC_PORT, TrialResult, TrialSpec

log = logging.getLogger(__name__)

PROCESS = ProcessKind("Traffic generator", '{"cmd": "quit"}\n', text=True, merge_stderr=False)
"""How the program is driven: JSON lines; its stderr is its log."""

_PROGRESS_EVERY_S = 60.0


class DpdkTrafficGenerator(ProcessGenerator):
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
        self._next_id = 1
        binary = config.resolved_binary()
        if config.ssh is None and not binary.is_file():
            raise TrafficGeneratorError(
                f"Traffic generator binary '{binary}' not found; build it with 'make -C trafficgen'."
            )
        cmd = config.command(self.file_prefix)
        self._process = DpdkProcess(cmd, PROCESS, config, program=str(binary), file_prefix=self.file_prefix)
        self.pid = self._process.pid
        self.host = None if config.ssh is None else str(config.ssh)
        self.remote_pid: int | None = None
        """The generator's PID on the TG host (two-host mode), from its first output line."""
        ssh = config.ssh
        if ssh is not None:
            self._process.remote_stop = lambda: self._stop_remote(ssh)
        threading.Thread(target=self._pump_stdout, daemon=True, name=f"tg-out-{self.pid}").start()
        try:
            where = f" on TG host '{ssh}'" if ssh is not None else ""
            started = Deadline.in_seconds(
                config.startup_timeout_s, f"traffic generator PID {self.pid}{where} to start"
            )
            if ssh is not None:
                self.remote_pid = self._read_pid(started)
            ready = self._read_reply(started)
            if ready.get("event") != "ready":
                raise TrafficGeneratorError(f"Generator's first line is not the ready event: {ready!r}.")
            self.tsc_hz = int(require(ready, "tsc_hz", int, "the ready event"))
            self._ports = parse_ports(ready)
        except BaseException:
            self.close()
            raise
        log.info("Traffic generator PID %d ready with %d port(s).", self.pid, len(self._ports))

    # -- process plumbing ------------------------------------------------------------------

    def _pump_stdout(self) -> None:
        stdout = self._process.proc.stdout
        assert stdout is not None
        for line in stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _stop_remote(self, ssh: SshTarget) -> None:
        """End the generator on the TG host by its PID and remove its DPDK files there."""
        stopped = stop_remote(
            ssh,
            self.remote_pid,
            self.file_prefix,
            hugepage_dir=self.config.hugepage_dir,
            runtime_dir=self.config.runtime_dir,
        )
        if stopped:
            log.warning(
                "Traffic generator PID %s on TG host '%s' was stopped by signal.", self.remote_pid, ssh
            )

    def _read_pid(self, deadline: Deadline) -> int:
        """Return the remote PID, the first line the TG's shell prints (:data:`~.sshhost.START_SCRIPT`).

        :raises TrafficGeneratorError: as :meth:`_read_line`, or when the line is not a PID.
        """
        line = self._read_line(deadline).strip()
        if not line.isdigit() or not line.isascii():
            self.close()
            raise TrafficGeneratorError(
                f"The TG host's first line is not the generator's PID: {line[:200]!r}."
            )
        return int(line)

    def _read_reply(self, deadline: Deadline) -> dict[str, Any]:
        """Return the next JSON reply line, waiting at most until ``deadline``.

        :raises TrafficGeneratorError: on timeout (the process is killed), exit, or a line that
            is not a JSON object.
        """
        line = self._read_line(deadline)
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

    def _read_line(self, deadline: Deadline) -> str:
        """Return the next output line, waiting at most until ``deadline``.

        :raises TrafficGeneratorError: on timeout (the process is killed) or exit.
        """
        while True:
            try:
                line = self._lines.get(timeout=max(min(deadline.remaining_s(), _PROGRESS_EVERY_S), 0.001))
                break
            except queue.Empty:
                if deadline.expired():
                    self._process.kill()
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
            raise self._process.died(f"waiting for {deadline.what}")
        return line

    def command(self, cmd: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one command object and return its successful reply.

        ``timeout_s`` bounds the wait for the reply [s]; on expiry the generator is killed.

        :raises TrafficGeneratorError: when the generator is closed, replies with an error (the
            generator keeps running), times out, exits, or sends a reply with another id.
        """
        if self._process.stopped:
            raise TrafficGeneratorError(f"Traffic generator PID {self.pid} is already closed.")
        request = dict(cmd)
        request["id"] = self._next_id
        self._next_id += 1
        name = str(cmd.get("cmd"))
        stdin = self._process.proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._process.died(f"sending command '{name}'") from None
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

    # -- TrafficGenerator ------------------------------------------------------------------

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the generator's ports with their current link state, index order.

        :raises TrafficGeneratorError: when the generator does not answer in time.
        """
        self._ports = parse_ports(self.command({"cmd": "ports"}, self.config.reply_margin_s))
        return self._ports

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait until all links are up (at most ``timeout_s`` [s]) and return the ports.

        :raises TrafficGeneratorError: when a link stays down (the generator keeps running) or
            the generator does not answer.
        """
        reply = self.command(
            {"cmd": "wait_link", "timeout_s": timeout_s}, timeout_s + self.config.reply_margin_s
        )
        self._ports = parse_ports(reply)
        return self._ports

    def port_stats(self) -> list[dict[str, Any]]:
        """Return the DPDK port counters, port order.

        Each dict holds ``port``, ``ipackets``, ``opackets``, ``imissed``, ``ierrors``,
        ``oerrors``, ``rx_nombuf`` [1] and the per-queue lists ``q_ipackets``/``q_opackets`` [1].

        :raises TrafficGeneratorError: when the generator does not answer in time.
        """
        reply = self.command({"cmd": "stats"}, self.config.reply_margin_s)
        ports = require(reply, "ports", list, "the stats reply")
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
            **({"tunnel": spec.tunnel.to_json()} if spec.tunnel is not None else {}),
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
        result = require(reply, "result", dict, "the trial reply")
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


def start(request: GeneratorRequest) -> TrafficGenerator:
    """Start ``ovsperf-trafficgen`` serving the request's vhost-user sockets, or on its NIC ports.

    Each vhost-user port is a ``net_virtio_user`` vdev with ``server=1`` (OVS connects as a
    ``dpdkvhostuserclient``); NIC ports (two-host mode) are the request's devargs (PCI addresses on
    the allow-list, vdevs with ``--vdev``), on the TG host over SSH when the request names one.
    The EAL memory is raised to what the rings need (:func:`pool_memory_mb`).

    :raises LabError: when a port's attachment is neither, or devargs are malformed.
    :raises TrafficGeneratorError: when the generator does not start, or its DPDK ports are not
        the request's in role order.
    """
    if request.wire:
        return _start_wire(request)
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


def _start_wire(request: GeneratorRequest) -> TrafficGenerator:
    """Start the generator on the request's NIC ports (two-host mode); see :func:`start`."""
    try:
        ports = tuple(parse_devargs(text) for text in request.devargs())
    except ValueError as err:
        raise LabError(f"Option '--tg-port': {err}.") from err
    ring = request.ring_size
    generator = DpdkTrafficGenerator(
        GeneratorConfig(
            vdevs=tuple(p.text for p in ports if not p.is_pci),
            pci_allow=tuple(p.text for p in ports if p.is_pci),
            lcores=request.lcores or str(request.cpu),
            memory_mb=max(request.memory_mb, pool_memory_mb(len(ports), request.queues, ring)),
            file_prefix=request.file_prefix,
            queues=request.queues,
            ring_size=ring,
            binary=request.binary,
            ssh=request.ssh,
        )
    )
    names = [p.name for p in generator.ports()]
    wanted = [p.name for p in ports]
    if None not in names and names != wanted:
        generator.close()
        raise TrafficGeneratorError(
            f"The generator's DPDK ports are {names} in that order, not the '--tg-port' order {wanted} "
            "(west, east): DPDK numbers PCI ports by address and before virtual devices; give "
            "'--tg-port' in that order and cable TG port 0 to DUT port 0."
        )
    return generator


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
    wire=True,
)
"""The registry entry (:mod:`ovsperf_lab.generators.registry`)."""
