"""``ovsperf-lab compare``: two OVS/DPDK builds or settings measured in interleaved rounds.

- :mod:`~ovsperf_lab.compare.config` — the options of a comparison (light: the parser shows them);
- :mod:`~ovsperf_lab.compare.sides` — side A and B: a vswitchd binary, a library dir, other_config;
- :mod:`~ovsperf_lab.compare.cpusteal` — the CPU-steal test aid (cgroup v1 ``cpu``);
- :mod:`~ovsperf_lab.compare.abstats` — the paired estimate, its confidence interval and MDC (scipy);
- :mod:`~ovsperf_lab.compare.abtest` — the rounds, each side on the lab's testbed;
- :mod:`~ovsperf_lab.compare.abreport` — the page, CSV and JSON of a comparison (matplotlib);
- :mod:`~ovsperf_lab.compare.progress` — one line per measured side on stderr;
- :mod:`~ovsperf_lab.compare.session` — one comparison from a frozen request to the written page
  (what the CLI calls).

This ``__init__`` imports nothing: the parser imports ``config`` without scipy or matplotlib.
"""
