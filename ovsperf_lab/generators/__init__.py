"""The lab's traffic generators: the interface, the backends and the ``--generator`` registry.

- :mod:`~ovsperf_lab.generators.api` — the :class:`TrafficGenerator` ABC, the generator-neutral
  :class:`GeneratorRequest` (two ports by role) and the :class:`GeneratorBackend` record;
- :mod:`~ovsperf_lab.generators.process` — one DPDK generator process: started in its own session,
  stopped by PID (quit, SIGTERM, SIGKILL), its hugepage files and runtime directory removed;
- :mod:`~ovsperf_lab.generators.dpdk` — ``trafficgen``: our DPDK generator (``trafficgen/``), with
  :mod:`~ovsperf_lab.generators.dpdk_protocol` reading its JSON replies;
- :mod:`~ovsperf_lab.generators.testpmd` — ``testpmd``: DPDK's testpmd flowgen as an MRR reference,
  with :mod:`~ovsperf_lab.generators.testpmd_console` (its interactive command line) and
  :mod:`~ovsperf_lab.generators.testpmd_text` (parsers of its answers);
- :mod:`~ovsperf_lab.generators.trex` — ``trex``: a running TRex stateless server through its own
  client in a child process (``ovsperf_common.trexclient``), NIC ports (two-host mode), with
  :mod:`~ovsperf_lab.generators.trex_trial` (a trial's request and TRex's counters and latency)
  and :mod:`~ovsperf_lab.generators.trex_options` (the ``--trex-*`` options);
- :mod:`~ovsperf_lab.generators.registry` — name → backend, one line per backend.

This package module imports nothing: importing :mod:`~ovsperf_lab.generators.api` does not load
the backends; import names from their modules. Adding a backend: CONTRIBUTING.md, "How to add a
traffic generator". Everything here is importable with the base install (the parser lists the
backends).
"""
