"""Render, validate and submit Beaker jobs for the OVS/DPDK performance scenarios.

Data flows one way: a :class:`~ovsperf_catalog.model.Scenario` (from :mod:`ovsperf_catalog`) and
the options → ``jobmodel`` (the job plan) → ``render`` (→ job XML string, pure) → ``validate`` →
``submit`` (the only module that talks to a Beaker hub); ``workflow`` runs them in that order.
"""
