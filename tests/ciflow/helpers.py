"""Build ci_in deliveries and configurations from the real VSperf fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vsperf"
BASELINE = FIXTURES / "baseline_ovs-2.9.0_dpdk-17.11"
CANDIDATE = FIXTURES / "candidate_ovs-2.9.1_dpdk-17.11.2"
REPEATS = FIXTURES / "candidate2_repeats"
BROKEN = FIXTURES / "broken"
SCENARIO = "OVS_DPDK1q_GUEST_DPDK1q"
MARKER = "ovsperf-metadata.json"


def deliver(
    ci_in: Path,
    name: str,
    source: Path = CANDIDATE,
    *,
    scenario: str = SCENARIO,
    marker: bool = True,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Copy a fixture tree (holding results_*) into ci_in/<name> and write the marker last."""
    destination = ci_in / name
    shutil.copytree(source, destination)
    if marker:
        data = {
            "schema": 1,
            "scenario": scenario,
            "ovs_version": "2.9.1",
            "dpdk_version": "17.11.2",
            "job_id": "J:4242",
            "hosts": {"dut": "dut.example.com", "tg": "tg.example.com"},
        }
        data.update(metadata or {})
        (destination / MARKER).write_text(json.dumps(data), encoding="utf-8")
    return destination


def write_config(root: Path, *, scenarios: dict[str, Any] | None = None, **top: Any) -> Path:
    """Write a configuration under root (ci_in created) and return its path."""
    (root / "ci_in").mkdir(exist_ok=True)
    data: dict[str, Any] = {
        "ci_in": "ci_in",
        "ci_processed": "ci_processed",
        "ci_failed": "ci_failed",
        "reports": "reports",
        "database": "results.sqlite",
        "quiet_period_s": 0,
        "scenarios": {SCENARIO: {"baseline": str(BASELINE)}} if scenarios is None else scenarios,
    }
    data.update(top)
    path = root / "ciflow.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def snapshot(tree: Path) -> dict[str, bytes]:
    """Return relative path → content of every file under tree (to prove nothing was lost or changed)."""
    return {
        str(p.relative_to(tree)): p.read_bytes()
        for p in sorted(tree.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }
