"""Load the ``process-ci-results`` YAML configuration into a validated :class:`CiConfig`.

Example (relative paths are relative to the configuration file; docs/ciflow.md has the reference)::

    ci_in: /srv/ovsperf/ci_in
    ci_processed: /srv/ovsperf/ci_processed
    ci_failed: /srv/ovsperf/ci_failed
    reports: /srv/ovsperf/reports
    database: /srv/ovsperf/results.sqlite      # or postgresql+psycopg://ovsperf@db/ovsperf
    quiet_period_s: 60
    catalog: /etc/ovsperf/scenarios.yaml       # default: the packaged jobcreator catalog
    thresholds: {regression_percent: 5, improvement_percent: 5, warning_percent: 2, alpha: 0.05}
    scenarios:
      OVS_DPDK2q:
        baseline: baselines/OVS_DPDK2q_ovs-3.1.0   # one directory or a list (repeats)
        thresholds: {regression_percent: 3}
      OVS_DPDK1q_GUEST_DPDK1q:
        baseline: latest-pass                      # newest result a tester marked PASS
        fallback: baselines/pvp_ovs-3.1.0          # until the store has one
      OVS_DPDK4q: baselines/OVS_DPDK4q             # short form: just the baseline
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ciflow.errors import ConfigError
from ciflow.model import BaselineSource, CiConfig, ScenarioConfig
from jobcreator.catalog import load_catalog
from jobcreator.errors import CatalogError
from reporting.api import Thresholds
from reporting.errors import ReportingError
from resultstore.connect import database_url
from resultstore.errors import InvalidRecordError
from resultstore.model import check_name

log = logging.getLogger(__name__)

DEFAULT_QUIET_PERIOD_S = 60.0
"""Default time a result must stay unchanged before it is taken [s]."""

DEFAULT_MARKER_TIMEOUT_S = 6 * 3600.0
"""Default time after which a result still lacking its marker file is rejected [s]."""

_TOP_KEYS = (
    "ci_in",
    "ci_processed",
    "ci_failed",
    "reports",
    "database",
    "quiet_period_s",
    "marker_timeout_s",
    "thresholds",
    "scenarios",
    "catalog",
)
_REQUIRED_DIRS = ("ci_in", "ci_processed", "ci_failed", "reports")
_SCENARIO_KEYS = ("baseline", "fallback", "thresholds")


def load_config(path: Path) -> CiConfig:
    """Read and validate the configuration file at ``path``.

    ``ci_in`` and every fixed baseline directory must exist; ``ci_processed``, ``ci_failed`` and
    ``reports`` are created by the pass when missing. The four directories must be distinct and
    none may lie inside another (a processed result inside ``ci_in`` would be taken again).

    :raises ConfigError: naming the file and field, when the file is unreadable, not YAML, has
        unknown or missing keys, wrong types, or names missing directories.
    """
    path = Path(path).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the configuration: {err}.", path=path) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {err}", path=path) from err
    mapping = _mapping(data, path, None)
    _check_keys(mapping, _TOP_KEYS, path, None)
    for key in _REQUIRED_DIRS:
        if key not in mapping:
            raise ConfigError(f"missing; name the {key} directory.", path=path, key=key)
    base = path.parent
    dirs = {key: _path(mapping[key], path, key, base) for key in _REQUIRED_DIRS}
    if not dirs["ci_in"].is_dir():
        raise ConfigError(f"directory '{dirs['ci_in']}' does not exist.", path=path, key="ci_in")
    _check_disjoint(dirs, path)

    db_spec = mapping.get("database")
    if db_spec is not None and not isinstance(db_spec, str):
        raise ConfigError("must be a database URL or an SQLite file path.", path=path, key="database")
    if db_spec is not None and "://" not in db_spec:
        db_spec = str(_path(db_spec, path, "database", base))
    thresholds = _thresholds(mapping.get("thresholds"), Thresholds(), path, "thresholds")
    scenarios_raw = _mapping(mapping.get("scenarios", {}), path, "scenarios")
    scenarios = {name: _scenario(name, spec, thresholds, path, base) for name, spec in scenarios_raw.items()}
    if not scenarios:
        log.warning("'%s' configures no scenarios: every result will go to ci_failed.", path)
    _warn_unknown_scenarios(scenarios, mapping.get("catalog"), path, base)
    return CiConfig(
        path=path,
        ci_in=dirs["ci_in"],
        ci_processed=dirs["ci_processed"],
        ci_failed=dirs["ci_failed"],
        reports_dir=dirs["reports"],
        database_url=database_url(db_spec),
        scenarios=scenarios,
        quiet_period_s=_seconds(
            mapping.get("quiet_period_s", DEFAULT_QUIET_PERIOD_S), path, "quiet_period_s"
        ),
        marker_timeout_s=_seconds(
            mapping.get("marker_timeout_s", DEFAULT_MARKER_TIMEOUT_S), path, "marker_timeout_s"
        ),
    )


def _warn_unknown_scenarios(
    scenarios: Mapping[str, ScenarioConfig], spec: object, path: Path, base: Path
) -> None:
    """Warn about configured scenarios the catalog does not know (a typo never matches a result).

    :raises ConfigError: when the ``catalog`` given cannot be loaded.
    """
    catalog_path = None if spec is None else _path(spec, path, "catalog", base)
    try:
        known = set(load_catalog(catalog_path).names())
    except CatalogError as err:
        raise ConfigError(str(err), path=path, key="catalog") from err
    for name in sorted(set(scenarios) - known):
        log.warning(
            "'%s': scenario '%s' is not in the catalog; results name their scenario as the catalog does.",
            path,
            name,
        )


def _scenario(name: object, spec: object, defaults: Thresholds, path: Path, base: Path) -> ScenarioConfig:
    key = f"scenarios.{name}"
    try:
        scenario = check_name(name, "Scenario name")
    except InvalidRecordError as err:
        raise ConfigError(str(err), path=path, key=key) from err
    if isinstance(spec, str | list):
        spec = {"baseline": spec}
    fields = _mapping(spec, path, key)
    _check_keys(fields, _SCENARIO_KEYS, path, key)
    if "baseline" not in fields:
        raise ConfigError(
            "missing; give a directory, a list of directories or 'latest-pass'.",
            path=path,
            key=f"{key}.baseline",
        )
    baseline = fields["baseline"]
    thresholds = _thresholds(fields.get("thresholds"), defaults, path, f"{key}.thresholds")
    if baseline == BaselineSource.LATEST_PASS.value:
        fallback = fields.get("fallback")
        dirs = () if fallback is None else _dirs(fallback, path, f"{key}.fallback", base)
        return ScenarioConfig(scenario, BaselineSource.LATEST_PASS, dirs, thresholds)
    if "fallback" in fields:
        raise ConfigError("only allowed with 'baseline: latest-pass'.", path=path, key=f"{key}.fallback")
    return ScenarioConfig(
        scenario, BaselineSource.DIRS, _dirs(baseline, path, f"{key}.baseline", base), thresholds
    )


def _dirs(value: object, path: Path, key: str, base: Path) -> tuple[Path, ...]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError("empty list; give at least one directory.", path=path, key=key)
    dirs = tuple(_path(item, path, key, base) for item in items)
    for directory in dirs:
        if not directory.is_dir():
            raise ConfigError(f"baseline directory '{directory}' does not exist.", path=path, key=key)
    return dirs


def _thresholds(value: object, defaults: Thresholds, path: Path, key: str) -> Thresholds:
    if value is None:
        return defaults
    fields = _mapping(value, path, key)
    known = tuple(f.name for f in dataclasses.fields(Thresholds))
    _check_keys(fields, known, path, key)
    for name, number in fields.items():
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise ConfigError(f"{number!r} is not a number.", path=path, key=f"{key}.{name}")
    try:
        return dataclasses.replace(defaults, **{k: float(v) for k, v in fields.items()})
    except (ReportingError, ValueError) as err:
        raise ConfigError(str(err), path=path, key=key) from err


def _mapping(value: object, path: Path, key: str | None) -> Mapping[str, Any]:
    if value is None and key is not None:
        return {}
    if not isinstance(value, dict):
        what = "the file" if key is None else "this field"
        raise ConfigError(f"{what} must be a mapping, not {type(value).__name__}.", path=path, key=key)
    for name in value:
        if not isinstance(name, str):
            raise ConfigError(f"key {name!r} is not a string.", path=path, key=key)
    return value


def _check_keys(mapping: Mapping[str, Any], allowed: tuple[str, ...], path: Path, key: str | None) -> None:
    unknown = sorted(set(mapping) - set(allowed))
    if unknown:
        where = f"{key}.{unknown[0]}" if key else unknown[0]
        raise ConfigError(f"unknown key; valid keys are: {', '.join(allowed)}.", path=path, key=where)


def _path(value: object, path: Path, key: str, base: Path) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{value!r} is not a path.", path=path, key=key)
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (base / candidate).absolute()


def _seconds(value: object, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{value!r} is not a non-negative number of seconds.", path=path, key=key)
    return float(value)


def _check_disjoint(dirs: Mapping[str, Path], path: Path) -> None:
    resolved = {key: value.resolve() for key, value in dirs.items()}
    for key, one in resolved.items():
        for other_key, other in resolved.items():
            if key != other_key and (one == other or one.is_relative_to(other)):
                raise ConfigError(
                    f"'{dirs[key]}' lies inside or equals {other_key} '{dirs[other_key]}'; "
                    "use separate directories.",
                    path=path,
                    key=key,
                )
