"""Own the results delivery contract: ``ovsperf-metadata.json``, written last into a results delivery.

A producer (``ovsperf-lab``, the Beaker task ``vsperf_test`` through ``python3 -m
ovsperf_common.metadata``) writes this file **last**, atomically and fsynced, into the directory
that holds its VSperf ``results_<timestamp>`` directory (or into that directory itself); the
collector (``process-ci-results``) treats a delivery without it as still being copied in.

The file is one JSON object::

    {"schema": 2, "producer": "ovsperf-lab" | "vsperf_test", "scenario": "OVS_DPDK1q",
     "complete": true | false, "incomplete_reason": null | "why",
     "results_dir": "results_2026-11-23_10-00-00", "started_at": ISO 8601, "finished_at": ISO 8601,
     "tests": [{"index": 0, "test": "phy2phy_tput", "deployment": "p2p"}, ...],
     "hosts": {"dut": ..., "trafficgen": ...}, "packages": {"openvswitch": "2.17.0-1.el8", ...},
     ... any further producer-specific keys (job id, kernel, lab options) ...}

Keys a collector adds (kept in :attr:`RunMetadata.extra`, checked when present):

* ``"build": {"nvrs": ["openvswitch3.1-3.1.0-65.el9fdp", ...], "tag": "...",
  "jenkins_build_url": "https://..."}``: the Koji build that was tested (:attr:`RunMetadata.build`);
* ``"infrastructure_failure": true`` with ``"complete": false``, ``incomplete_reason``,
  ``beaker_job_id``, ``beaker_status`` (``Aborted``, ``Cancelled``, ...): the run never measured
  anything (job aborted, cancelled, killed by the watchdog, or no usable results tarball); such a
  delivery holds no results directory (:attr:`RunMetadata.infrastructure_failure`).

Schema 1 files (before this module) are read too: the lab's dialect had ``complete`` already, the
Beaker task's had ``"status": "PASS"|"FAIL"`` and ``missing_tests`` instead.

Standard library only, Python ≥ 3.9: this module runs on the lab hosts (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovsperf_common.fields import is_safe_name
from ovsperf_common.runner import run_command

METADATA_FILE = "ovsperf-metadata.json"
"""The file's name inside a delivery."""

SCHEMA_VERSION = 2
"""Version written by :func:`write`; :func:`read` accepts 1 and 2."""

MAX_METADATA_BYTES = 1 << 20
"""Largest accepted file [B]; a larger one is refused unread."""

MAX_JSON_DEPTH = 16
"""Deepest accepted nesting of JSON containers [levels]."""

_KNOWN_KEYS = (
    "schema",
    "producer",
    "scenario",
    "complete",
    "incomplete_reason",
    "results_dir",
    "started_at",
    "finished_at",
    "tests",
    "hosts",
    "packages",
)


INFRASTRUCTURE_FAILURE_KEY = "infrastructure_failure"
"""Key of ``extra`` saying the run failed for the lab's reasons, not the build's (true/false)."""

BUILD_KEY = "build"
"""Key of ``extra`` naming the Koji build that was tested (:class:`BuildRecord`)."""

_OPTIONAL_TEXT_KEYS = ("beaker_job_id", "beaker_status")
"""Keys of ``extra`` that must be strings (or null) when present."""


class MetadataError(ValueError):
    """The metadata file is missing, unreadable or malformed; the message names the file and field.

    A ``ValueError`` (not an ovsperf error class) so that this module needs nothing but the standard
    library; callers wrap it in their own error.
    """


@dataclass(frozen=True)
class BuildRecord:
    """The Koji build a run tested (``"build"`` in the file, added by the collector)."""

    nvrs: tuple[str, ...]
    """Koji build NVRs, e.g. ``('openvswitch3.1-3.1.0-65.el9fdp',)``; never empty."""
    tag: str | None = None
    """The Koji tag the build was announced in."""
    jenkins_build_url: str | None = None
    """The Jenkins build that submitted the job."""

    @property
    def label(self) -> str:
        """Return the build's name for people: its NVRs joined with ``' + '``."""
        return " + ".join(self.nvrs)

    def to_json(self) -> dict[str, Any]:
        """Return the ``"build"`` object as the file holds it (what :func:`build_record` reads)."""
        return {"nvrs": list(self.nvrs), "tag": self.tag, "jenkins_build_url": self.jenkins_build_url}


def build_record(value: Any) -> BuildRecord | None:
    """Return the :class:`BuildRecord` of a ``"build"`` value; None when absent (None).

    :raises MetadataError: naming the field when it is not an object with a non-empty ``nvrs``
        list of strings and string (or null) ``tag`` and ``jenkins_build_url``.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MetadataError(f"field '{BUILD_KEY}': expected a JSON object, got {value!r}.")
    nvrs = value.get("nvrs")
    if not isinstance(nvrs, list) or not nvrs or not all(isinstance(n, str) and n.strip() for n in nvrs):
        raise MetadataError(
            f"field '{BUILD_KEY}.nvrs': expected a non-empty list of NVR strings, got {nvrs!r}."
        )
    texts = {}
    for key in ("tag", "jenkins_build_url"):
        text = value.get(key)
        if text is not None and not isinstance(text, str):
            raise MetadataError(f"field '{BUILD_KEY}.{key}': expected a string, got {text!r}.")
        texts[key] = text or None
    return BuildRecord(tuple(n.strip() for n in nvrs), texts["tag"], texts["jenkins_build_url"])


@dataclass(frozen=True)
class RunMetadata:
    """The contents of one ``ovsperf-metadata.json``."""

    scenario: str
    """Scenario name as in the catalog (``ovsperf_catalog``), e.g. ``'OVS_DPDK1q'`` (a safe name)."""
    producer: str
    """Who wrote the results: ``'ovsperf-lab'`` or ``'vsperf_test'`` (``'unknown'`` in old files)."""
    complete: bool = True
    """Whether every planned test and frame size has a result."""
    incomplete_reason: str | None = None
    """Why the run is incomplete; ``None`` when complete."""
    results_dir: str | None = None
    """The VSperf ``results_<timestamp>`` directory's name (or path) the delivery holds."""
    started_at: str | None = None
    """Start of the run, ISO 8601 with offset."""
    finished_at: str | None = None
    """End of the run, ISO 8601 with offset."""
    tests: list[dict[str, Any]] = field(default_factory=list)
    """``[{"index": i, "test": name, "deployment": d}, ...]`` as VSperf numbered them."""
    hosts: dict[str, Any] = field(default_factory=dict)
    """Role → host, e.g. ``{"dut": "dut01", "trafficgen": "tg01"}``."""
    packages: dict[str, str] = field(default_factory=dict)
    """Package name → version-release.arch of the DUT (``rpm -qa``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Every other key of the file (job id, kernel, lab options, ...), kept as it is."""
    schema: int = SCHEMA_VERSION
    """The file's schema version (1 for files read in an old dialect)."""

    def __post_init__(self) -> None:
        """Check the scenario name and the completeness fields.

        :raises MetadataError: when ``scenario`` is not a safe name, or ``complete`` is false
            without a reason.
        """
        if not is_safe_name(self.scenario):
            raise MetadataError(
                f"field 'scenario': {self.scenario!r} is not a safe name (1-200 characters from "
                "A-Z a-z 0-9 . _ + @ = , - starting with a letter or digit, without '..')."
            )
        if not self.complete and not self.incomplete_reason:
            raise MetadataError("field 'incomplete_reason': an incomplete run must say why.")
        clash = sorted(set(self.extra) & set(_KNOWN_KEYS))
        if clash:
            raise MetadataError(f"field 'extra': keys {clash} belong to the schema, not to 'extra'.")
        flag = self.extra.get(INFRASTRUCTURE_FAILURE_KEY, False)
        if not isinstance(flag, bool):
            raise MetadataError(
                f"field '{INFRASTRUCTURE_FAILURE_KEY}': expected true or false, got {flag!r}."
            )
        for key in _OPTIONAL_TEXT_KEYS:
            text = self.extra.get(key)
            if text is not None and not isinstance(text, str):
                raise MetadataError(f"field '{key}': expected a string, got {text!r}.")
        build_record(self.extra.get(BUILD_KEY))

    @property
    def infrastructure_failure(self) -> bool:
        """Return whether the run failed for the lab's reasons (aborted job, no results tarball)."""
        return bool(self.extra.get(INFRASTRUCTURE_FAILURE_KEY, False))

    @property
    def beaker_job_id(self) -> str | None:
        """Return the Beaker job (``J:1234``) the run belongs to, when the producer named it."""
        return self.extra.get("beaker_job_id") or None

    @property
    def beaker_status(self) -> str | None:
        """Return the Beaker job's final status (``Aborted``, ``Cancelled``, ...), when given."""
        return self.extra.get("beaker_status") or None

    @property
    def build(self) -> BuildRecord | None:
        """Return the Koji build that was tested, when the collector recorded it."""
        return build_record(self.extra.get(BUILD_KEY))

    def to_json(self) -> dict[str, Any]:
        """Return the JSON object written to the file (schema fields first, then ``extra``)."""
        data: dict[str, Any] = {
            "schema": self.schema,
            "producer": self.producer,
            "scenario": self.scenario,
            "complete": self.complete,
            "incomplete_reason": self.incomplete_reason,
            "results_dir": self.results_dir,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "tests": list(self.tests),
            "hosts": dict(self.hosts),
            "packages": dict(self.packages),
        }
        data.update(self.extra)
        return data


def write(directory: Path, metadata: RunMetadata) -> Path:
    """Write ``<directory>/ovsperf-metadata.json`` atomically (temporary, fsync, rename); return its path.

    Call it last: its presence tells the collector that the delivery is complete.

    :raises OSError: when the directory is not writable or the disk is full; no temporary remains.
    """
    target = Path(directory) / METADATA_FILE
    text = json.dumps(metadata.to_json(), indent=2, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(prefix="." + METADATA_FILE + ".", suffix=".tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, str(target))
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(str(target.parent), os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return target


def read(directory: Path) -> RunMetadata:
    """Read and check ``<directory>/ovsperf-metadata.json`` (schema 1 or 2).

    :raises MetadataError: when the file is missing, a symlink, larger than
        :data:`MAX_METADATA_BYTES`, not UTF-8 JSON, nested deeper than :data:`MAX_JSON_DEPTH`, not an
        object, or a field has the wrong type; the message names the file and the field.
    """
    path = Path(directory) / METADATA_FILE
    try:
        if path.is_symlink() or not path.is_file():
            raise MetadataError(f"'{path}' is missing or not a regular file.")
        if path.stat().st_size > MAX_METADATA_BYTES:
            raise MetadataError(f"'{path}' is larger than {MAX_METADATA_BYTES} B.")
        raw = path.read_bytes().decode("utf-8")
        if _nesting(raw) > MAX_JSON_DEPTH:
            raise MetadataError(f"'{path}' nests JSON deeper than {MAX_JSON_DEPTH} levels.")
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        if isinstance(err, MetadataError):
            raise
        raise MetadataError(f"'{path}' is not readable UTF-8 JSON: {err}.") from err
    if not isinstance(data, dict):
        raise MetadataError(f"'{path}' must hold a JSON object, not {type(data).__name__}.")
    try:
        return from_json(data)
    except MetadataError as err:
        raise MetadataError(f"'{path}' {err}") from err


def from_json(data: Mapping[str, Any]) -> RunMetadata:
    """Return the metadata of a parsed file (schema 1 in either dialect, or 2).

    :raises MetadataError: naming the field that is missing or of the wrong type.
    """
    schema = data.get("schema", 1)
    if schema not in (1, 2):
        raise MetadataError(f"field 'schema': {schema!r} is not a known schema version (1 or 2).")
    if "scenario" not in data:
        raise MetadataError("has no 'scenario' field.")
    complete, reason = _completeness(data)
    producer = data.get("producer", data.get("tool", "vsperf_test" if "status" in data else "unknown"))
    extra = {k: v for k, v in data.items() if k not in _KNOWN_KEYS}
    return RunMetadata(
        scenario=data["scenario"],
        producer=_str(data, "producer", producer),
        complete=complete,
        incomplete_reason=reason,
        results_dir=_opt_str(data, "results_dir"),
        started_at=_opt_str(data, "started_at"),
        finished_at=_opt_str(data, "finished_at"),
        tests=_typed(data, "tests", list),
        hosts=_typed(data, "hosts", dict),
        packages={str(k): str(v) for k, v in _typed(data, "packages", dict).items()},
        extra=extra,
        schema=schema,
    )


def _completeness(data: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Return (complete, reason) from either dialect.

    Schema 2 and the lab's schema 1: ``"complete"`` and ``"incomplete_reason"``. The Beaker task's
    schema 1: ``"status": "FAIL"`` with the tests that wrote no CSV in ``"missing_tests"``.
    """
    if "complete" in data:
        if not isinstance(data["complete"], bool):
            raise MetadataError(f"field 'complete': expected true or false, got {data['complete']!r}.")
        if data["complete"]:
            return True, None
        return False, str(data.get("incomplete_reason") or "the producer marked the run incomplete")
    if str(data.get("status", "")).upper() == "FAIL":
        missing = data.get("missing_tests") or []
        names = ", ".join(str(m) for m in missing) if isinstance(missing, list) else str(missing)
        return False, f"the producer reported status FAIL (tests without results: {names or 'n/a'})"
    return True, None


def _str(data: Mapping[str, Any], key: str, value: object) -> str:
    if not isinstance(value, str):
        raise MetadataError(f"field '{key}': expected a string, got {value!r}.")
    return value


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return None if value is None else _str(data, key, value)


def _typed(data: Mapping[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise MetadataError(f"field '{key}': expected a JSON {'array' if kind is list else 'object'}.")
    return value


def _nesting(text: str) -> int:
    """Return the deepest bracket nesting of ``text`` outside strings (cheap pre-check before json)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m ovsperf_common.metadata",
        description="Write ovsperf-metadata.json (atomically, last) into a results delivery directory.",
        epilog="exit codes: 0 written; 2 bad arguments or write failure.",
    )
    parser.add_argument("directory", type=Path, help="where to write ovsperf-metadata.json")
    parser.add_argument("--scenario", required=True, help="catalog scenario name")
    parser.add_argument("--producer", required=True, help="who wrote the results, e.g. vsperf_test")
    parser.add_argument("--incomplete", metavar="REASON", help="mark the run incomplete, with the reason")
    parser.add_argument(
        "--missing-test",
        action="append",
        default=[],
        metavar="TEST",
        help="a test that wrote no result CSV (repeatable; marks the run incomplete)",
    )
    parser.add_argument(
        "--test",
        action="append",
        default=[],
        metavar="INDEX:TEST:DEPLOYMENT",
        help="a test VSperf ran, as its result CSV names it (repeatable)",
    )
    parser.add_argument("--host", action="append", default=[], metavar="ROLE=NAME", help="repeatable")
    parser.add_argument(
        "--packages-file",
        type=Path,
        metavar="FILE",
        help="lines 'NAME VERSION-RELEASE.ARCH' (rpm -qa --qf '%%{NAME} ...'); - for stdin",
    )
    parser.add_argument("--results-dir", help="the VSperf results directory's name")
    parser.add_argument("--started-at", help="ISO 8601 start time")
    parser.add_argument("--finished-at", help="ISO 8601 end time")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a further string field (repeatable); an empty VALUE is written as null",
    )
    return parser


def _pairs(values: list[str], option: str) -> dict[str, str | None]:
    result: dict[str, str | None] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise MetadataError(f"{option} {value!r}: expected KEY=VALUE.")
        result[key] = text or None
    return result


def main(argv: list[str] | None = None) -> int:
    """Write the file from command line arguments; return 0, or 2 with one line on stderr."""
    return run_command(_parser(), _run, argv)


def _run(args: argparse.Namespace) -> int:
    """Write the file the parsed arguments describe; print its path; return 0, or 2 on an error."""
    try:
        tests = []
        for spec in args.test:
            index, _, rest = spec.partition(":")
            test, _, deployment = rest.partition(":")
            if not index.isdigit() or not test or not deployment:
                raise MetadataError(f"--test {spec!r}: expected INDEX:TEST:DEPLOYMENT.")
            tests.append({"index": int(index), "test": test, "deployment": deployment})
        packages: dict[str, str] = {}
        if args.packages_file is not None:
            source = args.packages_file
            text = sys.stdin.read() if str(source) == "-" else source.read_text("utf-8")
            for line in text.splitlines():
                name, _, version = line.strip().partition(" ")
                if name:
                    packages[name] = version.strip()
        reason = args.incomplete
        if args.missing_test and not reason:
            reason = "tests without results: " + ", ".join(args.missing_test)
        extra: dict[str, Any] = dict(_pairs(args.set, "--set"))
        extra["missing_tests"] = list(args.missing_test)
        metadata = RunMetadata(
            scenario=args.scenario,
            producer=args.producer,
            complete=reason is None,
            incomplete_reason=reason,
            results_dir=args.results_dir,
            started_at=args.started_at,
            finished_at=args.finished_at,
            tests=tests,
            hosts=dict(_pairs(args.host, "--host")),
            packages=packages,
            extra=extra,
        )
        print(write(args.directory, metadata))
    except (MetadataError, OSError, UnicodeDecodeError) as err:
        print(f"ovsperf_common.metadata: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
