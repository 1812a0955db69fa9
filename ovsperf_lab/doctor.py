"""Tell the user what the local lab needs that this machine lacks, and the command that fixes it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ovsperf_catalog.catalog import Catalog
from ovsperf_lab.errors import LabError, RefusedScenarioError
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.plan import LabOptions, plan_run
from ovsperf_lab.requirements import Demand, Need, check_machine

GENERATOR_BINARY = Path(__file__).resolve().parent.parent / "trafficgen" / "build" / "ovsperf-trafficgen"
"""Where ``make -C trafficgen`` puts the generator in this checkout."""


@dataclass(frozen=True)
class DoctorLine:
    """One line of the doctor's report."""

    name: str
    """What is checked."""
    ok: bool
    """Whether it is fine."""
    detail: str
    """What was found."""
    fix: str | None = None
    """Command or step that fixes it; ``None`` when ok."""
    required: bool = True
    """Whether the lab cannot run without it (``False``: only some scenarios need it)."""


def generator_binary() -> Path:
    """Return the generator binary the lab will use (``$OVSPERF_TRAFFICGEN`` overrides)."""
    override = os.environ.get("OVSPERF_TRAFFICGEN")
    return Path(override) if override else GENERATOR_BINARY


def diagnose(facts: MachineFacts) -> list[DoctorLine]:
    """Return every requirement of :mod:`ovsperf_lab.requirements` for the default run, required first.

    The default run is a PVP run with the default options and one PMD thread, so the hugepage
    threshold is the one ``ovsperf-lab run`` applies to it; the traffic generator binary is added.
    """
    options = LabOptions()
    demand = Demand(
        pmd_cores=1,
        memory_mb=options.hugepage_memory_mb(vnf=True),
        needs=frozenset({Need.ALWAYS, Need.PVP_TESTPMD}),
    )
    gen = generator_binary()
    built = gen.is_file() and os.access(gen, os.X_OK)
    lines = [
        DoctorLine(c.name, c.ok, c.detail, None if c.ok else c.fix, c.need is Need.ALWAYS)
        for c in check_machine(facts, demand)
        if c.name != "guest image"
    ]
    generator = DoctorLine(
        "traffic generator",
        built,
        str(gen) if gen.is_file() else f"{gen} not built",
        None if built else "make -C trafficgen (needs libdpdk-dev, libjansson-dev)",
    )
    required = [line for line in lines if line.required]
    return [*required, generator, *(line for line in lines if not line.required)]


def scenario_readiness(catalog: Catalog, facts: MachineFacts) -> list[tuple[str, str | None]]:
    """Return (scenario, ``None`` if it can run here, else the refusal) for every catalog entry."""
    out: list[tuple[str, str | None]] = []
    for name in catalog.names():
        try:
            plan_run(catalog.get(name), facts, LabOptions())
        except RefusedScenarioError as err:
            out.append((name, " ".join(err.reasons)))
        except LabError as err:
            out.append((name, str(err)))
        else:
            out.append((name, None))
    return out
