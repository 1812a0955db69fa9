"""How ``ovsperf-lab compare`` measures: the options of a comparison and their ranges.

Its own module, importable without scipy or MLRsearch: the parser shows the defaults in
``--help`` before the ``ovsperf[lab]`` install group is needed (:mod:`ovsperf_lab.compare.abtest` runs it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ovsperf_lab.errors import LabError
from ovsperf_lab.generators.registry import DEFAULT_GENERATOR, generator_backend
from ovsperf_lab.plan import DEFAULT_RING_SIZE, RING_SIZES, LabOptions


@dataclass(frozen=True)
class CompareConfig:
    """How to measure; ``LabError`` names the option of a bad value."""

    frame_size_bytes: int = 64
    """Ethernet frame size including FCS [B]."""
    trial_s: float = 5.0
    """MRR trial duration [s] (``--trial-duration``)."""
    warmup_s: float = 1.0
    """Warm-up traffic before the counted trial [s]."""
    min_rounds: int = 5
    """Rounds before the run may stop early (``--min-rounds``)."""
    max_rounds: int = 20
    """Most rounds (``--rounds``)."""
    target_mdc_percent: float = 3.0
    """Stop once the minimum detectable change is at most this [%] (``--target-mdc``)."""
    alpha: float = 0.05
    """Significance level [1]."""
    power: float = 0.8
    """Power the MDC is stated for [1]."""
    threshold_percent: float = 1.0
    """Smallest change called a regression or improvement [%] (``--threshold``)."""
    b_cpu_steal_percent: float | None = None
    """Test aid: share of side B's PMD CPU taken away [%] (``--b-cpu-steal``)."""
    ring_size: int = DEFAULT_RING_SIZE
    """Generator ring size [descriptors]."""
    queues: int = 1
    """Queues per OVS port (``n_rxq``) and per generator port [1]."""
    nice: int = LabOptions.nice
    """Nice value of OVS and the generator (busy-polling threads), as ``ovsperf-lab run``'s [1]."""
    generator_memory_mb: int = LabOptions.generator_memory_mb
    """Generator memory at least [MiB], as ``ovsperf-lab run``'s."""
    ovs_socket_mem_mb: int = LabOptions.ovs_socket_mem_mb
    """OVS ``dpdk-socket-mem`` [MiB], as ``ovsperf-lab run``'s."""
    warmup_drain_s: float = 0.2
    """RX time after the warm-up's TX stops [s] (its frames are not counted)."""
    drain_s: float = 0.5
    """RX time after the counted MRR trial's TX stops [s] (as MLRsearch's trials)."""
    flows: int = 1
    """UDP flows per direction [1]."""
    seed: int | None = None
    """Seed of the A/B order (``--seed``); ``None``: from the OS."""
    metric: str = "mrr"
    """``mrr`` (one trial at full offered load) or ``pdr`` (a short MLRsearch for the 0.5 % PDR)."""
    pdr_duration_sum_s: float = 5.0
    """``--metric pdr``: MLRsearch duration sum per load [s] (shorter than CSIT's 21 s: rounds repeat)."""
    generator: str = DEFAULT_GENERATOR
    """Traffic generator backend (``--generator``; :mod:`ovsperf_lab.generators.registry`)."""

    def __post_init__(self) -> None:
        """Check every field against its range.

        :raises LabError: naming the command-line option (or the field, where none sets it).
        """
        if not 0 < self.trial_s <= 600:
            raise LabError(f"Option '--trial-duration' must be in (0, 600] s, got {self.trial_s!r}.")
        if not 2 <= self.min_rounds <= self.max_rounds <= 200:
            raise LabError(
                f"Options '--min-rounds' and '--rounds' must satisfy 2 <= min <= rounds <= 200, got "
                f"{self.min_rounds!r} and {self.max_rounds!r}."
            )
        if not 0 < self.target_mdc_percent < 100:
            raise LabError(f"Option '--target-mdc' must be in (0, 100) %, got {self.target_mdc_percent!r}.")
        if self.metric not in ("mrr", "pdr"):
            raise LabError(f"Option '--metric' must be 'mrr' or 'pdr', got {self.metric!r}.")
        backend = generator_backend(self.generator)  # an unknown name is refused here, not mid-round
        if self.metric == "pdr" and not backend.paced:
            raise LabError(
                f"Option '--generator': '{self.generator}' cannot hold an offered load below its maximum, "
                "so it cannot search for the PDR; use '--metric mrr'."
            )
        if not 0 <= self.threshold_percent < 100:
            raise LabError(f"Option '--threshold' must be in [0, 100) %, got {self.threshold_percent!r}.")
        self._check_testbed()

    def _check_testbed(self) -> None:
        """Check the testbed fields (no command-line option sets them).

        :raises LabError: naming the field.
        """
        if self.ring_size not in RING_SIZES:
            raise LabError(
                f"Field 'ring_size' must be a power of two in [{RING_SIZES[0]}, {RING_SIZES[-1]}], "
                f"got {self.ring_size!r}."
            )
        if self.queues < 1:
            raise LabError(f"Field 'queues' must be >= 1, got {self.queues!r}.")
        if not -20 <= self.nice <= 19:
            raise LabError(f"Field 'nice' must be in [-20, 19], got {self.nice!r}.")
        if self.generator_memory_mb < 1 or self.ovs_socket_mem_mb < 1:
            raise LabError(
                f"Fields 'generator_memory_mb' and 'ovs_socket_mem_mb' must be >= 1 MiB, got "
                f"{self.generator_memory_mb!r} and {self.ovs_socket_mem_mb!r}."
            )
        for name in ("warmup_drain_s", "drain_s"):
            value = getattr(self, name)
            if not 0 <= value <= 30:
                raise LabError(f"Field '{name}' must be in [0, 30] s, got {value!r}.")


def add_round_options(parser: argparse.ArgumentParser, *, per: str) -> None:
    """Add the options of an interleaved A/B comparison's rounds to ``parser`` (``compare``, ``bisect``).

    ``--rounds``, ``--min-rounds``, ``--target-mdc``, ``--threshold`` and ``--trial-duration``, with
    :class:`CompareConfig`'s defaults.

    :param per: what one comparison is, for the help (``'comparison'``, ``'step'``).
    """
    defaults = CompareConfig()
    parser.add_argument(
        "--rounds", type=int, default=defaults.max_rounds, help=f"most rounds per {per} (%(default)s)"
    )
    parser.add_argument(
        "--min-rounds", type=int, default=defaults.min_rounds,
        help=f"rounds before a {per} may stop early (%(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--target-mdc", type=float, default=defaults.target_mdc_percent, metavar="PCT",
        help=f"a {per} stops once its minimum detectable change is at most this [%%] (%(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", type=float, default=defaults.threshold_percent, metavar="PCT",
        help="smallest change called a regression or improvement [%%] (%(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--trial-duration", type=float, default=defaults.trial_s, metavar="S",
        help="MRR trial [s] (%(default)s)",
    )  # fmt: skip
