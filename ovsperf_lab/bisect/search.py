"""The bisection: from the steps so far, the next build to compare, or what the steps conclude.

Pure and deterministic: the state of a bisection is its list of steps, and :func:`next_step`
replays it from the start, so a resumed run (Ctrl-C, a reboot) continues exactly where it stopped.

Every comparison is of a build (side B) against the *good* build (side A), never against the
last build found good: the steps then measure one quantity, the change since the good build.

1. **Bracket**: the bad build against the good one. REGRESSION (or its OVS crashes) confirms the
   range, and the size of its change is the regression sought, ``R``. IMPROVEMENT, or NO CHANGE with
   an MDC at most ``target_mdc_percent``, ends it: the range does not bracket a regression. NO
   CHANGE with a larger MDC is repeated once with twice the rounds; still NO CHANGE ends it too,
   stating how large a regression could have hidden.
2. **Midpoints**: among the builds strictly between the last good (``lo``) and the first bad
   (``hi``) build that are neither skipped nor undecidable, the middle one (the lower of two),
   classified by :func:`classify`: bad (a REGRESSION with its interval below ``−R / 4``, or a
   crash) → ``hi``; good (no REGRESSION, its interval above ``−R / 2``, its MDC below ``R``) →
   ``lo``; otherwise
   the step is repeated once with twice the rounds, and if still not decided, the bisection stops:
   UNDECIDABLE, the first bad build is somewhere in ``(lo, hi]`` — never guessed.
3. When no build is left between ``lo`` and ``hi``: ``hi`` is the first bad build (FOUND) when no
   skipped build lies between them; else the answer is the set of those and ``hi`` (CANDIDATES).

With ``N`` builds the midpoints halve ``N − 1`` possible answers, so a bisection without repeats
takes at most ``1 + ⌈log2 (N − 1)⌉`` comparisons (git bisect's bound, plus the bracket).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ovsperf_lab.bisect.model import Conclusion, Result, Step, StepKind, StepOutcome


@dataclass(frozen=True)
class NextStep:
    """The next comparison to run."""

    build: int
    """Index of the build to compare against the good build [1]."""
    kind: StepKind
    """What it is for."""
    rounds_factor: int
    """Rounds relative to the configured ones: 1, or 2 for a repeat [1]."""


@dataclass(frozen=True)
class Measured:
    """What a comparison measured, as the step classifies it (``None``: not measured)."""

    verdict: str | None
    """``REGRESSION``, ``NO_CHANGE`` or ``IMPROVEMENT``; ``None`` when the build's OVS crashed."""
    change_percent: float | None = None
    """B against A [%]."""
    ci_low_percent: float | None = None
    """Lower end of the interval [%]."""
    ci_high_percent: float | None = None
    """Upper end [%]."""
    mdc_percent: float | None = None
    """Minimum detectable change [%]."""


def max_steps(builds: int) -> int:
    """Return the most comparisons a bisection of ``builds`` builds may take: ⌈log2 N⌉ + 2 [1].

    The bracket, ⌈log2 (N − 1)⌉ midpoints and one repeat fit in it.
    """
    return math.ceil(math.log2(max(builds, 2))) + 2


def classify(
    measured: Measured, kind: StepKind, sought_percent: float | None, target_mdc_percent: float
) -> tuple[StepOutcome, str]:
    """Return what a comparison says about its build, and why (one sentence).

    The bracket (``sought_percent`` ``None``): REGRESSION → bad; IMPROVEMENT → good; NO CHANGE →
    good when its MDC is at most ``target_mdc_percent``, else undecidable. A midpoint, with the
    regression sought ``R``: bad on a REGRESSION whose whole interval lies below ``−R / 4``; good
    when it is no REGRESSION, its whole interval lies above ``−R / 2`` and its MDC below ``R`` (a
    change of ``R`` would have been seen); otherwise undecidable. So a chance REGRESSION of a few
    percent in a step of an unchanged build is not taken for the regression sought, and a build
    measured slower than the good one is never called good — even when the slowdown measured is
    smaller than the bracket's (the size of a slowdown moves with the machine's load).

    :param measured: the comparison's verdict and numbers; ``verdict`` ``None`` for a crash.
    :param kind: the step's kind (a repeat that stays undecided is UNDECIDABLE for good).
    :param sought_percent: ``R`` [%, > 0], or ``None`` for the bracket.
    :param target_mdc_percent: the comparison's MDC target [%].
    """
    if measured.verdict is None:
        return StepOutcome.CRASHED, "its OVS would not start or died: counted as bad"
    change = measured.change_percent if measured.change_percent is not None else 0.0
    mdc = measured.mdc_percent
    low = measured.ci_low_percent
    shown = "n/a" if mdc is None else f"{mdc:.2f} %"
    again = "" if kind is StepKind.REPEAT else "; repeated with twice the rounds"
    if sought_percent is None:
        if measured.verdict == "REGRESSION":
            return StepOutcome.BAD, f"slower than the good build by {-change:.2f} % (REGRESSION)"
        if measured.verdict == "IMPROVEMENT":
            return StepOutcome.GOOD, f"faster than the good build by {change:.2f} % (IMPROVEMENT)"
        if mdc is not None and mdc <= target_mdc_percent:
            return StepOutcome.GOOD, f"no change, MDC {shown} <= the {target_mdc_percent:g} % target"
        return StepOutcome.UNDECIDABLE, f"no change found, but the MDC is {shown}{again}"
    half, quarter = sought_percent / 2, sought_percent / 4
    high = measured.ci_high_percent
    if measured.verdict == "REGRESSION" and high is not None and high < -quarter:
        return (
            StepOutcome.BAD,
            f"slower than the good build by {-change:.2f} % (REGRESSION, its interval below a quarter of "
            f"the {sought_percent:.2f} % of the bad build)",
        )
    if (
        measured.verdict != "REGRESSION"
        and low is not None
        and low > -half
        and mdc is not None
        and mdc < sought_percent
    ):
        return (
            StepOutcome.GOOD,
            f"{change:+.2f} %, not slower, its interval above half the {sought_percent:.2f} % of the bad "
            f"build and the MDC {shown} below it (that regression would have been seen)",
        )
    return (
        StepOutcome.UNDECIDABLE,
        f"{change:+.2f} % ({measured.verdict}, MDC {shown}) cannot tell no change from the "
        f"{sought_percent:.2f} % of the bad build{again}",
    )


def sought_percent(steps: Sequence[Step], target_mdc_percent: float, bad_index: int) -> float | None:
    """Return ``R``, the regression the midpoints look for [%], or ``None`` while the bracket is open.

    ``R`` is the bracket's change, or the MDC target when the bad build's OVS crashed.

    :param bad_index: index of the bad build (the last one).
    """
    for step in steps:
        if step.build == bad_index and step.outcome is StepOutcome.BAD and step.change_percent is not None:
            return max(abs(step.change_percent), 1e-9)
        if step.build == bad_index and step.outcome is StepOutcome.CRASHED:
            return target_mdc_percent
    return None


def next_step(
    builds: int, steps: Sequence[Step], *, target_mdc_percent: float, labels: Sequence[str] = ()
) -> NextStep | Result:
    """Return the next comparison, or what ``steps`` conclude (see the module docstring).

    :param builds: number of builds in the range, the good and the bad one included (>= 2) [1].
    :param steps: every step so far, in order.
    :param target_mdc_percent: the comparison's MDC target [%], the bracket's ``R``.
    :param labels: the builds' names for the conclusion's message (default: ``build <index>``).
    :raises ValueError: for fewer than 2 builds, or a step of a build outside the range or after
        the steps have concluded.
    """
    if builds < 2:
        raise ValueError(f"A bisection needs at least 2 builds (good and bad), got {builds}.")
    bad = builds - 1
    lo: int = 0
    hi: int | None = None
    set_aside: dict[int, StepOutcome] = {}
    pending: NextStep | None = NextStep(bad, StepKind.BRACKET, 1)
    for step in steps:
        if pending is None or step.build != pending.build or not 0 < step.build <= bad:
            raise ValueError(f"Step {step.number} (build {step.build}) is not the next one of the bisection.")
        if hi is None:  # the bracket
            done = _bracket(step)
            if isinstance(done, Result):
                return done  # a later step cannot exist
            hi, pending = (bad, None) if done else (None, NextStep(bad, StepKind.REPEAT, 2))
        elif step.outcome in (StepOutcome.BAD, StepOutcome.CRASHED):
            hi, pending = step.build, None
        elif step.outcome is StepOutcome.GOOD:
            lo, pending = step.build, None
        elif step.outcome is StepOutcome.UNDECIDABLE and step.kind is not StepKind.REPEAT:
            pending = NextStep(step.build, StepKind.REPEAT, 2)
            continue
        elif step.outcome is StepOutcome.UNDECIDABLE:  # after its repeat: stop, never guess
            if step is not steps[-1]:
                raise ValueError(f"Step {step.number + 1} comes after the bisection concluded.")
            return _undecidable(step.build, lo, hi, labels)
        else:  # SKIPPED
            set_aside[step.build], pending = step.outcome, None
        if pending is None and hi is not None:
            planned = _midpoint(lo, hi, set_aside, labels)
            if isinstance(planned, Result):
                if step is not steps[-1]:
                    raise ValueError(f"Step {step.number + 1} comes after the bisection concluded.")
                return planned
            pending = planned
    assert pending is not None
    return pending


def _bracket(step: Step) -> bool | Result:
    """Return True when the bracket step confirms the range, False to repeat it, or the conclusion."""
    if step.outcome in (StepOutcome.BAD, StepOutcome.CRASHED):
        return True
    if step.outcome is StepOutcome.UNDECIDABLE and step.kind is StepKind.BRACKET:
        return False
    if step.outcome is StepOutcome.SKIPPED:
        raise ValueError("The bad build cannot be skipped: the bisection needs it measured.")
    change = "n/a" if step.change_percent is None else f"{step.change_percent:+.2f} %"
    mdc = "n/a" if step.mdc_percent is None else f"{step.mdc_percent:.2f} %"
    swapped = (
        " Are good and bad swapped?"
        if step.verdict == "IMPROVEMENT" or (step.change_percent or 0.0) > 0
        else f" No regression larger than {mdc} (the MDC) could have hidden in it."
    )
    return Result(
        Conclusion.NO_REGRESSION,
        f"No regression found in the range: the bad build against the good build is {change} "
        f"({step.verdict}), so the range does not bracket a regression.{swapped}",
        last_good=None,
    )


def _namer(labels: Sequence[str]) -> Callable[[int], str]:
    """Return how a message names build ``index``: its label quoted, or ``build <index>``."""
    return lambda index: f"'{labels[index]}'" if index < len(labels) else f"build {index}"


def _midpoint(
    lo: int, hi: int, set_aside: dict[int, StepOutcome], labels: Sequence[str]
) -> NextStep | Result:
    """Return the middle untested build strictly between ``lo`` and ``hi``, or the conclusion."""
    name = _namer(labels)
    usable = [i for i in range(lo + 1, hi) if i not in set_aside]
    if usable:
        return NextStep(usable[(len(usable) - 1) // 2], StepKind.MIDPOINT, 1)
    between = tuple(i for i in range(lo + 1, hi) if i in set_aside)
    if not between:
        return Result(
            Conclusion.FOUND,
            f"The first bad build is {name(hi)}: {name(lo)} just before it is "
            + ("the good build." if lo == 0 else "good."),
            first_bad=hi,
            last_good=lo,
            candidates=(hi,),
        )
    named = ", ".join(name(i) for i in (*between, hi))
    return Result(
        Conclusion.CANDIDATES,
        f"The first bad build is one of {named}: {', '.join(map(name, between))} "
        "could not be tested (skipped).",
        first_bad=hi,
        last_good=lo,
        candidates=(*between, hi),
    )


def _undecidable(build: int, lo: int, hi: int, labels: Sequence[str]) -> Result:
    """Return the conclusion when ``build`` stayed undecided after its repeat: the range left, not a guess."""
    name = _namer(labels)
    candidates = tuple(range(lo + 1, hi + 1))
    return Result(
        Conclusion.UNDECIDABLE,
        f"Undecidable: {name(build)} stayed inside its MDC after a repeat with twice the rounds, so the "
        f"first bad build is one of the {len(candidates)} builds from {name(lo + 1)} to {name(hi)} "
        f"({name(lo)} is good); not guessed.",
        first_bad=hi,
        last_good=lo,
        candidates=candidates,
    )
