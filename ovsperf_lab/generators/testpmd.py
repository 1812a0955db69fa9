"""Drive ``dpdk-testpmd --forward-mode=flowgen`` as an MRR traffic generator (the ``testpmd`` backend).

DPDK's own test application, from the distribution's ``dpdk`` package, is a reference for the
maximum receive rate (MRR: full offered load, received frames per second; FD.io CSIT's trending
metric) that owes nothing to ``trafficgen/``. Its ``flowgen`` engine sends UDP/IPv4 frames on
every port as fast as the TX queue takes them, varying the destination address over
``--flowgen-flows`` flows, and receives and frees every frame that arrives (``txonly`` would not
poll RX, so its RX counters would not count).

One process serves a session: two ``net_virtio_user`` ports with ``server=1`` on the request's
vhost-user sockets (OVS connects as ``dpdkvhostuserclient``), ``--no-pci``, ``--in-memory``,
driven in interactive mode (``-i``) over stdin/stdout; every answer (up to the ``testpmd>``
prompt) is awaited with a deadline, and a testpmd that misses one is killed by PID. A trial:
``set txpkts`` (flowgen subtracts the 4 B FCS itself: DPDK 22.11's ``flowgen.c``; checked
against the TX byte counter after every trial), ``clear port stats``, ``start``, wait, ``stop``,
then ``rxonly`` for the drain, and the per-port ``show port stats`` counters. The RX ring is twice
the TX ring, so the frames still in the TX ring when flowgen stops fit into it while forwarding
switches to ``rxonly`` (with equal rings OVS drops some toward the generator there).

What it cannot do, and says so: pace (``GeneratorBackend.paced`` is false, and a trial below the
line rate of its port is refused: an RFC 2544 search is impossible, an MRR trial at line rate is
what ``ovsperf-lab compare`` asks for), frame-size mixes, jumbo frames, one direction only,
latency, sequence checks (``reordered_packets`` and ``duplicate_packets`` are 0: testpmd counts
frames, not sequence numbers). ``tx_packets`` counts the frames the TX queue took; the ones it
refused at full load were never sent (``GeneratorCounters.tx_refused_packets`` is empty). A
direction whose TX queue refused no frame (flowgen's ``TX-dropped`` is 0) was never at full
load: testpmd, not the DUT, set the rate, and the trial is invalid.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.deadline import Deadline
from ovsperf_common.framemix import FrameMix
from ovsperf_common.units import MAX_FRAME_SIZE_BYTES, line_rate_pps
from ovsperf_lab.errors import TrafficGeneratorError
from ovsperf_lab.generators.api import (
    DEFAULT_LINK_SPEED_MBPS,
    MAX_RING_SIZE,
    MIN_RING_SIZE,
    AttachmentKind,
    GeneratorBackend,
    GeneratorRequest,
    PortInfo,
    Readiness,
    TrafficGenerator,
    pool_mbufs,
    pool_memory_mb,
)
from ovsperf_lab.model import DirectionResult, GeneratorCounters, TrialResult, TrialSpec
from ovsperf_lab.vnf import make_testpmd_argv

log = logging.getLogger(__name__)

BINARY = "dpdk-testpmd"
"""The program, looked up on ``PATH`` (Debian package ``dpdk``; the lab's machine facts find it so)."""

INSTALL_HINT = "apt-get install dpdk"
"""The command that installs :data:`BINARY`."""

PROMPT = "testpmd> "
"""What interactive testpmd prints when it is ready for the next command."""

FCS_BYTES = 4
"""Frame check sequence [B]: in the frame size, not in the bytes the port counts."""

PACE_TOLERANCE_RATIO = 0.005
"""Achieved TX rate above the requested rate, as a share of it, beyond which a trial is invalid
(testpmd offered more than was asked) [1]."""

_QUIT_TIMEOUT_S = 10.0
_TERM_TIMEOUT_S = 5.0
_TAIL_CHARS = 4000
_LINK_POLL_S = 0.2

_PORT_INFO_RE = re.compile(r"Infos for port (\d+)")
_PORT_STATS_RE = re.compile(r"NIC statistics for port (\d+)")
_FWD_STATS_RE = re.compile(r"Forward statistics for port (\d+)")
_SPEED_RE = re.compile(r"(\d+(?:\.\d+)?) ([MG])bps")


@dataclass(frozen=True)
class FlowgenConfig:
    """How to start one testpmd flowgen process and how long to wait for it.

    :raises TrafficGeneratorError: when a field is out of range (the message names it).
    """

    sockets: tuple[Path, Path]
    """vhost-user sockets it serves, port 0 (west) then port 1 (east)."""
    cpu: int
    """CPU of its main and forwarding lcore (``--lcores 0@cpu,1@cpu``)."""
    file_prefix: str
    """EAL ``--file-prefix``."""
    memory_mb: int = 256
    """Hugepage memory for EAL ``-m`` [MiB]; :func:`start` raises it to what the rings need."""
    queues: int = 1
    """RX and TX queues per port [1]."""
    ring_size: int = 1024
    """TX descriptors per queue; the RX ring has twice as many (:meth:`rx_ring_size`) [descriptors]."""
    binary: str = BINARY
    """Program name or path."""
    startup_timeout_s: float = 60.0
    """Time allowed until the first prompt [s]: EAL init, and the vhost-user server waits for
    OVS to connect to both sockets."""
    reply_margin_s: float = 10.0
    """Time allowed for an answer to one command before testpmd is declared hung and killed [s]."""
    hugepage_dir: Path = Path("/dev/hugepages")
    """hugetlbfs mount where DPDK would leave ``<file_prefix>map_*`` files."""
    runtime_dir: Path = Path("/var/run/dpdk")
    """DPDK runtime directory root (``<runtime_dir>/<file_prefix>`` is removed on close)."""

    def __post_init__(self) -> None:
        if not self.file_prefix or "/" in self.file_prefix:
            raise TrafficGeneratorError(f"Field 'file_prefix' is not a file name: {self.file_prefix!r}.")
        if type(self.queues) is not int or not 1 <= self.queues <= 8:
            raise TrafficGeneratorError(f"Field 'queues' must be an integer in [1, 8], got {self.queues!r}.")
        if type(self.ring_size) is not int or not MIN_RING_SIZE <= self.ring_size <= MAX_RING_SIZE:
            raise TrafficGeneratorError(
                f"Field 'ring_size' must be in [{MIN_RING_SIZE}, {MAX_RING_SIZE}], got {self.ring_size!r}."
            )
        if self.memory_mb < 16:
            raise TrafficGeneratorError(f"Field 'memory_mb' must be >= 16, got {self.memory_mb!r}.")
        for name in ("startup_timeout_s", "reply_margin_s"):
            if not getattr(self, name) > 0:
                raise TrafficGeneratorError(f"Field {name!r} must be positive, got {getattr(self, name)!r}.")

    def rx_ring_size(self) -> int:
        """Return the RX descriptors per queue: twice :attr:`ring_size`, at most the virtio maximum."""
        return min(2 * self.ring_size, MAX_RING_SIZE)

    def command(self, flows: int) -> list[str]:
        """Return the command line for ``flows`` flows (``--flowgen-flows``; it cannot be changed later).

        ``stdbuf -o0``: testpmd prints its answers with ``printf``, block-buffered on a pipe, and
        its prompt unbuffered; unbuffered output keeps them in order.
        """
        return [
            "stdbuf",
            "-o0",
            *make_testpmd_argv(
                binary=self.binary,
                cpu=self.cpu,
                file_prefix=self.file_prefix,
                memory_mb=self.memory_mb,
                sockets=self.sockets,
                queues=self.queues,
                forward_mode="flowgen",
                queue_size=self.ring_size,
                rx_queue_size=self.rx_ring_size(),
                total_mbufs=pool_mbufs(2, self.queues, self.rx_ring_size()),
                extra_app_args=("-i", "--no-mlockall", f"--flowgen-flows={flows}"),
                auto_start=False,
            ),
        ]


@dataclass(frozen=True)
class PortStats:
    """One port's counters from ``show port stats`` [1]."""

    rx_packets: int
    """``RX-packets``."""
    tx_packets: int
    """``TX-packets``."""
    tx_bytes: int
    """``TX-bytes`` (frames without FCS) [B]."""


def _number(block: str, name: str, where: str) -> int:
    """Return the integer after ``name:`` in ``block``.

    :raises TrafficGeneratorError: when it is not there.
    """
    match = re.search(rf"{re.escape(name)}:\s*(\d+)", block)
    if match is None:
        raise TrafficGeneratorError(
            f"testpmd's answer to '{where}' has no '{name}': {block.strip()[:300]!r}."
        )
    return int(match.group(1))


def _blocks(text: str, header: re.Pattern[str]) -> dict[int, str]:
    """Split ``text`` into port number → the text after that port's ``header`` line."""
    found = list(header.finditer(text))
    return {
        int(m.group(1)): text[m.end() : found[i + 1].start() if i + 1 < len(found) else len(text)]
        for i, m in enumerate(found)
    }


def parse_port_stats(text: str) -> dict[int, PortStats]:
    """Return port → counters from the answer to ``show port stats all``.

    Source: ``nic_stats_display`` in DPDK's ``app/test-pmd/config.c``.

    :raises TrafficGeneratorError: when a port's block lacks a counter, or there is no port.
    """
    blocks = _blocks(text, _PORT_STATS_RE)
    if not blocks:
        raise TrafficGeneratorError(f"testpmd's 'show port stats all' shows no port: {text.strip()[:300]!r}.")
    where = "show port stats all"
    return {
        port: PortStats(
            _number(block, "RX-packets", where),
            _number(block, "TX-packets", where),
            _number(block, "TX-bytes", where),
        )
        for port, block in blocks.items()
    }


def parse_port_info(text: str, rx_descriptors: int, tx_descriptors: int) -> tuple[PortInfo, ...]:
    """Return the ports, index order, from the answer to ``show port info all``.

    ``Link speed`` is ``'10 Gbps'``, ``'Unknown'`` or ``'None'`` (``rte_eth_link_speed_to_str``);
    anything but a number is ``None``. The rings are the ones this backend configured.

    :raises TrafficGeneratorError: when a port lacks its MAC address or link status, or there is no port.
    """
    blocks = _blocks(text, _PORT_INFO_RE)
    if not blocks:
        raise TrafficGeneratorError(f"testpmd's 'show port info all' shows no port: {text.strip()[:300]!r}.")
    ports = []
    for index, block in sorted(blocks.items()):
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


class _Output:
    """What one testpmd process printed (stdout and stderr), filled by :meth:`pump`'s thread."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.buffer = ""
        """Output not yet consumed by an answer."""
        self.tail = ""
        """The last output, for error messages."""
        self.eof = False
        """Whether the process closed its output (it exited)."""

    def pump(self, fd: int, pid: int) -> None:
        """Read ``fd`` until end of file (runs in its own thread)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            text = decoder.decode(chunk, final=not chunk)
            with self.cond:
                self.buffer += text
                self.tail = (self.tail + text)[-_TAIL_CHARS:]
                self.eof = not chunk
                self.cond.notify_all()
            if text:
                log.debug("testpmd[%d]: %s", pid, text.rstrip("\n"))
            if not chunk:
                return


class FlowgenGenerator(TrafficGenerator):
    """One running ``dpdk-testpmd`` in flowgen mode; use as a context manager.

    Construction starts it with ``flows`` flows per port and waits, at most
    ``config.startup_timeout_s``, for its first prompt, i.e. until OVS has connected to both
    sockets. A trial with another flow count restarts it (``--flowgen-flows`` is a start option;
    the new process's PID is :attr:`pid`). Every later answer is awaited for at most
    ``config.reply_margin_s`` [s]; a testpmd that misses one is killed by PID.

    :raises TrafficGeneratorError: when testpmd is missing, exits during start-up, or gives no
        prompt in time (it is then killed; nothing of it is left).
    """

    def __init__(self, config: FlowgenConfig, flows: int = 1) -> None:
        self.config = config
        self.file_prefix = config.file_prefix
        self.flows = flows
        """Flows per port testpmd runs with now (``--flowgen-flows``)."""
        self._ports: tuple[PortInfo, ...] = ()
        self._closed = True
        self._launch(flows)

    # -- process plumbing ------------------------------------------------------------------

    def _launch(self, flows: int) -> None:
        """Start testpmd with ``flows`` flows and wait for its prompt.

        :raises TrafficGeneratorError: as the class says.
        """
        binary = shutil.which(self.config.binary)
        if binary is None:
            raise TrafficGeneratorError(
                f"Traffic generator 'testpmd': '{self.config.binary}' is not on PATH; install it with "
                f"'{INSTALL_HINT}'."
            )
        for sock in self.config.sockets:  # a killed server leaves its socket; bind() would fail
            with contextlib.suppress(FileNotFoundError):
                if sock.is_socket():
                    sock.unlink()
        cmd = self.config.command(flows)
        self._out = _Output()
        log.info("Starting dpdk-testpmd flowgen, %d flow(s) (file prefix '%s').", flows, self.file_prefix)
        log.debug("testpmd command: %s", " ".join(cmd))
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as err:
            raise TrafficGeneratorError(f"Cannot start '{binary}': {err}.") from err
        self._closed = False
        self.pid = self._proc.pid
        self.flows = flows
        assert self._proc.stdout is not None
        threading.Thread(
            target=self._out.pump,
            args=(self._proc.stdout.fileno(), self.pid),
            daemon=True,
            name=f"testpmd-out-{self.pid}",
        ).start()
        try:
            self._until_prompt(
                Deadline.in_seconds(
                    self.config.startup_timeout_s,
                    f"testpmd PID {self.pid} to start (OVS to connect to its vhost-user sockets)",
                ),
                "start-up",
            )
            self._ports = parse_port_info(
                self._exchange("show port info all"), self.config.rx_ring_size(), self.config.ring_size
            )
        except BaseException:
            self.close()
            raise
        if len(self._ports) != 2:
            self.close()
            raise TrafficGeneratorError(f"testpmd PID {self.pid} has {len(self._ports)} ports, not 2.")
        log.info("testpmd PID %d ready with 2 ports.", self.pid)

    def output_tail(self) -> str:
        """Return testpmd's last output (stdout and stderr), for error messages."""
        with self._out.cond:
            return self._out.tail

    def _until_prompt(self, deadline: Deadline, what: str) -> str:
        """Return the output up to the next prompt, waiting at most until ``deadline``.

        :raises TrafficGeneratorError: on timeout (testpmd is killed) or when it exits.
        """
        out = self._out
        with out.cond:
            while PROMPT not in out.buffer and not out.eof and not deadline.expired():
                out.cond.wait(min(max(deadline.remaining_s(), 0.001), 60.0))
            if PROMPT in out.buffer:
                answer, _, out.buffer = out.buffer.partition(PROMPT)
                return answer
            eof = out.eof
        if eof:
            raise self._died(what)
        self._kill()
        self.close()
        raise TrafficGeneratorError(
            f"Timed out after {deadline.elapsed_s():.1f} s waiting for {deadline.what}; testpmd was killed."
        )

    def _exchange(self, *lines: str) -> str:
        """Send ``lines`` in one write and return the answer to the last one (its echo removed).

        See :meth:`_answers`.
        """
        return self._answers(*lines)[-1]

    def _answers(self, *lines: str) -> list[str]:
        """Send ``lines`` in one write and return each one's answer (its echo removed).

        Each answer must come within ``config.reply_margin_s`` [s].

        :raises TrafficGeneratorError: when testpmd is closed, exits, or does not answer in time
            (it is then killed).
        """
        if self._closed:
            raise TrafficGeneratorError(f"testpmd PID {self.pid} is already closed.")
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write("".join(f"{line}\n" for line in lines).encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(f"sending '{lines[0]}'") from None
        answers = []
        for line in lines:
            out = self._until_prompt(
                Deadline.in_seconds(self.config.reply_margin_s, f"testpmd PID {self.pid} to answer '{line}'"),
                f"answering '{line}'",
            )
            first, _, rest = out.partition("\n")
            answers.append(rest if first.strip() == line else out)
        return answers

    def _died(self, what: str) -> TrafficGeneratorError:
        try:
            code: int | None = self._proc.wait(timeout=_TERM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        tail = [line for line in self.output_tail().splitlines() if line.strip()][-5:]
        return TrafficGeneratorError(
            f"testpmd PID {self.pid} exited (code {code}) while {what}: "
            f"{'; '.join(tail) if tail else 'no output'}"
        )

    def _kill(self) -> None:
        if self._proc.poll() is None:
            log.warning("Killing testpmd PID %d.", self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=_TERM_TIMEOUT_S)

    # -- TrafficGenerator ------------------------------------------------------------------

    def ports(self) -> tuple[PortInfo, ...]:
        """Return the two ports with their current link state (``show port info all``).

        :raises TrafficGeneratorError: when testpmd does not answer in time.
        """
        self._ports = parse_port_info(
            self._exchange("show port info all"), self.config.rx_ring_size(), self.config.ring_size
        )
        return self._ports

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait until both links are up (at most ``timeout_s`` [s]) and return the ports.

        :raises TrafficGeneratorError: naming the port whose link stays down, or when testpmd
            does not answer.
        """
        deadline = Deadline.in_seconds(timeout_s, "testpmd's links")
        while True:
            ports = self.ports()
            down = [p.index for p in ports if not p.link_up]
            if not down:
                return ports
            if deadline.expired():
                raise TrafficGeneratorError(f"Port {down[0]} link still down after {timeout_s:.1f} s.")
            time.sleep(_LINK_POLL_S)

    def full_load_pps(self, frame_size_bytes: int) -> float:
        """Return the line rate of port 0 for ``frame_size_bytes`` [pps]: the least rate a trial may ask.

        A port that reports no speed (virtio_user) counts
        :data:`~ovsperf_lab.generators.api.DEFAULT_LINK_SPEED_MBPS`, as ``compare`` does.
        """
        speed = self._ports[0].link_speed_mbps if self._ports else None
        return line_rate_pps(frame_size_bytes, (speed or DEFAULT_LINK_SPEED_MBPS) * 1e6)

    def check_spec(self, spec: TrialSpec) -> int:
        """Return the frame size of ``spec`` [B] if testpmd can run it.

        :raises TrafficGeneratorError: naming the field testpmd cannot serve: a frame-size mix,
            a jumbo frame, one direction, a latency histogram, or a rate below the line rate
            (testpmd cannot pace; it offers full load only).
        """
        frame = spec.frame_size_bytes
        if isinstance(frame, FrameMix):
            raise TrafficGeneratorError(
                f"Field 'frame_size_bytes': the 'testpmd' generator sends one frame size per trial, not "
                f"the mix '{frame.name}'; use '--generator trafficgen' for mixes."
            )
        if frame > MAX_FRAME_SIZE_BYTES:
            raise TrafficGeneratorError(
                f"Field 'frame_size_bytes': the 'testpmd' generator sends at most {MAX_FRAME_SIZE_BYTES} B "
                f"frames, got {frame} B."
            )
        if not spec.bidirectional:
            raise TrafficGeneratorError(
                "Field 'bidirectional': the 'testpmd' generator (flowgen) always sends on both ports."
            )
        if spec.latency_histogram:
            raise TrafficGeneratorError(
                "Field 'latency_histogram': the 'testpmd' generator measures no latency."
            )
        full = self.full_load_pps(frame)
        if spec.rate_pps < full * (1 - 1e-9):
            raise TrafficGeneratorError(
                f"Field 'rate_pps': the 'testpmd' generator cannot pace; it offers full load only "
                f"(MRR), so a trial must ask for at least the line rate {full:.0f} pps of {frame} B, "
                f"got {spec.rate_pps:.0f} pps."
            )
        return frame

    def stats(self) -> dict[int, PortStats]:
        """Return port → counters (``show port stats all``).

        :raises TrafficGeneratorError: when testpmd does not answer in time or the answer lacks a port.
        """
        stats = parse_port_stats(self._exchange("show port stats all"))
        if sorted(stats) != [0, 1]:
            raise TrafficGeneratorError(
                f"testpmd's 'show port stats all' shows ports {sorted(stats)}, not 0 and 1."
            )
        return stats

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run one MRR trial at full load and return its counters, port 0 → 1 first.

        Counters cleared, ``flowgen`` from ``start`` for ``spec.duration_s``, then ``rxonly`` for
        ``spec.drain_s``; a warm-up is a burst of its own before it (``spec.warmup_s`` and a
        drain; its frames are :attr:`GeneratorCounters.warmup_tx_packets`), so that frames in
        flight when counting starts are never counted as received. TX time is measured here, from
        ``start``'s answer to sending ``stop`` (a few ms of command latency). Direction *p* → *q*:
        port *p*'s ``TX-packets``, port *q*'s ``RX-packets``. A flow count other than the running
        one restarts testpmd first (OVS reconnects; its port counters start again from 0).

        :raises TrafficGeneratorError: for a trial testpmd cannot run (:meth:`check_spec`), a
            link that is down before or after the trial, frames of another size than asked (a
            testpmd whose flowgen handles the FCS otherwise), or when testpmd does not answer
            in time (it is then killed) or exits.
        """
        frame = self.check_spec(spec)
        if spec.flows != self.flows:
            log.info("Restarting testpmd for %d flow(s) per port (was %d).", spec.flows, self.flows)
            self._stop_process()
            self._launch(spec.flows)
        down = [p.index for p in self.ports() if not p.link_up]
        if down:
            raise TrafficGeneratorError(f"Port {down[0]} link is down; the trial was not started.")
        self._exchange("set fwd flowgen")
        self._exchange(f"set txpkts {frame}")
        shown = self._exchange("show config txpkts")
        if not re.search(rf"Segment sizes:\s*{frame}\s*$", shown, re.MULTILINE):
            raise TrafficGeneratorError(
                f"testpmd did not take 'set txpkts {frame}': {shown.strip()[:200]!r}."
            )
        self._exchange("clear port stats all")
        warmup_tx = 0
        if spec.warmup_s > 0:  # a burst of its own: frames in flight at its end are drained, not counted
            self._send(spec.warmup_s, spec.drain_s)
            warmup_tx = sum(s.tx_packets for s in self.stats().values())
            self._exchange("clear port stats all")
        tx_s, refused = self._send(spec.duration_s, spec.drain_s)
        end = self.stats()
        down = [p.index for p in self.ports() if not p.link_up]
        if down:
            raise TrafficGeneratorError(f"Port {down[0]} link went down during the trial.")
        sent_frames = sum(end[p].tx_packets for p in (0, 1))
        sent_bytes = sum(end[p].tx_bytes for p in (0, 1))
        if sent_frames and sent_bytes != sent_frames * (frame - FCS_BYTES):
            raise TrafficGeneratorError(
                f"testpmd sent {sent_bytes / sent_frames:.1f} B per frame for 'set txpkts {frame}', not "
                f"{frame - FCS_BYTES} B (the {frame} B frame without its FCS): this testpmd's flowgen "
                "handles the FCS otherwise."
            )
        return self._result(spec, end, tx_s, warmup_tx, refused)

    def _send(self, duration_s: float, drain_s: float) -> tuple[float, dict[int, int]]:
        """Send at full load for ``duration_s`` [s], then only receive for ``drain_s`` [s].

        :returns: the TX time measured here, from ``start``'s answer to sending ``stop`` [s],
            and port → frames its TX queue refused meanwhile (flowgen's ``TX-dropped``) [1].
        :raises TrafficGeneratorError: when testpmd does not answer in time or exits.
        """
        self._exchange("start")
        started = time.monotonic()
        time.sleep(duration_s)
        stopped = time.monotonic()
        # One write: flowgen stops and rxonly starts polling with the least gap.
        stop, _, _ = self._answers("stop", "set fwd rxonly", "start")
        time.sleep(drain_s)
        self._exchange("stop", "set fwd flowgen")
        refused = {
            port: _number(block, "TX-dropped", "stop") for port, block in _blocks(stop, _FWD_STATS_RE).items()
        }
        return stopped - started, refused

    def _result(
        self, spec: TrialSpec, end: dict[int, PortStats], tx_s: float, warmup_tx: int, refused: dict[int, int]
    ) -> TrialResult:
        """Return the trial's result from the counters after the drain (cleared before the burst).

        ``refused``: port → frames its TX queue refused. A port whose queue refused none was
        never at full load: testpmd, not the DUT, set the rate, and the trial is invalid.
        """
        directions = []
        reasons = []
        for tx_port, rx_port in ((0, 1), (1, 0)):
            tx = end[tx_port].tx_packets
            rx = end[rx_port].rx_packets
            tx_pps = tx / tx_s if tx_s > 0 else 0.0
            if tx == 0:
                reasons.append(f"port {tx_port} sent nothing (its TX queue took no frame)")
            elif refused.get(tx_port) == 0:
                reasons.append(
                    f"port {tx_port}'s TX queue never refused a frame: testpmd, not the DUT, set the rate"
                )
            elif rx > tx:
                reasons.append(f"port {rx_port} received {rx} frames of {tx} sent (foreign frames)")
            elif tx_pps > spec.rate_pps * (1 + PACE_TOLERANCE_RATIO):
                reasons.append(
                    f"port {tx_port} sent {tx_pps:.0f} pps, above the requested {spec.rate_pps:.0f} pps "
                    "(testpmd cannot pace)"
                )
            directions.append(
                DirectionResult(
                    tx_port=tx_port,
                    rx_port=rx_port,
                    tx_packets=tx,
                    rx_packets=rx,
                    tx_pps=tx_pps,
                    tx_duration_s=tx_s,
                    reordered_packets=0,
                    duplicate_packets=0,
                    latency_min_ns=None,
                    latency_avg_ns=None,
                    latency_max_ns=None,
                    latency_p50_ns=None,
                    latency_p99_ns=None,
                    latency_p999_ns=None,
                )
            )
        trial = TrialResult(
            spec=spec,
            directions=tuple(directions),
            valid=not reasons,
            invalid_reason="; ".join(reasons) or None,
            generator_counters=GeneratorCounters(warmup_tx_packets=warmup_tx),
        )
        log.info(
            "testpmd trial %s x %.2f s at full load: TX %.0f pps (%s frames refused by the TX queues), "
            "RX %.0f pps, loss %.6f%s.",
            trial.frame_text,
            tx_s,
            trial.tx_pps,
            "/".join(str(refused.get(p, "?")) for p in (0, 1)),
            trial.rx_pps,
            trial.loss_ratio,
            f" (invalid: {trial.invalid_reason})" if trial.invalid_reason else "",
        )
        return trial

    def _stop_process(self) -> None:
        """Ask testpmd to quit, then SIGTERM, then SIGKILL, by PID; remove its files."""
        proc = self._proc
        if proc.poll() is None and proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write(b"quit\n")
                proc.stdin.flush()
        with contextlib.suppress(OSError, ValueError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=_QUIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("testpmd PID %d ignored 'quit'; sending SIGTERM.", self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=_TERM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
        if proc.returncode not in (0, None):
            log.warning("testpmd PID %d exited with code %s.", self.pid, proc.returncode)
        self._remove_leftovers()

    def close(self) -> None:
        """Stop testpmd and remove what it may leave behind; idempotent.

        Sends ``quit`` and waits; then SIGTERM, then SIGKILL, always by PID. Afterwards removes
        ``<hugepage_dir>/<file_prefix>map_*`` and ``<runtime_dir>/<file_prefix>``.
        """
        if self._closed:
            return
        self._closed = True
        self._stop_process()

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

    def __enter__(self) -> FlowgenGenerator:
        return self


def start(request: GeneratorRequest) -> TrafficGenerator:
    """Start testpmd flowgen serving the request's two vhost-user sockets, with its flow count.

    The EAL memory is raised to what the rings need (:func:`~ovsperf_lab.generators.api.pool_memory_mb`
    of the RX ring, which is twice the TX ring).

    :raises LabError: when a port's attachment is not a vhost-user server.
    :raises TrafficGeneratorError: when testpmd does not start.
    """
    config = FlowgenConfig(
        sockets=request.sockets(),
        cpu=request.cpu,
        file_prefix=request.file_prefix,
        queues=request.queues,
        ring_size=request.ring_size,
    )
    memory_mb = max(request.memory_mb, pool_memory_mb(2, request.queues, config.rx_ring_size()))
    return FlowgenGenerator(dataclasses.replace(config, memory_mb=memory_mb), request.flows)


def readiness() -> Readiness:
    """Return whether ``dpdk-testpmd`` (and ``stdbuf``, which drives it unbuffered) are on ``PATH``."""
    binary = shutil.which(BINARY)
    stdbuf = shutil.which("stdbuf")
    if binary is None:
        return Readiness(False, f"'{BINARY}' not found on PATH", INSTALL_HINT)
    if stdbuf is None:
        return Readiness(False, "'stdbuf' not found on PATH", "apt-get install coreutils")
    return Readiness(True, binary)


BACKEND = GeneratorBackend(
    name="testpmd",
    summary="dpdk-testpmd flowgen (Debian dpdk): MRR reference at full load; no pacing, mixes or latency",
    label="dpdk-testpmd",
    attachment=AttachmentKind.VHOST_USER_SERVER,
    paced=False,
    start=start,
    readiness=readiness,
)
"""The registry entry (:mod:`ovsperf_lab.generators.registry`)."""
