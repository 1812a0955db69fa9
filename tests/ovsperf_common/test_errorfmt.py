"""Tests of the shared "where" prefix of error messages."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common.errorfmt import located


def test_all_parts_in_order() -> None:
    message = located(
        "expected an integer.", Path("/etc/c.yaml"), ("scenario", "OVS_DPDK2q"), ("field", "queues")
    )
    assert message == "'/etc/c.yaml', scenario 'OVS_DPDK2q', field 'queues': expected an integer."


def test_unknown_parts_are_left_out() -> None:
    assert located("bad.", None, ("host", None), ("field", "pmd_cpus")) == "field 'pmd_cpus': bad."
    assert located("bad.", None, ("field", None)) == "bad."
