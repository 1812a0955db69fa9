"""Tell the user what the local lab needs that this machine lacks, and the command that fixes it."""

from __future__ import annotations

from dataclasses import dataclass

from ovsperf_catalog.catalog import Catalog
from ovsperf_lab.errors import LabError, RefusedScenarioError
from ovsperf_lab.generators.registry import DEFAULT_GENERATOR, GENERATORS
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.plan import LabOptions, plan_run
from ovsperf_lab.requirements import Demand, Need, check_machine


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


def diagnose(facts: MachineFacts) -> list[DoctorLine]:
    """Return every requirement of :mod:`ovsperf_lab.requirements` for the default run, required first.

    The default run is a PVP run with the default options and one PMD thread, so the hugepage
    threshold is the one ``ovsperf-lab run`` applies to it; every traffic generator backend
    (:mod:`ovsperf_lab.generators.registry`) is added, the default one required.
    """
    options = LabOptions()
    demand = Demand(
        pmd_cores=1,
        memory_mb=options.hugepage_memory_mb(vnf=True),
        needs=frozenset({Need.ALWAYS, Need.PVP_TESTPMD}),
    )
    lines = [
        DoctorLine(c.name, c.ok, c.detail, None if c.ok else c.fix, c.need is Need.ALWAYS)
        for c in check_machine(facts, demand)
        if c.name != "guest image"
    ]
    generators = []
    for name, backend in GENERATORS.items():
        found = backend.readiness()
        generators.append(
            DoctorLine(
                f"traffic generator '{name}'",
                found.ready,
                found.detail,
                found.fix,
                required=name == DEFAULT_GENERATOR,
            )
        )
    required = [line for line in lines if line.required]
    return [*required, *generators, *(line for line in lines if not line.required)]


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
