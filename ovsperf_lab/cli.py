"""Command line of the local lab: ``ovsperf-lab run|doctor|list|cleanup``."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from jobcreator.catalog import load_catalog
from jobcreator.model import VsperfTest
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import add_verbosity_options, one_line, run_command
from ovsperf_lab.cleanup import cleanup
from ovsperf_lab.doctor import diagnose, generator_binary, scenario_readiness
from ovsperf_lab.errors import LabError
from ovsperf_lab.generator_api import TrafficGenerator
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import RING_SIZES, LabOptions, plan_run
from ovsperf_lab.run import RunObserver, run_lab
from ovsperf_lab.search import SearchResult, TrialKind, TrialRecord
from ovsperf_lab.state import DEFAULT_STATE_ROOT

DEFAULTS = LabOptions()
"""The defaults of every ``run`` option live in :class:`LabOptions`; the parser shows them."""

EPILOG = (
    "exit codes: 0 OK (run complete; doctor: all required checks pass); "
    "2 error (bad input, scenario refused, infrastructure failure, incomplete run, interrupted)"
)


def _frame_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a comma-separated list of frame sizes in bytes"
        ) from err
    if not sizes:
        raise argparse.ArgumentTypeError("no frame size given")
    return sizes


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
    run.add_argument("--frame-sizes", type=_frame_sizes, help="comma-separated frame sizes incl. FCS [B]")
    run.add_argument(
        "--output", type=Path, default=Path("/tmp"), help="where results_<timestamp>/ goes (/tmp)"
    )
    run.add_argument(
        "--search-time", type=float, help="search trial duration [s] (scenario's search_trial_s)"
    )
    run.add_argument("--validation-time", type=float, help="validation trial duration [s]")
    run.add_argument("--loss", type=float, help="acceptable loss [%%] (scenario's acceptable_loss_percent)")
    run.add_argument(
        "--granularity",
        type=float,
        default=DEFAULTS.granularity_percent,
        help="search granularity [%% of start rate] (%(default)s)",
    )
    run.add_argument(
        "--flows", type=int, default=DEFAULTS.flows, help="UDP flows per direction (%(default)s)"
    )
    run.add_argument(
        "--max-trials",
        type=int,
        default=DEFAULTS.max_trials,
        help="bound on counted trials per frame size (%(default)s)",
    )
    run.add_argument(
        "--drain-time",
        type=float,
        default=DEFAULTS.drain_s,
        help="RX time after TX stops [s] (%(default)s, RFC 2544 §23)",
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
    run.add_argument("--guest-image", type=Path, help="PVP through a QEMU/KVM guest booted from this image")
    run.add_argument(
        "--test",
        action="append",
        choices=[t.value for t in VsperfTest],
        help="run only this test (repeatable)",
    )
    run.add_argument("--no-progress", action="store_true", help="no live progress line on stderr")

    sub.add_parser("doctor", help="check what this machine lacks for the lab", epilog=EPILOG)
    sub.add_parser("list", help="list the catalog's scenarios and whether they can run here", epilog=EPILOG)
    clean = sub.add_parser(
        "cleanup", help="remove what crashed runs left (only the lab's own)", epilog=EPILOG
    )
    clean.add_argument("--force", action="store_true", help="also runs whose owner process still runs")
    return parser


class _RichProgress(RunObserver):
    """Show the current trial, its rate and loss, and the best rate so far on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.task = self.progress.add_task("starting", total=None)
        self.head = ""
        self.best = "none yet"
        self.last = ""

    def __enter__(self) -> _RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _show(self, current: str) -> None:
        self.progress.update(
            self.task, description=f"{self.head} | {current} | best {self.best} | last {self.last}"
        )

    def frame_size_started(self, test: VsperfTest, frame_size_bytes: int, number: int, total: int) -> None:
        self.head = f"{test.value} {frame_size_bytes} B ({number}/{total})"
        self.best = "none yet"
        self.last = "-"
        self._show("calibrating")

    def frame_size_finished(self, test: VsperfTest, result: SearchResult | None) -> None:
        text = f"{result.validation.rx_pps / 1e6:.3f} Mpps" if result else "FAILED"
        if result is not None and result.generator_limited:
            text += " (the generator's ceiling: the DUT forwards at least this)"
        self.progress.console.print(f"{self.head}: throughput {text}")

    def generator_started(self, generator: TrafficGenerator) -> None:
        self._show("generator ready")

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        self._show(f"trial {index} {kind.value} at {rate_pps / 1e6:.3f} Mpps/dir for {duration_s:g} s")

    def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
        self.last = f"{record.outcome.value}, loss {record.result.loss_ratio * 100:.4f} %"
        if best_pass_pps is not None:
            self.best = f"{best_pass_pps / 1e6:.3f} Mpps/dir"
        self._show(f"trial {record.index} done")


def _on_sigterm(signum: int, frame: FrameType | None) -> Any:
    raise KeyboardInterrupt(f"signal {signum}")


def _run_scenario(args: argparse.Namespace) -> int:
    """Plan and run one scenario; print the results directory; 0 when complete, else 2."""
    catalog = load_catalog(args.catalog)
    scenario = catalog.get(args.config)
    options = LabOptions(
        frame_sizes_bytes=args.frame_sizes,
        search_trial_s=args.search_time,
        validation_trial_s=args.validation_time,
        loss_percent=args.loss,
        pmd_cores=args.pmd_cores,
        guest_image=args.guest_image,
        granularity_percent=args.granularity,
        flows=args.flows,
        drain_s=args.drain_time,
        max_trials=args.max_trials,
        ring_size=args.ring_size,
        repeats=args.repeats,
        tests=tuple(VsperfTest.from_spec(t, field="--test") for t in args.test) if args.test else None,
    )
    facts = probe_machine()
    plan = plan_run(scenario, facts, options)
    binary = generator_binary()
    if not binary.is_file():
        raise LabError(
            f"Traffic generator '{binary}' is not built; run 'make -C trafficgen' (see 'ovsperf-lab doctor')."
        )
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args.no_progress or not sys.stderr.isatty():
            outcome = run_lab(plan, facts, output_root=args.output, state_root=args.state_dir)
        else:
            with _RichProgress() as progress:
                outcome = run_lab(
                    plan, facts, output_root=args.output, state_root=args.state_dir, observer=progress
                )
    except KeyboardInterrupt:
        print(
            "ovsperf-lab: interrupted; everything started was stopped, partial results kept.", file=sys.stderr
        )
        return ExitCode.ERROR
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(one_line(outcome.results_dir))
    if not outcome.complete:
        print(f"ovsperf-lab: run incomplete: {outcome.reason}", file=sys.stderr)
        return ExitCode.ERROR
    return ExitCode.OK


def _doctor(args: argparse.Namespace) -> int:
    facts = probe_machine()
    failed_required = False
    for check in diagnose(facts):
        mark = "ok  " if check.ok else ("FAIL" if check.required else "warn")
        print(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok:
            print(f"       fix: {check.fix}")
            failed_required |= check.required
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
    commands = {"run": _run_scenario, "doctor": _doctor, "list": _list, "cleanup": _cleanup}
    return commands[args.command](args)


def main(argv: list[str] | None = None) -> int:
    """Run ``ovsperf-lab``; return the exit code (see ``--help``)."""
    return run_command(_parser(), _run, argv)
