"""The report's DUT section from ovsperf-telemetry.json: which trial stands for a frame size, cycles
per packet compared and marked, "not collected" instead of zeros, bad fields named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reporting.api import generate_report
from reporting.load import load_results_dir
from tests.ciflow.helpers import BASELINE, CANDIDATE

CSV = "result_0_phy2phy_tput_p2p.csv"


def trial(
    size: int, load: float, loss: float, cycles: float | None, *, valid: bool = True, **extra: Any
) -> dict[str, Any]:
    packets = 2 * load
    return {
        "csv": CSV,
        "test": "phy2phy_tput",
        "frame_size_bytes": size,
        "load_pps": load,
        "duration_s": 1.0,
        "loss_ratio": loss,
        "valid": valid,
        "totals": {
            "packets": packets,
            "cycles_per_packet": cycles,
            "pmd_busy_percent": 55.0,
            "simple_match_hits_percent": 100.0,
            "emc_hits_percent": 0.0,
            "megaflow_hits_percent": 0.0,
        },
        "rxq": [{"pmd": "pmd-c01", "port": "tg0", "queue": 0, "enabled": True, "usage_percent": 31.0}],
        "threads": {"ovs-vswitchd": [{"tid": 9, "name": "pmd-c01/id:8", "cpu_percent": 100.4}]},
        "notes": [],
        **extra,
    }


def results(
    tmp: Path, source: Path, name: str, trials: list[dict[str, Any]] | None, raw: str | None = None
) -> Path:
    target = tmp / name
    shutil.copytree(source, target)
    [results_dir] = list(target.glob("results_*"))
    if raw is not None:
        (results_dir / "ovsperf-telemetry.json").write_text(raw)
    elif trials is not None:
        (results_dir / "ovsperf-telemetry.json").write_text(json.dumps({"schema": 1, "trials": trials}))
    return results_dir


def test_the_trial_the_ndr_rests_on_stands_for_the_frame_size(tmp_path: Path) -> None:
    trials = [
        trial(64, 1e6, 0.0, 500.0),
        trial(64, 2e6, 0.0, 400.0),
        trial(64, 3e6, 0.01, 350.0),  # lost frames
        trial(64, 2.5e6, 0.0, 380.0, valid=False),  # the generator did not keep up
        trial(1518, 0.8e6, 0.02, 900.0),  # no lossless trial: the highest valid load
        trial(1518, 0.5e6, 0.03, 950.0),
    ]
    loaded = load_results_dir(results(tmp_path, CANDIDATE, "c", trials))
    [run] = [r for r in loaded.runs if r.csv_path.name == CSV]
    assert [(p.frame_size_bytes, p.load_pps, p.cycles_per_packet) for p in run.telemetry] == [
        (64, 2e6, 400.0),
        (1518, 0.8e6, 900.0),
    ]
    point = run.telemetry[0]
    assert dict(point.hits_percent)["simple_match_hits"] == 100.0
    assert point.threads == (("ovs-vswitchd", "pmd-c01/id:8", 100.4),)
    assert point.rxq == (("pmd-c01", "tg0", 0, 31.0),)


def test_cycles_per_packet_compared_and_marked(tmp_path: Path) -> None:
    base = results(tmp_path, BASELINE, "b", [trial(64, 2e6, 0.0, 400.0), trial(128, 2e6, 0.0, 420.0)])
    cur = results(tmp_path, CANDIDATE, "c", [trial(64, 2e6, 0.0, 440.0), trial(128, 2e6, 0.0, 425.0)])
    outcome = generate_report([base], [cur], tmp_path / "r")
    data = json.loads(outcome.report_json.read_text())
    [p2p] = [t for t in data["tests"] if t["test"] == "phy2phy_tput"]
    cells = {c["frame_size_bytes"]: c for c in p2p["telemetry"]}
    assert cells[64]["cycles_change_percent"] == pytest.approx(10.0) and cells[64]["marked"] is True
    assert cells[128]["cycles_change_percent"] == pytest.approx(100 * (425 / 420 - 1), abs=1e-3)
    assert cells[128]["marked"] is False
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    dut = page[page.index('id="test-1-dut-table"') :]
    dut = dut[: dut.index("</table>")]
    assert '<td class="rel-regression">+10.00</td>' in dut
    assert "ovs-vswitchd: pmd-c01/id:8 100" in dut and "tg0/q0 → pmd-c01 (31 %)" in dut
    # pvp has telemetry on neither side: said so, no zeros.
    assert 'id="test-2-dut-none"' in page and "not collected on either side" in page
    # Throughput verdicts do not change with telemetry.
    assert outcome.counts["REGRESSION"] == 1


def test_one_side_without_telemetry_says_not_collected(tmp_path: Path) -> None:
    base = results(tmp_path, BASELINE, "b", None)
    cur = results(
        tmp_path,
        CANDIDATE,
        "c",
        [trial(64, 2e6, 0.0, 440.0, notes=["pmd-perf-show: not collected (timeout)"])],
    )
    generate_report([base], [cur], tmp_path / "r")
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    row = page[page.index('id="test-1-dut-table"') :]
    row = row[row.index("<tr><td>64</td>") : row.index("</tr>", row.index("<tr><td>64</td>"))]
    assert '<span class="na">not collected</span>' in row and "440" in row
    assert "pmd-perf-show: not collected (timeout)" in row
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    [cell] = next(t for t in data["tests"] if t["test"] == "phy2phy_tput")["telemetry"]
    assert cell["baseline_cycles_per_packet"] is None and cell["cycles_change_percent"] is None


@pytest.mark.parametrize(
    ("trials", "raw", "message"),
    [
        ([trial(64, 2e6, 0.0, -5.0)], None, "trials[0].totals.cycles_per_packet is -5.0"),
        ([trial(64, 2e6, 0.0, 400.0) | {"csv": "../etc/passwd"}], None, "trials[0].csv is '../etc/passwd'"),
        ([trial(32, 2e6, 0.0, 400.0)], None, "trials[0].frame_size_bytes is 32"),
        (
            [trial(64, 2e6, 0.0, 400.0) | {"rxq": [{"queue": "x"}]}],
            None,
            "trials[0].rxq[0] is not a queue placement",
        ),
        (None, "{not json", "Cannot read the telemetry file"),
        (None, json.dumps({"schema": 7, "trials": []}), "Not an ovsperf-telemetry.json of schema 1"),
    ],
)
def test_bad_telemetry_is_named_and_skipped(
    tmp_path: Path, trials: list[dict[str, Any]] | None, raw: str | None, message: str
) -> None:
    loaded = load_results_dir(results(tmp_path, CANDIDATE, "c", trials, raw))
    assert any(message in str(w) and "ovsperf-telemetry.json" in str(w) for w in loaded.warnings), (
        loaded.warnings
    )
    assert all(r.telemetry == () for r in loaded.runs)


def test_cycles_per_packet_is_a_sample_in_the_store(tmp_path: Path) -> None:
    from reporting.metrics import higher_is_better, metric_unit
    from resultstore.samples import samples_from_sets

    loaded = load_results_dir(results(tmp_path, CANDIDATE, "c", [trial(64, 2e6, 0.0, 400.0)]))
    samples = {(s.test, s.frame_size, s.metric): s.value for s in samples_from_sets([loaded])}
    assert samples[("phy2phy_tput", 64, "cycles_per_packet")] == 400.0
    assert samples[("phy2phy_tput", 64, "pmd_busy_percent")] == 55.0
    assert ("phy2phy_tput", 128, "cycles_per_packet") not in samples  # not collected: no sample, no zero
    assert metric_unit("cycles_per_packet") == "cycles" and not higher_is_better("cycles_per_packet")


def window(cycles: float | None, sizes: list[int]) -> dict[str, Any]:
    """A VSperf test's whole-test window (ovsperf_common.vsperf_telemetry): no frame size, no load."""
    entry = trial(64, 1.0, 0.0, cycles, source="vsperf", window="test", frame_sizes_bytes=sizes)
    entry.update(frame_size_bytes=None, load_pps=None, duration_s=None, loss_ratio=None)
    return entry


def test_vsperf_whole_test_windows_are_compared_with_each_other_only(tmp_path: Path) -> None:
    from resultstore.samples import samples_from_sets

    base = results(tmp_path, BASELINE, "b", [window(400.0, [64, 1518]), trial(64, 2e6, 0.0, 390.0)])
    cur = results(tmp_path, CANDIDATE, "c", [window(460.0, [64, 1518])])
    outcome = generate_report([base], [cur], tmp_path / "r")
    data = json.loads(outcome.report_json.read_text())
    [p2p] = [t for t in data["tests"] if t["test"] == "phy2phy_tput"]
    whole, per_size = p2p["telemetry"]
    assert whole["frame_size_bytes"] is None and whole["current"][0]["frame_sizes_bytes"] == [64, 1518]
    assert whole["cycles_change_percent"] == pytest.approx(15.0) and whole["marked"] is True
    # The lab trial at 64 B is not set against the window: its own cell, current not collected.
    assert per_size["frame_size_bytes"] == 64 and per_size["current"] == []
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    dut = page[page.index('id="test-1-dut-table"') :]
    dut = dut[: dut.index("</table>")]
    assert "every size (64, 1518 B): whole VSperf test" in dut and '"rel-regression">+15.00<' in dut
    # A window has no frame size to file it under in the store.
    loaded = load_results_dir(cur)
    assert [s for s in samples_from_sets([loaded]) if s.metric == "cycles_per_packet"] == []


def test_a_window_without_its_frame_sizes_is_named_and_skipped(tmp_path: Path) -> None:
    bad = window(400.0, [64])
    bad["frame_sizes_bytes"] = "64"
    loaded = load_results_dir(results(tmp_path, CANDIDATE, "c", [bad]))
    assert any("trials[0].frame_sizes_bytes" in str(w) for w in loaded.warnings), loaded.warnings
    assert all(r.telemetry == () for r in loaded.runs)
