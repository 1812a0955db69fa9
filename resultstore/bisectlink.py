"""Read a bisection's ``bisect.json`` as the culprit of a trend regression (``ovsperf-results culprit``).

``ovsperf-lab bisect`` writes ``bisect.json`` and ``index.html`` into its directory
(``ovsperf_lab/bisect/report.py``, schema 1). The store links a regression of one series at one
result to that bisection: the first bad build's label (its NVR, or the source as given), the
page, the JSON, and each step's evidence (change, interval, MDC, rounds). The file is read here as
data, field by field (the results store does not import the lab): only a finished bisection that
FOUND one first bad build names a culprit, and every other file is refused with the file and the
field named. Nothing is written before the whole file is checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ovsperf_common.errorfmt import located
from ovsperf_common.regularfile import read_regular_text
from resultstore.errors import ResultStoreError
from resultstore.model import SeriesKey

REPORT_NAME = "bisect.json"
"""The JSON report's name in a bisection's directory (``ovsperf_lab.bisect.report.REPORT_NAME``)."""
PAGE_NAME = "index.html"
"""The page's name beside it."""
SCHEMA = 1
"""The ``bisect.json`` layout read here."""
MAX_LABEL = 255
"""Longest build label the store keeps [characters] (``culprits.culprit_build``)."""

_BAD_OUTCOMES = ("bad", "crashed")
"""Step outcomes that call a build bad (``ovsperf_lab.bisect.model.StepOutcome``)."""


@dataclass(frozen=True)
class BisectStep:
    """One step of the bisection: its build against the good build, as ``bisect.json`` has it."""

    number: int
    """Step number, from 1 [1]."""
    build: str
    """Label of the build compared (side B)."""
    outcome: str
    """``bad``, ``crashed``, ``good``, ``undecidable`` or ``skipped``."""
    verdict: str | None
    """The comparison's verdict (``REGRESSION``, ``NO_CHANGE``, ``IMPROVEMENT``); None: not measured."""
    change_percent: float | None
    """B against A [%]."""
    ci_low_percent: float | None
    """Lower end of its 95 % interval [%]."""
    ci_high_percent: float | None
    """Upper end [%]."""
    mdc_percent: float | None
    """Its minimum detectable change [%]."""
    rounds: int | None
    """Complete rounds measured [1]."""

    def text(self) -> str:
        """Return ``step 2, #5 system: bad, REGRESSION -10.00 % [-11.40, -8.60], MDC 2.00 %, 20 rounds``."""
        parts = [f"step {self.number}, {self.build}: {self.outcome}"]
        if self.verdict is not None:
            parts[0] += f", {self.verdict}"
        if self.change_percent is not None:
            parts[0] += f" {self.change_percent:+.2f} %"
        if self.ci_low_percent is not None and self.ci_high_percent is not None:
            parts[0] += f" [{self.ci_low_percent:+.2f}, {self.ci_high_percent:+.2f}]"
        if self.mdc_percent is not None:
            parts.append(f"MDC {self.mdc_percent:.2f} %")
        if self.rounds is not None:
            parts.append(f"{self.rounds} rounds")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """Return the step as the store keeps it (``culprits.evidence``)."""
        return {
            "number": self.number,
            "build": self.build,
            "outcome": self.outcome,
            "verdict": self.verdict,
            "change_percent": self.change_percent,
            "ci_low_percent": self.ci_low_percent,
            "ci_high_percent": self.ci_high_percent,
            "mdc_percent": self.mdc_percent,
            "rounds": self.rounds,
        }


@dataclass(frozen=True)
class BisectCulprit:
    """What a FOUND bisection says: the first bad build, where its page is, and the evidence."""

    culprit: str
    """The first bad build's label (a Koji NVR, or the source as given) [at most 255 characters]."""
    last_good: str | None
    """The last build found good before it."""
    message: str
    """The bisection's conclusion in one or two sentences."""
    metric: str
    """What each step compared (``mrr`` or ``pdr``, ``ovsperf-lab compare --metric``)."""
    frame_size_bytes: int
    """Frame size of every step, incl. FCS [B]."""
    flows: int
    """Flows per direction of every step [1]."""
    sought_percent: float | None
    """The regression sought: the bracket step's change, as a positive number [%]; None: not given."""
    report: Path
    """The bisection's ``bisect.json`` (absolute)."""
    page: Path
    """Its ``index.html`` (absolute)."""
    steps: tuple[BisectStep, ...]
    """Every step, in order."""

    @property
    def measured_steps(self) -> int:
        """Return how many steps ran a comparison (skipped builds' steps did not) [1]."""
        return sum(1 for s in self.steps if s.outcome != "skipped")

    def summary(self) -> str:
        """Return ``'#5 system' (bisection: 4 comparisons, MRR at 64 B, last good '#4 system')``."""
        good = f", last good '{self.last_good}'" if self.last_good else ""
        return (
            f"'{self.culprit}' (bisection: {self.measured_steps} comparisons, {self.metric.upper()} "
            f"at {self.frame_size_bytes} B{good})"
        )

    def evidence(self) -> dict[str, Any]:
        """Return what the store keeps beside the culprit, the page and the JSON (``culprits.evidence``)."""
        return {
            "last_good": self.last_good,
            "message": self.message,
            "metric": self.metric,
            "frame_size_bytes": self.frame_size_bytes,
            "flows": self.flows,
            "sought_percent": self.sought_percent,
            "steps": [s.to_json() for s in self.steps],
        }

    @classmethod
    def from_stored(cls, culprit: str, report: str, page: str, evidence: Mapping[str, Any]) -> BisectCulprit:
        """Return the bisection the store recorded (the columns of ``culprits``; checked when recorded)."""
        sought = evidence.get("sought_percent")
        return cls(
            culprit=culprit,
            last_good=evidence.get("last_good"),
            message=str(evidence.get("message", "")),
            metric=str(evidence.get("metric", "")),
            frame_size_bytes=int(evidence.get("frame_size_bytes", 0)),
            flows=int(evidence.get("flows", 1)),
            sought_percent=None if sought is None else float(sought),
            report=Path(report),
            page=Path(page),
            steps=tuple(BisectStep(**s) for s in evidence.get("steps", ())),
        )


@dataclass(frozen=True)
class CulpritRecord:
    """A regression of one series at one result linked to the bisection that found its first bad build."""

    id: int
    """Database id (grows with time: the newest link of a series at a result counts)."""
    result_name: str
    """The result where the regression shows (``since`` on the trend pages)."""
    key: SeriesKey
    """The series."""
    bisection: BisectCulprit
    """What the bisection found."""
    tester: str | None
    """Who linked it; None when not given."""
    recorded_at: datetime
    """When (timezone-aware UTC)."""


def _fail(path: Path, field: str, reason: str) -> ResultStoreError:
    return ResultStoreError(located(reason, path, ("field", field)))


def _int(data: Mapping[str, Any], key: str, path: Path, field: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, field, f"expected an integer, got {value!r}.")
    return value


def _number(data: Mapping[str, Any], key: str, path: Path, field: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, field, f"expected a finite number or null, got {value!r}.")
    return float(value)


def _text(data: Mapping[str, Any], key: str, path: Path, field: str, *, optional: bool = False) -> str | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, field, f"expected a non-empty string, got {value!r}.")
    return value


def _locate(given: Path) -> Path:
    """Return the ``bisect.json`` that ``--bisect`` names: the file itself, or the bisection's directory's."""
    return given / REPORT_NAME if given.is_dir() else given


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular_text(path))
    except FileNotFoundError as err:
        raise ResultStoreError(
            f"Option '--bisect': '{path}' does not exist; give an 'ovsperf-lab bisect' directory "
            f"or its '{REPORT_NAME}'."
        ) from err
    except OSError as err:
        raise ResultStoreError(f"Cannot read '{path}': {err.strerror}.") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultStoreError(f"'{path}' is not JSON: {err}.") from err
    if not isinstance(data, dict):
        raise ResultStoreError(f"'{path}' is not a JSON object: not an 'ovsperf-lab bisect' report.")
    if data.get("schema") != SCHEMA:
        raise _fail(
            path, "schema", f"expected {SCHEMA} (an 'ovsperf-lab bisect' report), got {data.get('schema')!r}."
        )
    return data


def _steps(data: Mapping[str, Any], labels: list[str], path: Path) -> tuple[BisectStep, ...]:
    raw = data.get("steps")
    if not isinstance(raw, list) or not raw:
        raise _fail(path, "steps", f"expected a non-empty list of steps, got {raw!r}.")
    steps = []
    for i, step in enumerate(raw):
        where = f"steps[{i}]"
        if not isinstance(step, dict):
            raise _fail(path, where, f"expected a JSON object, got {step!r}.")
        build = _int(step, "build", path, f"{where}.build")
        if not 0 <= build < len(labels):
            raise _fail(
                path, f"{where}.build", f"expected a build index 0 to {len(labels) - 1}, got {build}."
            )
        rounds = step.get("rounds")
        steps.append(
            BisectStep(
                number=_int(step, "number", path, f"{where}.number"),
                build=labels[build],
                outcome=str(_text(step, "outcome", path, f"{where}.outcome")),
                verdict=_text(step, "verdict", path, f"{where}.verdict", optional=True),
                change_percent=_number(step, "change_percent", path, f"{where}.change_percent"),
                ci_low_percent=_number(step, "ci_low_percent", path, f"{where}.ci_low_percent"),
                ci_high_percent=_number(step, "ci_high_percent", path, f"{where}.ci_high_percent"),
                mdc_percent=_number(step, "mdc_percent", path, f"{where}.mdc_percent"),
                rounds=None if rounds is None else _int(step, "rounds", path, f"{where}.rounds"),
            )
        )
    return tuple(steps)


def read_bisect(given: Path) -> BisectCulprit:
    """Return the culprit a finished ``ovsperf-lab bisect`` named, from its directory or ``bisect.json``.

    :param given: the bisection's directory (``bisect_<timestamp>/``) or its ``bisect.json``.
    :raises ResultStoreError: naming the file (and the field) when it is missing, not JSON, not a
        schema 1 bisection report, unfinished, names no single first bad build (NO_REGRESSION,
        UNDECIDABLE, CANDIDATES), has a malformed field, or its page is missing.
    """
    path = _locate(Path(given)).absolute()
    data = _load(path)
    if data.get("complete") is not True:
        raise _fail(
            path,
            "complete",
            f"the bisection did not finish ({data.get('reason') or 'no reason given'}): it names no "
            "culprit yet; continue it with 'ovsperf-lab bisect --resume DIR'.",
        )
    conclusion = data.get("conclusion")
    if conclusion != "FOUND":
        detail = data.get("message") or ""
        if conclusion == "CANDIDATES":
            detail = f"the first bad build is one of {data.get('candidates')!r}. {detail}"
        raise _fail(
            path,
            "conclusion",
            f"the bisection names no culprit (conclusion {conclusion!r}; only 'FOUND' names one "
            f"first bad build): {detail}".rstrip(": "),
        )
    builds = data.get("builds")
    if not isinstance(builds, list) or len(builds) < 2:
        raise _fail(path, "builds", f"expected a list of at least two builds, got {builds!r}.")
    labels = []
    for i, build in enumerate(builds):
        if not isinstance(build, dict):
            raise _fail(path, f"builds[{i}]", f"expected a JSON object, got {build!r}.")
        labels.append(str(_text(build, "label", path, f"builds[{i}].label")))
    first_bad = _int(data, "first_bad", path, "first_bad")
    if not 1 <= first_bad < len(labels):
        raise _fail(path, "first_bad", f"expected a build index 1 to {len(labels) - 1}, got {first_bad}.")
    culprit = _text(data, "first_bad_label", path, "first_bad_label")
    if culprit != labels[first_bad]:
        raise _fail(
            path,
            "first_bad_label",
            f"{culprit!r} is not build {first_bad}'s label {labels[first_bad]!r}.",
        )
    if len(labels[first_bad]) > MAX_LABEL:
        raise _fail(path, "first_bad_label", f"the label is longer than {MAX_LABEL} characters.")
    last_good = data.get("last_good")
    if last_good is not None:
        last_good = _int(data, "last_good", path, "last_good")
        if not 0 <= last_good < first_bad:
            raise _fail(path, "last_good", f"expected a build index 0 to {first_bad - 1}, got {last_good}.")
    steps = _steps(data, labels, path)
    if not any(s.build == labels[first_bad] and s.outcome in _BAD_OUTCOMES for s in steps):
        raise _fail(path, "steps", f"no step found the first bad build {labels[first_bad]!r} bad.")
    config = data.get("config")
    if not isinstance(config, dict):
        raise _fail(path, "config", f"expected a JSON object, got {config!r}.")
    found = BisectCulprit(
        culprit=labels[first_bad],
        last_good=None if last_good is None else labels[last_good],
        message=str(data.get("message") or ""),
        metric=str(_text(config, "metric", path, "config.metric")),
        frame_size_bytes=_int(config, "frame_size_bytes", path, "config.frame_size_bytes"),
        flows=_int(config, "flows", path, "config.flows") if "flows" in config else 1,
        sought_percent=_number(data, "sought_percent", path, "sought_percent"),
        report=path,
        page=path.parent / PAGE_NAME,
        steps=steps,
    )
    if not found.page.is_file():
        raise ResultStoreError(
            f"'{found.page}' is missing: the page of the bisection '{path}' must stay beside it to be linked."
        )
    return found
