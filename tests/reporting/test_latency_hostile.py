"""Latency and telemetry files against the references and a hostile user (issue 25 items 3, 4, 15, 16).

Reference numbers: HdrHistogram_py ``test/test_hdrhistogram.py`` (HdrHistogram/HdrHistogram_py,
commit b18247acad11cda2664674dc5267e652d6850b7d): ``test_large_numbers`` records 100,000,000,
20,000,000 and 30,000,000 into ``HdrHistogram(20000000, 100000000, 5)``; p50 is equivalent to
20,000,000 and p99 to 100,000,000. The same case is HdrHistogram_c's
``test_create_with_large_values`` (HdrHistogram/HdrHistogram_c ``test/hdr_histogram_test.c``,
commit 4ab9462eb18d69b9409fb118b53a4bf08afb5885). Its ``load_histograms`` uses
``hdr_init(1, 3600 * 1000 * 1000, 3)`` (``LOWEST``/``HIGHEST``/``SIGNIFICANT`` in the Python test).
The histograms are written here in the V2 format those projects document, never copied.
"""

from __future__ import annotations

import base64
import json
import struct
import time
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from reporting.api import generate_report
from reporting.compare import compare
from reporting.hdrdecode import MAX_COUNTS, MAX_PAYLOAD_BYTES, HistogramError, counts_length, decode_bounded
from reporting.latency import decode
from reporting.load import load_results_dir
from reporting.load_latency import MAX_LATENCY_LEVELS
from reporting.model import Thresholds
from tests.ciflow.helpers import BASELINE
from tests.reporting.test_goals_latency import row, write_dir
from tests.reporting.test_telemetry_report import results, trial

LAB = (1, 60_000_000_000, 3)
"""The lab's histogram settings (ovsperf_lab.search.latency)."""


def hist(settings: tuple[int, int, int], values: dict[int, int]) -> HdrHistogram:
    h = HdrHistogram(*settings)
    for value, count in values.items():
        assert h.record_value(value, count)
    return h


def level_of(h: HdrHistogram, low: float, high: float, *, clamp: bool = False) -> dict[str, Any]:
    """One ``levels[]`` object, percentiles straight from the histogram (``clamp``: to [low, high])."""
    merged = {
        "rx_packets": h.get_total_count(),
        "min_ns": low,
        "avg_ns": float(h.get_mean_value()),
        **{
            key: min(max(float(h.get_value_at_percentile(p)), low), high)
            if clamp
            else float(h.get_value_at_percentile(p))
            for key, p in (("p50_ns", 50), ("p90_ns", 90), ("p99_ns", 99), ("p999_ns", 99.9))
        },
        "max_ns": high,
        "hdrh": h.encode().decode("ascii"),
    }
    return {"percent_of_pdr": 90.0, "load_fps_per_direction": 1e5, "duration_s": 10.0, "valid": True,
            "invalid_reason": None, "all": merged, "directions": []}  # fmt: skip


def latency_file(path: Path, levels: list[Any]) -> None:
    entry = {"csv": "result_0_phy2phy_tput_p2p.csv", "frame_size_bytes": 64, "levels": levels}
    (path / "ovsperf-latency.json").write_text(json.dumps({"schema": 1, "results": [entry]}))


def run_dir(tmp: Path, day: int, levels: list[Any] | None = None, raw: str | None = None) -> Path:
    path = write_dir(tmp, f"2026-01-{day:02d}_00-00-00", [row(64, 1e6, 2e6)])
    if raw is not None:
        (path / "ovsperf-latency.json").write_text(raw)
    elif levels is not None:
        latency_file(path, levels)
    return path


# --- item 3: a later histogram above the first one's range -------------------------------------


def test_a_later_histogram_above_the_first_ones_range_is_merged_into_one_covering_both(
    tmp_path: Path,
) -> None:
    # A foreign histogram (the reference's settings, range up to 100 ms) first, then a lab run
    # whose one slow frame (10 s) lies far above that range: HdrHistogram.add raised IndexError.
    foreign = hist((20_000_000, 100_000_000, 5), {100_000_000: 1, 20_000_000: 1, 30_000_000: 1})
    assert foreign.values_are_equivalent(20_000_000, foreign.get_value_at_percentile(50.0))  # reference
    assert foreign.values_are_equivalent(100_000_000, foreign.get_value_at_percentile(99.0))  # reference
    longer = hist(LAB, {10_000_000_000: 1})
    # Its own percentiles lie up to 2^24 ns above the values: its producer clamped them.
    first = run_dir(tmp_path, 2, [level_of(foreign, 20e6, 100e6, clamp=True)])
    second = run_dir(tmp_path, 3, [level_of(longer, 10e9, 10e9)])
    base = run_dir(tmp_path, 1)
    comparison = compare([load_results_dir(base)], [load_results_dir(first), load_results_dir(second)],
                         Thresholds())  # fmt: skip
    [cell] = comparison.tests[0].latency
    merged = cell.current
    assert merged is not None and merged.rx_packets == 4
    assert (merged.min_ns, merged.max_ns) == (20e6, 10e9)
    assert foreign.values_are_equivalent(20_000_000, merged.p50_ns)
    assert merged.p99_ns == merged.p999_ns == 10e9  # the 10 s frame, never above the maximum
    whole = decode(merged.hdrh)
    assert whole is not None and whole.get_total_count() == 4
    assert whole.values_are_equivalent(whole.get_max_value(), 10_000_000_000)
    report = generate_report([base], [first, second], tmp_path / "report")
    assert report.overall == "PASS"


def test_a_covering_histogram_too_large_falls_back_to_the_runs_percentiles(tmp_path: Path) -> None:
    # Each fits (524,288 and 786,432 counters), but 1 ns .. 2^62 ns at 5 digits needs 5.9 million:
    # not allocated, the runs' mean percentiles are shown instead.
    huge = hist((2**40, 2**62, 5), {2**61: 1})
    tiny = hist((1, 2**20, 5), {1: 1})
    first = run_dir(tmp_path, 2, [level_of(tiny, 1, 1)])
    second = run_dir(tmp_path, 3, [level_of(huge, 2.0**61, 2.0**61)])
    comparison = compare([load_results_dir(first)], [load_results_dir(first), load_results_dir(second)],
                         Thresholds())  # fmt: skip
    [cell] = comparison.tests[0].latency
    assert cell.current is not None and cell.current.hdrh is None
    assert cell.current.p50_ns == pytest.approx((1 + 2.0**61) / 2)


# --- item 4: percentiles within [min, max] ----------------------------------------------------


def test_percentiles_never_lie_above_the_exact_maximum(tmp_path: Path) -> None:
    # The reference values in the lab's histogram: 100,000,000 lies in the bucket
    # [99,942,400, 100,007,935], whose highest value HdrHistogram returns as p99.
    h = hist(LAB, {100_000_000: 1, 20_000_000: 1, 30_000_000: 1})
    assert h.get_value_at_percentile(99.0) == 100_007_935 > 100_000_000
    one = run_dir(tmp_path, 2, [level_of(h, 20e6, 100e6)])
    [point] = load_results_dir(one).runs[0].latency
    assert (point.p90_ns, point.p99_ns, point.p999_ns, point.max_ns) == (100e6, 100e6, 100e6, 100e6)
    # Two runs merged: percentiles of the summed histogram, still within the runs' extremes.
    split_a = hist(LAB, {100_000_000: 1, 20_000_000: 1})
    split_b = hist(LAB, {30_000_000: 1})
    a = run_dir(tmp_path, 3, [level_of(split_a, 20e6, 100e6)])
    b = run_dir(tmp_path, 4, [level_of(split_b, 30e6, 30e6)])
    [cell] = compare([load_results_dir(one)], [load_results_dir(a), load_results_dir(b)],
                     Thresholds()).tests[0].latency  # fmt: skip
    assert cell.current is not None and cell.current.rx_packets == 3
    assert cell.current.p99_ns == cell.current.p999_ns == 100e6 == cell.current.max_ns
    assert h.values_are_equivalent(30_000_000, cell.current.p50_ns)
    assert cell.baseline is not None and cell.baseline.p999_ns == 100e6


# --- item 15: bounded memory --------------------------------------------------------------------


def _bomb(inflated_bytes: int, settings: tuple[int, int, int] = LAB) -> str:
    """An HdrHistogram V2 string (HdrHistogram's V2 compressed format, as hdrh writes it: cookie,
    length, zlib stream of a 40-byte payload header and the counts) whose payload header is sound
    and whose zero counts inflate to ``inflated_bytes`` (a multiple of 16 MiB, or below 16 MiB).

    A deflate stream after a full flush does not depend on what came before, so the compressed
    16 MiB block of zeros is written once and repeated; the stream ends with an empty final block
    and the Adler-32 of all the data (RFC 1950/1951), computed without the data."""
    lowest, highest, figures = settings
    zeros = min(inflated_bytes, 16 << 20)
    header = struct.pack(">IIIIqqd", 0x1C849313, inflated_bytes, 0, figures, lowest, highest, 1.0)
    deflater = zlib.compressobj(9)
    head = deflater.compress(header) + deflater.flush(zlib.Z_FULL_FLUSH)
    block = deflater.compress(bytes(zeros)) + deflater.flush(zlib.Z_FULL_FLUSH)
    adler = zlib.adler32(header)
    a, b = adler & 0xFFFF, adler >> 16
    b = (b + inflated_bytes * a) % 65521  # zeros leave a unchanged and add a to b per byte
    body = head + block * (inflated_bytes // zeros) + b"\x03\x00" + ((b << 16) | a).to_bytes(4, "big")
    return base64.b64encode(struct.pack(">II", 0x1C849314 | 0x10, len(body)) + body).decode("ascii")


def test_the_bomb_is_a_valid_histogram_stream() -> None:
    """The construction above is sound: at 32 MiB, zlib inflates it whole, trailer checked."""
    raw = base64.b64decode(_bomb(32 << 20))
    inflated = zlib.decompress(raw[8:])
    assert len(inflated) == 40 + (32 << 20) and inflated[40:].count(0) == 32 << 20


def test_a_decompression_bomb_is_refused_in_bounded_memory() -> None:
    bomb = _bomb(2 << 30)  # the hostile try: 2 GiB of zero counts in 2.7 MB of base64
    assert 2_500_000 < len(bomb) < 3_000_000
    tracemalloc.start()
    try:
        assert decode(bomb) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * MAX_PAYLOAD_BYTES + 2 * len(bomb) + (4 << 20) < (2 << 30) / 50
    with pytest.raises(HistogramError, match="inflates to more than"):
        decode_bounded(bomb)


def test_settings_needing_millions_of_counters_are_refused_before_allocating() -> None:
    with pytest.raises(HistogramError, match=f"more than {MAX_COUNTS}"):
        decode_bounded(_bomb(1 << 10, (1, 2**62, 5)))
    with pytest.raises(HistogramError, match="not an HdrHistogram"):
        decode_bounded(_bomb(1 << 10, (0, 10, 3)))
    with pytest.raises(HistogramError, match="not base64"):
        decode_bounded("HISTFAAAA!")
    good = hist(LAB, {1000: 3})
    assert decode_bounded(good.encode().decode("ascii")).get_total_count() == 3


def test_a_bomb_in_a_latency_file_leaves_a_report(tmp_path: Path) -> None:
    h = hist(LAB, {2000: 10})
    bad = level_of(h, 2000, 2000)
    bad["all"]["hdrh"] = _bomb(2 << 30)  # 2.7 MB in the file
    first = run_dir(tmp_path, 2, [bad])
    second = run_dir(tmp_path, 3, [level_of(h, 2000, 2000)])
    report = generate_report([first], [first, second], tmp_path / "report")
    assert report.overall == "PASS"
    data = json.loads(report.report_json.read_text())
    assert data["tests"][0]["latency"][0]["current"]["p50_ns"] == pytest.approx(2000, rel=1e-3)


def test_levels_beyond_the_cap_are_not_read(tmp_path: Path) -> None:
    small = level_of(hist(LAB, {1500: 1}), 1500, 1500)
    path = run_dir(tmp_path, 2, [small] * 100_000)
    started = time.monotonic()
    loaded = load_results_dir(path)
    assert len(loaded.runs[0].latency) == 0
    assert [w.message for w in loaded.warnings if "latency" in w.message] == [
        f"More than {MAX_LATENCY_LEVELS} latency levels; results[0] and later entries are not read."
    ]
    fits = run_dir(tmp_path, 3, [small] * MAX_LATENCY_LEVELS)
    assert len(load_results_dir(fits).runs[0].latency) == MAX_LATENCY_LEVELS
    assert time.monotonic() - started < 30


# --- item 16: one-line messages, never a traceback ----------------------------------------------


@pytest.mark.parametrize("name", ["ovsperf-latency.json", "ovsperf-telemetry.json"])
def test_json_nested_100k_deep_is_a_one_line_warning(tmp_path: Path, name: str) -> None:
    path = run_dir(tmp_path, 2)
    (path / name).write_text("[" * 100_000 + "]" * 100_000)
    loaded = load_results_dir(path)
    [warning] = [w for w in loaded.warnings if w.path.name == name]
    assert "JSON nested too deep" in warning.message and "\n" not in str(warning)
    assert loaded.runs[0].latency == () and loaded.runs[0].telemetry == ()


WRONG_KINDS: list[Any] = [5, -1, "x", [], {}, True, None, [5], {"a": 5}, [[[]]], 1e308]


def _telemetry_warnings(tmp: Path, case: str, t: dict[str, Any]) -> tuple[list[str], Path]:
    path = results(tmp, BASELINE, case, [t])
    loaded = load_results_dir(path)
    file = path / "ovsperf-telemetry.json"
    return [str(w) for w in loaded.warnings if w.path == file], file


def test_telemetry_rxq_of_the_wrong_kind_names_the_file_and_field(tmp_path: Path) -> None:
    messages, file = _telemetry_warnings(tmp_path, "rxq", trial(64, 1e6, 0.0, 250.0, rxq=5))
    assert messages == [f"'{file}': Field trials[0].rxq is a number, not a list; that trial is not used."]


TELEMETRY_FIELDS = ["rxq", "threads", "notes", "totals", "load_pps", "loss_ratio", "frame_size_bytes",
                    "csv", "window", "frame_sizes_bytes", "valid"]  # fmt: skip


@pytest.mark.parametrize("field", TELEMETRY_FIELDS)
def test_telemetry_fields_of_every_wrong_kind_are_warnings(tmp_path: Path, field: str) -> None:
    for number, value in enumerate(WRONG_KINDS):
        for nested in (False, True):
            t = trial(64, 1e6, 0.0, 250.0)
            if nested and isinstance(t.get(field), list | dict):
                inner = t[field]
                if isinstance(inner, list):
                    t[field] = [value] if not inner else [dict(inner[0], **{k: value for k in inner[0]})]
                else:
                    t[field] = {k: value for k in inner}
            else:
                t[field] = value
            messages, _ = _telemetry_warnings(tmp_path, f"{field}-{number}-{nested}", t)
            assert all("\n" not in m and len(m) < 400 for m in messages), messages


@pytest.mark.parametrize("where", ["entry", "level", "all"])
def test_latency_fields_of_every_wrong_kind_are_warnings(tmp_path: Path, where: str) -> None:
    template = level_of(hist(LAB, {1500: 4}), 1500, 1500)
    path = run_dir(tmp_path, 1)
    keys = {"entry": ["csv", "frame_size_bytes", "levels", "mix", "flows"],
            "level": list(template), "all": list(template["all"])}[where]  # fmt: skip
    for key in keys:
        for value in WRONG_KINDS:
            level = json.loads(json.dumps(template))
            entry: dict[str, Any] = {"csv": "result_0_phy2phy_tput_p2p.csv", "frame_size_bytes": 64,
                                     "levels": [level]}  # fmt: skip
            {"entry": entry, "level": level, "all": level["all"]}[where][key] = value
            (path / "ovsperf-latency.json").write_text(json.dumps({"schema": 1, "results": [entry]}))
            loaded = load_results_dir(path)
            assert all("\n" not in w.message and len(w.message) < 400 for w in loaded.warnings)
            for point in loaded.runs[0].latency:
                assert point.min_ns <= point.p50_ns <= point.p999_ns <= point.max_ns


@pytest.mark.parametrize("figures", [1, 2, 3, 4, 5])
def test_counts_length_is_hdrhistograms(figures: int) -> None:
    """The bound is computed as HdrHistogram computes it; HdrHistogram_py's test_basic says
    (1, 3,600,000,000, 3) has 23,552 counters (the commit cited above)."""
    assert counts_length(1, 3_600_000_000, 3) == 23_552
    for lowest in (1, 2, 1000, 1024, 20_000_000):
        for highest in (2 * lowest, 10**6, 60_000_000_000, 2**40, 2**62):
            if highest >= 2 * lowest and counts_length(lowest, highest, figures) <= MAX_COUNTS:
                assert (
                    counts_length(lowest, highest, figures)
                    == HdrHistogram(lowest, highest, figures).counts_len
                )
