"""TEMPORARY stand-in for ``reporting.api`` (reporting-contract.md) until the real reporting lands on main.

Installed into ``sys.modules`` by the ciflow/resultstore conftests only when ``reporting.api``
cannot be imported. Implements the contract's names with a deliberately small comparison.
"""

from __future__ import annotations

import csv
import html
import json
import sys
import types
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from ovsperf_common.atomicio import atomic_directory
from ovsperf_common.exitcodes import ExitCode


class ReportingError(Exception):
    pass


class NoResultsError(ReportingError):
    pass


@dataclass(frozen=True)
class Thresholds:
    regression_percent: float = 5.0
    improvement_percent: float = 5.0
    warning_percent: float = 2.0
    alpha: float = 0.05


@dataclass(frozen=True)
class TesterVerdict:
    verdict: str
    bug_id: str | None
    comment: str | None
    tester: str | None
    recorded_at: datetime


@dataclass(frozen=True)
class ReportOutcome:
    exit_code: ExitCode
    overall: str
    index_html: Path
    report_json: Path
    counts: Mapping[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def _load(dirs: Sequence[Path], side: str) -> dict[tuple[str, int], list[float]]:
    cells: dict[tuple[str, int], list[float]] = {}
    for directory in dirs:
        for csv_path in sorted(Path(directory).glob("result_*.csv")):
            try:
                with csv_path.open(encoding="utf-8", errors="replace", newline="") as handle:
                    for row in csv.DictReader(handle):
                        try:
                            key = (row["id"], int(row["packet_size"]))
                            value = float(row["throughput_rx_fps"])
                        except (KeyError, TypeError, ValueError):
                            continue
                        cells.setdefault(key, []).append(value)
            except OSError as err:
                raise ReportingError(f"cannot read '{csv_path}': {err}") from err
    if not cells:
        raise NoResultsError(f"No result CSV found on the {side} side.")
    return cells


def generate_report(
    baseline_dirs: Sequence[Path],
    current_dirs: Sequence[Path],
    output_dir: Path,
    thresholds: Thresholds = Thresholds(),
    tester_verdict: TesterVerdict | None = None,
    title: str | None = None,
) -> ReportOutcome:
    base = _load(baseline_dirs, "baseline")
    cur = _load(current_dirs, "current")
    counts: dict[str, int] = {}
    rows = []
    for key in sorted(set(base) & set(cur)):
        b = sum(base[key]) / len(base[key])
        c = sum(cur[key]) / len(cur[key])
        if b <= 0 or c <= 0:
            verdict, rel = "INVALID", None
        else:
            rel = (c / b - 1) * 100
            verdict = (
                "REGRESSION"
                if rel <= -thresholds.regression_percent
                else "IMPROVEMENT"
                if rel >= thresholds.improvement_percent
                else "PASS"
            )
        counts[verdict] = counts.get(verdict, 0) + 1
        rows.append(
            {"test": key[0], "frame_size_bytes": key[1], "rel_change_percent": rel, "verdict": verdict}
        )
    overall = "INVALID" if "INVALID" in counts else "REGRESSION" if "REGRESSION" in counts else "PASS"
    code = {"INVALID": ExitCode.ERROR, "REGRESSION": ExitCode.REGRESSION}.get(overall, ExitCode.OK)
    tv = (
        None
        if tester_verdict is None
        else {**asdict(tester_verdict), "recorded_at": tester_verdict.recorded_at.isoformat()}
    )
    report = {
        "schema": 1,
        "overall": overall,
        "counts": counts,
        "title": title,
        "baseline": [{"path": str(p)} for p in baseline_dirs],
        "current": [{"path": str(p)} for p in current_dirs],
        "tests": rows,
        "warnings": [],
        "tester_verdict": tv,
    }
    verdict_html = (
        ""
        if tester_verdict is None
        else (
            f"<p id='tester-verdict'>Tester verdict: {html.escape(tester_verdict.verdict)} "
            f"bug {html.escape(tester_verdict.bug_id or '')}</p>"
        )
    )
    try:
        with atomic_directory(output_dir) as tmp:
            (tmp / "report.json").write_text(json.dumps(report), encoding="utf-8")
            (tmp / "index.html").write_text(
                f"<html><title>{html.escape(title or '')}</title><body>{overall}{verdict_html}</body></html>",
                encoding="utf-8",
            )
    except OSError as err:
        raise ReportingError(f"cannot write '{output_dir}': {err}") from err
    return ReportOutcome(code, overall, output_dir / "index.html", output_dir / "report.json", counts, ())


def install() -> None:
    api = types.ModuleType("reporting.api")
    errors = types.ModuleType("reporting.errors")
    for name in ("Thresholds", "TesterVerdict", "ReportOutcome", "generate_report"):
        setattr(api, name, globals()[name])
    for name in ("ReportingError", "NoResultsError"):
        setattr(errors, name, globals()[name])
        setattr(api, name, globals()[name])
    sys.modules["reporting.api"] = api
    sys.modules["reporting.errors"] = errors
    import reporting

    reporting.api = api  # type: ignore[attr-defined]
    reporting.errors = errors  # type: ignore[attr-defined]


def install_if_missing() -> None:
    try:
        import reporting.api  # noqa: F401
    except ImportError:
        install()
