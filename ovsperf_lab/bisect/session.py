"""Run ``ovsperf-lab bisect``: one ``compare`` per step, the state after each, the page, the exit code.

A new bisection creates ``<output>/bisect_<timestamp>/`` (a Koji range is listed first), writes
``state.json`` and then, until :func:`~ovsperf_lab.bisect.search.next_step` concludes: makes the
next build ready (a Koji build downloaded and unpacked; a build that cannot be is skipped with its
reason), compares it (side B) against the good build (side A) with ``compare``'s engine
(:func:`~ovsperf_lab.compare.session.compare_into`, its page in ``step<NN>_<timestamp>/``),
classifies the step, appends it to the state file (atomically) and rewrites the page. ``--resume
DIR`` reads the state file and continues; the step that was running when it stopped is run again.

Exit codes: 1 when the first bad build was found (FOUND) or narrowed to a few builds of which the
others were skipped (CANDIDATES) — the regression is confirmed, as ``compare`` exits 1 for one;
2 when the range does not bracket a regression (NO_REGRESSION: bad input), a step stayed
undecidable (UNDECIDABLE), on an error (Koji unreachable after its retries, a lab failure) or when
interrupted — the page's path printed whenever the page was written, and the state kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, sigterm_interrupts
from ovsperf_lab.bisect.model import (
    Build,
    BuildKind,
    BuildUnavailableError,
    Conclusion,
    Result,
    Step,
    StepOutcome,
)
from ovsperf_lab.bisect.options import request_from_args
from ovsperf_lab.bisect.report import write_report
from ovsperf_lab.bisect.search import Measured, NextStep, classify, next_step, sought_percent
from ovsperf_lab.bisect.state import BisectState, read_state
from ovsperf_lab.compare.abtest import SideCrashedError
from ovsperf_lab.compare.config import CompareConfig
from ovsperf_lab.compare.cpusteal import CpuSteal
from ovsperf_lab.compare.session import CompareRequest, compare_into
from ovsperf_lab.compare.sides import SideSpec, resolve
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import GeneratorFactory

if TYPE_CHECKING:  # koji, requests, tenacity: imported only for a Koji range
    from ovsperf_lab.bisect.kojibuilds import KojiBuilds

log = logging.getLogger(__name__)

MAX_ROUNDS = 200
"""Most rounds a comparison takes (``CompareConfig``'s bound) [1]."""


@dataclass(frozen=True)
class StepRun:
    """One comparison to run: the candidate build (B) against the good build (A)."""

    good: Build
    """The good build."""
    good_source: str
    """Its side as ``compare --a`` takes it (a Koji build: its unpacked tree)."""
    candidate: Build
    """The build compared."""
    candidate_source: str
    """Its side as ``compare --b`` takes it."""
    config: CompareConfig
    """How to measure (rounds doubled for a repeat, the test aid's CPU steal of the candidate)."""
    out: Path
    """The new directory the comparison writes its page into."""


@dataclass(frozen=True)
class StepMeasurement:
    """What one comparison found."""

    measured: Measured
    """Verdict and numbers; ``verdict`` ``None`` when the candidate's OVS crashed."""
    rounds: int | None
    """Complete rounds [1]."""
    page: Path | None
    """The comparison's page."""
    log: Path | None = None
    """The crashed candidate's ovs-vswitchd log."""
    note: str | None = None
    """Why the comparison stopped, or the crash."""


Comparator = Callable[[StepRun], StepMeasurement]
"""Runs one comparison; raises :class:`BuildUnavailableError` when the candidate cannot run at all."""


def lab_comparator(
    scenario: str,
    state_root: Path,
    catalog: Path | None,
    *,
    progress: bool,
    generator_factory: GeneratorFactory | None = None,
) -> Comparator:
    """Return the comparator that runs ``compare``'s engine on this machine's lab."""

    def compare(run: StepRun) -> StepMeasurement:
        b_spec = SideSpec("B", run.candidate_source, _lib(run.candidate))
        try:
            resolve(b_spec)
        except LabError as err:
            raise BuildUnavailableError(f"Build '{run.candidate.label}' cannot run: {err}") from err
        request = CompareRequest(
            scenario=scenario,
            sides=(SideSpec("A", run.good_source, _lib(run.good)), b_spec),
            config=run.config,
            output_root=run.out.parent,
            state_root=state_root,
            catalog=catalog,
            progress=progress,
        )
        try:
            outcome = compare_into(request, run.out, generator_factory=generator_factory)
        except SideCrashedError as err:
            if err.side != "B":
                raise
            return StepMeasurement(Measured(None), None, run.out / "index.html", err.log_path, str(err))
        e = outcome.estimate
        if e is None:
            raise LabError(f"The comparison in '{run.out}' ended without a complete round: {outcome.reason}.")
        measured = Measured(
            e.verdict.value, e.change_percent, e.ci_low_percent, e.ci_high_percent, e.mdc_percent
        )
        return StepMeasurement(measured, e.rounds, run.out / "index.html", None, outcome.reason)

    return compare


def _lib(build: Build) -> Path | None:
    return None if build.lib_dir is None else Path(build.lib_dir)


class Bisection:
    """A bisection in its directory: make builds ready, compare, record, until it concludes."""

    def __init__(
        self, directory: Path, state: BisectState, comparator: Comparator, koji: KojiBuilds | None = None
    ) -> None:
        """Take the bisection's directory and state (already written there) and how to compare.

        :param koji: makes Koji builds ready; required when the builds come from Koji.
        """
        self.directory, self.state, self.comparator, self.koji = directory, state, comparator, koji
        self._sources: dict[int, str] = {}

    def next(self) -> NextStep | Result:
        """Return the next step or the conclusion of the steps so far."""
        return next_step(
            len(self.state.builds),
            self.state.steps,
            target_mdc_percent=self.state.request.config.target_mdc_percent,
            labels=[b.label for b in self.state.builds],
        )

    def run(self) -> Result:
        """Run steps until the bisection concludes; the state and page are rewritten after each.

        :raises LabError: when the good or the bad build cannot be made ready, a comparison fails
            for another reason than the candidate's OVS, or Koji stays unreachable.
        :raises KeyboardInterrupt: on Ctrl-C or SIGTERM (the steps done are kept).
        """
        while True:
            planned = self.next()
            if isinstance(planned, Result):
                write_report(self.state, self.directory, planned)
                return planned
            step = self._step(planned)
            self.state = self.state.with_step(step)
            self.state.write(self.directory)
            write_report(self.state, self.directory, None, f"step {step.number} done")
            log.info(
                "Step %d (%s): '%s' %s: %s.",
                step.number,
                step.kind.value,
                self.state.builds[step.build].label,
                step.outcome.value,
                step.reason,
            )

    def _source(self, build: Build) -> str:
        """Return ``build``'s side source, a Koji build made ready first (once).

        :raises BuildUnavailableError: when it cannot be made ready.
        """
        if build.index not in self._sources:
            if build.kind is BuildKind.KOJI:
                if self.koji is None:
                    raise LabError("A Koji range needs its Koji connection.")
                self._sources[build.index] = str(self.koji.prepare(build, self.directory / "builds"))
            else:
                self._sources[build.index] = build.source
        return self._sources[build.index]

    def _step(self, planned: NextStep) -> Step:
        """Run the planned step and return it.

        :raises LabError: see :meth:`run`.
        """
        state = self.state
        number = len(state.steps) + 1
        good, candidate = state.builds[0], state.builds[planned.build]
        started = time.monotonic()
        try:
            good_source = self._source(good)
        except BuildUnavailableError as err:
            raise LabError(f"The good build cannot be made ready, so nothing can be compared: {err}") from err
        try:
            candidate_source = self._source(candidate)
            measurement = self.comparator(
                StepRun(
                    good,
                    good_source,
                    candidate,
                    candidate_source,
                    self._config(planned, candidate, number),
                    self.directory / f"step{number:02d}_{datetime.now():%Y-%m-%d_%H-%M-%S}",
                )
            )
        except BuildUnavailableError as err:
            if planned.build == len(state.builds) - 1:
                raise LabError(
                    f"The bad build cannot be compared, so the range cannot be bisected: {err}"
                ) from err
            log.warning("Skipping build '%s': %s", candidate.label, err)
            return Step(number, planned.kind, planned.build, StepOutcome.SKIPPED, str(err),
                        wall_s=time.monotonic() - started)  # fmt: skip
        sought = sought_percent(state.steps, state.request.config.target_mdc_percent, len(state.builds) - 1)
        outcome, reason = classify(
            measurement.measured, planned.kind, sought, state.request.config.target_mdc_percent
        )
        m = measurement.measured
        why = reason if m.verdict else f"{reason}: {measurement.note}"
        return Step(
            number, planned.kind, planned.build, outcome, why,
            verdict=m.verdict, change_percent=m.change_percent, ci_low_percent=m.ci_low_percent,
            ci_high_percent=m.ci_high_percent, mdc_percent=m.mdc_percent, rounds=measurement.rounds,
            page=self._relative(measurement.page), log=self._relative(measurement.log),
            wall_s=time.monotonic() - started,
        )  # fmt: skip

    def _config(self, planned: NextStep, candidate: Build, number: int) -> CompareConfig:
        """Return the step's comparison settings: rounds × the factor, the candidate's CPU steal."""
        base = self.state.request.config
        factor = planned.rounds_factor
        return dataclasses.replace(
            base,
            min_rounds=min(base.min_rounds * factor, MAX_ROUNDS),
            max_rounds=min(base.max_rounds * factor, MAX_ROUNDS),
            b_cpu_steal_percent=candidate.cpu_steal_percent,
            seed=None if base.seed is None else base.seed + number,
        )

    def _relative(self, path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            return str(path.relative_to(self.directory))
        except ValueError:
            return str(path)


EXIT_BY_CONCLUSION = {
    Conclusion.FOUND: ExitCode(1),
    Conclusion.CANDIDATES: ExitCode(1),
    Conclusion.UNDECIDABLE: ExitCode.ERROR,
    Conclusion.NO_REGRESSION: ExitCode.ERROR,
}
"""Conclusion → exit code (see the module docstring)."""


def run_bisection(bisection: Bisection) -> int:
    """Run ``bisection`` with SIGTERM as Ctrl-C; print the page's path; return the exit code.

    :raises LabError: as :meth:`Bisection.run`, after the page (the steps so far) was written and
        its path printed; the message says how to resume.
    """
    directory = bisection.directory
    resume = f"the state is kept: continue with 'ovsperf-lab bisect --resume {directory}'"
    try:
        with sigterm_interrupts():
            result = bisection.run()
    except KeyboardInterrupt:
        print(one_line(write_report(bisection.state, directory, None, "interrupted (Ctrl-C or SIGTERM)")))
        print(f"ovsperf-lab: interrupted; everything started was stopped; {resume}.", file=sys.stderr)
        return ExitCode.ERROR
    except LabError as err:
        print(one_line(write_report(bisection.state, directory, None, str(err))))
        raise LabError(f"{err} The bisection stopped; {resume}.") from err
    print(one_line(directory / "index.html"))
    print(f"ovsperf-lab: {result.conclusion.value}: {result.message}", file=sys.stderr)
    return EXIT_BY_CONCLUSION[result.conclusion]


def start(state: BisectState, output_root: Path) -> Path:
    """Create ``output_root/bisect_<timestamp>/`` and write the first state file; return the directory.

    :raises LabError: when it cannot be created.
    """
    directory = output_root / f"bisect_{datetime.now():%Y-%m-%d_%H-%M-%S}"
    try:
        directory.mkdir(parents=True)
        state.write(directory)
    except OSError as err:
        raise LabError(f"Cannot create '{directory}': {err.strerror}.") from err
    return directory


def bisect_from_args(args: argparse.Namespace, frame_size_bytes: int) -> int:
    """Start (or, with ``--resume DIR``, continue) the bisection the options ask for; return the exit code.

    :raises LabError: for bad options (nothing written), and as :func:`run_bisection`.
    :raises KojiWatchError: when a Koji profile or server cannot be resolved.
    """
    koji: KojiBuilds | None = None
    if args.resume is not None:
        directory = Path(args.resume)
        state = read_state(directory)
        log.info("Resuming the bisection in '%s' after %d step(s).", directory, len(state.steps))
    else:
        request = request_from_args(args, frame_size_bytes)
        builds = request.builds
        if request.koji is not None:
            from ovsperf_lab.bisect.kojibuilds import KojiBuilds

            koji = KojiBuilds(request.koji)
            builds = koji.list_range()
            log.info(
                "Koji range: %d builds from '%s' to '%s'.", len(builds), builds[0].label, builds[-1].label
            )
        for percent in {b.cpu_steal_percent for b in builds if b.cpu_steal_percent is not None}:
            CpuSteal(percent, "ovsperf-lab-check")  # checks the range and the controller now
        state = BisectState(request, builds)
        directory = start(state, args.output)
    request = state.request
    if koji is None and request.koji is not None:
        from ovsperf_lab.bisect.kojibuilds import KojiBuilds

        koji = KojiBuilds(request.koji)
    comparator = lab_comparator(
        request.scenario, args.state_dir, request.catalog, progress=not args.no_progress
    )
    try:
        return run_bisection(Bisection(directory, state, comparator, koji))
    finally:
        if koji is not None:
            koji.close()
