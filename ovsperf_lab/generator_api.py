"""Define the traffic-generator interface the lab's search and run drive (an ``abc.ABC``).

Implementations: :class:`~ovsperf_lab.dpdk_generator.DpdkTrafficGenerator` (drives the C program
``trafficgen/``), :class:`~ovsperf_lab.crosscheck.CrossCheckedGenerator` (wraps another and checks
its counters against OVS's), and the tests' fake.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from ovsperf_lab.model import TrialResult, TrialSpec


@dataclass(frozen=True)
class PortInfo:
    """One generator port as the generator sees it."""

    index: int
    """Port index in the generator [index]."""
    mac: str
    """MAC address, ``'aa:bb:cc:dd:ee:ff'``."""
    link_speed_mbps: int | None
    """Link speed the driver reports [Mbit/s]; ``None`` when it reports none (virtio_user)."""
    link_up: bool
    """Whether the link is up."""
    rx_descriptors: int | None = None
    """RX ring of queue 0 as the generator configured it [descriptors]; ``None``: not reported."""
    tx_descriptors: int | None = None
    """TX ring of queue 0 as the generator configured it [descriptors]; ``None``: not reported."""


class TrafficGenerator(abc.ABC):
    """A traffic generator that runs RFC 2544 trials on two ports.

    Implementations own a process or remote session; :meth:`close` releases it and must be
    safe to call twice. Use as a context manager.
    """

    pid: int | None = None
    """PID of the generator's process on this machine, for tracking and nice; ``None`` when it has
    none of its own (a wrapper, a fake)."""

    def wait_link(self, timeout_s: float) -> tuple[PortInfo, ...]:
        """Wait until every port's link is up; return the ports.

        The default asks :meth:`ports` once (for generators whose links are up when they start).

        :raises TrafficGeneratorError: when a link stays down for ``timeout_s`` [s].
        """
        return self.ports()

    @abc.abstractmethod
    def ports(self) -> tuple[PortInfo, ...]:
        """Return the generator's ports, index order.

        :raises TrafficGeneratorError: when the generator does not answer.
        """

    @abc.abstractmethod
    def run_trial(self, spec: TrialSpec) -> TrialResult:
        """Run one trial and return its counters.

        :raises TrafficGeneratorError: when the generator fails, replies with an error, or does
            not reply within its deadline (it is then killed).
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Stop the generator and release its resources (hugepage files, sockets); idempotent."""

    def __enter__(self) -> TrafficGenerator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
