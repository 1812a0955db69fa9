"""How the lab finds a throughput and measures latency, given a traffic generator.

- :mod:`~ovsperf_lab.search.mlrconfig` — MLRsearch's parameters and CSIT's defaults (light: the
  parser shows them without MLRsearch installed);
- :mod:`~ovsperf_lab.search.mlr` — NDR and PDR in one search with CSIT's MLRsearch;
- :mod:`~ovsperf_lab.search.binary` — the lua-trafficgen-compatible binary search (``--search binary``);
- :mod:`~ovsperf_lab.search.latency` — latency trials at shares of the PDR load.

Nothing here knows OVS, the results directory or the command line; :mod:`ovsperf_lab.measure`
runs one search and hands its row to the results sink. This ``__init__`` imports nothing, so that
``mlrconfig`` stays light.
"""
