"""Parse VSperf's text side files: environment blocks, overall logs, pidstat and MoonGen raw logs.

Part of the load layer (only ``load.py`` calls it). Formats:

* environment: ``tools/report/report_rst.jinja`` (``* Key: value``) and ``report.jinja``
  (``- Key: value``), nested items indented by four spaces;
* overall log: ``vsperf-overall_<ts>.log`` / pre-Hunter ``overall.log`` lines ``# Test:    <name>``
  and ``Failed to run test: <name>``;
* pidstat (sysstat) ``Average:`` sections, columns read by header name;
* MoonGen (lua-trafficgen ``trafficgen.lua``) ``[PARAMETERS]`` and ``[REPORT]      total:`` lines,
  parsed with the same pattern as VSperf ``tools/pkt_gen/moongen/moongen.py`` (reference §3.6).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from reporting.resultmodel import LoadWarning, MoongenCheck, ProcessStats, TestRun

MAX_TEXT_BYTES = 64 * 1024 * 1024
"""Larger side files are not parsed (a runaway log must not exhaust memory) [B]."""

PIDSTAT_PROCESSES = ("ovs-vswitchd", "ovsdb-server")

_ENV_START = re.compile(r"^Below is the environment that the test was performed in")
_ENV_ITEM = re.compile(r"^[*-] ([^:]+):\s*(.*)$")
_ENV_SUBITEM = re.compile(r"^\s{2,}[*-] (.*)$")
_TEST_LINE = re.compile(r"#\s*Test:\s+(\S+)\s*$")
_FAILED_LINE = re.compile(r"Failed to run test:\s+(\S+)")

_MOONGEN_TOTAL = re.compile(
    r"\[REPORT\]\s+total:\s+Tx\s+frames:\s+(\d+)\s+Rx\s+Frames:\s+(\d+)\s+"
    r"frame\s+loss:\s+(\d+),\s+(\d+\.\d+|\d+)%\s+Tx\s+Mpps:\s+(\d+\.\d+|\d+)\s+"
    r"Rx\s+Mpps:\s+(\d+\.\d+|\d+)",
    re.IGNORECASE,
)
"""VSperf's own REPORT pattern: 1 Tx frames, 2 Rx frames, 3 loss, 4 loss %, 5 Tx Mpps, 6 Rx Mpps."""
_MOONGEN_TOTAL_OLD = re.compile(
    r"\[REPORT\]\s+total:\s+Tx\s+frames:\s+(\d+)\s+Rx\s+Frames:\s+(\d+)\s+"
    r"frame\s+loss:\s+(\d+),\s+(\d+\.\d+|\d+)%\s+Rx\s+Mpps:\s+(\d+\.\d+|\d+)",
    re.IGNORECASE,
)
"""Pre-2016-05 lua-trafficgen total line without ``Tx Mpps:`` (VSperf cannot parse it)."""
_MOONGEN_PARAMS = re.compile(r"\[PARAMETERS\]\s+.*frameSize:\s+(\d+)", re.IGNORECASE)

RATE_TOLERANCE = 1e-6
"""Relative rate difference accepted between the raw log and the CSV [1] (CSV keeps 6 decimals of Mpps)."""
LOSS_TOLERANCE_PERCENT = 0.001
"""Loss difference accepted between log frames and CSV Tx/Rx rates [percentage points]."""


def decode(raw: bytes, file: Path, warnings: list[LoadWarning]) -> str:
    """Decode VSperf output as UTF-8; undecodable bytes become U+FFFD and a warning per line.

    A leading byte-order mark (a CSV re-saved by a spreadsheet or Windows editor) is dropped, so
    the first column name still matches.
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    text = raw.decode("utf-8-sig", errors="replace")
    bad = [n for n, line in enumerate(text.splitlines(), start=1) if "\ufffd" in line]
    shown = ", ".join(str(n) for n in bad[:5]) + (" …" if len(bad) > 5 else "")
    warnings.append(
        LoadWarning(
            file, bad[0] if bad else None, f"Bytes that are not UTF-8 on line(s) {shown}; shown as '\ufffd'."
        )
    )
    return text


def read_text(file: Path, warnings: list[LoadWarning]) -> str | None:
    """Read a side file as text; None (with a warning) when unreadable or too large."""
    try:
        size = file.stat().st_size
        if size > MAX_TEXT_BYTES:
            warnings.append(
                LoadWarning(file, None, f"File is {size} B, larger than {MAX_TEXT_BYTES} B; not parsed.")
            )
            return None
        return decode(file.read_bytes(), file, warnings)
    except OSError as err:
        warnings.append(LoadWarning(file, None, f"Cannot read: {err.strerror}; ignored."))
        return None


def environment_block(file: Path, warnings: list[LoadWarning]) -> list[tuple[str, str]]:
    """Return the (field, value) pairs of the first environment block of a VSperf .rst/.md.

    Nested items (``NIC(s)``, ``VM images``, ``VM loopback apps``) are joined with ``'; '``.
    """
    text = read_text(file, warnings)
    if text is None:
        return []
    items: list[tuple[str, str]] = []
    inside = False
    for line in text.splitlines():
        if not inside:
            inside = bool(_ENV_START.match(line))
            continue
        sub = _ENV_SUBITEM.match(line)
        if sub and items:
            key, value = items[-1]
            items[-1] = (key, f"{value}; {sub.group(1).strip()}" if value else sub.group(1).strip())
            continue
        item = _ENV_ITEM.match(line)
        if item:
            items.append((item.group(1).strip(), item.group(2).strip()))
            continue
        if line.strip() and items:
            break
    return items


def log_mentions_dir(log_file: Path, dir_name: str) -> bool:
    """Tell whether a pre-Hunter ``overall.log`` says it created the results directory ``dir_name``."""
    try:
        with log_file.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return False
    return b"Creating result directory: " in head and dir_name.encode() in head


def tests_in_log(log_file: Path, warnings: list[LoadWarning]) -> list[tuple[str, int, bool]]:
    """Return (test, line, failed) for each test the overall log names, first mention each.

    ``failed`` is True when the log has ``Failed to run test: <test>``.
    """
    text = read_text(log_file, warnings)
    if text is None:
        return []
    found: dict[str, tuple[int, bool]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        failed = _FAILED_LINE.search(line)
        if failed:
            name = failed.group(1)
            found[name] = (n, True)
            continue
        started = _TEST_LINE.search(line)
        if started and started.group(1) not in found:
            found[started.group(1)] = (n, False)
    return [(name, line, is_failed) for name, (line, is_failed) in found.items()]


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def pidstat(file: Path, warnings: list[LoadWarning]) -> tuple[ProcessStats, ...]:
    """Return the ``Average:`` CPU/memory of ovs-vswitchd and ovsdb-server from a pidstat log.

    Reads process rows only (TID ``-`` with ``-t``, or PID rows without it); columns by header.
    """
    text = read_text(file, warnings)
    if text is None:
        return ()
    values: dict[str, dict[str, float | None]] = {}
    header: list[str] = []
    for line in text.splitlines():
        if not line.startswith("Average:"):
            header = [] if not line.strip() else header
            continue
        fields = line.split()[1:]
        if "Command" in fields:
            header = fields
            continue
        if not header or len(fields) != len(header):
            continue
        row = dict(zip(header, fields, strict=True))
        command = row.get("Command", "")
        if command not in PIDSTAT_PROCESSES or row.get("TID", "-") != "-":
            continue
        stats = values.setdefault(command, {})
        for column in ("%CPU", "RSS", "VSZ", "%MEM"):
            if column in row:
                stats[column] = _float(row[column])
    if not values:
        warnings.append(
            LoadWarning(file, None, "No ovs-vswitchd/ovsdb-server 'Average:' rows; no CPU data shown.")
        )
    return tuple(
        ProcessStats(
            process=name,
            cpu_percent=stats.get("%CPU"),
            rss_kib=stats.get("RSS"),
            vsz_kib=stats.get("VSZ"),
            mem_percent=stats.get("%MEM"),
        )
        for name, stats in sorted(values.items())
    )


@dataclass(frozen=True)
class MoongenLog:
    """The final totals of one archived MoonGen raw log."""

    path: Path
    frame_size_bytes: int
    tx_frames: int
    rx_frames: int
    loss_frames: int
    loss_percent: float
    tx_pps: float | None
    """None for the old format without ``Tx Mpps:``."""
    rx_pps: float
    vsperf_parsable: bool
    """False when VSperf's own pattern does not match (it then writes zeros)."""


def moongen_logs(results_dir: Path, warnings: list[LoadWarning]) -> list[MoongenLog]:
    """Find and parse archived ``moongen-run*.log`` files below ``results_dir`` (depth ≤ 4)."""
    logs: list[MoongenLog] = []
    candidates = sorted(
        p
        for depth in range(0, 4)
        for p in results_dir.glob("/".join(["*"] * depth + ["moongen-run*.log"]))
        if p.is_file() and not p.is_symlink()
    )
    for file in candidates:
        text = read_text(file, warnings)
        if text is None:
            continue
        params = _MOONGEN_PARAMS.search(text)
        total = _MOONGEN_TOTAL.search(text)
        old = None if total else _MOONGEN_TOTAL_OLD.search(text)
        if params is None or (total is None and old is None):
            warnings.append(
                LoadWarning(
                    file,
                    None,
                    "MoonGen log has no '[PARAMETERS] … frameSize' or '[REPORT] total:' line; "
                    "not cross-checked.",
                )
            )
            continue
        found = total or old
        assert found is not None
        line = text[: found.start()].count("\n") + 1
        if total is not None:
            logs.append(
                MoongenLog(
                    path=file,
                    frame_size_bytes=int(params.group(1)),
                    tx_frames=int(total.group(1)),
                    rx_frames=int(total.group(2)),
                    loss_frames=int(total.group(3)),
                    loss_percent=float(total.group(4)),
                    tx_pps=float(total.group(5)) * 1e6,
                    rx_pps=float(total.group(6)) * 1e6,
                    vsperf_parsable=True,
                )
            )
        else:
            assert old is not None
            warnings.append(
                LoadWarning(
                    file,
                    line,
                    "MoonGen total line has no 'Tx Mpps:' (pre-2016-05 lua-trafficgen); VSperf cannot "
                    "parse it and writes zeros.",
                )
            )
            logs.append(
                MoongenLog(
                    path=file,
                    frame_size_bytes=int(params.group(1)),
                    tx_frames=int(old.group(1)),
                    rx_frames=int(old.group(2)),
                    loss_frames=int(old.group(3)),
                    loss_percent=float(old.group(4)),
                    tx_pps=None,
                    rx_pps=float(old.group(5)) * 1e6,
                    vsperf_parsable=False,
                )
            )
    return logs


def cross_check(
    run: TestRun,
    logs: list[MoongenLog],
    results_dir: Path,
    all_tests: frozenset[str],
    warnings: list[LoadWarning],
) -> tuple[MoongenCheck, ...]:
    """Compare each MoonGen log that belongs to ``run`` with the CSV row of the same frame size.

    A log belongs to ``run`` when a directory between ``results_dir`` and the log is named after
    the test (e.g. ``moongen/phy2phy_tput/64/moongen-run.log``), or when no directory names any
    test and the frame size matches. Checks: Rx/Tx rate equal to the CSV within
    :data:`RATE_TOLERANCE` (Rx Mpps has 2 decimals in the old format: 0.5e-2 Mpps), the loss
    count equal to Tx − Rx frames, and the loss implied by the CSV's Tx/Rx rates within
    :data:`LOSS_TOLERANCE_PERCENT` of the log's.
    """
    checks: list[MoongenCheck] = []
    for mlog in logs:
        parts = set(mlog.path.relative_to(results_dir).parts[:-1])
        if run.test not in parts and parts & all_tests:
            continue
        trial = next((t for t in run.rows if t.frame_size_bytes == mlog.frame_size_bytes), None)
        if trial is None:
            continue
        mismatches: list[str] = []
        rx_tol = max(RATE_TOLERANCE * mlog.rx_pps, 1.0 if mlog.vsperf_parsable else 0.5e4)
        if trial.rx_pps is None or abs(trial.rx_pps - mlog.rx_pps) > rx_tol:
            mismatches.append(f"Rx rate: log {mlog.rx_pps:.0f} pps, CSV {_show(trial.rx_pps)} pps")
        if mlog.tx_pps is not None and (
            trial.tx_pps is None or abs(trial.tx_pps - mlog.tx_pps) > max(RATE_TOLERANCE * mlog.tx_pps, 1.0)
        ):
            mismatches.append(f"Tx rate: log {mlog.tx_pps:.0f} pps, CSV {_show(trial.tx_pps)} pps")
        if mlog.tx_frames - mlog.rx_frames != mlog.loss_frames:
            mismatches.append(
                f"log frames inconsistent: Tx {mlog.tx_frames} − Rx {mlog.rx_frames} "
                f"≠ loss {mlog.loss_frames}"
            )
        if trial.tx_pps and trial.rx_pps is not None and mlog.tx_frames > 0:
            csv_loss = 100.0 * (trial.tx_pps - trial.rx_pps) / trial.tx_pps
            log_loss = 100.0 * mlog.loss_frames / mlog.tx_frames
            if abs(csv_loss - log_loss) > LOSS_TOLERANCE_PERCENT:
                mismatches.append(f"loss: log {log_loss:.6f} %, CSV Tx/Rx {csv_loss:.6f} %")
        check = MoongenCheck(
            log_path=mlog.path,
            frame_size_bytes=mlog.frame_size_bytes,
            tx_frames=mlog.tx_frames,
            rx_frames=mlog.rx_frames,
            loss_frames=mlog.loss_frames,
            log_loss_percent=mlog.loss_percent,
            log_rx_pps=mlog.rx_pps,
            log_tx_pps=mlog.tx_pps,
            csv_rx_pps=trial.rx_pps,
            csv_tx_pps=trial.tx_pps,
            mismatches=tuple(mismatches),
        )
        if mismatches:
            warnings.append(
                LoadWarning(
                    mlog.path,
                    None,
                    f"MoonGen raw log disagrees with '{run.csv_path.name}' line {trial.line} "
                    f"({run.test}, {mlog.frame_size_bytes} B): " + "; ".join(mismatches) + ".",
                )
            )
        checks.append(check)
    return tuple(checks)


def _show(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"
