"""Shared fixtures for the reporting tests: paths of the VSperf fixture directories."""

from __future__ import annotations

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
