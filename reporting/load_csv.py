"""Read one VSperf result CSV into a :class:`~reporting.resultmodel.TestRun`: one parser per row.

The CSV (VSperf ``testcases/testcase.py`` ``write_result_to_file``; the lab's goal columns,
docs/results-format.md) is read by header name, never by position; column names come from
:mod:`ovsperf_common.labfiles`, shared with the lab that writes them. ``''`` and ``'Unknown'``
mean "not measured".

:func:`load_csv` reads the file and its header, then :func:`_parse_row` turns each data row into
one :class:`~reporting.resultmodel.ThroughputRow` per loss goal through one checker per column
(group): :func:`_traffic` (``packet_size``, ``imix_genome``, ``stream_count``), :func:`_goal`,
:func:`_number` for every number, :func:`_plausible` (the row's Mbit/s and percentages against
its frame rate, :mod:`reporting.plausibility`). What is told once per file (repeated traffic,
``'Unknown'`` throughput lines, the test's metadata) is gathered in :class:`_CsvState`. Every
degraded input becomes a :class:`~reporting.resultmodel.LoadWarning` naming the file and line,
in the order of the row's columns; none raises.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ovsperf_common import resultdir
from ovsperf_common.framemix import TrafficKey, read_packet_size
from ovsperf_common.goals import goal_label
from ovsperf_common.labfiles import (
    COL_AVG_LAT,
    COL_DEPLOYMENT,
    COL_EXEC_TIME,
    COL_FRAME_LOSS,
    COL_ID,
    COL_IMIX_GENOME,
    COL_LOSS_GOAL,
    COL_MAX_LAT,
    COL_MIN_LAT,
    COL_PACKET_SIZE,
    COL_PDR_GOAL,
    COL_PDR_RX_FPS,
    COL_PDR_RX_MBPS,
    COL_PDR_RX_PERCENT,
    COL_PDR_TX_FPS,
    COL_RX_FPS,
    COL_RX_MBPS,
    COL_RX_PERCENT,
    COL_SEARCH,
    COL_START,
    COL_STOP,
    COL_STREAM_COUNT,
    COL_TX_FPS,
    COL_TYPE,
    COL_VSWITCH,
)
from ovsperf_common.units import MAX_JUMBO_FRAME_SIZE_BYTES, MIN_FRAME_SIZE_BYTES
from reporting import load_text, plausibility
from reporting.resultmodel import LoadWarning, TestRun, ThroughputRow

MISSING_VALUES = frozenset({"", "unknown"})
"""Values VSperf writes for "not measured" (``DictWriter`` restval, ``UNKNOWN_VALUE``)."""

MAX_CSV_BYTES = 4 * 1024 * 1024
"""Largest result CSV read [B]: VSperf writes ~300 B per row, so this is over 10,000 rows."""

REQUIRED_COLUMNS = (COL_RX_FPS, COL_PACKET_SIZE)
"""Columns without which a CSV is not an RFC 2544 throughput result (the test is skipped)."""

UNKNOWN_EFFECT = {COL_RX_FPS: "rows marked INVALID", COL_TX_FPS: "shown as n/a"}
"""Columns whose empty or ``'Unknown'`` lines are told once per file, with what that does."""

META_COLUMNS = (COL_ID, COL_DEPLOYMENT, COL_VSWITCH, COL_TYPE, COL_START, COL_STOP, COL_EXEC_TIME)
"""Columns describing the whole test: the first measured value of each is kept."""


@dataclass(frozen=True)
class GoalColumns:
    """The columns holding the throughput of one loss goal (docs/results-format.md)."""

    goal: str
    """The goal [%]."""
    rx_fps: str
    """Throughput summed over directions [frames/s]."""
    tx_fps: str
    """Offered load summed over directions [frames/s]."""
    rx_percent: str
    """Throughput [% of line rate]."""
    rx_mbps: str
    """Throughput at L1 [Mbit/s] (only checked against the frame rate)."""


FIRST_GOAL = GoalColumns(COL_LOSS_GOAL, COL_RX_FPS, COL_TX_FPS, COL_RX_PERCENT, COL_RX_MBPS)
"""VSperf's throughput columns and the goal the lab writes beside them (absent: 0 %)."""

SECOND_GOAL = GoalColumns(COL_PDR_GOAL, COL_PDR_RX_FPS, COL_PDR_TX_FPS, COL_PDR_RX_PERCENT, COL_PDR_RX_MBPS)
"""The lab's ``pdr_*`` columns: a second goal's throughput in the same row."""


@dataclass(frozen=True)
class _Cells:
    """One data row of a result CSV by column name, and where its warnings go."""

    values: dict[str, str]
    """Column name → field, as written."""
    file: Path
    line: int
    """Last physical line of the row (header = 1)."""
    warnings: list[LoadWarning]

    def get(self, column: str) -> str | None:
        """Return the field of ``column``; ``None`` when the header lacks it."""
        return self.values.get(column)

    def warn(self, message: str, *, skipped: bool = False) -> None:
        """Add a warning about this row; ``skipped`` when the row is dropped."""
        self.warnings.append(LoadWarning(self.file, self.line, message, row_skipped=skipped))


@dataclass
class _CsvState:
    """What one result CSV's rows leave for the file as a whole (filled row by row)."""

    seen: set[TrafficKey] = field(default_factory=set)
    """Traffic keys read so far (a repeat is warned about, and kept)."""
    unknown_lines: dict[str, list[int]] = field(default_factory=dict)
    """:data:`UNKNOWN_EFFECT` column → lines where it is empty or ``'Unknown'``."""
    meta: dict[str, str] = field(default_factory=dict)
    """:data:`META_COLUMNS` column → its first measured value."""


def _is_number(text: str) -> bool:
    """Return whether ``text`` reads as a finite number (VSperf writes ``64`` or ``64.0``)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _number(cells: _Cells, column: str) -> float | None:
    """Parse a VSperf number; ``''``/``'Unknown'``/absent → None; garbage → None + warning."""
    value = cells.get(column)
    if value is None or value.strip().lower() in MISSING_VALUES:
        return None
    try:
        number = float(value.replace(",", "")) if value.count(",") else float(value)
    except ValueError:
        cells.warn(f"Column '{column}' holds {value!r}, not a number.")
        return None
    if not math.isfinite(number):
        cells.warn(f"Column '{column}' holds {value!r}, not a finite number.")
        return None
    return number


def _measured(value: float | None) -> float | None:
    """Map VSperf's 0 latency ("MoonGen does not measure it", reference §7.3) to None."""
    return None if value is None or value == 0 else value


def _goal(cells: _Cells, column: str) -> float | None:
    """Parse a loss-goal column [%]: absent or empty is 0 (VSperf's zero-loss throughput).

    :returns: the goal, or ``None`` (with a warning; the row is skipped) when it is not a
        percentage in [0, 100).
    """
    value = cells.get(column)
    if value is None or not value.strip():
        return 0.0
    goal = _number(_Cells(cells.values, cells.file, cells.line, []), column)  # one warning below says it all
    if goal is None or not 0 <= goal < 100:
        cells.warn(
            f"Column '{column}' holds {value!r}, not a loss goal in [0, 100) %; row skipped.", skipped=True
        )
        return None
    return goal


def _flows(cells: _Cells) -> int | None:
    """Parse ``stream_count``: flows per direction [1].

    Absent, empty or ``0`` → None (VSperf writes the column only with ``TRAFFIC['multistream']``
    set); anything else not a whole number ≥ 1 → None + warning.
    """
    value = cells.get(COL_STREAM_COUNT)
    if value is None or value.strip().lower() in MISSING_VALUES or value.strip() in ("0", "0.0"):
        return None
    text = value.strip()
    if not text.isdigit():
        cells.warn(f"Column '{COL_STREAM_COUNT}' holds {text[:40]!r}, not a flow count.")
        return None
    return int(text)


def _traffic(cells: _Cells) -> TrafficKey | None:
    """Parse ``packet_size`` (with ``imix_genome``) and ``stream_count`` into the row's traffic.

    :returns: the key, or ``None`` (with a warning; the row is skipped) when the size is neither a
        frame size in the supported range nor a frame-size mix.
    """
    size_text = cells.values.get(COL_PACKET_SIZE, "").strip()
    try:
        if _is_number(size_text) and int(float(size_text)) != 0:
            size, mix = int(float(size_text)), ""  # out-of-range sizes are refused below
        else:
            size, mix = read_packet_size(size_text, cells.get(COL_IMIX_GENOME))
    except ValueError:
        cells.warn(
            f"Column '{COL_PACKET_SIZE}' holds {size_text[:80]!r}, not a size or a frame-size mix; "
            "row skipped.",
            skipped=True,
        )
        return None
    if not mix and not MIN_FRAME_SIZE_BYTES <= size <= MAX_JUMBO_FRAME_SIZE_BYTES:
        cells.warn(
            f"Frame size {size} B is outside {MIN_FRAME_SIZE_BYTES}..{MAX_JUMBO_FRAME_SIZE_BYTES} B "
            "(sizes include the FCS); row skipped.",
            skipped=True,
        )
        return None
    return TrafficKey(size, mix, _flows(cells))


def _note_repeat(cells: _Cells, traffic: TrafficKey, state: _CsvState) -> None:
    """Warn when ``traffic`` was already read from this CSV (both rows stay, as repeats)."""
    if traffic in state.seen:
        cells.warn(
            f"{traffic.text()} appears again (VSperf appends to an existing CSV); "
            "both rows are used as repeats."
        )
    state.seen.add(traffic)


def _note_unknown(cells: _Cells, state: _CsvState) -> None:
    """Record the lines where an :data:`UNKNOWN_EFFECT` column is empty or ``'Unknown'``."""
    for column in UNKNOWN_EFFECT:
        value = cells.get(column)
        if value is not None and value.strip().lower() in MISSING_VALUES:
            state.unknown_lines.setdefault(column, []).append(cells.line)


def _note_meta(cells: _Cells, state: _CsvState) -> None:
    """Keep the first measured value of each :data:`META_COLUMNS` column."""
    for column in META_COLUMNS:
        value = cells.values.get(column, "").strip()
        if value and value.lower() not in MISSING_VALUES:
            state.meta.setdefault(column, value)


def _first_goal_row(cells: _Cells, traffic: TrafficKey) -> ThroughputRow | None:
    """Return the row's :data:`FIRST_GOAL` throughput with its latency; ``None`` for a bad goal."""
    rx = _number(cells, FIRST_GOAL.rx_fps)
    goal = _goal(cells, FIRST_GOAL.goal)
    if goal is None:
        return None
    return ThroughputRow(
        frame_size_bytes=traffic.frame_size_bytes,
        rx_pps=rx,
        tx_pps=_number(cells, FIRST_GOAL.tx_fps),
        rx_line_rate_percent=_number(cells, FIRST_GOAL.rx_percent),
        latency_min_ns=_measured(_number(cells, COL_MIN_LAT)),
        latency_max_ns=_measured(_number(cells, COL_MAX_LAT)),
        latency_avg_ns=_measured(_number(cells, COL_AVG_LAT)),
        frame_loss_percent=_number(cells, COL_FRAME_LOSS),
        path=cells.file,
        line=cells.line,
        loss_goal_percent=goal,
        search_method=cells.values.get(COL_SEARCH, "").strip() or None,
        mix=traffic.mix,
        flows=traffic.flows,
    )


def _second_goal_row(cells: _Cells, first: ThroughputRow) -> ThroughputRow | None:
    """Return the row's :data:`SECOND_GOAL` throughput as a row of its own goal, ``None`` when none.

    The latency columns stay with the first goal's row (they are one measurement per frame size).
    """
    value = cells.get(SECOND_GOAL.rx_fps)
    if value is None or not value.strip():
        return None
    goal = _goal(cells, SECOND_GOAL.goal)
    if goal is None:
        return None
    if goal == first.loss_goal_percent:
        cells.warn(f"Column '{SECOND_GOAL.goal}' repeats the goal of '{FIRST_GOAL.goal}'; PDR ignored.")
        return None
    second = replace(
        first,
        rx_pps=_number(cells, SECOND_GOAL.rx_fps),
        tx_pps=_number(cells, SECOND_GOAL.tx_fps),
        rx_line_rate_percent=_number(cells, SECOND_GOAL.rx_percent),
        latency_min_ns=None,
        latency_max_ns=None,
        latency_avg_ns=None,
        frame_loss_percent=None,
        loss_goal_percent=goal,
    )
    where = f"{second.frame_size_bytes} B ({SECOND_GOAL.rx_fps})"
    return _plausible(cells, second, SECOND_GOAL, where)


def _plausible(cells: _Cells, row: ThroughputRow, columns: GoalColumns, where: str) -> ThroughputRow:
    """Return ``row``, marked INVALID (with a warning) when its numbers contradict each other.

    :func:`reporting.plausibility.row_problem` with the row's ``columns.rx_mbps``; ``where`` names
    the row in the warning.
    """
    problem = plausibility.row_problem(row, _number(cells, columns.rx_mbps), columns.rx_mbps)
    if problem is None:
        return row
    cells.warn(f"Physically impossible at {where}: {problem}; marked INVALID.")
    return replace(row, implausible=problem)


def _warn_no_throughput(cells: _Cells, row: ThroughputRow, traffic: TrafficKey) -> None:
    """Warn when the row's throughput is 0 or negative (the report marks it INVALID)."""
    if row.rx_pps is not None and row.rx_pps == 0:
        cells.warn(
            f"Throughput is 0 at {traffic.text()}: VSperf writes zeros when it cannot parse the "
            "traffic generator's output; marked INVALID."
        )
    elif row.rx_pps is not None and row.rx_pps < 0:
        cells.warn(f"Throughput is negative ({row.rx_pps:g}) at {traffic.text()}; marked INVALID.")


def _parse_row(cells: _Cells, state: _CsvState) -> tuple[ThroughputRow, ...]:
    """Return the throughput rows of one CSV row (one per goal); empty when the row is skipped.

    The column checks above warn in the order of the row's columns as read; ``state`` collects
    what is told once per file.
    """
    traffic = _traffic(cells)
    if traffic is None:
        return ()
    _note_repeat(cells, traffic, state)
    _note_unknown(cells, state)
    first = _first_goal_row(cells, traffic)
    if first is None:
        return ()
    second = _second_goal_row(cells, first)
    first = _plausible(cells, first, FIRST_GOAL, traffic.text())
    _warn_no_throughput(cells, first, traffic)
    _note_meta(cells, state)
    return (first,) if second is None else (first, second)


def _read_csv_text(file: Path, warnings: list[LoadWarning]) -> str | None:
    """Return the text of a result CSV; ``None`` (with a warning) when unreadable or too large.

    A file larger than :data:`MAX_CSV_BYTES` is not read, so a runaway or planted CSV cannot
    exhaust memory.
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
    return load_text.decode(raw, file, warnings)


def _header(
    file: Path, records: list[tuple[int, list[str] | None]], warnings: list[LoadWarning]
) -> list[str] | None:
    """Return the CSV's column names; ``None`` (with a warning) without :data:`REQUIRED_COLUMNS`."""
    if not records:
        warnings.append(LoadWarning(file, None, "Empty result CSV (no header); test skipped."))
        return None
    header_line, header_cells = records[0]
    header = [h.strip() for h in header_cells or []]
    for required in REQUIRED_COLUMNS:
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
    return header


def _cells(
    file: Path,
    line: int,
    fields: list[str] | None,
    header: list[str],
    *,
    cut_short: bool,
    warnings: list[LoadWarning],
) -> _Cells | None:
    """Return a data record's fields by column; ``None`` for a blank record or (with a warning) a bad one.

    :param cut_short: the record is the last of a file that does not end with a newline.
    """
    if fields is None:
        warnings.append(
            LoadWarning(file, line, "Row has a field too long to be a number; row skipped.", row_skipped=True)
        )
        return None
    if not any(c.strip() for c in fields):
        return None
    if len(fields) != len(header):
        what = "cut short (file truncated?)" if cut_short else "malformed"
        warnings.append(
            LoadWarning(
                file,
                line,
                f"Row {what}: {len(fields)} fields, header has {len(header)}; row skipped.",
                row_skipped=True,
            )
        )
        return None
    return _Cells(dict(zip(header, fields, strict=True)), file, line, warnings)


def _warn_unknown(file: Path, state: _CsvState, warnings: list[LoadWarning]) -> None:
    """Add one warning per :data:`UNKNOWN_EFFECT` column that was empty or ``'Unknown'``."""
    for column, lines in state.unknown_lines.items():
        warnings.append(
            LoadWarning(
                file,
                lines[0],
                f"Column '{column}' is empty or 'Unknown' on line(s) {_ranges(lines)}; "
                f"{UNKNOWN_EFFECT[column]}.",
            )
        )


def load_csv(file: Path, match: resultdir.ResultCsvName, warnings: list[LoadWarning]) -> TestRun | None:
    """Read one result CSV: :func:`_parse_row` per data row; bad rows become warnings, never exceptions.

    :param match: what the file's name says (index, test, deployment; the ``id`` and
        ``deployment`` columns win).
    :param warnings: where every degraded input is added.
    :returns: the test run (pidstat, MoonGen, latency and telemetry not attached), or ``None``
        (with a warning) when the file is unreadable, larger than :data:`MAX_CSV_BYTES`, not a
        throughput result or without a usable row.
    """
    text = _read_csv_text(file, warnings)
    if text is None:
        return None
    records = list(_csv_rows(text))
    header = _header(file, records, warnings)
    if header is None:
        return None
    state = _CsvState()
    parsed: list[ThroughputRow] = []
    for position, (line, fields) in enumerate(records[1:], start=1):
        cut_short = position == len(records) - 1 and not text.endswith("\n")
        cells = _cells(file, line, fields, header, cut_short=cut_short, warnings=warnings)
        if cells is not None:
            parsed += _parse_row(cells, state)
    _warn_unknown(file, state, warnings)
    if not parsed:
        warnings.append(LoadWarning(file, None, "No usable data row; test skipped."))
        return None
    parsed = _check_link(parsed, file, warnings)
    return TestRun(
        test=state.meta.get(COL_ID, match.test),
        deployment=state.meta.get(COL_DEPLOYMENT, match.deployment),
        index=match.index,
        csv_path=file,
        rows=tuple(parsed),
        vswitch=state.meta.get(COL_VSWITCH),
        traffic_kind=state.meta.get(COL_TYPE),
        start_time=state.meta.get(COL_START),
        stop_time=state.meta.get(COL_STOP),
        execution_time=state.meta.get(COL_EXEC_TIME),
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
