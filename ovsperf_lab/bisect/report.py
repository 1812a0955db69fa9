"""Write a bisection's ``bisect.json`` and ``index.html`` (the compare page's style and pieces).

Rewritten after every step (each file atomically), so an interrupted bisection shows its steps
so far. Each step links to its comparison's own page (every round, in run order); a crashed
build links its ``ovs-vswitchd`` log. ``bisect.json`` (schema 1)::

    {"schema": 1, "conclusion": "FOUND"|"CANDIDATES"|"UNDECIDABLE"|"NO_REGRESSION"|null,
     "message": str, "first_bad": index|null, "first_bad_label": str|null, "last_good": index|null,
     "candidates": [label], "sought_percent": float, "max_steps": int, "measured_steps": int,
     "skipped_steps": int, "complete": bool, "reason": str|null, "config": {...},
     "builds": [{index, label, kind, source, lib_dir, cpu_steal_percent, status}],
     "steps": [{number, kind, build, outcome, reason, verdict, change_percent, ci_low_percent,
                ci_high_percent, mdc_percent, rounds, page, log, wall_s}]}
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

# mypy cannot follow setuptools' package-dir mapping of templates/ in an editable install.
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_lab.bisect.model import Result
from ovsperf_lab.bisect.search import max_steps, sought_percent
from ovsperf_lab.bisect.state import BisectState

REPORT_NAME = "bisect.json"
"""The JSON report's name in the bisection's directory."""
PAGE_NAME = "index.html"
"""The page's name in the bisection's directory."""


def report_data(state: BisectState, result: Result | None, reason: str | None) -> dict[str, Any]:
    """Return ``bisect.json`` (see the module docstring).

    :param result: the conclusion, ``None`` while the bisection is not finished.
    :param reason: why it stopped unfinished (interrupted, an error), else ``None``.
    """
    config = state.request.config
    status: dict[int, str] = {0: "GOOD"} if state.steps else {}
    for step in state.steps:
        status[step.build] = step.outcome.value.upper()
    builds = [{**b.to_json(), "status": status.get(b.index)} for b in state.builds]
    labels = [b.label for b in state.builds]
    first_bad = None if result is None else result.first_bad
    return {
        "schema": 1,
        "conclusion": None if result is None else result.conclusion.value,
        "message": "" if result is None else result.message,
        "first_bad": first_bad,
        "first_bad_label": None if first_bad is None else labels[first_bad],
        "last_good": None if result is None else result.last_good,
        "candidates": [] if result is None else [labels[i] for i in result.candidates],
        "sought_percent": sought_percent(state.steps, config.target_mdc_percent, len(state.builds) - 1),
        "max_steps": max_steps(len(state.builds)),
        "measured_steps": sum(1 for s in state.steps if s.measured),
        "skipped_steps": sum(1 for s in state.steps if not s.measured),
        "complete": result is not None,
        "reason": reason,
        "config": dataclasses.asdict(config),
        "builds": builds,
        "steps": [s.to_json() for s in state.steps],
    }


def write_report(
    state: BisectState, directory: Path, result: Result | None, reason: str | None = None
) -> Path:
    """Write (or rewrite) ``bisect.json`` and ``index.html`` into ``directory``; return the page's path.

    :raises OSError: when a file cannot be written.
    """
    data = report_data(state, result, reason)
    atomic_write_text(directory / REPORT_NAME, json.dumps(data, indent=1, allow_nan=False) + "\n")
    page = environment("compare", autoescape=True).get_template("bisect.html.j2").render(report=data)
    atomic_write_text(directory / PAGE_NAME, page)
    return directory / PAGE_NAME
