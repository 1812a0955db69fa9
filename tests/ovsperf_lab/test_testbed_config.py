"""The testbed's and compare's settings refuse an unknown generator before anything starts; the ring check."""

from __future__ import annotations

import logging

import pytest

from ovsperf_lab.compare.config import CompareConfig
from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.api import PortInfo, TrafficGenerator
from ovsperf_lab.model import TrialResult, TrialSpec
from ovsperf_lab.plan import CpuPlan
from ovsperf_lab.testbed import TestbedConfig, check_rings


def test_compare_config_refuses_an_unknown_generator_for_every_metric() -> None:
    for metric in ("mrr", "pdr"):
        with pytest.raises(
            LabError, match=r"Option '--generator': unknown traffic generator 'nope'; known: trafficgen"
        ):
            CompareConfig(metric=metric, generator="nope")


def test_testbed_config_refuses_an_unknown_generator() -> None:
    with pytest.raises(LabError, match="unknown traffic generator 'nope'"):
        TestbedConfig(
            cpus=CpuPlan(0, 0, (1,), None),
            queues=1,
            ring_size=4096,
            nice=-10,
            ovs_socket_mem_mb=512,
            generator_memory_mb=256,
            generator="nope",
        )


class _Rings(TrafficGenerator):
    def __init__(self, rx: int, tx: int) -> None:
        self.rx, self.tx = rx, tx

    def ports(self) -> tuple[PortInfo, ...]:
        return tuple(PortInfo(i, f"02:00:00:00:00:0{i}", None, True, self.rx, self.tx) for i in (0, 1))

    def run_trial(self, spec: TrialSpec) -> TrialResult:
        raise AssertionError("no trial in a ring check")

    def close(self) -> None:
        pass


def test_ring_check_warns_only_about_smaller_rings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ovsperf_lab.testbed")
    check_rings(_Rings(rx=8192, tx=4096), 4096)  # testpmd's RX ring twice its TX ring: fine
    assert caplog.records == []
    check_rings(_Rings(rx=1024, tx=4096), 4096)
    assert [r.getMessage() for r in caplog.records] == [
        "Generator port 0 runs with a RX ring of 1024 descriptors, not the 4096 asked for.",
        "Generator port 1 runs with a RX ring of 1024 descriptors, not the 4096 asked for.",
    ]
