"""Shared fixtures for the reporting tests: paths of the VSperf fixture directories."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "vsperf"
BASELINE = FIXTURES / "baseline_ovs-2.9.0_dpdk-17.11"
CANDIDATE = FIXTURES / "candidate_ovs-2.9.1_dpdk-17.11.2"
REPEATS = FIXTURES / "candidate2_repeats"
LEGACY = FIXTURES / "legacy_danube"
BROKEN = FIXTURES / "broken"
MOONGEN = FIXTURES / "moongen"


@pytest.fixture
def copy_results(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Return a function copying a fixture tree into tmp_path (tests may then edit it)."""

    def copy(src: Path, name: str | None = None) -> Path:
        dest = tmp_path / "in" / (name or src.name)
        shutil.copytree(src, dest)
        return dest

    return copy


def edited_baseline(tmp_path: Path, size: int, every: dict[str, str] | None = None, **changes: str) -> Path:
    """Copy the baseline to ``tmp_path/current``; change columns of its P2P row at ``size`` B.

    ``every`` changes columns of every row of that CSV first (a VSperf CSV has CRLF line ends;
    the rewritten one keeps them).
    """
    copy = tmp_path / "current"
    shutil.copytree(BASELINE, copy)
    path = copy / "results_2018-03-05_21-14-07" / "result_0_phy2phy_tput_p2p.csv"
    rows = list(csv.DictReader(io.StringIO(path.read_text(), newline="")))
    for row in rows:
        row.update(every or {})
        if int(float(row["packet_size"])) == size:
            row.update(changes)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue())
    return copy
