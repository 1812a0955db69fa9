"""Drive ``dpdk-testpmd --forward-mode=flowgen`` as an MRR traffic generator (the ``testpmd`` backend).

DPDK's own test application, from the distribution's ``dpdk`` package, is a reference for the
maximum receive rate (MRR: full offered load, received frames per second; FD.io CSIT's trending
metric) that owes nothing to ``trafficgen/``. Its ``flowgen`` engine sends UDP/IPv4 frames on
every port as fast as the TX queue takes them, varying the destination address over
``--flowgen-flows`` flows, and receives and frees every frame that arrives (``txonly`` would not
poll RX, so its RX counters would not count).

One process serves a session: two ``net_virtio_user`` ports with ``server=1`` on the request's
vhost-user sockets (OVS connects as ``dpdkvhostuserclient``), ``--no-pci``, ``--in-memory``,
with the request's flow count for its life, driven in interactive mode (``-i``) over
stdin/stdout (:mod:`~ovsperf_lab.generators.testpmd_console`): every answer (up to the
``testpmd>`` prompt) is awaited with a deadline, must echo its command and hold no error line, and
a testpmd that misses a deadline is killed by PID. Its answers are read by
:mod:`~ovsperf_lab.generators.testpmd_text`, its trials checked and counted by
:mod:`~ovsperf_lab.generators.testpmd_trial`. A trial:
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
load: testpmd, not the DUT, set the rate, and the trial is invalid. A ``start`` not answered
with forwarding started, or a ``stop`` without both ports' forward statistics (the proof of full
load), is an error that quotes the answer: never a trial counted as valid.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.deadline import Deadline
from ovsperf_common.units import line_rate_pps
from ovsperf_lab.errors import LabError, TrafficGeneratorError
from ovsperf_lab.generators.api import (
    DEFAULT_LINK_SPEED_MBPS,
    MAX_RING_SIZE,
    AttachmentKind,
    GeneratorBackend,
    GeneratorRequest,
    PortInfo,
    Readiness,
    TrafficGenerator,
    pool_mbufs,
    pool_memory_mb,
)
from ovsperf_lab.generators.process import DpdkProcess, ProcessGenerator, ProcessKind, check_start_fields
from ovsperf_lab.generators.testpmd_console import PROGRESS_EVERY_S, Console
from ovsperf_lab.generators.testpmd_text import (
    PortStats,
    check_started,
    forward_refused,
    parse_port_info,
    parse_port_stats,
)
from ovsperf_lab.generators.testpmd_trial import check_frame_bytes, check_spec, trial_result
from ovsperf_lab.model import TrialResult, TrialSpec
from ovsperf_lab.vnf import make_testpmd_argv

log = logging.getLogger(__name__)

PROCESS = ProcessKind("testpmd", "quit\n", text=False, merge_stderr=True)
"""How testpmd is driven: bytes (decoded by the console), stderr merged into its answers."""

BINARY = "dpdk-testpmd"
"""The program, looked up on ``PATH`` (Debian package ``dpdk``; the lab's machine facts find it so)."""

INSTALL_HINT = "apt-get install dpdk"
"""The command that installs :data:`BINARY`."""

_LINK_POLL_S = 0.2

_STARTUP_NOTE_RE = re.compile(r"(?i)virtio|vhost|fail|error")
"""Start-up output lines that say why a port is missing."""

_STARTUP_NOTE_CHARS = 1500
"""Most of those lines' end quoted in the error [characters] (the cause is the last of them)."""


class PortMissingError(TrafficGeneratorError):
    """testpmd started with fewer than its two ports: a ``net_virtio_user`` vdev failed to initialise.

    Seen in about half of the two-round ``compare`` runs on a 2-CPU machine (always one start):
    OVS connects to the socket, then DPDK 22.11's ``eth_virtio_dev_init`` fails and EAL goes on
    without that port. :func:`start` starts testpmd again once.
    """


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
        check_start_fields(self)

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


class FlowgenGenerator(ProcessGenerator):
    """One running ``dpdk-testpmd`` in flowgen mode; use as a context manager.

    Construction starts it with ``flows`` flows per port and waits, at most
    ``config.startup_timeout_s``, for its first prompt, i.e. until OVS has connected to both
    sockets. ``flows`` is fixed for the generator's life (``--flowgen-flows`` is a start option;
    :func:`start` takes it from ``GeneratorRequest.flows``): a trial with another flow count is
    refused, so :attr:`pid` stays the one process the run tracks and renices. Every later answer
    is awaited for at most ``config.reply_margin_s`` [s]; a testpmd that misses one is killed by
    PID (:mod:`~ovsperf_lab.generators.testpmd_console`).

    :raises TrafficGeneratorError: when testpmd is missing, exits during start-up, or gives no
        prompt in time (it is then killed; nothing of it is left).
    """

    def __init__(self, config: FlowgenConfig, flows: int = 1) -> None:
        self.config = config
        self.file_prefix = config.file_prefix
        self.flows = flows
        """Flows per port testpmd runs with (``--flowgen-flows``), for its whole life."""
        self._ports: tuple[PortInfo, ...] = ()
        binary = shutil.which(config.binary)
        if binary is None:
            raise TrafficGeneratorError(
                f"Traffic generator 'testpmd': '{config.binary}' is not on PATH; install it with "
                f"'{INSTALL_HINT}'."
            )
        for sock in config.sockets:  # a killed server leaves its socket; bind() would fail
            with contextlib.suppress(FileNotFoundError):
                if sock.is_socket():
                    sock.unlink()
        cmd = config.command(flows)
        self._process = DpdkProcess(cmd, PROCESS, config, program=binary, file_prefix=self.file_prefix)
        self.pid = self._process.pid
        self._console = Console(self._process, config.reply_margin_s)
        try:
            startup = self._console.until_prompt(
                Deadline.in_seconds(
                    config.startup_timeout_s,
                    f"testpmd PID {self.pid} to start (OVS to connect to its vhost-user sockets)",
                ),
                "start-up",
            )
            self._ports = self.ports()
            if len(self._ports) != 2:
                said = "\n".join(line for line in startup.splitlines() if _STARTUP_NOTE_RE.search(line))
                raise PortMissingError(
                    f"testpmd PID {self.pid} has {len(self._ports)} ports, not 2; its start-up said: "
                    f"{(said or startup)[-_STARTUP_NOTE_CHARS:]!r}."
                )
        except BaseException:
            self.close()
            raise
        log.info("testpmd PID %d ready with 2 ports, %d flow(s) per port.", self.pid, flows)

    def _exchange(self, *lines: str) -> str:
        """Send ``lines`` in one write; return the answer to the last one (:meth:`Console.answers`)."""
        return self._console.exchange(*lines)

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
        deadline = Deadline.in_seconds(timeout_s, f"testpmd PID {self.pid}'s links to come up")
        next_progress_s = PROGRESS_EVERY_S
        while True:
            ports = self.ports()
            down = [p.index for p in ports if not p.link_up]
            if not down:
                return ports
            if deadline.expired():
                raise TrafficGeneratorError(f"Port {down[0]} link still down after {timeout_s:.1f} s.")
            if deadline.elapsed_s() >= next_progress_s:
                log.info(
                    "Still waiting for %s (port %d down): %.0f s elapsed, %.0f s left.",
                    deadline.what,
                    down[0],
                    deadline.elapsed_s(),
                    deadline.remaining_s(),
                )
                next_progress_s += PROGRESS_EVERY_S
            time.sleep(min(_LINK_POLL_S, max(deadline.remaining_s(), 0.01)))

    def full_load_pps(self, frame_size_bytes: int) -> float:
        """Return the line rate of port 0 for ``frame_size_bytes`` [pps]: the least rate a trial may ask.

        A port that reports no speed (virtio_user) counts
        :data:`~ovsperf_lab.generators.api.DEFAULT_LINK_SPEED_MBPS`, as ``compare`` does.
        """
        speed = self._ports[0].link_speed_mbps if self._ports else None
        return line_rate_pps(frame_size_bytes, (speed or DEFAULT_LINK_SPEED_MBPS) * 1e6)

    def check_spec(self, spec: TrialSpec) -> int:
        """Return the frame size of ``spec`` [B] if this testpmd can run it (:func:`check_spec`).

        :raises TrafficGeneratorError: naming the field it cannot serve.
        """
        return check_spec(spec, self.flows, self.full_load_pps)

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
        ``start``'s answer to sending ``stop`` (:meth:`_send` states its error bound). Direction
        *p* → *q*: port *p*'s ``TX-packets``, port *q*'s ``RX-packets``.

        :raises TrafficGeneratorError: for a trial testpmd cannot run (:meth:`check_spec`, also
            another flow count than the running one), a link that is down before or after the
            trial, frames of another size than asked (a testpmd whose flowgen handles the FCS
            otherwise), a command testpmd refuses or an answer without what it must show
            (forwarding started; both ports' forward statistics), or when testpmd does not
            answer in time (it is then killed) or exits.
        """
        frame = self.check_spec(spec)
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
        check_frame_bytes(frame, end)
        known = bool(self._ports) and self._ports[0].link_speed_mbps is not None
        return trial_result(spec, end, tx_s, warmup_tx, refused, line_rate_known=known)

    def _send(self, duration_s: float, drain_s: float) -> tuple[float, dict[int, int]]:
        """Send at full load for ``duration_s`` [s], then only receive for ``drain_s`` [s].

        The TX time is measured here, from ``start``'s answer to sending ``stop``; testpmd prints
        none of its own (its ``stop`` shows counters only). testpmd launches the forwarding lcore
        before it answers ``start``, and stops it only after it has read ``stop``, so the true
        time lies between this and the time from sending ``start`` to ``stop``'s answer: their
        difference, the two commands' round trips, is logged (DEBUG). Its command thread shares
        the CPU with the forwarding lcore (``--lcores 0@cpu,1@cpu``), so a round trip may wait
        for a scheduler time slice. Measured on the 2-CPU lab VM (load 1.9): ``start`` 21–29 ms
        (about 20 ms of it the RX flush before forwarding starts, ``flush_fwd_rx_queues``),
        ``stop`` 4–11 ms; so the TX time is short by at most ~4 % of a 1 s trial, by a few ms in
        practice.

        :returns: the TX time [s], and port → frames its TX queue refused meanwhile (flowgen's
            ``TX-dropped``) [1].
        :raises TrafficGeneratorError: when testpmd refuses a command, does not start
            forwarding, its ``stop`` lacks a port's forward statistics, or it does not answer in
            time or exits.
        """
        asked = time.monotonic()
        check_started(self._exchange("start"), "flowgen")
        started = time.monotonic()
        time.sleep(duration_s)
        stopped = time.monotonic()
        # One write: flowgen stops and rxonly starts polling with the least gap.
        stop, _, rxonly = self._console.answers("stop", "set fwd rxonly", "start")
        answered = self._console.answered_at[0]  # stop's answer: forwarding had stopped
        refused = forward_refused(stop)
        check_started(rxonly, "rxonly")
        time.sleep(drain_s)
        self._console.answers("stop", "set fwd flowgen")
        log.debug(
            "testpmd TX time %.4f s, at most %.4f s ('start' and 'stop' round trips %.4f s and %.4f s).",
            stopped - started,
            answered - asked,
            started - asked,
            answered - stopped,
        )
        return stopped - started, refused


def start(request: GeneratorRequest) -> TrafficGenerator:
    """Start testpmd flowgen serving the request's two vhost-user sockets, with its flow count.

    The EAL memory is raised to what the rings need (:func:`~ovsperf_lab.generators.api.pool_memory_mb`
    of the RX ring, which is twice the TX ring).

    :raises LabError: when a port's attachment is not a vhost-user server (NIC ports and a TG host
        over SSH are refused, naming the options), or testpmd does not start.
    :raises TrafficGeneratorError: when testpmd does not start (a start with a port missing,
        :class:`PortMissingError`, is tried twice).
    """
    if request.wire or request.ssh is not None:
        raise LabError(
            "Traffic generator 'testpmd' serves vhost-user sockets on this machine only: it cannot "
            "drive NIC ports ('--tg-port') or run on a TG host ('--tg-ssh'); use '--generator trafficgen'."
        )
    config = FlowgenConfig(
        sockets=request.sockets(),
        cpu=request.cpu,
        file_prefix=request.file_prefix,
        queues=request.queues,
        ring_size=request.ring_size,
    )
    memory_mb = max(request.memory_mb, pool_memory_mb(2, request.queues, config.rx_ring_size()))
    config = dataclasses.replace(config, memory_mb=memory_mb)
    try:
        return FlowgenGenerator(config, request.flows)
    except PortMissingError as err:  # closed, nothing left; a second failure is raised
        log.warning("%s Starting testpmd once more.", err)
        return FlowgenGenerator(config, request.flows)


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
