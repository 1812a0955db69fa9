"""Load VSperf results directories into :class:`~reporting.model.ResultSet` records.

The only module that knows VSperf's file names and CSV column names (reference: VSperf
``testcases/testcase.py`` ``write_result_to_file``, ``core/results/results_constants.py``,
``tools/report/report.py``). Columns are read by header name, never by position; ``''`` and
``'Unknown'`` mean "not measured". Every degraded input becomes a
:class:`~reporting.model.LoadWarning` naming the file and line; only an unreadable directory
raises.

Supported layouts: current (``result_<idx>_<test>_<deployment>.csv``, logs inside the results
directory, VSperf ≥ Hunter) and pre-Fraser (``result_<test>_<deployment>.csv``, logs such as
``overall.log`` beside the results directory, VSperf danube).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import logging
import math
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ovsperf_common import resultdir
from ovsperf_common.framemix import TrafficKey, read_packet_size
from ovsperf_common.goals import goal_label
from ovsperf_common.secrets import mask_pair
from ovsperf_common.units import MAX_JUMBO_FRAME_SIZE_BYTES, MIN_FRAME_SIZE_BYTES
from reporting import load_text, plausibility
from reporting.errors import load_error
from reporting.load_latency import load_latency
from reporting.load_telemetry import load_telemetry
from reporting.resultmodel import LoadWarning, ResultSet, TestRun, ThroughputRow

log = logging.getLogger(__name__)

MISSING_VALUES = frozenset({"", "unknown"})
"""Values VSperf writes for "not measured" (``DictWriter`` restval, ``UNKNOWN_VALUE``)."""

# VSperf column names (core/results/results_constants.py).
COL_RX_FPS = "throughput_rx_fps"
COL_RX_PERCENT = "throughput_rx_percent"
COL_RX_MBPS = "throughput_rx_mbps"
COL_TX_FPS = "tx_rate_fps"
COL_PACKET_SIZE = "packet_size"
COL_ID = "id"
COL_DEPLOYMENT = "deployment"
COL_VSWITCH = "vswitch"
COL_TYPE = "type"
COL_START = "start_time"
COL_STOP = "stop_time"
COL_EXEC_TIME = "test_execution_time"
COL_MIN_LAT = "min_latency_ns"
COL_MAX_LAT = "max_latency_ns"
COL_AVG_LAT = "avg_latency_ns"
COL_FRAME_LOSS = "frame_loss_percent"
COL_STREAM_COUNT = "stream_count"
COL_IMIX_GENOME = "imix_genome"
# The lab's goal columns (docs/results-format.md).
COL_LOSS_GOAL = "loss_goal_percent"
COL_SEARCH = "search_method"
COL_PDR_GOAL = "pdr_loss_goal_percent"
COL_PDR_RX_FPS = "pdr_throughput_rx_fps"
COL_PDR_RX_PERCENT = "pdr_throughput_rx_percent"
COL_PDR_RX_MBPS = "pdr_throughput_rx_mbps"
COL_PDR_TX_FPS = "pdr_tx_rate_fps"

LEGACY_LOG_NAMES = ("overall.log", "host-cmds.log", "traffic-gen.log")
"""Pre-Hunter logs written to ``LOG_DIR`` beside the results directory."""

LOG_PATTERNS = (
    "vsperf-overall_*.log",
    "host-cmds_*.log",
    "traffic-gen_*.log",
    "vswitchd_*.log",
    "qemu*_*.log",
    "guest-cmds*_*.log",
)
"""Logs VSperf writes inside the results directory (VSperf ≥ Hunter, VSPERF-600)."""


def find_results_dirs(path: Path) -> tuple[tuple[Path, ...], tuple[LoadWarning, ...]]:
    """Return the VSperf results directories at ``path``: itself, or the ones below it.

    Discovery is :func:`ovsperf_common.resultdir.find_results_dirs`; this adds the reporting
    package's error and warning records.

    :returns: (directories sorted by path, warnings for skipped symbolic links); directories may
        be empty.
    :raises ReportingError: when ``path`` does not exist or is not a readable directory.
    """
    try:
        found = resultdir.find_results_dirs(path)
    except FileNotFoundError as err:
        raise load_error("No such results directory.", path) from err
    except NotADirectoryError as err:
        raise load_error("Not a directory; expected a VSperf 'results_<timestamp>' directory.", path) from err
    except OSError as err:
        raise load_error(f"Cannot list directory: {err.strerror}.", path) from err
    warnings = tuple(
        LoadWarning(link, None, "Skipped a symbolic link named like a results directory.")
        for link in found.skipped_links
    )
    return found.dirs, warnings


def load_results_dir(path: Path) -> ResultSet:
    """Read one VSperf ``results_<timestamp>`` directory.

    Reads every ``result_*.csv`` (test runs, one row per frame size), the environment from the
    per-test ``.rst`` (else ``.md``), the ``pidstat_<test>.log`` averages, archived MoonGen
    raw logs (``moongen-run*.log`` anywhere below), and the overall log for tests that ran
    but wrote no CSV.

    :raises ReportingError: when the directory cannot be listed.
    """
    try:
        names = sorted(p.name for p in path.iterdir())
    except OSError as err:
        raise load_error(f"Cannot list directory: {err.strerror}.", path) from err
    warnings: list[LoadWarning] = []
    runs: list[TestRun] = []
    for name in names:
        match = resultdir.parse_result_csv_name(name)
        file = path / name
        if not match:
            continue
        if file.is_symlink() or not file.is_file():
            warnings.append(LoadWarning(file, None, "Not a regular file (symbolic link?); not read."))
            continue
        run = _load_csv(file, match, warnings)
        if run is not None:
            runs.append(run)
    logs = _find_logs(path)
    failed = _failed_tests(path, logs, runs, warnings)
    environment = _environment(path, names, warnings)
    moongen = load_text.moongen_logs(path, warnings)
    latency = load_latency(path, warnings)
    telemetry = load_telemetry(path, warnings)
    all_tests = frozenset(r.test for r in runs)
    runs = [
        replace(
            _attach_extras(path, run, moongen, all_tests, warnings),
            latency=latency.get(run.csv_path.name, ()),
            telemetry=telemetry.get(run.csv_path.name, ()),
        )
        for run in runs
    ]
    report = next((path / n for n in names if n.endswith("_test_report.rst") and (path / n).is_file()), None)
    return ResultSet(
        path=path,
        runs=tuple(runs),
        environment=environment,
        vsperf_report=report,
        logs=logs,
        failed_tests=failed,
        warnings=tuple(warnings),
    )


def _is_number(text: str) -> bool:
    """Return whether ``text`` reads as a finite number (VSperf writes ``64`` or ``64.0``)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _flows(value: str | None, file: Path, line: int, warnings: list[LoadWarning]) -> int | None:
    """Parse ``stream_count``: flows per direction [1].

    Absent, empty or ``0`` → None (VSperf writes the column only with ``TRAFFIC['multistream']``
    set); anything else not a whole number ≥ 1 → None + warning.
    """
    if value is None or value.strip().lower() in MISSING_VALUES or value.strip() in ("0", "0.0"):
        return None
    text = value.strip()
    if not text.isdigit():
        warnings.append(
            LoadWarning(file, line, f"Column '{COL_STREAM_COUNT}' holds {text[:40]!r}, not a flow count.")
        )
        return None
    return int(text)


def _num(value: str | None, column: str, file: Path, line: int, warnings: list[LoadWarning]) -> float | None:
    """Parse a VSperf number; ``''``/``'Unknown'``/absent → None; garbage → None + warning."""
    if value is None or value.strip().lower() in MISSING_VALUES:
        return None
    try:
        number = float(value.replace(",", "")) if value.count(",") else float(value)
    except ValueError:
        warnings.append(LoadWarning(file, line, f"Column '{column}' holds {value!r}, not a number."))
        return None
    if not math.isfinite(number):
        warnings.append(LoadWarning(file, line, f"Column '{column}' holds {value!r}, not a finite number."))
        return None
    return number


def _goal(value: str | None, column: str, file: Path, line: int, warnings: list[LoadWarning]) -> float | None:
    """Parse a loss-goal column [%]: absent or empty is 0 (VSperf's zero-loss throughput).

    :returns: the goal, or ``None`` (with a warning; the row is skipped) when it is not a
        percentage in [0, 100).
    """
    if value is None or not value.strip():
        return 0.0
    goal = _num(value, column, file, line, [])
    if goal is None or not 0 <= goal < 100:
        warnings.append(
            LoadWarning(
                file,
                line,
                f"Column '{column}' holds {value!r}, not a loss goal in [0, 100) %; row skipped.",
                row_skipped=True,
            )
        )
        return None
    return goal


def _second_goal(
    row: dict[str, str], first: ThroughputRow, file: Path, line: int, warnings: list[LoadWarning]
) -> ThroughputRow | None:
    """Return the row's ``pdr_*`` throughput as a row of its own goal, ``None`` when it has none.

    The latency columns stay with the first goal's row (they are one measurement per frame size).
    """
    value = row.get(COL_PDR_RX_FPS)
    if value is None or not value.strip():
        return None
    goal = _goal(row.get(COL_PDR_GOAL), COL_PDR_GOAL, file, line, warnings)
    if goal is None:
        return None
    if goal == first.loss_goal_percent:
        warnings.append(
            LoadWarning(
                file, line, f"Column '{COL_PDR_GOAL}' repeats the goal of '{COL_LOSS_GOAL}'; PDR ignored."
            )
        )
        return None
    second = replace(
        first,
        rx_pps=_num(value, COL_PDR_RX_FPS, file, line, warnings),
        tx_pps=_num(row.get(COL_PDR_TX_FPS), COL_PDR_TX_FPS, file, line, warnings),
        rx_line_rate_percent=_num(row.get(COL_PDR_RX_PERCENT), COL_PDR_RX_PERCENT, file, line, warnings),
        latency_min_ns=None,
        latency_max_ns=None,
        latency_avg_ns=None,
        frame_loss_percent=None,
        loss_goal_percent=goal,
    )
    mbps = _num(row.get(COL_PDR_RX_MBPS), COL_PDR_RX_MBPS, file, line, warnings)
    implausible = plausibility.row_problem(second, mbps, COL_PDR_RX_MBPS)
    if implausible is not None:
        warnings.append(
            LoadWarning(
                file,
                line,
                f"Physically impossible at {second.frame_size_bytes} B ({COL_PDR_RX_FPS}): "
                f"{implausible}; marked INVALID.",
            )
        )
        second = replace(second, implausible=implausible)
    return second


MAX_CSV_BYTES = 4 * 1024 * 1024
"""Largest result CSV read [B]: VSperf writes ~300 B per row, so this is over 10,000 rows."""


def _measured(value: float | None) -> float | None:
    """Map VSperf's 0 latency ("MoonGen does not measure it", reference §7.3) to None."""
    return None if value is None or value == 0 else value


def _load_csv(file: Path, match: resultdir.ResultCsvName, warnings: list[LoadWarning]) -> TestRun | None:
    """Read one result CSV; malformed rows become warnings, never exceptions.

    A file larger than :data:`MAX_CSV_BYTES` is not read (one warning, test skipped), so a
    runaway or planted CSV cannot exhaust memory.
    """
    try:
        with file.open("rb") as handle:
            raw = handle.read(MAX_CSV_BYTES + 1)
    except OSError as err:
        warnings.append(LoadWarning(file, None, f"Cannot read: {err.strerror}; test skipped."))
        return None
    if len(raw) > MAX_CSV_BYTES:
        warnings.append(
            LoadWarning(
                file,
                None,
                f"File is larger than {MAX_CSV_BYTES} B (a result CSV holds one row per frame size "
                "and repeat); not read, test skipped.",
            )
        )
        return None
    text = load_text.decode(raw, file, warnings)
    rows = list(_csv_rows(text))
    if not rows:
        warnings.append(LoadWarning(file, None, "Empty result CSV (no header); test skipped."))
        return None
    header_line, header_cells = rows[0]
    header = [h.strip() for h in header_cells or []]
    for required in (COL_RX_FPS, COL_PACKET_SIZE):
        if required not in header:
            warnings.append(
                LoadWarning(
                    file,
                    header_line,
                    f"Column '{required}' missing from the header; is this an RFC 2544 "
                    "throughput result? Test skipped.",
                )
            )
            return None
    ends_cleanly = text.endswith("\n")
    parsed: list[ThroughputRow] = []
    meta: dict[str, str] = {}
    unknown_lines: dict[str, list[int]] = {}
    seen_sizes: set[TrafficKey] = set()
    for position, (line, cells) in enumerate(rows[1:], start=1):
        if cells is None:
            warnings.append(
                LoadWarning(
                    file, line, "Row has a field too long to be a number; row skipped.", row_skipped=True
                )
            )
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            last = position == len(rows) - 1
            what = "cut short (file truncated?)" if last and not ends_cleanly else "malformed"
            warnings.append(
                LoadWarning(
                    file,
                    line,
                    f"Row {what}: {len(cells)} fields, header has {len(header)}; row skipped.",
                    row_skipped=True,
                )
            )
            continue
        row = dict(zip(header, cells, strict=True))
        size_text = row.get(COL_PACKET_SIZE, "").strip()
        try:
            if _is_number(size_text) and int(float(size_text)) != 0:
                size, mix = int(float(size_text)), ""  # out-of-range sizes are refused below
            else:
                size, mix = read_packet_size(size_text, row.get(COL_IMIX_GENOME))
        except ValueError:
            warnings.append(
                LoadWarning(
                    file,
                    line,
                    f"Column 'packet_size' holds {size_text[:80]!r}, not a size or a frame-size mix; "
                    "row skipped.",
                    row_skipped=True,
                )
            )
            continue
        if not mix and not MIN_FRAME_SIZE_BYTES <= size <= MAX_JUMBO_FRAME_SIZE_BYTES:
            warnings.append(
                LoadWarning(
                    file,
                    line,
                    f"Frame size {size} B is outside {MIN_FRAME_SIZE_BYTES}..{MAX_JUMBO_FRAME_SIZE_BYTES} B "
                    "(sizes include the FCS); row skipped.",
                    row_skipped=True,
                )
            )
            continue
        flows = _flows(row.get(COL_STREAM_COUNT), file, line, warnings)
        traffic = TrafficKey(size, mix, flows)
        if traffic in seen_sizes:
            warnings.append(
                LoadWarning(
                    file,
                    line,
                    f"{traffic.text()} appears again (VSperf appends to an existing CSV); "
                    "both rows are used as repeats.",
                )
            )
        seen_sizes.add(traffic)
        for column in (COL_RX_FPS, COL_TX_FPS):
            value = row.get(column)
            if value is not None and value.strip().lower() in MISSING_VALUES:
                unknown_lines.setdefault(column, []).append(line)
        rx = _num(row.get(COL_RX_FPS), COL_RX_FPS, file, line, warnings)
        goal = _goal(row.get(COL_LOSS_GOAL), COL_LOSS_GOAL, file, line, warnings)
        if goal is None:
            continue
        method = row.get(COL_SEARCH, "").strip() or None
        result = ThroughputRow(
            frame_size_bytes=size,
            rx_pps=rx,
            tx_pps=_num(row.get(COL_TX_FPS), COL_TX_FPS, file, line, warnings),
            rx_line_rate_percent=_num(row.get(COL_RX_PERCENT), COL_RX_PERCENT, file, line, warnings),
            latency_min_ns=_measured(_num(row.get(COL_MIN_LAT), COL_MIN_LAT, file, line, warnings)),
            latency_max_ns=_measured(_num(row.get(COL_MAX_LAT), COL_MAX_LAT, file, line, warnings)),
            latency_avg_ns=_measured(_num(row.get(COL_AVG_LAT), COL_AVG_LAT, file, line, warnings)),
            frame_loss_percent=_num(row.get(COL_FRAME_LOSS), COL_FRAME_LOSS, file, line, warnings),
            path=file,
            line=line,
            loss_goal_percent=goal,
            search_method=method,
            mix=mix,
            flows=flows,
        )
        second = _second_goal(row, result, file, line, warnings)
        mbps = _num(row.get(COL_RX_MBPS), COL_RX_MBPS, file, line, warnings)
        implausible = plausibility.row_problem(result, mbps, COL_RX_MBPS)
        if implausible is not None:
            result = dataclasses.replace(result, implausible=implausible)
            warnings.append(
                LoadWarning(
                    file, line, f"Physically impossible at {traffic.text()}: {implausible}; marked INVALID."
                )
            )
        if rx is not None and rx == 0:
            warnings.append(
                LoadWarning(
                    file,
                    line,
                    f"Throughput is 0 at {traffic.text()}: VSperf writes zeros when it cannot parse the "
                    "traffic generator's output; marked INVALID.",
                )
            )
        elif rx is not None and rx < 0:
            warnings.append(
                LoadWarning(
                    file, line, f"Throughput is negative ({rx:g}) at {traffic.text()}; marked INVALID."
                )
            )
        parsed.append(result)
        if second is not None:
            parsed.append(second)
        for key in (COL_ID, COL_DEPLOYMENT, COL_VSWITCH, COL_TYPE, COL_START, COL_STOP, COL_EXEC_TIME):
            value = row.get(key, "").strip()
            if value and value.lower() not in MISSING_VALUES:
                meta.setdefault(key, value)
    for column, lines in unknown_lines.items():
        effect = "rows marked INVALID" if column == COL_RX_FPS else "shown as n/a"
        warnings.append(
            LoadWarning(
                file,
                lines[0],
                f"Column '{column}' is empty or 'Unknown' on line(s) {_ranges(lines)}; {effect}.",
            )
        )
    if not parsed:
        warnings.append(LoadWarning(file, None, "No usable data row; test skipped."))
        return None
    parsed = _check_link(parsed, file, warnings)
    test = meta.get(COL_ID, match.test)
    deployment = meta.get(COL_DEPLOYMENT, match.deployment)
    return TestRun(
        test=test,
        deployment=deployment,
        index=match.index,
        csv_path=file,
        rows=tuple(parsed),
        vswitch=meta.get(COL_VSWITCH),
        traffic_kind=meta.get(COL_TYPE),
        start_time=meta.get(COL_START),
        stop_time=meta.get(COL_STOP),
        execution_time=meta.get(COL_EXEC_TIME),
        rows_skipped=sum(1 for w in warnings if w.path == file and w.row_skipped),
    )


def _check_link(rows: list[ThroughputRow], file: Path, warnings: list[LoadWarning]) -> list[ThroughputRow]:
    """Mark INVALID the rows of one test that contradict the link its rows imply together.

    :func:`reporting.plausibility.derive_link_bps` over the test's rows, then
    :func:`~reporting.plausibility.link_problem` per row; each marked row gets a warning.
    """
    link_bps = plausibility.derive_link_bps(rows)
    if link_bps is None:
        return rows
    checked: list[ThroughputRow] = []
    for row in rows:
        problem = plausibility.link_problem(row, link_bps, "that this test's rows imply")
        if problem is not None:
            warnings.append(
                LoadWarning(
                    file,
                    row.line,
                    f"Physically impossible at {row.traffic.text()} ({goal_label(row.loss_goal_percent)}): "
                    f"{problem}; marked INVALID.",
                )
            )
            row = replace(row, implausible=problem)
        checked.append(row)
    return checked


def _csv_rows(text: str) -> Iterable[tuple[int, list[str] | None]]:
    """Yield (last physical line number, fields) per CSV record (CRLF handled by ``csv``).

    A record ``csv`` cannot read (a field over its size limit) is yielded with ``None``, so the
    caller warns about that row alone and reads on; an unterminated quote at the end stops.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error:
            if reader.line_num >= text.count("\n") + 1:
                return  # an unterminated quote at EOF: the rows read so far stand
            yield reader.line_num, None
            continue
        yield reader.line_num, fields


def _ranges(lines: list[int]) -> str:
    """Format ascending line numbers compactly: ``2-8, 10``."""
    parts: list[str] = []
    start = prev = lines[0]
    for n in [*lines[1:], -1]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = n
    return ", ".join(parts)


def _find_logs(path: Path) -> tuple[Path, ...]:
    """Return VSperf's logs for this run: inside the directory, else pre-Hunter ones beside it."""
    inside = sorted({f for pattern in LOG_PATTERNS for f in path.glob(pattern) if f.is_file()})
    if inside:
        return tuple(inside)
    beside = [path.parent / n for n in LEGACY_LOG_NAMES if (path.parent / n).is_file()]
    overall = path.parent / "overall.log"
    if overall.is_file() and not load_text.log_mentions_dir(overall, path.name):
        return ()
    return tuple(beside)


def _failed_tests(
    path: Path, logs: tuple[Path, ...], runs: list[TestRun], warnings: list[LoadWarning]
) -> tuple[str, ...]:
    """Return tests the overall log names as run (or failed) that have no CSV; warn for each."""
    overall = [p for p in logs if p.name.startswith("vsperf-overall_") or p.name == "overall.log"]
    have = {r.test for r in runs}
    failed: list[str] = []
    for log_path in overall:
        for test, line, failed_msg in load_text.tests_in_log(log_path, warnings):
            if test in have or test in failed:
                continue
            failed.append(test)
            why = "the log says 'Failed to run test'" if failed_msg else "the test started but wrote no CSV"
            warnings.append(
                LoadWarning(
                    log_path,
                    line,
                    f"Test '{test}' is named in the log but '{path.name}' has no result CSV for it "
                    f"({why}); its cells are INVALID.",
                )
            )
    return tuple(failed)


def _environment(path: Path, names: list[str], warnings: list[LoadWarning]) -> tuple[tuple[str, str], ...]:
    """Merge the environment blocks of every ``result_*.rst`` (else ``.md``), first value wins.

    Values are masked where they enter (``ovsperf_common.secrets.mask_pair``): the page's
    environment table and ``report.json`` never show a password, token or URL credential.
    """
    merged: dict[str, str] = {}
    for suffix in (".rst", ".md"):
        for name in names:
            if name.startswith("result_") and name.endswith(suffix) and (path / name).is_file():
                for key, value in load_text.environment_block(path / name, warnings):
                    merged.setdefault(key, mask_pair(key, value))
        if merged:
            break
    return tuple(merged.items())


def _attach_extras(
    path: Path,
    run: TestRun,
    moongen: list[load_text.MoongenLog],
    all_tests: frozenset[str],
    warnings: list[LoadWarning],
) -> TestRun:
    """Add pidstat averages and MoonGen cross-checks to ``run``."""
    pidstat = path / f"pidstat_{run.test}.log"
    processes = load_text.pidstat(pidstat, warnings) if pidstat.is_file() else ()
    checks = load_text.cross_check(run, moongen, path, all_tests, warnings)
    return replace(run, processes=processes, moongen_checks=checks)
