"""Run a planned scenario: one OVS per run, a testbed per test, searches, results.

The sandboxed OVS, each test's topology, forwarder and generator come from
:mod:`ovsperf_lab.testbed`. Everything started is recorded in the run's
:class:`~ovsperf_lab.state.LabRunState` and torn down on leaving the testbed: on success, on an
error, on Ctrl-C or SIGTERM (the CLI turns SIGTERM into ``KeyboardInterrupt``), and when the
generator or OVS dies mid-run. Results written so far stay in the results directory;
``ovsperf-metadata.json`` (written last) says whether the run is complete and, if not, why.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ovsperf_catalog.model import GuestLoopback, Topology, VsperfTest
from ovsperf_common.framemix import item_name
from ovsperf_common.labfiles import GUEST_BOOT_KEY
from ovsperf_lab import conntrack, overlay
from ovsperf_lab.conntrack import ConntrackGenerator, ConntrackRules
from ovsperf_lab.crosscheck import CrossCheckedGenerator
from ovsperf_lab.errors import LabError, SearchError
from ovsperf_lab.generators.api import GeneratorFactory, TrafficGenerator
from ovsperf_lab.generators.registry import generator_backend
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.measure import MeasureObserver, measure_binary, measure_mlr, search_text
from ovsperf_lab.overlay import OverlayGenerator, OverlaySpec
from ovsperf_lab.ovs import OVS_DPDK_VSWITCHD, OvsSandbox, PortCounters
from ovsperf_lab.plan import LabPlan, SearchMethod, VnfKind
from ovsperf_lab.resultrow import Environment, FrameSizeResult
from ovsperf_lab.results import ResultPart, ResultsSink, ResultsWriter
from ovsperf_lab.state import DEFAULT_STATE_ROOT, LabRunState, release
from ovsperf_lab.telemetry import APPCTL_TIMEOUT_S, TelemetryCollector, TelemetryGenerator
from ovsperf_lab.testbed import Switch, SwitchBuild, Testbed, TestbedConfig, open_testbed

log = logging.getLogger(__name__)


TELEMETRY_COUNTERS = ("rx_packets", "rx_dropped", "tx_packets", "tx_dropped")
"""The port counters telemetry records per port (``ovsperf-telemetry.json``)."""


class RunObserver(MeasureObserver):
    """Receive run progress (the CLI shows it with ``rich``); the default does nothing."""

    def frame_size_started(self, test: VsperfTest, what: str, number: int, total: int) -> None:
        """Be told that search ``number`` of ``total`` starts.

        :param what: ``'64 B'``, ``'imix'``; with a flow sweep ``'64 B, 1000 flows'``.
        """

    def frame_size_finished(self, test: VsperfTest, result: FrameSizeResult | None) -> None:
        """Be told a frame size ended (``None``: its search failed)."""

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
    guest_boot_s: dict[str, list[float]] = field(default_factory=dict)
    """``result_<index>_<test>`` → each QEMU guest's boot time in chain order [s] (metadata
    :data:`~ovsperf_common.labfiles.GUEST_BOOT_KEY`); empty without guests."""


def _environment(plan: LabPlan, facts: MachineFacts, ovs_version: str, dpdk_version: str) -> Environment:
    vnf: str | None = None
    if plan.vnf is VnfKind.TESTPMD:
        vnf = f"testpmd (host process, io forwarding), Version: {dpdk_version}, GIT tag: None"
    elif plan.vnf is VnfKind.QEMU:
        accel = f", {plan.guest.accel.value}" if plan.guest is not None else ""
        vnf = f"QemuDpdkVhostUser ({plan.guest_image}{accel}), Version: None, GIT tag: None"
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
            if not plan.options.wire
            else f"OVS type=dpdk {' / '.join(plan.options.dut_ports)} <-> TG "
            f"{' / '.join(plan.options.tg_ports)} ({_tg_host(plan)})"
        ),
        vnf=vnf,
        cpu_plan=(
            (
                f"generator CPU {cpus.generator_cpu}"
                if plan.options.tg_ssh is None
                else f"generator CPUs {plan.options.tg_cpus or cpus.generator_cpu} on TG host "
                f"{plan.options.tg_ssh}"
            )
            + f", OVS lcore CPU {cpus.ovs_lcore_cpu}, OVS PMD CPUs "
            f"{','.join(map(str, cpus.pmd_cpus))}"
            + (
                f", forwarder CPUs {','.join(map(str, cpus.vnf_cpus))} (chained)"
                if len(cpus.vnf_cpus) > 1
                else f", forwarder CPU {cpus.vnf_cpu}"
                if cpus.vnf_cpu is not None
                else ""
            )
        ),
    )


CLOCK_NOTE = (
    "Latency is measured on the TG: the generator timestamps each frame as it leaves one TG port and "
    "again as it comes back through the DUT on the other, with the TG's one clock (TSC); frames loop "
    "TG -> DUT -> TG, so no clock of the DUT is involved and the cables' delay is included."
)
"""What two-host results say about their latency (metadata ``two_host.clock``)."""


def _tg_host(plan: LabPlan) -> str:
    """Return the TG host of a two-host run: ``[USER@]HOST[:PORT]``, or ``'(same machine)'``."""
    return str(plan.options.tg_ssh) if plan.options.tg_ssh is not None else "(same machine)"


def _two_host_metadata(plan: LabPlan) -> dict[str, Any]:
    """Return the metadata keys of a two-host run (``engine``, ``two_host``); none otherwise."""
    options = plan.options
    if not options.wire:
        return {}
    return {
        "engine": "ovsperf",
        "two_host": {
            "tg_host": _tg_host(plan),
            "dut_ports": list(options.dut_ports),
            "tg_ports": list(options.tg_ports),
            "tg_cpus": options.tg_cpus,
            "clock": CLOCK_NOTE,
        },
    }


def _guest(plan: LabPlan, test: VsperfTest) -> GuestLoopback | None:
    """Return what loops frames back in ``test``'s guest (the CSV's ``guest`` column), ``None``: no guest."""
    if test.topology in (Topology.P2P, Topology.OP2P):
        return None
    if plan.guest is not None:  # what the guest image runs, which may not be what the scenario asks
        return plan.guest.loopback
    if plan.vnf is VnfKind.TESTPMD or plan.scenario.guest is None:
        return GuestLoopback.TESTPMD
    return plan.scenario.guest.loopback


def run_lab(
    plan: LabPlan,
    facts: MachineFacts,
    *,
    output_root: Path,
    state_root: Path = DEFAULT_STATE_ROOT,
    generator_factory: GeneratorFactory | None = None,
    generator_host: str | None = None,
    observer: RunObserver | None = None,
) -> LabRunOutcome:
    """Run every test and frame size of ``plan`` and write the results directory.

    :param generator_factory: starts the generator; ``None``: the backend ``plan.options.generator``
        names (:mod:`ovsperf_lab.generators.registry`).
    :param generator_host: where that generator runs when not here nor on ``--tg-ssh`` (a TRex
        server's ``HOST:PORT``), for the metadata's ``hosts.trafficgen``.
    :returns: the outcome; ``complete`` is false when some frame size's search failed (the
        others are still reported).
    :raises LabError: (OvsError, TrafficGeneratorError, VnfError, LabError) when the run
        had to stop; the partial results are kept and marked incomplete, everything started is
        torn down.
    :raises KeyboardInterrupt: on Ctrl-C/SIGTERM, after the same teardown.
    """
    obs = observer or RunObserver()
    backend = generator_backend(plan.options.generator)
    where = generator_host if generator_host is not None else plan.options.tg_ssh
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
    switch: Switch | None = None
    versions = ("unknown", "unknown")
    try:
        switch = Switch(
            state,
            TestbedConfig.for_plan(plan, facts),
            SwitchBuild(vswitchd=facts.ovs_vswitchd_dpdk or OVS_DPDK_VSWITCHD),
        )
        with switch:
            versions = switch.versions
            env = _environment(plan, facts, *versions)
            runner = _TestRunner(plan, switch, writer, env, factory, obs, outcome)
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
        if switch is not None:
            switch.ovs.stop()  # idempotent: stopped already unless a crash left it
            writer.copy_log(switch.ovs.vswitchd_log, f"vswitchd_{writer.timestamp}.log")
            writer.copy_log(switch.ovs.ovsdb_log, f"ovsdb-server_{writer.timestamp}.log")
        for name in ("vnf-testpmd.log", "vnf-testpmd-2.log", "qemu.log", "qemu-2.log", "guest-serial.log",
                     "guest-2-serial.log"):  # fmt: skip
            writer.copy_log(state.run_dir / name, f"{name.removesuffix('.log')}_{writer.timestamp}.log")
        for line in release(state):
            log.debug("Teardown: %s.", line)
        writer.finish(
            scenario=plan.scenario.name,
            complete=reason is None,
            reason=reason,
            hosts={
                "dut": socket.gethostname(),
                "trafficgen": f"{backend.label} "
                + (f"on {where}" if where is not None else "(same machine)"),
            },
            extra={
                **_two_host_metadata(plan),
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
                **({GUEST_BOOT_KEY: outcome.guest_boot_s} if outcome.guest_boot_s else {}),
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
    """Hold what every test of one run shares: the plan, OVS, the results sink, the observer."""

    plan: LabPlan
    """The run's plan."""
    switch: Switch
    """The running OVS sandbox every test's testbed is built in."""
    sink: ResultsSink
    """Receives every trial as it ends and every search's row (the VSperf results directory)."""
    env: Environment
    """The DUT environment written with every test's results."""
    generator_factory: GeneratorFactory
    """Starts a traffic generator for a test."""
    obs: RunObserver
    """Receives progress."""
    outcome: LabRunOutcome
    """What the run produced so far (results per test index, CSV paths)."""

    @property
    def ovs(self) -> OvsSandbox:
        """Return the running OVS sandbox."""
        return self.switch.ovs

    def run(self, index: int, test: VsperfTest) -> list[str]:
        """Run one test (every search) as VSperf result ``index``; return failures as sentences."""
        plan, obs = self.plan, self.obs
        started = datetime.now()
        searches = [(s, f) for f in plan.options.flow_counts for s in plan.frame_sizes_bytes]
        measure = measure_mlr if plan.options.search is SearchMethod.MLR else measure_binary
        failures: list[str] = []
        tunnel = OverlaySpec.for_test(
            plan.scenario.name, test, plan.scenario.tunnel_type, plan.options.tunnel_options
        )
        with open_testbed(
            self.switch,
            test.topology,
            self.generator_factory,
            on_generator=obs.generator_started,
            tunnel=tunnel,
        ) as bed:
            part = ResultPart(
                index,
                test,
                self.env,
                _guest(plan, test),
                started,
                len(searches),
                tunnel_type=tunnel.tunnel_type if tunnel is not None else None,
            )
            rows = self.outcome.results.setdefault(index, (test, []))[1]
            if bed.guest_boot_s:
                self.outcome.guest_boot_s[f"result_{index}_{test.value}"] = [
                    round(s, 3) for s in bed.guest_boot_s
                ]
            rules = self._conntrack(test, bed)
            generator = self._generator(part, bed, rules, tunnel)
            for number, (size, flows) in enumerate(searches, start=1):
                obs.frame_size_started(test, search_text(plan, size, flows), number, len(searches))
                row: FrameSizeResult | None = None
                try:
                    row = measure(
                        generator,
                        size,
                        flows,
                        bed.link_speed_mbps,
                        plan,
                        on_trials=functools.partial(self.sink.trials, part),
                        observer=obs,
                        bidirectional=test.bidirectional,
                    )
                    rows.append(row)
                except SearchError as err:
                    log.error("%s: %s", test.value, err)
                    failures.append(f"{test.value}: {err}")
                csv_path = self.sink.row(part, row)
                if csv_path is not None and csv_path not in self.outcome.csv_paths:
                    self.outcome.csv_paths.append(csv_path)
                obs.frame_size_finished(test, row)
        return failures

    def _conntrack(self, test: VsperfTest, bed: Testbed) -> ConntrackRules | None:
        """Install a conntrack test's rules on ``bed`` (:mod:`ovsperf_lab.conntrack`); else return ``None``.

        :raises LabError: naming the scenario and OVS's message when OVS refuses a rule.
        """
        if test.conntrack is None:
            return None
        rules = ConntrackRules(self.plan.scenario.name, test, self.plan.options.ct_zone)
        conntrack.install(self.ovs, bed.layout, rules)
        return rules

    def _generator(
        self,
        part: ResultPart,
        bed: Testbed,
        rules: ConntrackRules | None = None,
        tunnel: OverlaySpec | None = None,
    ) -> CrossCheckedGenerator:
        """Return the test's generator: with telemetry (unless turned off), cross-checked with OVS.

        A conntrack test's (``rules``) also flushes and ramps up conntrack before each trial and
        checks its connection count after (:class:`~ovsperf_lab.conntrack.ConntrackGenerator`).
        An overlay test's (``tunnel``) sends one way, tunnel frames for decapsulation
        (:class:`~ovsperf_lab.overlay.OverlayGenerator`), and its cross-check reads both bridges'
        counters and checks the frames' sizes.
        """
        measured: TrafficGenerator = bed.generator
        counters = None
        if tunnel is not None:
            measured = OverlayGenerator(bed.generator, tunnel)
            counters = functools.partial(overlay.port_counters, self.ovs)
        if self.plan.options.telemetry:
            names = {p.ofport: p.name for p in bed.layout.ports}
            if tunnel is not None:
                names[overlay.TUNNEL_OFPORT] = overlay.TUNNEL_PORT
            measured = self._telemetry(part, measured, names, counters)
        ovs = self.ovs
        ports = bed.layout.generator_ports
        if rules is not None:
            return ConntrackGenerator(
                measured,
                ovs,
                tuple(p.ofport for p in ports),
                self.plan.max_loss_ratio,
                rules=rules,
                ramp=bed.generator,
            )
        return CrossCheckedGenerator(
            measured,
            ovs,
            ovs.bridge,
            tuple(p.ofport for p in ports),
            self.plan.max_loss_ratio,
            wire_names=(ports[0].name, ports[1].name) if bed.layout.wire else None,
            counters=counters,
            delivered_delta_bytes=tunnel.delivered_delta_bytes if tunnel is not None else None,
            cabling_generator=bed.generator if tunnel is not None else None,
        )

    def _telemetry(
        self,
        part: ResultPart,
        generator: TrafficGenerator,
        names: dict[int, str],
        counters: Callable[[], dict[int, PortCounters]] | None = None,
    ) -> TrafficGenerator:
        """Wrap ``generator`` so that every final (MLRsearch) or validation trial records telemetry.

        :param names: OpenFlow port number → interface name of the ports to count.
        :param counters: reads the ports' counters (default: the bridge's; an overlay's two bridges).
        """
        ovs = self.ovs
        processes = {"ovs-vswitchd": ovs.pids["ovs-vswitchd"]}
        if generator.pid is not None and generator.host is None:  # a TG host's ssh client is not it
            processes["generator"] = generator.pid

        def read() -> dict[int, PortCounters]:
            return counters() if counters is not None else ovs.port_counters(ovs.bridge)

        def ports() -> dict[str, dict[str, float | None]]:
            return {
                names[number]: {
                    k: None if v is None else float(v) for k, v in vars(c).items() if k in TELEMETRY_COUNTERS
                }
                for number, c in read().items()
                if number in names
            }

        collector = TelemetryCollector(
            lambda *args: ovs.appctl(*args, timeout_s=APPCTL_TIMEOUT_S), ports, processes
        )
        mlr = self.plan.options.search is SearchMethod.MLR
        min_duration = self.plan.options.final_trial_s if mlr else self.plan.validation_trial_s
        return TelemetryGenerator(
            generator,
            collector,
            min_duration,
            lambda telemetry: self.sink.telemetry(part, telemetry.to_json()),
        )
