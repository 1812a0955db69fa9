"""Build ci_in deliveries and configurations from the real VSperf fixtures."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
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


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """Mount a small tmpfs at mountpoint (root only; CI runs as root) and unmount it afterwards."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mountpoint)], check=True
    )
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "--lazy", str(mountpoint)], check=True)


def fill_disk(directory: Path) -> Path:
    """Write a filler file into directory until the file system is full (ENOSPC); return it."""
    filler = directory / ".filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (64 * 1024, 512, 1):
            for _ in range(1 << 20):  # bounded: far above any test tmpfs
                try:
                    os.write(fd, b"\0" * size)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler
