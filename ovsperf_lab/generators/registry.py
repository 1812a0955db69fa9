"""The traffic generators ``--generator`` can pick: one registry line per backend.

A backend is a module with a :class:`~ovsperf_lab.generators.api.TrafficGenerator` implementation
and a ``BACKEND`` record (:class:`~ovsperf_lab.generators.api.GeneratorBackend`); adding one is
that module plus one line below (CONTRIBUTING.md, "How to add a traffic generator"). No
directory scanning: the registry is this explicit, frozen mapping. Every backend module must be
importable with the base install (the parser lists the names).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ovsperf_lab.errors import LabError
from ovsperf_lab.generators import dpdk, testpmd, trex
from ovsperf_lab.generators.api import GeneratorBackend

GENERATORS: Mapping[str, GeneratorBackend] = MappingProxyType(
    {backend.name: backend for backend in (dpdk.BACKEND, testpmd.BACKEND, trex.BACKEND)}
)
"""Name → backend, in the order ``--help`` lists them."""

DEFAULT_GENERATOR = dpdk.BACKEND.name
"""The backend used when ``--generator`` is not given."""


def generator_backend(name: str, *, option: str = "--generator") -> GeneratorBackend:
    """Return the backend called ``name``.

    :raises LabError: naming ``option`` and the known names, for an unknown one.
    """
    try:
        return GENERATORS[name]
    except KeyError:
        raise LabError(
            f"Option '{option}': unknown traffic generator {name[:60]!r}; known: {', '.join(GENERATORS)}."
        ) from None
