"""Run a planned scenario: sandboxed OVS, topology, forwarder, generator, searches, results.

Everything started is recorded in the run's :class:`~ovsperf_lab.state.LabRunState` and torn down
in ``finally`` blocks: on success, on an error, on Ctrl-C or SIGTERM (the CLI turns SIGTERM into
``KeyboardInterrupt``), and when the generator or OVS dies mid-run. Results written so far stay
in the results directory; ``ovsperf-metadata.json`` (written last) says whether the run is
complete and, if not, why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from ovsperf_catalog.model import GuestLoopback, Topology, VsperfTest
from ovsperf_common.framemix import FrameSizeItem, item_line_rate_pps, item_name, item_text
from ovsperf_lab import topology
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.dpdk_generator import pool_mbufs, pool_memory_mb
from ovsperf_lab.errors import LabError, OvsError, SearchError, TrafficGeneratorError, VnfError
from ovsperf_lab.generator_api import (
    GeneratorFactory,
    GeneratorRequest,
    TrafficGenerator,
)
from ovsperf_lab.generators import generator_backend
from ovsperf_lab.latency import LatencyLevel, measure_levels
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.mlr import MlrIncompleteError, MlrResult, MlrTrial, relevance, search_mlr
from ovsperf_lab.ovs import OvsConfig, OvsSandbox
from ovsperf_lab.plan import FlowRules, LabPlan, SearchMethod, VnfKind
from ovsperf_lab.results import (
    Environment,
    FrameSizeResult,
    ResultsWriter,
    latency_trial_to_json,
    mlr_trial_to_json,
)
from ovsperf_lab.search import (
    SearchConfig,
    SearchObserver,
    TrialKind,
    TrialRecord,
    search_throughput,
)
from ovsperf_lab.state import DEFAULT_STATE_ROOT, LabRunState, release, renice
from ovsperf_lab.telemetry import APPCTL_TIMEOUT_S, TelemetryCollector, TelemetryGenerator
from ovsperf_lab.vnf import ForwarderProcess, make_testpmd_argv, qemu_argv

log = logging.getLogger(__name__)

DEFAULT_LINK_SPEED_MBPS = 10_000
"""Line rate assumed when the generator's ports report no speed [Mbit/s] (MoonGen's 10 GbE)."""

DEATH_GRACE_S = 3.0
"""How long to watch OVS for a death that explains a failure [s]."""

LINK_TIMEOUT_S = 90.0
"""Limit for OVS to connect to the generator's and forwarder's vhost-user sockets [s]."""


class RunObserver(SearchObserver):
    """Receive run progress (the CLI shows it with ``rich``); the default does nothing."""

    def frame_size_started(self, test: VsperfTest, what: str, number: int, total: int) -> None:
        """Be told that search ``number`` of ``total`` starts.

        :param what: ``'64 B'``, ``'imix'``; with a flow sweep ``'64 B, 1000 flows'``.
        """

    def frame_size_finished(self, test: VsperfTest, result: FrameSizeResult | None) -> None:
        """Be told a frame size ended (``None``: its search failed)."""

    def mlr_trial_finished(self, number: int, trial: MlrTrial) -> None:
        """Be told MLRsearch's trial ``number`` (1-based, per frame size) ended."""

    def latency_started(self, percent_of_pdr: float, load_pps: float, duration_s: float) -> None:
        """Be told a latency trial at ``percent_of_pdr`` [%] (``load_pps`` per direction) starts."""

    def generator_started(self, generator: TrafficGenerator) -> None:
        """Be told the generator runs (tests use it to inject crashes)."""


@dataclass
class LabRunOutcome:
    """What an ``ovsperf-lab run`` produced (not ``remote.run.RemoteRunOutcome``)."""

    results_dir: Path
    """The ``results_<timestamp>`` directory."""
    complete: bool
    """Whether every test and frame size finished."""
    reason: str | None
    """Why the run is incomplete."""
    results: dict[int, tuple[VsperfTest, list[FrameSizeResult]]] = field(default_factory=dict)
    """VSperf result index → the test and its rows in frame-size order (with ``--repeats``, one
    index per repeat of each test)."""
    csv_paths: list[Path] = field(default_factory=list)
    """Result CSVs written."""


class _TrialLogger(SearchObserver):
    """Forward search progress to the observer and write each trial to the results."""

    def __init__(
        self,
        writer: ResultsWriter,
        index: int,
        test: VsperfTest,
        gen: CrossCheckedGenerator,
        observer: RunObserver,
    ) -> None:
        self.writer = writer
        self.index = index
        self.test = test
        self.gen = gen
        self.observer = observer

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        self.observer.trial_started(index, kind, rate_pps, duration_s)

    def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
        check = self.gen.last.to_json() if self.gen.last is not None else None
        self.writer.add_trial(self.index, self.test, record, check)
        self.observer.trial_finished(record, best_pass_pps)


def _environment(plan: LabPlan, facts: MachineFacts, ovs_version: str, dpdk_version: str) -> Environment:
    vnf: str | None = None
    if plan.vnf is VnfKind.TESTPMD:
        vnf = f"testpmd (host process, io forwarding), Version: {dpdk_version}, GIT tag: None"
    elif plan.vnf is VnfKind.QEMU:
        vnf = f"QemuDpdkVhostUser ({plan.guest_image}), Version: None, GIT tag: None"
    cpus = plan.cpus
    return Environment(
        os_name=facts.os_name,
        kernel=facts.kernel,
        cpu_model=facts.cpu_model,
        cpu_count=len(facts.cpus),
        memory_kb=facts.memory_kb,
        cmdline=facts.cmdline,
        vswitch=plan.scenario.vswitch.value,
        ovs_version=ovs_version,
        dpdk_version=dpdk_version,
        generator=generator_backend(plan.options.generator).label,
        generator_version=None,
        nic=(
            "virtio_user (generator) <-> OVS dpdkvhostuserclient, no physical NIC, "
            f"rings of {plan.options.ring_size} descriptors"
        ),
        vnf=vnf,
        cpu_plan=(
            f"generator CPU {cpus.generator_cpu}, OVS lcore CPU {cpus.ovs_lcore_cpu}, OVS PMD CPUs "
            f"{','.join(map(str, cpus.pmd_cpus))}"
            + (f", forwarder CPU {cpus.vnf_cpu}" if cpus.vnf_cpu is not None else "")
        ),
    )


def _start_vnf(
    plan: LabPlan, state: LabRunState, facts: MachineFacts, lay: topology.Layout
) -> ForwarderProcess:
    cpu = plan.cpus.vnf_cpu if plan.cpus.vnf_cpu is not None else plan.cpus.generator_cpu
    sockets = (lay.vnf_ports[0].socket, lay.vnf_ports[1].socket)
    if plan.vnf is VnfKind.QEMU and plan.guest_image is not None and facts.qemu is not None:
        guest = plan.scenario.guest
        argv = qemu_argv(
            binary=facts.qemu,
            image=plan.guest_image,
            cpu=cpu,
            vcpus=guest.vcpus if guest else 2,
            memory_mb=min(guest.memory_mb if guest else 2048, 2048),
            sockets=sockets,
            queues=plan.queues,
            serial_log=state.run_dir / "guest-serial.log",
        )
        name = "qemu"
    else:
        ring = plan.options.ring_size
        argv = make_testpmd_argv(
            binary=facts.testpmd or "dpdk-testpmd",
            cpu=cpu,
            file_prefix=state.new_file_prefix("vnf"),
            memory_mb=max(plan.options.vnf_memory_mb, pool_memory_mb(len(sockets), plan.queues, ring)),
            sockets=sockets,
            queues=plan.queues,
            queue_size=ring,
            total_mbufs=pool_mbufs(len(sockets), plan.queues, ring),
        )
        name = "vnf-testpmd"
    vnf = ForwarderProcess(state, name, argv, state.run_dir / f"{name}.log")
    vnf.start()
    return vnf


def _search_config(
    plan: LabPlan, frame_size: FrameSizeItem, flows: int, link_speed_mbps: int
) -> SearchConfig:
    max_rate = item_line_rate_pps(frame_size, link_speed_mbps * 1e6)
    return SearchConfig(
        frame_size_bytes=frame_size,
        max_rate_pps=max_rate,
        rate_granularity_pps=max_rate * plan.options.granularity_percent / 100.0,
        loss_ratio_limit=plan.loss_ratio_limit,
        search_trial_s=plan.search_trial_s,
        validation_trial_s=plan.validation_trial_s,
        flows=_flows(plan, flows),
        drain_s=plan.options.drain_s,
        max_trials=plan.options.max_trials,
    )


def _search_text(plan: LabPlan, size: FrameSizeItem, flows: int) -> str:
    """Return what one search measures, for progress lines: ``'64 B'`` or ``'imix, 1000 flows'``."""
    return item_text(size) + (f", {flows} flows" if plan.options.flow_sweep else "")


def _flows(plan: LabPlan, flows: int) -> int:
    """Return the flows per direction a search at ``flows`` sends [1].

    At least one per queue, so that every queue carries traffic.
    """
    return max(flows, plan.queues)


def _check_rings(generator: TrafficGenerator, ring_size: int) -> None:
    """Log a WARNING when a generator port runs with rings other than ``ring_size`` [descriptors].

    A smaller ring than asked for makes zero-loss trials fail on every scheduler hiccup (a
    virtio_user port once ran with 1024 of its 4096 descriptors: the driver takes the smaller of
    ``queue_size`` and the queue setup's count).
    """
    for port in generator.ports():
        for kind, got in (("RX", port.rx_descriptors), ("TX", port.tx_descriptors)):
            if got is not None and got != ring_size:
                log.warning(
                    "Generator port %d runs with a %s ring of %d descriptors, not the %d asked for.",
                    port.index,
                    kind,
                    got,
                    ring_size,
                )


def _root_cause(err: LabError, ovs: OvsSandbox | None, vnf: ForwarderProcess | None) -> LabError:
    """Return the error naming the component that died, if one did (OVS before the VNF).

    A failed OVS command or a vanished vhost-user peer often comes a moment before the dying
    daemon can be reaped, so OVS is watched for up to :data:`DEATH_GRACE_S`.
    """
    if ovs is not None:
        deadline = time.monotonic() + DEATH_GRACE_S
        while True:
            try:
                ovs.check_alive()
            except OvsError as dead:
                return dead
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    if vnf is not None:
        try:
            vnf.check_alive()
        except VnfError as dead:
            return dead
    return err


def run_lab(
    plan: LabPlan,
    facts: MachineFacts,
    *,
    output_root: Path,
    state_root: Path = DEFAULT_STATE_ROOT,
    generator_factory: GeneratorFactory | None = None,
    observer: RunObserver | None = None,
) -> LabRunOutcome:
    """Run every test and frame size of ``plan`` and write the results directory.

    :param generator_factory: starts the generator; ``None``: the backend ``plan.options.generator``
        names (:mod:`ovsperf_lab.generators`).
    :returns: the outcome; ``complete`` is false when some frame size's search failed (the
        others are still reported).
    :raises LabError: (OvsError, TrafficGeneratorError, VnfError, LabError) when the run
        had to stop; the partial results are kept and marked incomplete, everything started is
        torn down.
    :raises KeyboardInterrupt: on Ctrl-C/SIGTERM, after the same teardown.
    """
    obs = observer or RunObserver()
    backend = generator_backend(plan.options.generator)
    factory = generator_factory or backend.start
    for warning in plan.warnings:
        log.warning("%s", warning)
    started = datetime.now()
    writer = ResultsWriter(output_root, started)
    run_id = f"ovsperf-lab-{started:%Y%m%d%H%M%S}-{os.getpid()}"
    state = LabRunState.create(state_root, run_id)
    state.results_dir = str(writer.path)
    state.save()
    outcome = LabRunOutcome(writer.path, False, None)
    reason: str | None = "the run stopped before it finished"
    failures: list[str] = []
    ovs: OvsSandbox | None = None
    versions = ("unknown", "unknown")
    try:
        ovs = OvsSandbox(
            state,
            OvsConfig(
                lcore_cpu=plan.cpus.ovs_lcore_cpu,
                pmd_cpus=plan.cpus.pmd_cpus,
                file_prefix=state.new_file_prefix("ovs"),
                socket_mem_mb=plan.options.ovs_socket_mem_mb,
                vswitchd=facts.ovs_vswitchd_dpdk or OvsConfig.vswitchd,
            ),
        )
        ovs.start()
        for daemon_pid in ovs.pids.values():
            renice(daemon_pid, plan.options.nice)
        versions = ovs.versions()
        env = _environment(plan, facts, *versions)
        runner = _TestRunner(plan, facts, state, ovs, writer, env, factory, obs, outcome)
        repeats = plan.options.repeats
        for repeat in range(repeats):
            if repeats > 1:
                log.info("Repeat %d of %d.", repeat + 1, repeats)
            for number, test in enumerate(plan.tests):
                index = repeat * len(plan.tests) + number
                failures += runner.run(index, test)
        outcome.complete = not failures
        reason = None if not failures else "; ".join(failures)
        outcome.reason = reason
        return outcome
    except KeyboardInterrupt:
        reason = "interrupted (Ctrl-C or SIGTERM)"
        log.error("Run interrupted; tearing down and keeping the partial results in '%s'.", writer.path)
        raise
    except LabError as err:
        reason = str(err)
        raise
    finally:
        if ovs is not None:
            ovs.stop()
            writer.copy_log(ovs.vswitchd_log, f"vswitchd_{writer.timestamp}.log")
            writer.copy_log(ovs.ovsdb_log, f"ovsdb-server_{writer.timestamp}.log")
        for name in ("vnf-testpmd.log", "qemu.log", "guest-serial.log"):
            writer.copy_log(state.run_dir / name, f"{name.removesuffix('.log')}_{writer.timestamp}.log")
        for line in release(state):
            log.debug("Teardown: %s.", line)
        writer.finish(
            scenario=plan.scenario.name,
            complete=reason is None,
            reason=reason,
            hosts={"dut": socket.gethostname(), "trafficgen": f"{backend.label} (same machine)"},
            extra={
                "test_names": [t.value for t in plan.tests],
                "frame_sizes_bytes": [item_name(item) for item in plan.frame_sizes_bytes],
                "loss_ratio_limit": plan.loss_ratio_limit,
                "search_trial_s": plan.search_trial_s,
                "validation_trial_s": plan.validation_trial_s,
                "granularity_percent": plan.options.granularity_percent,
                "flows": plan.options.flows,
                "flow_sweep": list(plan.options.flow_sweep),
                "flow_rules": plan.options.flow_rules.value,
                "drain_s": plan.options.drain_s,
                "queues": plan.queues,
                "ring_size": plan.options.ring_size,
                "vnf": plan.vnf.value if plan.vnf else None,
                "ovs_version": versions[0],
                "dpdk_version": versions[1],
                "kernel": facts.kernel,
                "cpu_model": facts.cpu_model,
                "warnings": list(plan.warnings),
                "repeats": plan.options.repeats,
                "search_method": plan.options.search.value,
                "mlr": None
                if plan.options.search is not SearchMethod.MLR
                else {
                    "goals_percent": sorted(plan.options.goals_percent),
                    "goal_width_percent": plan.options.goal_width_percent,
                    "exceed_ratio": plan.options.exceed_ratio,
                    "final_trial_s": plan.options.final_trial_s,
                    "duration_sum_s": plan.options.duration_sum_s,
                    "search_duration_max_s": plan.options.search_duration_max_s,
                    "latency_levels_percent": list(plan.options.latency_levels_percent),
                    "latency_trial_s": plan.options.latency_trial_s,
                },
                # Per frame size: every goal's throughput (docs/results-format.md).
                "throughput": {
                    f"result_{index}_{test.value}": [r.to_json() for r in rows]
                    for index, (test, rows) in outcome.results.items()
                },
            },
        )
        log.info(
            "Results %s in '%s'.", "complete" if reason is None else f"INCOMPLETE ({reason})", writer.path
        )


@dataclass
class _TestRunner:
    """Hold what every test of one run shares: the plan, the machine, OVS, the writer, the observer."""

    plan: LabPlan
    """The run's plan."""
    facts: MachineFacts
    """This machine."""
    state: LabRunState
    """The run's state (tracked processes, sockets, hugepage prefixes)."""
    ovs: OvsSandbox
    """The running OVS sandbox."""
    writer: ResultsWriter
    """Writes the VSperf results directory."""
    env: Environment
    """The DUT environment written with every test's results."""
    generator_factory: GeneratorFactory
    """Starts a traffic generator for a test."""
    obs: RunObserver
    """Receives progress."""
    outcome: LabRunOutcome
    """What the run produced so far (results per test index, CSV paths)."""

    def run(self, index: int, test: VsperfTest) -> list[str]:
        """Run one test (all frame sizes) as VSperf result ``index``; return failures as sentences."""
        plan, facts, state, ovs, writer = self.plan, self.facts, self.state, self.ovs, self.writer
        env, generator_factory, obs, outcome = self.env, self.generator_factory, self.obs, self.outcome
        lay = topology.layout(test.topology, state.run_dir / "sock")
        topology.build(ovs, lay, plan.queues, match_udp=plan.options.flow_rules is FlowRules.UDP)
        for daemon_pid in ovs.pids.values():  # PMD threads exist only once ports are added
            renice(daemon_pid, plan.options.nice)
        guest: GuestLoopback | None = None
        if test.topology is not Topology.P2P:
            guest = plan.scenario.guest.loopback if plan.scenario.guest else GuestLoopback.TESTPMD
            if plan.vnf is VnfKind.TESTPMD:
                guest = GuestLoopback.TESTPMD
        vnf: ForwarderProcess | None = None
        generator: TrafficGenerator | None = None
        failures: list[str] = []
        rows: list[FrameSizeResult] = []
        test_start = datetime.now()

        def write(*, complete: bool) -> Path:
            """Rewrite the test's CSV/.md/.rst with the rows so far (partial results survive a crash)."""
            return writer.write_test(
                index,
                test,
                rows,
                env=env,
                start=test_start,
                stop=datetime.now(),
                guest=guest,
                complete=complete,
            )

        try:
            if test.topology is not Topology.P2P:
                vnf = _start_vnf(plan, state, facts, lay)
            generator = generator_factory(
                GeneratorRequest(
                    ports=lay.attachments(),
                    cpu=plan.cpus.generator_cpu,
                    file_prefix=state.new_file_prefix("tg"),
                    memory_mb=plan.options.generator_memory_mb,
                    queues=plan.queues,
                    ring_size=plan.options.ring_size,
                )
            )
            if generator.pid is not None:
                state.track_process(generator_backend(plan.options.generator).label, generator.pid)
                renice(generator.pid, plan.options.nice)
            if vnf is not None and vnf.pid is not None:
                renice(vnf.pid, plan.options.nice)
            obs.generator_started(generator)
            generator.wait_link(timeout_s=LINK_TIMEOUT_S)
            # OVS must see the forwarder's ports up too, or the first trials measure a broken path.
            if lay.vnf_ports:
                topology.wait_links_up(ovs, lay, timeout_s=LINK_TIMEOUT_S, ports=lay.vnf_ports)
            if vnf is not None:
                vnf.check_alive()
            _check_rings(generator, plan.options.ring_size)
            speed = generator.ports()[0].link_speed_mbps or DEFAULT_LINK_SPEED_MBPS
            mlr = plan.options.search is SearchMethod.MLR
            measured: TrafficGenerator = generator
            if plan.options.telemetry:
                measured = self._telemetry(index, test, generator, mlr, {p.ofport: p.name for p in lay.ports})
            checked = CrossCheckedGenerator(
                measured,
                ovs,
                ovs.bridge,
                tuple(p.ofport for p in lay.generator_ports),
                max(plan.options.goals_percent) / 100.0 if mlr else plan.loss_ratio_limit,
            )
            rows_so_far: list[FrameSizeResult] = outcome.results.setdefault(index, (test, []))[1]
            searches = [(s, f) for f in plan.options.flow_counts for s in plan.frame_sizes_bytes]
            for number, (size, flows) in enumerate(searches, start=1):
                obs.frame_size_started(test, _search_text(plan, size, flows), number, len(searches))
                try:
                    row = (
                        self._mlr(index, test, checked, size, flows, speed)
                        if mlr
                        else self._binary(index, test, checked, size, flows, speed)
                    )
                except SearchError as err:
                    log.error("%s: %s", test.value, err)
                    failures.append(f"{test.value}: {err}")
                    obs.frame_size_finished(test, None)
                    continue
                rows_so_far.append(row)
                rows.append(row)
                writer.write_telemetry()
                outcome.csv_paths.append(write(complete=False))
                obs.frame_size_finished(test, row)
            if rows:
                write(complete=not failures)
        except (TrafficGeneratorError, VnfError, OvsError) as err:
            cause = _root_cause(err, ovs, vnf)
            if cause is err:
                raise
            raise cause from err
        finally:
            writer.write_telemetry()  # what was collected so far survives a failure
            if generator is not None:
                generator.close()
            if vnf is not None:
                vnf.stop()
            with contextlib.suppress(OvsError):
                ovs.check_alive()
                topology.remove(ovs)
        outcome.csv_paths = list(dict.fromkeys(outcome.csv_paths))
        return failures

    def _telemetry(
        self, index: int, test: VsperfTest, generator: TrafficGenerator, mlr: bool, names: dict[int, str]
    ) -> TrafficGenerator:
        """Wrap ``generator`` so that every final (MLRsearch) or validation trial records telemetry.

        :param names: OpenFlow port number → interface name of the ports to count.
        """
        ovs = self.ovs
        processes = {"ovs-vswitchd": ovs.pids["ovs-vswitchd"]}
        if generator.pid is not None:
            processes["generator"] = generator.pid

        def ports() -> dict[str, dict[str, float | None]]:
            return {
                names[number]: {k: None if v is None else float(v) for k, v in vars(counters).items()}
                for number, counters in ovs.port_counters(ovs.bridge).items()
                if number in names
            }

        collector = TelemetryCollector(
            lambda *args: ovs.appctl(*args, timeout_s=APPCTL_TIMEOUT_S), ports, processes
        )
        min_duration = self.plan.options.final_trial_s if mlr else self.plan.validation_trial_s
        return TelemetryGenerator(
            generator,
            collector,
            min_duration,
            lambda telemetry: self.writer.add_telemetry(index, test, telemetry.to_json()),
        )

    def _binary(
        self,
        index: int,
        test: VsperfTest,
        generator: CrossCheckedGenerator,
        size: FrameSizeItem,
        flows: int,
        speed: int,
    ) -> FrameSizeResult:
        """Search ``size`` [B] (or a mix) at ``flows`` with the lua-compatible binary search; return its row.

        :raises SearchError: when the search ends without a validated rate.
        """
        found = search_throughput(
            generator,
            _search_config(self.plan, size, flows, speed),
            log=logging.getLogger("ovsperf_lab.search"),
            observer=_TrialLogger(self.writer, index, test, generator, self.obs),
        )
        return FrameSizeResult.from_binary(found, speed)

    def _mlr(
        self,
        index: int,
        test: VsperfTest,
        generator: CrossCheckedGenerator,
        size: FrameSizeItem,
        flows: int,
        speed: int,
    ) -> FrameSizeResult:
        """Search ``size`` [B] (or a mix) at ``flows`` with MLRsearch, then latency at PDR shares.

        Every trial is written to ``ovsperf-trials.json`` as it ends; after the search each is
        marked with the goals whose relevant bound it is.

        :raises SearchError: (:class:`~ovsperf_lab.mlr.MlrIncompleteError`) when the search
            stopped before its goals reached their width; the message has the bounds found.
        """
        options = self.plan.options
        config = replace(
            options.mlr_config(size, item_line_rate_pps(size, speed * 1e6)), flows=_flows(self.plan, flows)
        )
        positions: list[tuple[int, MlrTrial]] = []

        def record(trial: MlrTrial) -> None:
            position = self.writer.add_trial_json(index, test, mlr_trial_to_json(trial, size, config.flows))
            positions.append((position, trial))
            self.obs.mlr_trial_finished(len(positions), trial)

        try:
            found = search_mlr(generator, config, log=logging.getLogger("ovsperf_lab.mlr"), on_trial=record)
        except MlrIncompleteError as err:
            if err.partial is not None:
                self._mark(positions, err.partial)
            raise
        self._mark(positions, found)
        pdr = max(found.goals, key=lambda g: g.loss_ratio_limit)
        levels: tuple[LatencyLevel, ...] = ()
        if options.latency_levels_percent and pdr.lower_bound_pps:
            levels = measure_levels(
                generator,
                frame_size_bytes=size,
                pdr_pps=pdr.lower_bound_pps,
                levels_percent=options.latency_levels_percent,
                duration_s=options.latency_trial_s,
                flows=config.flows,
                drain_s=config.drain_s,
                log=logging.getLogger("ovsperf_lab.latency"),
                on_start=self.obs.latency_started,
            )
            for level in levels:
                self.writer.add_trial_json(index, test, latency_trial_to_json(level, size, config.flows))
        elif options.latency_levels_percent:
            log.warning("%s %s: no PDR load found, so no latency trials.", test.value, item_text(size))
        row = FrameSizeResult.from_mlr(found, levels, speed)
        if levels and pdr.lower_bound_pps:
            self.writer.write_latency(
                index,
                test,
                row,
                pdr_loss_goal_percent=pdr.loss_ratio_limit * 100.0,
                pdr_pps=pdr.lower_bound_pps,
            )
        return row

    def _mark(self, positions: list[tuple[int, MlrTrial]], result: MlrResult) -> None:
        """Write each trial's goal relevance (``relevant_to``) into ``ovsperf-trials.json``."""
        self.writer.update_trials(
            {position: {"relevant_to": relevance(result, trial)} for position, trial in positions}
        )
