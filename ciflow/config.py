"""Load the ``process-ci-results`` YAML configuration into a validated :class:`CiConfig`.

Example (relative paths are relative to the configuration file; docs/ciflow.md has the reference)::

    ci_in: /srv/ovsperf/ci_in
    ci_processed: /srv/ovsperf/ci_processed
    ci_failed: /srv/ovsperf/ci_failed
    reports: /srv/ovsperf/reports
    database: /srv/ovsperf/results.sqlite      # or postgresql+psycopg://ovsperf@db/ovsperf
    quiet_period_s: 60
    catalog: /etc/ovsperf/scenarios.yaml       # default: the packaged catalog (ovsperf_catalog)
    thresholds: {regression_percent: 5, improvement_percent: 5, warning_percent: 2, alpha: 0.05}
    trend_pages: /srv/ovsperf/reports/_trends  # optional: trend pages rewritten by every pass
    mail:                                      # optional: regressions and infrastructure failures
      smtp_host: smtp.example.com
      smtp_port: 25                            # 587 with starttls: true
      sender: ovsperf@example.com
      recipients: [perf-qe@example.com]
      report_base_url: https://perf.example.com/reports   # links; default: file paths
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
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from ciflow.errors import ConfigError
from ciflow.model import BaselineSource, CiConfig, MailConfig, ScenarioConfig
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.errors import CatalogError
from ovsperf_common import fields
from ovsperf_common.errors import FieldError
from ovsperf_common.fields import is_safe_name
from ovsperf_common.regularfile import read_regular_text, require_regular
from ovsperf_common.secrets import url_credentials
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
    "mail",
    "trend_pages",
)
_MAIL_KEYS = (
    "smtp_host",
    "smtp_port",
    "sender",
    "recipients",
    "starttls",
    "username",
    "password_file",
    "timeout_s",
    "report_base_url",
    "subject_prefix",
)
_ADDRESS_RE = re.compile(
    r"\A[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\Z"
)
"""A plain e-mail address (local part @ domain), no display name, no spaces or line breaks."""
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
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the configuration: {err}.", path=path) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {err}", path=path) from err
    try:
        return _config(path, data)
    except FieldError as err:
        raise ConfigError(err.reason, path=path, key=err.field) from err


def _config(path: Path, data: object) -> CiConfig:
    """Return the configuration of the parsed file ``path``.

    :raises FieldError: naming the field that is unknown, missing or invalid.
    """
    if not isinstance(data, dict):
        raise FieldError(f"the file must be a mapping, not {type(data).__name__}.")
    mapping = fields.mapping(data)
    fields.reject_unknown(mapping, _TOP_KEYS)
    for key in _REQUIRED_DIRS:
        if key not in mapping:
            raise FieldError(f"missing; name the {key} directory.", field=key)
    base = path.parent
    dirs = {key: _path(mapping[key], key, base) for key in _REQUIRED_DIRS}
    if not dirs["ci_in"].is_dir():
        raise FieldError(f"directory '{dirs['ci_in']}' does not exist.", field="ci_in")
    _check_disjoint(dirs)

    db_spec = mapping.get("database")
    if db_spec is not None and not isinstance(db_spec, str):
        raise FieldError("must be a database URL or an SQLite file path.", field="database")
    if db_spec is not None and "://" not in db_spec:
        db_file = _path(db_spec, "database", base)
        _check_outside(db_file, {k: v for k, v in dirs.items() if k != "reports"}, "database")
        db_spec = str(db_file)
    thresholds = _thresholds(mapping.get("thresholds"), Thresholds(), "thresholds")
    scenarios_raw = fields.mapping(mapping.get("scenarios") or {}, "scenarios")
    scenarios = {name: _scenario(name, spec, thresholds, base) for name, spec in scenarios_raw.items()}
    for scenario in scenarios.values():
        for baseline in scenario.baseline_dirs:
            _check_outside(baseline, {"reports": dirs["reports"]}, f"scenarios.{scenario.name}.baseline")
            _check_outside(dirs["reports"], {"baseline": baseline}, "reports")
    if not scenarios:
        log.warning("'%s' configures no scenarios: every result will go to ci_failed.", path)
    _warn_unknown_scenarios(scenarios, mapping.get("catalog"), path, base)
    trend_pages = None
    if mapping.get("trend_pages") is not None:
        trend_pages = _trend_pages(_path(mapping["trend_pages"], "trend_pages", base), dirs, scenarios)
    return CiConfig(
        path=path,
        ci_in=dirs["ci_in"],
        ci_processed=dirs["ci_processed"],
        ci_failed=dirs["ci_failed"],
        reports_dir=dirs["reports"],
        database_url=database_url(db_spec),
        scenarios=scenarios,
        quiet_period_s=fields.number(
            mapping.get("quiet_period_s", DEFAULT_QUIET_PERIOD_S), "quiet_period_s", minimum=0
        ),
        marker_timeout_s=fields.number(
            mapping.get("marker_timeout_s", DEFAULT_MARKER_TIMEOUT_S), "marker_timeout_s", minimum=0
        ),
        mail=None if mapping.get("mail") is None else _mail(mapping["mail"], base),
        trend_pages=trend_pages,
    )


def _trend_pages(pages: Path, dirs: Mapping[str, Path], scenarios: Mapping[str, ScenarioConfig]) -> Path:
    """Return the trend pages directory, refused where a pass would take, move or overwrite it.

    Inside ``reports`` it must not be a name a result could have (``<reports>/<result>`` is that
    result's report): start it with ``_`` (e.g. ``reports/_trends``).

    :raises FieldError: naming ``trend_pages``.
    """
    _check_outside(pages, {k: v for k, v in dirs.items() if k != "reports"}, "trend_pages")
    _check_outside(dirs["reports"], {"trend_pages": pages}, "reports")
    for scenario in scenarios.values():
        for baseline in scenario.baseline_dirs:
            _check_outside(pages, {"baseline": baseline}, "trend_pages")
    reports = dirs["reports"].resolve()
    resolved = pages.resolve()
    if resolved.is_relative_to(reports):
        first = resolved.relative_to(reports).parts[0]
        if is_safe_name(first):
            raise FieldError(
                f"'{pages}' lies in reports as '{first}', which a result of that name would take for its "
                f"report; start the name with '_' (e.g. '_{first}').",
                field="trend_pages",
            )
    return pages


def _address(value: object, key: str) -> str:
    text = fields.string(value, key, max_len=254)
    if not _ADDRESS_RE.match(text):
        raise FieldError(f"{text!r} is not an e-mail address (name@domain).", field=key)
    return text


def _mail(value: object, base: Path) -> MailConfig:
    """Return the ``mail:`` settings.

    :raises FieldError: naming the field that is unknown, missing or invalid.
    """
    entry = fields.mapping(value, "mail")
    fields.reject_unknown(entry, _MAIL_KEYS, "mail")
    for key in ("smtp_host", "sender", "recipients"):
        fields.required(entry, key, "mail")
    recipients = entry["recipients"]
    if isinstance(recipients, str):
        recipients = [recipients]
    if not isinstance(recipients, list) or not recipients:
        raise FieldError("give one address or a list of addresses.", field="mail.recipients")
    username = entry.get("username")
    password_file = entry.get("password_file")
    if password_file is not None and username is None:
        raise FieldError("needs mail.username.", field="mail.password_file")
    if password_file is not None:
        password_file = _path(password_file, "mail.password_file", base)
        _check_regular_if_present(password_file, "mail.password_file")
    base_url = entry.get("report_base_url")
    if base_url is not None:
        base_url = fields.string(base_url, "mail.report_base_url", max_len=1024).rstrip("/")
        if not re.match(r"\Ahttps?://[^\s]+\Z", base_url):
            raise FieldError(f"{base_url!r} is not an http(s) URL.", field="mail.report_base_url")
        # Every mail carries it: no credentials (masked in the message, they are still refused).
        credentials = url_credentials(base_url)
        if credentials is not None or "@" in urlsplit(base_url).netloc:
            raise FieldError(
                f"the URL carries credentials ({credentials or 'a user name'}), which every regression "
                "mail would show; give the reports' URL without 'user:password@', tokens or secret "
                "query parameters.",
                field="mail.report_base_url",
            )
    starttls = entry.get("starttls", False)
    if not isinstance(starttls, bool):
        raise FieldError("must be true or false.", field="mail.starttls")
    prefix = fields.string(entry.get("subject_prefix", "[ovsperf]"), "mail.subject_prefix", max_len=64)
    if any(ch in prefix for ch in "\r\n"):
        raise FieldError("must be one line.", field="mail.subject_prefix")
    return MailConfig(
        smtp_host=fields.hostname(entry["smtp_host"], "mail.smtp_host"),
        smtp_port=fields.positive_int(entry.get("smtp_port", 25), "mail.smtp_port", maximum=65535),
        sender=_address(entry["sender"], "mail.sender"),
        recipients=tuple(_address(r, f"mail.recipients[{i}]") for i, r in enumerate(recipients)),
        starttls=starttls,
        username=None if username is None else fields.string(username, "mail.username", max_len=255),
        password_file=password_file,
        timeout_s=fields.number(entry.get("timeout_s", 30.0), "mail.timeout_s", minimum=0.1, maximum=600),
        report_base_url=base_url,
        subject_prefix=prefix,
    )


def _warn_unknown_scenarios(
    scenarios: Mapping[str, ScenarioConfig], spec: object, path: Path, base: Path
) -> None:
    """Warn about configured scenarios the catalog does not know (a typo never matches a result).

    :raises FieldError: naming ``catalog`` when the catalog given cannot be loaded.
    """
    catalog_path = None if spec is None else _path(spec, "catalog", base)
    try:
        known = set(load_catalog(catalog_path).names())
    except CatalogError as err:
        raise FieldError(str(err), field="catalog") from err
    for name in sorted(set(scenarios) - known):
        log.warning(
            "'%s': scenario '%s' is not in the catalog; results name their scenario as the catalog does.",
            path,
            name,
        )


def _scenario(name: object, spec: object, defaults: Thresholds, base: Path) -> ScenarioConfig:
    key = f"scenarios.{name}"
    try:
        scenario = check_name(name, "Scenario name")
    except InvalidRecordError as err:
        raise FieldError(err.reason, field=key) from err
    if isinstance(spec, str | list):
        spec = {"baseline": spec}
    entry = fields.mapping(spec, key)
    fields.reject_unknown(entry, _SCENARIO_KEYS, key)
    if "baseline" not in entry:
        raise FieldError(
            "missing; give a directory, a list of directories or 'latest-pass'.", field=f"{key}.baseline"
        )
    baseline = entry["baseline"]
    thresholds = _thresholds(entry.get("thresholds"), defaults, f"{key}.thresholds")
    if baseline == BaselineSource.LATEST_PASS.value:
        fallback = entry.get("fallback")
        dirs = () if fallback is None else _dirs(fallback, f"{key}.fallback", base)
        return ScenarioConfig(scenario, BaselineSource.LATEST_PASS, dirs, thresholds)
    if "fallback" in entry:
        raise FieldError("only allowed with 'baseline: latest-pass'.", field=f"{key}.fallback")
    return ScenarioConfig(scenario, BaselineSource.DIRS, _dirs(baseline, f"{key}.baseline", base), thresholds)


def _dirs(value: object, key: str, base: Path) -> tuple[Path, ...]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise FieldError("empty list; give at least one directory.", field=key)
    dirs = tuple(_path(item, key, base) for item in items)
    for directory in dirs:
        if not directory.is_dir():
            raise FieldError(f"baseline directory '{directory}' does not exist.", field=key)
    return dirs


def _thresholds(value: object, defaults: Thresholds, key: str) -> Thresholds:
    if value is None:
        return defaults
    given = fields.mapping(value, key)
    fields.reject_unknown(given, tuple(f.name for f in dataclasses.fields(Thresholds)), key)
    numbers = {name: fields.number(number, f"{key}.{name}") for name, number in given.items()}
    try:
        return dataclasses.replace(defaults, **numbers)
    except (ReportingError, ValueError) as err:
        raise FieldError(str(err), field=key) from err


def _path(value: object, key: str, base: Path) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise FieldError(f"{value!r} is not a path.", field=key)
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (base / candidate).absolute()


def _check_regular_if_present(path: Path, key: str) -> None:
    """Refuse ``path`` when it exists and is not a regular file (a FIFO would block the pass).

    A missing file is reported when it is read (the password file: when a mail is sent).

    :raises FieldError: naming ``key`` and what the path is.
    """
    try:
        require_regular(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise FieldError(f"'{path}' cannot be used: {err.strerror}.", field=key) from err


def _check_outside(path: Path, dirs: Mapping[str, Path], key: str) -> None:
    """Refuse ``path`` when it equals or lies inside one of ``dirs``.

    The store or a report inside a flow directory would be moved, failed or reprocessed with the
    results; a report written into a baseline would replace a user's results.

    :raises FieldError: naming ``key`` and the directory it lies in.
    """
    resolved = path.resolve()
    for name, directory in dirs.items():
        inside = directory.resolve()
        if resolved == inside or resolved.is_relative_to(inside):
            raise FieldError(
                f"'{path}' lies inside or equals {name} '{directory}'; use a separate path.", field=key
            )


def _check_disjoint(dirs: Mapping[str, Path]) -> None:
    resolved = {key: value.resolve() for key, value in dirs.items()}
    for key, one in resolved.items():
        for other_key, other in resolved.items():
            if key != other_key and (one == other or one.is_relative_to(other)):
                raise FieldError(
                    f"'{dirs[key]}' lies inside or equals {other_key} '{dirs[other_key]}'; "
                    "use separate directories.",
                    field=key,
                )
