"""Run ``ovsperf-lab compare`` from a frozen request: sides, plan, output directory, page, exit code.

The command line (:mod:`ovsperf_lab.cli`) parses the options into a :class:`CompareRequest`;
:func:`run_comparison` checks the sides, plans the CPUs, creates ``compare_<timestamp>/``, runs
the interleaved rounds (:func:`~ovsperf_lab.compare.abtest.run_compare`) with SIGTERM turned into
``KeyboardInterrupt``, rewrites the page after every round
(:func:`~ovsperf_lab.compare.abreport.write_outcome`) and, when the run stops early (an error,
Ctrl-C), writes the rounds so far marked incomplete.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.runner import one_line, sigterm_interrupts
from ovsperf_common.verdict import Overall
from ovsperf_lab.compare.abreport import write_outcome
from ovsperf_lab.compare.abstats import AbVerdict
from ovsperf_lab.compare.abtest import CompareObserver, CompareOutcome, run_compare
from ovsperf_lab.compare.config import CompareConfig
from ovsperf_lab.compare.progress import CompareProgress
from ovsperf_lab.compare.sides import SideSpec, resolve
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import GeneratorFactory
from ovsperf_lab.generators.registry import generator_backend
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import LabOptions, plan_run

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompareRequest:
    """What ``ovsperf-lab compare`` was asked for, parsed."""

    scenario: str
    """Catalog scenario with ``phy2phy_tput`` whose CPU plan is used (``--config``)."""
    sides: tuple[SideSpec, SideSpec]
    """A and B as given (``--a``, ``--b``, their library directories and settings)."""
    config: CompareConfig
    """How to measure."""
    output_root: Path
    """Where ``compare_<timestamp>/`` goes (``--output``)."""
    state_root: Path
    """Run state root (``--state-dir``)."""
    catalog: Path | None = None
    """Scenario catalog (``--catalog``); ``None``: the packaged one."""
    progress: bool = True
    """Print a line per measured side on stderr (``--no-progress`` turns it off)."""


def run_comparison(request: CompareRequest, *, generator_factory: GeneratorFactory | None = None) -> int:
    """Measure the two sides in interleaved rounds; print the page's path; return the exit code.

    :param generator_factory: starts the generator; ``None``: the backend ``request.config.generator``
        names (:mod:`ovsperf_lab.generators.registry`).
    :returns: 0 when no regression was found (NO_CHANGE, IMPROVEMENT), 1 for a REGRESSION, 2 when
        interrupted (the rounds so far are written and the page's path printed).
    :raises LabError: for a side, scenario or generator that cannot run (before anything starts,
        nothing is written), or when a side fails mid-run (the rounds so far are written, marked
        incomplete with the reason, and the page's path printed first).
    """
    out = request.output_root / f"compare_{datetime.now():%Y-%m-%d_%H-%M-%S}"
    try:
        outcome = compare_into(request, out, generator_factory=generator_factory)
    except KeyboardInterrupt:
        if not (out / "index.html").is_file():  # before anything started
            raise
        print(one_line(out / "index.html"))
        print(
            "ovsperf-lab: interrupted; everything started was stopped, rounds so far kept.", file=sys.stderr
        )
        return ExitCode.ERROR
    except LabError:
        if (out / "index.html").is_file():  # failed mid-run: the rounds so far are written
            print(one_line(out / "index.html"))
        raise
    print(one_line(out / "index.html"))
    verdict = outcome.estimate.verdict if outcome.estimate else None
    return Overall.REGRESSION.exit_code if verdict is AbVerdict.REGRESSION else ExitCode.OK


def compare_into(
    request: CompareRequest, out: Path, *, generator_factory: GeneratorFactory | None = None
) -> CompareOutcome:
    """Measure the two sides in interleaved rounds into the new directory ``out``; print nothing.

    What :func:`run_comparison` and ``ovsperf-lab bisect`` (one comparison per step) run.

    :returns: the complete outcome; ``out/index.html`` is its page.
    :raises LabError: as :func:`run_comparison`; when a side fails mid-run, ``out/index.html`` holds
        the rounds so far (:class:`~ovsperf_lab.compare.abtest.SideCrashedError` when it was that
        side's OVS, its log kept in ``out``).
    :raises KeyboardInterrupt: on Ctrl-C or SIGTERM, after the rounds so far are written to ``out``.
    """
    config = request.config
    sides = (resolve(request.sides[0]), resolve(request.sides[1]))
    if sides[0].same_as(sides[1]) and not config.b_cpu_steal_percent:
        log.warning(
            "Sides A and B are the same build and settings: this is an A/A run (it should say NO_CHANGE)."
        )
    catalog = load_catalog(request.catalog)
    facts = probe_machine()
    plan = plan_run(
        catalog.get(request.scenario),
        facts,
        LabOptions(frame_sizes_bytes=(config.frame_size_bytes,), tests=(VsperfTest.PHY2PHY_TPUT,)),
    )
    backend = generator_backend(config.generator)
    if generator_factory is None:
        backend.readiness().require(backend.name)
    try:
        out.mkdir(parents=True)
    except OSError as err:
        raise LabError(f"Cannot create '{out}': {err.strerror}.") from err
    outcome_box: list[CompareOutcome] = []

    def keep(outcome: CompareOutcome) -> None:
        outcome_box[:] = [outcome]
        write_outcome(outcome, out)

    observer = CompareProgress() if request.progress else CompareObserver()
    with sigterm_interrupts():
        try:
            outcome = run_compare(
                sides, plan.cpus, config, state_root=request.state_root,
                generator_factory=generator_factory or backend.start, observer=observer, on_round=keep,
                crash_log_dir=out,
            )  # fmt: skip
            write_outcome(outcome, out)
        except (KeyboardInterrupt, LabError) as err:
            partial = outcome_box[0] if outcome_box else CompareOutcome(sides, config)
            partial.complete = False
            partial.reason = (
                "interrupted (Ctrl-C or SIGTERM)" if isinstance(err, KeyboardInterrupt) else str(err)
            )
            write_outcome(partial, out)
            raise
    return outcome
