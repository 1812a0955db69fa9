"""Records of a bisection: the builds in the range, the steps measured, and what they conclude.

The builds are in build order (oldest first): index 0 is the good build, the last one the bad
build. A step is one comparison of a build (side B) against the good build (side A), or a build
that could not be made ready (skipped). Light: the parser and the state file use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ovsperf_common.spec import SpecEnum
from ovsperf_lab.errors import LabError


class BuildUnavailableError(LabError):
    """A build cannot be made ready or cannot run: the bisection skips it with this reason.

    Missing, not COMPLETE, RPMs not downloadable, damaged or not unpackable, no working ovs-vswitchd.
    """


class BuildKind(SpecEnum):
    """Where a build comes from."""

    LOCAL = "local"
    """``system``, an ovs-vswitchd binary, a directory of unpacked packages, or a DPDK library dir."""
    KOJI = "koji"
    """A Koji build (its NVR): downloaded, verified and unpacked when a step needs it."""


class StepKind(SpecEnum):
    """What a step was for."""

    BRACKET = "bracket"
    """The bad build against the good one: does the range hold a regression at all?"""
    MIDPOINT = "midpoint"
    """A build between the last good and the first bad one."""
    REPEAT = "repeat"
    """The previous step's build again with twice the rounds (it was inside its MDC)."""


class StepOutcome(SpecEnum):
    """What a step says about its build."""

    BAD = "bad"
    """Slower than the good build: a REGRESSION of at least half the regression sought."""
    CRASHED = "crashed"
    """Its OVS would not start or died: counted as bad (its log is named)."""
    GOOD = "good"
    """Not the regression sought: it would have been seen (MDC below it), and less than half of it was."""
    UNDECIDABLE = "undecidable"
    """Neither: the comparison cannot tell no change from the regression sought (inside its MDC)."""
    SKIPPED = "skipped"
    """Could not be made ready (download, verification, unpacking, ``--version``): not measured."""


class Conclusion(SpecEnum):
    """How a bisection ended."""

    FOUND = "FOUND"
    """One first bad build: every build before it that was compared is good."""
    CANDIDATES = "CANDIDATES"
    """The first bad build is one of a few: builds between were skipped (their reasons given)."""
    UNDECIDABLE = "UNDECIDABLE"
    """A build between stayed inside its MDC after its repeat: the range left is the answer, not a guess."""
    NO_REGRESSION = "NO_REGRESSION"
    """The bad build is not slower than the good one: the range does not bracket a regression."""


@dataclass(frozen=True)
class Build:
    """One build of the range."""

    index: int
    """Position in build order, 0 = the good build [1]."""
    label: str
    """What the page calls it: the NVR, or the source as given."""
    kind: BuildKind
    """Where it comes from."""
    source: str
    """``system``, a binary or package directory (as ``compare --b`` takes it), or the Koji NVR."""
    lib_dir: str | None = None
    """``LD_LIBRARY_PATH`` of its ovs-vswitchd (a DPDK library directory), as ``--b-lib-dir``."""
    cpu_steal_percent: float | None = None
    """TEST AID: share of its PMD CPU taken while it is measured (``--cpu-steal``) [%]."""

    def __post_init__(self) -> None:
        """Check the fields.

        :raises LabError: naming the field and the build.
        """
        if self.index < 0 or not self.label or not self.source:
            raise LabError(
                f"Build {self.index}: 'index' must be >= 0 and 'label' and 'source' non-empty, "
                f"got {self.index!r}, {self.label!r}, {self.source!r}."
            )

    def to_json(self) -> dict[str, Any]:
        """Return the build as a JSON object (state file, ``bisect.json``)."""
        return {
            "index": self.index,
            "label": self.label,
            "kind": self.kind.value,
            "source": self.source,
            "lib_dir": self.lib_dir,
            "cpu_steal_percent": self.cpu_steal_percent,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Build:
        """Return the build :meth:`to_json` wrote.

        :raises LabError: for a missing or bad field.
        """
        try:
            steal = data.get("cpu_steal_percent")
            return cls(
                index=int(data["index"]),
                label=str(data["label"]),
                kind=BuildKind.from_spec(str(data["kind"]), field="kind"),
                source=str(data["source"]),
                lib_dir=None if data.get("lib_dir") is None else str(data["lib_dir"]),
                cpu_steal_percent=None if steal is None else float(steal),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise LabError(f"A build in the state file is malformed: {err!r}.") from err


@dataclass(frozen=True)
class Step:
    """One step: a comparison of ``build`` (B) against the good build (A), or a skipped build."""

    number: int
    """Step number, from 1 [1]."""
    kind: StepKind
    """What it was for."""
    build: int
    """Index of the build compared (side B) [1]."""
    outcome: StepOutcome
    """What it says about the build."""
    reason: str
    """One sentence: why this outcome."""
    verdict: str | None = None
    """The comparison's verdict (``REGRESSION``, ``NO_CHANGE``, ``IMPROVEMENT``); ``None`` when
    nothing was measured."""
    change_percent: float | None = None
    """B against A [%]."""
    ci_low_percent: float | None = None
    """Lower end of its 95 % interval [%]."""
    ci_high_percent: float | None = None
    """Upper end [%]."""
    mdc_percent: float | None = None
    """Its minimum detectable change [%]."""
    rounds: int | None = None
    """Complete rounds measured [1]."""
    page: str | None = None
    """The comparison's page, relative to the bisection's directory."""
    log: str | None = None
    """A crashed build's ovs-vswitchd log, relative to the bisection's directory."""
    wall_s: float = 0.0
    """Wall time of the step, the build's download included [s]."""

    @property
    def measured(self) -> bool:
        """Whether the step ran a comparison (a skipped build's step did not)."""
        return self.outcome is not StepOutcome.SKIPPED

    def to_json(self) -> dict[str, Any]:
        """Return the step as a JSON object."""
        return {
            "number": self.number,
            "kind": self.kind.value,
            "build": self.build,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "verdict": self.verdict,
            "change_percent": self.change_percent,
            "ci_low_percent": self.ci_low_percent,
            "ci_high_percent": self.ci_high_percent,
            "mdc_percent": self.mdc_percent,
            "rounds": self.rounds,
            "page": self.page,
            "log": self.log,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        """Return the step :meth:`to_json` wrote.

        :raises LabError: for a missing or bad field.
        """

        def number(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else float(value)

        try:
            rounds = data.get("rounds")
            return cls(
                number=int(data["number"]),
                kind=StepKind.from_spec(str(data["kind"]), field="kind"),
                build=int(data["build"]),
                outcome=StepOutcome.from_spec(str(data["outcome"]), field="outcome"),
                reason=str(data["reason"]),
                verdict=None if data.get("verdict") is None else str(data["verdict"]),
                change_percent=number("change_percent"),
                ci_low_percent=number("ci_low_percent"),
                ci_high_percent=number("ci_high_percent"),
                mdc_percent=number("mdc_percent"),
                rounds=None if rounds is None else int(rounds),
                page=None if data.get("page") is None else str(data["page"]),
                log=None if data.get("log") is None else str(data["log"]),
                wall_s=float(data.get("wall_s", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise LabError(f"A step in the state file is malformed: {err!r}.") from err


@dataclass(frozen=True)
class Result:
    """What the steps conclude."""

    conclusion: Conclusion
    """How the bisection ended."""
    message: str
    """One or two sentences for stderr and the page."""
    first_bad: int | None = None
    """The first bad build (FOUND), else the first bad build measured; ``None`` for NO_REGRESSION."""
    last_good: int | None = None
    """The last build found good before it."""
    candidates: tuple[int, ...] = ()
    """Builds the first bad one can be (FOUND: just it; CANDIDATES: it and the skipped ones before it;
    UNDECIDABLE: every build after the last good one up to the first bad one)."""
