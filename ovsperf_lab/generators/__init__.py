"""The lab's traffic generators: the interface, the backends and the ``--generator`` registry.

- :mod:`~ovsperf_lab.generators.api` — the :class:`TrafficGenerator` ABC, the generator-neutral
  :class:`GeneratorRequest` (two ports by role) and the :class:`GeneratorBackend` record;
- :mod:`~ovsperf_lab.generators.dpdk` — ``trafficgen``: our DPDK generator (``trafficgen/``);
- :mod:`~ovsperf_lab.generators.testpmd` — ``testpmd``: DPDK's testpmd flowgen as an MRR reference;
- :mod:`~ovsperf_lab.generators.registry` — name → backend, one line per backend.

Adding a backend: CONTRIBUTING.md, "How to add a traffic generator". Everything here is importable
with the base install (the parser lists the backends).
"""

from ovsperf_lab.generators.api import GeneratorBackend, GeneratorRequest, TrafficGenerator
from ovsperf_lab.generators.registry import DEFAULT_GENERATOR, GENERATORS, generator_backend

__all__ = [
    "DEFAULT_GENERATOR",
    "GENERATORS",
    "GeneratorBackend",
    "GeneratorRequest",
    "TrafficGenerator",
    "generator_backend",
]
