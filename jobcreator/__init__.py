"""Render, validate and submit Beaker jobs for the OVS/DPDK performance scenarios.

Data flows one way: ``catalog`` (YAML → :class:`~jobcreator.model.Scenario`) → ``render``
(→ job XML string, pure) → ``submit`` (the only module that talks to a Beaker hub).
"""
