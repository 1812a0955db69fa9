"""The scenario catalog: the one list of performance scenarios every stage runs.

``scenarios.yaml`` (shipped in this package) is read by :mod:`ovsperf_catalog.catalog` into validated
:class:`~ovsperf_catalog.model.Scenario` records, which jobcreator (Beaker jobs), vsperf_configs
(VSperf configurations on the lab hosts), ovsperf_lab, remote, kojiwatch and ciflow all take from
here. Data flows one way: ``errors``, ``model`` → ``catalog``. The package imports only
``ovsperf_common`` and PyYAML and runs on the lab hosts' Python (3.9).
"""
