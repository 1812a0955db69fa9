"""Command line of the local lab: ``ovsperf-lab run|doctor|list|cleanup``."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from pathlib import Path
from typing import Any

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_common.errors import FieldError
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.framemix import FrameSizeItem, parse_frame_sizes
from ovsperf_common.runner import add_verbosity_options, one_line, run_command, sigterm_interrupts
from ovsperf_lab.bisect import options as bisect_options
from ovsperf_lab.cleanup import cleanup
from ovsperf_lab.compare.config import CompareConfig, add_round_options
from ovsperf_lab.compare.cpusteal import CpuSteal
from ovsperf_lab.compare.sides import SideSpec, parse_other_config
from ovsperf_lab.devargs import parse_devargs, pci_port_problem
from ovsperf_lab.doctor import diagnose, scenario_readiness
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.registry import DEFAULT_GENERATOR, GENERATORS, generator_backend
from ovsperf_lab.generators.sshhost import DEFAULT_REMOTE_BINARY, SshTarget, probe
from ovsperf_lab.generators.trex import factory as trex_factory
from ovsperf_lab.generators.trex import server_line as trex_server_line
from ovsperf_lab.generators.trex_options import add_trex_options, refuse_in_compare, trex_options, trex_server
from ovsperf_lab.machine import parse_cpulist, probe_machine
from ovsperf_lab.model import MAX_FLOWS
from ovsperf_lab.plan import RING_SIZES, FlowRules, LabOptions, SearchMethod, plan_run
from ovsperf_lab.state import DEFAULT_STATE_ROOT
from ovsperf_lab.vnf import GuestAccel

# The run, compare and progress modules (MLRsearch, scipy, matplotlib, rich: ovsperf[lab]) are
# imported by the sub-command that needs them, inside the runner.

log = logging.getLogger("ovsperf_lab.cli")

DEFAULTS = LabOptions()
"""The defaults of every ``run`` option live in :class:`LabOptions`; the parser shows them."""

EPILOG = (
    "exit codes: 0 OK (run complete; doctor: all required checks pass); "
    "2 error (bad input, scenario refused, infrastructure failure, incomplete run, interrupted)"
)


def _frame_sizes(text: str | None) -> tuple[FrameSizeItem, ...] | None:
    """Parse ``--frame-sizes``: sizes and mixes (``ovsperf_common.framemix``); ``None`` stays ``None``.

    :raises LabError: naming the option, for any bad item.
    """
    if text is None:
        return None
    try:
        return parse_frame_sizes(text)
    except FieldError as err:
        raise LabError(f"Option '--frame-sizes': {err.reason}") from err


def _flow_counts(text: str) -> tuple[int, ...]:
    """Parse ``--flows``: one flow count, or a comma-separated sweep ``1,1000,1000000``.

    :raises LabError: naming the option, when an item is not a whole number.
    """
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise LabError(
            f"Option '--flows': '{text[:80]}' is not a whole number of flows or a comma-separated "
            "list of them."
        )
    return tuple(int(part) for part in parts)


def _percent_list(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of percentages") from err


COMPARE_EPILOG = (
    "exit codes: 0 no regression found (NO_CHANGE or IMPROVEMENT); 1 REGRESSION; 2 error (bad input, "
    "a side that cannot run, interrupted: the rounds so far are written)"
)


def _generator_option(parser: Any) -> None:
    """Add ``--generator NAME``: one of the registered backends (:mod:`ovsperf_lab.generators.registry`)."""
    parser.add_argument(
        "--generator",
        choices=list(GENERATORS),
        default=DEFAULT_GENERATOR,
        help="traffic generator: "
        + "; ".join(f"{b.name}: {b.summary}" for b in GENERATORS.values()).replace("%", "%%")
        + " (%(default)s)",
    )


def _compare_parser(sub: Any) -> None:
    """Add ``ovsperf-lab compare``: two sides measured in interleaved rounds (docs/lab.md)."""
    ab = sub.add_parser(
        "compare",
        help="did B change OVS's throughput? two OVS/DPDK builds or settings measured in interleaved rounds",
        epilog=COMPARE_EPILOG,
    )
    ab.add_argument("--config", required=True, help="catalog scenario with phy2phy_tput (e.g. OVS_DPDK1q)")
    ab.add_argument("--frame-sizes", default="64", help="one frame size incl. FCS [B] (64)")
    for label in ("a", "b"):
        ab.add_argument(
            f"--{label}",
            default="system" if label == "a" else None,
            required=label == "b",
            help=f"side {label.upper()}: 'system', an ovs-vswitchd binary or a dir of unpacked packages"
            + (" (system)" if label == "a" else ""),
        )
        ab.add_argument(
            f"--{label}-lib-dir",
            type=Path,
            help=f"LD_LIBRARY_PATH of side {label.upper()} (a DPDK of the same ABI)",
        )
        ab.add_argument(
            f"--{label}-other-config",
            action="append",
            metavar="KEY=VALUE",
            help=f"other_config setting of side {label.upper()} (repeatable), e.g. pmd-rxq-assign=roundrobin",
        )
    ab.add_argument(
        "--metric",
        choices=["mrr", "pdr"],
        default="mrr",
        help="mrr: received rate at full offered load, one trial per side and round; pdr: a short "
        "MLRsearch for the 0.5 %% PDR per side and round (slower) (mrr)",
    )
    _generator_option(ab)
    add_round_options(ab, per="comparison")
    ab.add_argument(
        "--b-cpu-steal", type=float, metavar="PCT",
        help="TEST AID: take this share of side B's PMD CPU (cgroup CPU bandwidth) [%%]",
    )  # fmt: skip
    ab.add_argument("--seed", type=int, help="seed of the random A/B order (default: from the OS)")
    ab.add_argument(
        "--output", type=Path, default=Path("/tmp"), help="where compare_<timestamp>/ goes (/tmp)"
    )
    ab.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def _two_host_options(run: Any) -> None:
    """Add the two-host (NIC ports) options and the DUT's CPU and memory options to ``run``."""
    wire = run.add_argument_group(
        "two hosts (NIC ports; docs/lab.md 'Two hosts (NIC ports)')",
        "OVS on this DUT's NIC ports, the generator on a TG host's NIC ports over SSH",
    )
    wire.add_argument(
        "--dut-port", action="append", metavar="DEVARGS",
        help="OVS's NIC port as DPDK devargs, twice (port 0, then 1): a PCI address (0000:03:00.0, "
        "allow-listed) or a vdev (net_af_packet0,iface=veth0)",
    )  # fmt: skip
    wire.add_argument(
        "--tg-port", action="append", metavar="DEVARGS",
        help="the generator's NIC port as DPDK devargs, twice, cabled TG port 0 to DUT port 0, 1 to 1",
    )  # fmt: skip
    wire.add_argument(
        "--tg-ssh", metavar="[USER@]HOST[:PORT]",
        help="run the generator on this TG host over SSH (BatchMode, StrictHostKeyChecking=yes); "
        "default: on this machine",
    )  # fmt: skip
    wire.add_argument("--tg-ssh-key", type=Path, metavar="PATH", help="private key for --tg-ssh")
    wire.add_argument("--tg-known-hosts", type=Path, metavar="PATH", help="known_hosts file for --tg-ssh")
    wire.add_argument(
        "--tg-binary", type=Path, metavar="PATH",
        help=f"the generator on the TG (with --tg-ssh: {DEFAULT_REMOTE_BINARY}, what "
        "'make -C trafficgen install' installs)",
    )  # fmt: skip
    wire.add_argument("--tg-cpus", metavar="CPULIST", help="the generator's EAL cores on the TG (e.g. 2,3)")
    wire.add_argument(
        "--tg-memory-mb", type=int, default=DEFAULTS.generator_memory_mb, metavar="N",
        help="generator hugepage memory at least [MiB] (%(default)s; raised to what its rings need)",
    )  # fmt: skip
    wire.add_argument("--pmd-cpus", metavar="CPULIST", help="OVS PMD CPUs (default: the lab picks them)")
    wire.add_argument("--lcore-cpu", type=int, metavar="N", help="OVS's DPDK main lcore CPU")
    wire.add_argument(
        "--socket-mem-mb", type=int, default=DEFAULTS.ovs_socket_mem_mb, metavar="N",
        help="OVS dpdk-socket-mem [MiB] (%(default)s)",
    )  # fmt: skip


def _cpu_list(text: str | None, option: str) -> tuple[int, ...] | None:
    """Parse a CPU list ``1,3-4`` (``--pmd-cpus``) into CPUs, ascending; ``None`` stays ``None``.

    :raises LabError: naming the option, for anything else.
    """
    if text is None:
        return None
    try:
        return parse_cpulist(text)
    except ValueError as err:
        raise LabError(f"Option '{option}': {err}") from err


def _tg_ssh(args: argparse.Namespace) -> SshTarget | None:
    """Return the TG host of ``--tg-ssh`` (with its key and known_hosts), ``None`` without it.

    :raises LabError: naming the option, for a malformed target or a key option without it.
    """
    if args.tg_ssh is None:
        for option, value in (("--tg-ssh-key", args.tg_ssh_key), ("--tg-known-hosts", args.tg_known_hosts)):
            if value is not None:
                raise LabError(f"Option '{option}' applies to '--tg-ssh'.")
        return None
    return SshTarget.parse(args.tg_ssh, identity=args.tg_ssh_key, known_hosts=args.tg_known_hosts)


def _check_before_start(options: LabOptions) -> None:
    """Check, before anything starts, what the run's generator and NIC ports need.

    The generator: on a TG host (``--tg-ssh``), that it answers and has the binary; here, the
    backend's readiness. PCI ports on this machine (``--dut-port``, and ``--tg-port`` without
    ``--tg-ssh``): that they exist and are no kernel interface in use (:func:`pci_port_problem`).

    :raises LabError: naming the option and the address, or the TG host and the path.
    """
    local = [("--dut-port", text) for text in options.dut_ports]
    if options.tg_ssh is None and options.generator != "trex":  # TRex's ports are on its server
        local += [("--tg-port", text) for text in options.tg_ports]
    for option, text in local:
        address = parse_devargs(text).pci_address
        problem = pci_port_problem(address) if address is not None else None
        if problem is not None:
            raise LabError(f"Option '{option}': {problem}; nothing was changed on this host.")
    if options.tg_ssh is not None:
        probe(options.tg_ssh, options.tg_binary or DEFAULT_REMOTE_BINARY)
    elif options.tg_binary is not None:
        if not options.tg_binary.is_file():
            raise LabError(f"Option '--tg-binary': '{options.tg_binary}' is not a file on this machine.")
    else:
        generator_backend(options.generator).readiness().require(options.generator)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ovsperf-lab",
        description="Run catalog scenarios on this machine: sandboxed OVS-DPDK, a DPDK traffic generator, "
        "RFC 2544 throughput search, VSperf-format results.",
        epilog=EPILOG,
    )
    add_verbosity_options(parser)
    parser.add_argument("--catalog", type=Path, help="scenario catalog (default: the packaged one)")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_ROOT,
        help=f"run state root (default {DEFAULT_STATE_ROOT})",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a scenario and write a VSperf results directory", epilog=EPILOG)
    run.add_argument(
        "--config", required=True, help="scenario name from the catalog (see 'ovsperf-lab list')"
    )
    run.add_argument(
        "--frame-sizes",
        help="comma-separated frame sizes incl. FCS [B] and mixes, e.g. "
        "64,imix,genome:aaaaaaaddddg,64:7/594:4/1518:1 (docs/lab.md)",
    )
    run.add_argument(
        "--output", type=Path, default=Path("/tmp"), help="where results_<timestamp>/ goes (/tmp)"
    )
    run.add_argument(
        "--search",
        choices=[m.value for m in SearchMethod],
        default=DEFAULTS.search.value,
        help="throughput search: 'mlr' = FD.io CSIT's MLRsearch, NDR and PDR in one search, then "
        "latency at shares of the PDR load; 'binary' = the lua-trafficgen-compatible bisection of the "
        "Beaker lab, one loss limit (%(default)s)",
    )
    mlr = run.add_argument_group(
        "MLRsearch (--search mlr)",
        "defaults are CSIT's (OptimizedSearch.perform_mlr_search, draft-ietf-bmwg-mlrsearch)",
    )
    mlr.add_argument(
        "--goal",
        type=float,
        action="append",
        metavar="PCT",
        help="loss-ratio goal [%%], once or twice: 0 = NDR, 0.5 = CSIT's PDR (default: "
        + " and ".join(f"{g:g}" for g in DEFAULTS.goals_percent)
        + ")",
    )
    mlr.add_argument(
        "--goal-width",
        type=float,
        default=DEFAULTS.goal_width_percent,
        metavar="PCT",
        help="stop when the bounds are this close, relative to the load [%%] (%(default)s)",
    )
    mlr.add_argument(
        "--exceed-ratio",
        type=float,
        default=DEFAULTS.exceed_ratio,
        help="share of trial time allowed above the goal loss at a lower bound [0, 1) (%(default)s)",
    )
    mlr.add_argument(
        "--final-trial-duration",
        type=float,
        default=DEFAULTS.final_trial_s,
        metavar="S",
        help="trial duration near the answer [s] (%(default)s)",
    )
    mlr.add_argument(
        "--duration-sum",
        type=float,
        default=DEFAULTS.duration_sum_s,
        metavar="S",
        help="trial time that classifies a load [s] (%(default)s)",
    )
    mlr.add_argument(
        "--min-load",
        type=float,
        default=DEFAULTS.min_load_pps,
        metavar="PPS",
        help="lowest load tried and of latency trials, per direction [pps] (%(default)g, CSIT's)",
    )
    mlr.add_argument(
        "--search-duration-max",
        type=float,
        default=DEFAULTS.search_duration_max_s,
        metavar="S",
        help="give up a frame size after this long, reporting the bounds found [s] (%(default)s)",
    )
    mlr.add_argument(
        "--latency-loads",
        type=_percent_list,
        default=DEFAULTS.latency_levels_percent,
        metavar="PCT,...",
        help="latency trials at these shares of the PDR load [%%], 0 = 9001 pps; '' for none ("
        + ",".join(f"{p:g}" for p in DEFAULTS.latency_levels_percent)
        + ")",
    )
    mlr.add_argument(
        "--latency-time",
        type=float,
        default=DEFAULTS.latency_trial_s,
        metavar="S",
        help="duration of each latency trial [s] (%(default)s)",
    )
    _generator_option(run)
    run.add_argument(
        "--no-telemetry",
        dest="telemetry",
        action="store_false",
        help="do not collect DUT telemetry (PMD counters, rx queues, thread CPU) around final/validation"
        " trials (ovsperf-telemetry.json; collected by default)",
    )
    binary = run.add_argument_group("binary search (--search binary)")
    binary.add_argument(
        "--search-time", type=float, help="search trial duration [s] (scenario's search_trial_s)"
    )
    binary.add_argument("--validation-time", type=float, help="validation trial duration [s]")
    binary.add_argument(
        "--loss", type=float, help="acceptable loss [%%] (scenario's acceptable_loss_percent)"
    )
    binary.add_argument(
        "--granularity",
        type=float,
        default=DEFAULTS.granularity_percent,
        help="search granularity [%% of start rate] (%(default)s)",
    )
    run.add_argument(
        "--flows",
        default=None,
        help=f"UDP flows per direction, up to {MAX_FLOWS}; a list (1,1000,1000000) sweeps: every frame "
        "size is searched at each count (default: the scenario's 'flows', 1 unless it says otherwise)",
    )
    run.add_argument(
        "--flow-rules",
        choices=[r.value for r in FlowRules],
        default=DEFAULTS.flow_rules.value,
        help="what the bridge's OpenFlow rules match: ports (VSperf's in_port rules; OVS >= 2.17 "
        "classifies them by simple match, bypassing the caches) or udp (every flow takes an "
        "EMC/SMC/megaflow entry) (%(default)s)",
    )
    binary.add_argument(
        "--max-trials",
        type=int,
        default=DEFAULTS.max_trials,
        help="bound on counted trials per frame size (%(default)s)",
    )
    binary.add_argument(
        "--drain-time",
        type=float,
        default=DEFAULTS.drain_s,
        help="RX time after TX stops [s] (%(default)s, RFC 2544 §23; MLRsearch trials drain 0.5 s)",
    )
    run.add_argument(
        "--ring-size",
        type=int,
        default=DEFAULTS.ring_size,
        help="descriptors per vhost-user ring of the generator and VNF (%(default)s; "
        f"power of two, {RING_SIZES[0]}-{RING_SIZES[-1]})",
    )
    run.add_argument(
        "--repeats",
        type=int,
        default=DEFAULTS.repeats,
        help="run every test this many times; generate-report pools the repeats as samples (%(default)s)",
    )
    run.add_argument("--pmd-cores", type=int, help="OVS PMD threads (default: min(queues, CPUs - 1))")
    run.add_argument(
        "--guest-image",
        type=Path,
        help="PVP/PVVP through QEMU guests booted from this image (ovsperf-vlab guest-image builds one)",
    )
    run.add_argument(
        "--guest-accel",
        choices=["kvm", "tcg"],
        help="how QEMU runs the guests (default: kvm when /dev/kvm is usable, else tcg)",
    )
    run.add_argument(
        "--guest-boot-timeout-s",
        type=float,
        help="longest a guest may take to boot and forward [s] (default: 120 with kvm, 600 with tcg)",
    )
    run.add_argument(
        "--guest-memory-mb",
        type=int,
        help="memory of each guest, 2 MiB hugepages [MiB] (default: the scenario's, at most 2048)",
    )
    run.add_argument(
        "--ct-zone",
        type=int,
        default=DEFAULTS.ct_zone,
        metavar="N",
        help="conntrack zone of the conntrack tests' ct() actions (%(default)s)",
    )
    run.add_argument(
        "--tunnel-option",
        action="append",
        metavar="KEY=VALUE",
        help="one more option of the overlay tests' tunnel port (options:KEY=VALUE, e.g. csum=true)",
    )
    run.add_argument(
        "--test",
        action="append",
        choices=[t.value for t in VsperfTest],
        help="run only this test (repeatable)",
    )
    run.add_argument("--no-progress", action="store_true", help="no live progress line on stderr")
    _two_host_options(run)
    add_trex_options(run)

    _compare_parser(sub)
    bisect_options.add_parser(sub, _generator_option)
    doctor = sub.add_parser("doctor", help="check what this machine lacks for the lab", epilog=EPILOG)
    add_trex_options(doctor, doctor=True)
    sub.add_parser("list", help="list the catalog's scenarios and whether they can run here", epilog=EPILOG)
    clean = sub.add_parser(
        "cleanup", help="remove what crashed runs left (only the lab's own)", epilog=EPILOG
    )
    clean.add_argument("--force", action="store_true", help="also runs whose owner process still runs")
    return parser


def _run_scenario(args: argparse.Namespace) -> int:
    """Plan and run one scenario; print the results directory; 0 when complete, else 2."""
    from ovsperf_lab.progress import RichProgress
    from ovsperf_lab.run import run_lab

    catalog = load_catalog(args.catalog)
    scenario = catalog.get(args.config)
    flows = _flow_counts(args.flows) if args.flows is not None else scenario.flows
    options = LabOptions(
        frame_sizes_bytes=_frame_sizes(args.frame_sizes),
        search_trial_s=args.search_time,
        validation_trial_s=args.validation_time,
        loss_percent=args.loss,
        pmd_cores=args.pmd_cores,
        guest_image=args.guest_image,
        guest_accel=GuestAccel.from_spec(args.guest_accel, field="--guest-accel")
        if args.guest_accel
        else None,
        guest_boot_timeout_s=args.guest_boot_timeout_s,
        guest_memory_mb=args.guest_memory_mb,
        granularity_percent=args.granularity,
        flows=flows[0],
        flow_sweep=flows if len(flows) > 1 else (),
        flow_rules=FlowRules.from_spec(args.flow_rules, field="--flow-rules"),
        drain_s=args.drain_time,
        max_trials=args.max_trials,
        ring_size=args.ring_size,
        repeats=args.repeats,
        search=SearchMethod.from_spec(args.search, field="--search"),
        goals_percent=tuple(args.goal) if args.goal else DEFAULTS.goals_percent,
        goal_width_percent=args.goal_width,
        exceed_ratio=args.exceed_ratio,
        final_trial_s=args.final_trial_duration,
        duration_sum_s=args.duration_sum,
        min_load_pps=args.min_load,
        search_duration_max_s=args.search_duration_max,
        latency_levels_percent=args.latency_loads,
        latency_trial_s=args.latency_time,
        telemetry=args.telemetry,
        generator=args.generator,
        tests=tuple(VsperfTest.from_spec(t, field="--test") for t in args.test) if args.test else None,
        dut_ports=tuple(args.dut_port or ()),
        tg_ports=tuple(args.tg_port or ()),
        tg_ssh=_tg_ssh(args),
        tg_binary=args.tg_binary,
        tg_cpus=args.tg_cpus,
        generator_memory_mb=args.tg_memory_mb,
        pmd_cpus=_cpu_list(args.pmd_cpus, "--pmd-cpus"),
        lcore_cpu=args.lcore_cpu,
        ct_zone=args.ct_zone,
        tunnel_options=tuple(
            (key, value) for key, _, value in (text.partition("=") for text in args.tunnel_option or ())
        ),
        ovs_socket_mem_mb=args.socket_mem_mb,
    )
    trex = trex_options(args)
    factory = None if trex is None else trex_factory(trex)
    generator_host = None if trex is None else trex.server.address
    _check_before_start(options)
    facts = probe_machine()
    plan = plan_run(scenario, facts, options)
    try:
        with sigterm_interrupts():
            quiet = args.no_progress or not sys.stderr.isatty()
            with contextlib.nullcontext(None) if quiet else RichProgress() as progress:
                outcome = run_lab(
                    plan,
                    facts,
                    output_root=args.output,
                    state_root=args.state_dir,
                    observer=progress,
                    generator_factory=factory,
                    generator_host=generator_host,
                )
    except KeyboardInterrupt:
        print(
            "ovsperf-lab: interrupted; everything started was stopped, partial results kept.", file=sys.stderr
        )
        return ExitCode.ERROR
    print(one_line(outcome.results_dir))
    if not outcome.complete:
        print(f"ovsperf-lab: run incomplete: {outcome.reason}", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


def _compare(args: argparse.Namespace) -> int:
    """Measure two sides in interleaved rounds; print the page's path; exit by the verdict."""
    from ovsperf_lab.compare.session import CompareRequest, run_comparison

    refuse_in_compare(args)
    sizes = _frame_sizes(args.frame_sizes) or ()
    if len(sizes) != 1 or not isinstance(sizes[0], int):
        raise LabError("Option '--frame-sizes' takes one frame size (not a mix) per comparison.")
    config = CompareConfig(
        frame_size_bytes=sizes[0],
        trial_s=args.trial_duration,
        min_rounds=args.min_rounds,
        max_rounds=args.rounds,
        target_mdc_percent=args.target_mdc,
        threshold_percent=args.threshold,
        b_cpu_steal_percent=args.b_cpu_steal,
        seed=args.seed,
        metric=args.metric,
        generator=args.generator,
    )
    if args.b_cpu_steal is not None:
        CpuSteal(args.b_cpu_steal, "ovsperf-lab-check")  # checks the range and the controller now
    specs = [
        SideSpec(
            label.upper(),
            getattr(args, label),
            getattr(args, f"{label}_lib_dir"),
            parse_other_config(getattr(args, f"{label}_other_config"), f"--{label}-other-config"),
        )
        for label in ("a", "b")
    ]
    request = CompareRequest(
        scenario=args.config,
        sides=(specs[0], specs[1]),
        config=config,
        output_root=Path(args.output),
        state_root=args.state_dir,
        catalog=args.catalog,
        progress=not args.no_progress,
    )
    return run_comparison(request)


def _bisect(args: argparse.Namespace) -> int:
    """Find the first slower build with one comparison per step; print the page's path; exit by the answer."""
    from ovsperf_lab.bisect.session import bisect_from_args

    refuse_in_compare(args)
    sizes = _frame_sizes(args.frame_sizes) or ()
    if len(sizes) != 1 or not isinstance(sizes[0], int):
        raise LabError("Option '--frame-sizes' takes one frame size (not a mix) per bisection.")
    return bisect_from_args(args, sizes[0])


def _doctor(args: argparse.Namespace) -> int:
    facts = probe_machine()
    failed_required = False
    for check in diagnose(facts):
        mark = "ok  " if check.ok else ("FAIL" if check.required else "warn")
        print(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok:
            print(f"       fix: {check.fix}")
            failed_required |= check.required
    server = trex_server(args)
    if server is not None:  # asked for: reaching it is then required
        reachable, detail = trex_server_line(server)
        print(f"[{'ok  ' if reachable else 'FAIL'}] TRex server '{server.address}': {detail}")
        failed_required |= not reachable
    print("scenarios:")
    for name, refusal in scenario_readiness(load_catalog(args.catalog), facts):
        print(f"  {name}: {'runs here' if refusal is None else 'refused: ' + refusal}")
    return ExitCode.ERROR if failed_required else ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    catalog = load_catalog(args.catalog)
    facts = probe_machine()
    readiness = dict(scenario_readiness(catalog, facts))
    for name in catalog.names():
        scenario = catalog.get(name)
        tests = ",".join(t.value for t in scenario.tests)
        state = "runs here" if readiness[name] is None else "refused here (see 'ovsperf-lab doctor')"
        print(f"{name:<32} {tests:<24} {scenario.description} [{state}]")
    return ExitCode.OK


def _cleanup(args: argparse.Namespace) -> int:
    report = cleanup(args.state_dir, force=args.force)
    for line in report.actions:
        print(line)
    for run_id in report.skipped_runs:
        print(f"ovsperf-lab: run '{run_id}' is still running; left alone (use --force).", file=sys.stderr)
    if not report.removed_runs:
        print("ovsperf-lab: nothing to clean up.", file=sys.stderr)
    return ExitCode.OK


def _run(args: argparse.Namespace) -> int:
    """Run the sub-command."""
    commands = {
        "run": _run_scenario,
        "compare": _compare,
        "bisect": _bisect,
        "doctor": _doctor,
        "list": _list,
        "cleanup": _cleanup,
    }
    return commands[args.command](args)


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-lab``; return the exit code (see ``--help``)."""
    return run_command(_parser(), _run, argv)
