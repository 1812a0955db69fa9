"""A fake comparison for ``ovsperf-lab bisect``: deterministic step results from a table of true changes.

Each build has a true change against the good build [%] and the comparison an MDC [%]; a step
says REGRESSION when the change is below −max(MDC, threshold), IMPROVEMENT when above +max(MDC,
threshold), NO_CHANGE otherwise, with an interval of ±0.7 MDC around the change. A repeat (twice
the rounds) has an MDC √2 smaller. Builds can crash, be unavailable, or have their own MDC.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ovsperf_lab.bisect.model import BuildUnavailableError
from ovsperf_lab.bisect.search import Measured
from ovsperf_lab.bisect.session import StepMeasurement, StepRun
from ovsperf_lab.compare.config import CompareConfig

BASE_ROUNDS = CompareConfig().max_rounds


@dataclass
class FakeComparison:
    """Deterministic comparisons; records every run."""

    changes: Mapping[int, float]
    """Build index → true change against the good build [%] (missing: 0)."""
    mdc_percent: float = 2.0
    """MDC of a comparison with the configured rounds [%]."""
    mdc_of: Mapping[int, float] = field(default_factory=dict)
    """Build index → its own MDC [%] (noisier builds)."""
    crash: frozenset[int] = frozenset()
    """Builds whose OVS dies."""
    unavailable: frozenset[int] = frozenset()
    """Builds that cannot be made ready."""
    threshold_percent: float = 1.0
    """The comparison's practical threshold [%]."""
    interrupt_at_call: int | None = None
    """Raise KeyboardInterrupt at this call (from 1), as Ctrl-C would."""
    runs: list[StepRun] = field(default_factory=list)
    """Every run asked for."""

    def __call__(self, run: StepRun) -> StepMeasurement:
        self.runs.append(run)
        if self.interrupt_at_call is not None and len(self.runs) == self.interrupt_at_call:
            raise KeyboardInterrupt
        index = run.candidate.index
        if index in self.unavailable:
            raise BuildUnavailableError(f"Build '{run.candidate.label}' has no RPMs (fake).")
        run.out.mkdir(parents=True)
        page = run.out / "index.html"
        page.write_text("<html>fake comparison</html>\n")
        if index in self.crash:
            log = run.out / "side-B-ovs-vswitchd.log"
            log.write_text("fake crash\n")
            return StepMeasurement(
                Measured(None), None, page, log, f"Side B: ovs-vswitchd died. See '{log}'."
            )
        factor = run.config.max_rounds / BASE_ROUNDS
        mdc = self.mdc_of.get(index, self.mdc_percent) / math.sqrt(factor)
        change = self.changes.get(index, 0.0)
        limit = max(mdc, self.threshold_percent)
        verdict = "REGRESSION" if change < -limit else "IMPROVEMENT" if change > limit else "NO_CHANGE"
        measured = Measured(verdict, change, change - 0.7 * mdc, change + 0.7 * mdc, mdc)
        return StepMeasurement(measured, run.config.max_rounds, page, None, "fake")


def slower_from(first_bad: int, builds: int, change_percent: float = -10.0) -> dict[int, float]:
    """Return the changes of a row where builds ``first_bad`` … are slower by ``change_percent``."""
    return {i: (change_percent if i >= first_bad else 0.0) for i in range(builds)}


def out_dir(tmp_path: Path) -> Path:
    """Return a fresh output root."""
    path = tmp_path / "out"
    path.mkdir(parents=True, exist_ok=True)
    return path
