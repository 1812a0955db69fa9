"""Build synthetic build histories in a results store (test support)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from resultstore.model import ResultStatus
from resultstore.samples import BuildInfo, Sample
from resultstore.store import ResultStore

T0 = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)
CELLS = (("phy2phy_tput", "p2p", 64), ("phy2phy_tput", "p2p", 1518))


def add_builds(
    store: ResultStore,
    levels: Sequence[float],
    *,
    scenario: str = "OVS_DPDK1q",
    cells: Iterable[tuple[str, str, int]] = CELLS,
    metric: str = "ndr_fps",
    cv: float = 0.01,
    seed: int = 1,
    start: int = 0,
    prefix: str = "openvswitch3.1-3.1.0-",
) -> list[str]:
    """Record one build per level (NDR of every cell = level × size factor × noise); return names."""
    rng = random.Random(seed)
    cells = list(cells)
    names = []
    for offset, level in enumerate(levels):
        number = start + offset
        name = f"{prefix}{number}.el9"
        store.record_result(
            name=name,
            scenario=scenario,
            location=Path("/srv/ci_processed") / name,
            vsperf_dirs=[],
            status=ResultStatus.PROCESSED,
            fingerprint=f"{scenario}-{name}",
        )
        samples = [
            Sample(test, deployment, size, metric, 0, level * (64 / size) ** 0.5 * rng.gauss(1.0, cv))
            for test, deployment, size in cells
        ]
        build = BuildInfo(
            T0 + timedelta(days=number), f"3.1.0-{number}.el9", "22.11.1-1.el9", None, ("dut1",)
        )
        store.record_samples(name, build, samples)
        names.append(name)
    return names


def add_history_of(
    store: ResultStore,
    sets_dirs: Sequence[Path],
    *,
    scenario: str,
    builds: int,
    factors: dict[tuple[str, int], float] | None = None,
    start: datetime = datetime(2018, 3, 1, tzinfo=UTC),
) -> list[str]:
    """Record ``builds`` nightlies whose NDRs are those of the results in ``sets_dirs``.

    Each (test, frame size) in ``factors`` is scaled by its factor (e.g. 1.08: the history 8 %
    above the results, which then regress); every build adds 0.2 % × (build mod 3) of noise. The
    builds are dated daily from ``start`` (before the fixtures' own 2018-04-10 measurement).
    """
    from resultstore.samples import samples_from_sets
    from resultstore.trend import load_sets

    ndr = [s for s in samples_from_sets(load_sets(sets_dirs)) if s.metric == "ndr_fps"]
    factors = factors or {}
    names = []
    for number in range(builds):
        name = f"nightly-{number:03d}"
        store.record_result(
            name=name, scenario=scenario, location=Path("/x"), vsperf_dirs=[], status=ResultStatus.PROCESSED
        )
        noise = 1.0 + 0.002 * (number % 3)
        samples = [
            Sample(
                s.test,
                s.deployment,
                s.frame_size,
                "ndr_fps",
                0,
                s.value * noise * factors.get((s.test, s.frame_size), 1.0),
            )
            for s in ndr
        ]
        when = start + timedelta(days=number)
        store.record_samples(name, BuildInfo(when, f"2.9.0-{number}", "17.11", None, ()), samples)
        names.append(name)
    return names
