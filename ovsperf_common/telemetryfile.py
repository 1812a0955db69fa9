"""The counters of ``ovsperf-telemetry.json`` shared by its writer (the lab) and its reader (reports).

Format: docs/results-format.md; the file's name and schema are in
:mod:`ovsperf_common.labfiles`. The lab (``ovsperf_lab.telemetry``) computes the ``totals`` of
each trial from these counters; ``reporting.load_telemetry`` reads them back by the same names.
"""

from __future__ import annotations

HIT_COUNTERS = (
    "phwol_hits",
    "mfex_opt_hits",
    "simple_match_hits",
    "emc_hits",
    "smc_hits",
    "megaflow_hits",
    "miss_with_success_upcall",
    "miss_with_failed_upcall",
)
"""Where the PMDs' packets were classified, in OVS's lookup order (``pmd-stats-show`` labels as
slugs: hardware offload, MFEX, simple match, EMC, SMC, megaflow, upcalls); ``totals`` holds
``<name>_percent`` of the datapath passes (lookups: packets received plus recirculations, as
``pmd-perf-show`` shares them) for each. Older OVS versions lack some."""
