"""Read what a delivered result directory holds: its metadata marker and its VSperf result directories.

Layout written by the Beaker task ``vsperf_test`` and by ``ovsperf-lab`` (either is accepted)::

    <name>/ovsperf-metadata.json          written LAST: {"scenario": ..., versions, job id, hosts}
    <name>/results_<YYYY-mm-dd_HH-MM-SS>/ one or more VSperf result directories
            result_<i>_<test>_<deployment>.csv, .md, .rst, logs

A result may also hold the VSperf CSVs directly in ``<name>/``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ciflow.errors import ResultRejectedError
from ciflow.model import MARKER_NAME, ResultMetadata
from resultstore.errors import InvalidRecordError
from resultstore.model import check_name

MAX_MARKER_BYTES = 1 << 20
"""Largest accepted ``ovsperf-metadata.json`` [B]."""

MAX_SEARCH_DEPTH = 3
"""How deep below a result directory VSperf result directories are looked for [levels]."""


def read_metadata(result_dir: Path) -> ResultMetadata:
    """Parse ``<result_dir>/ovsperf-metadata.json``.

    The file is a JSON object with at least ``"scenario"`` (a safe name); every other key
    (versions, packages, job id, hosts, ...) is kept as it is.

    :raises ResultRejectedError: when the file is missing, a symlink, too large, not UTF-8 JSON,
        not an object, or lacks a valid ``scenario``; the reason names the file.
    """
    marker = result_dir / MARKER_NAME
    name = result_dir.name
    try:
        if marker.is_symlink() or not marker.is_file():
            raise ResultRejectedError(f"'{marker}' is missing or not a regular file.", name=name)
        if marker.stat().st_size > MAX_MARKER_BYTES:
            raise ResultRejectedError(f"'{marker}' is larger than {MAX_MARKER_BYTES} B.", name=name)
        data = json.loads(marker.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultRejectedError(f"'{marker}' is not readable UTF-8 JSON: {err}.", name=name) from err
    if not isinstance(data, dict):
        raise ResultRejectedError(
            f"'{marker}' must hold a JSON object, not {type(data).__name__}.", name=name
        )
    if "scenario" not in data:
        raise ResultRejectedError(f"'{marker}' has no 'scenario' field.", name=name)
    try:
        scenario = check_name(data["scenario"], "Scenario")
    except InvalidRecordError as err:
        raise ResultRejectedError(f"'{marker}' field 'scenario': {err}", name=name) from err
    return ResultMetadata(scenario=scenario, raw=data, incomplete_reason=_incomplete_reason(data))


def _incomplete_reason(data: dict[str, Any]) -> str | None:
    """Return why the producer says the run is incomplete, or None.

    ``ovsperf-lab`` writes ``"complete": false`` and ``"incomplete_reason"``; the Beaker task
    ``vsperf_test`` writes ``"status": "FAIL"`` and the tests without CSV in ``"missing_tests"``.
    """
    if data.get("complete") is False:
        return str(data.get("incomplete_reason") or "the producer marked the run incomplete")
    if str(data.get("status", "")).upper() == "FAIL":
        missing = data.get("missing_tests") or []
        names = ", ".join(str(m) for m in missing) if isinstance(missing, list) else str(missing)
        return f"the producer reported status FAIL (tests without results: {names or 'n/a'})"
    return None


def vsperf_result_dirs(root: Path) -> tuple[Path, ...]:
    """Return the directories under ``root`` (itself included) holding VSperf ``result_*.csv`` files.

    Searches at most :data:`MAX_SEARCH_DEPTH` levels deep without following symlinks, skips hidden
    directories. Sorted by path; empty when there is none.
    """
    found: list[Path] = []
    root_depth = len(root.parts)
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(current)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if len(here.parts) - root_depth >= MAX_SEARCH_DEPTH:
            dirnames[:] = []
        if any(f.startswith("result_") and f.endswith(".csv") for f in filenames):
            found.append(here)
    return tuple(sorted(found))


def relocate(paths: tuple[Path, ...], old_root: Path, new_root: Path) -> tuple[Path, ...]:
    """Return ``paths`` (all inside ``old_root``) as they will be once ``old_root`` moves to ``new_root``."""
    return tuple(new_root / p.relative_to(old_root) for p in paths)


def fingerprint(root: Path) -> str:
    """Return a SHA-256 (hex) over the delivery at ``root``.

    It covers every file's path and size, and the bytes of the marker and the VSperf CSVs. Two
    deliveries with this fingerprint hold the same results (a pass repeated after a crash);
    a different one is a different run, even under the same name. Symlinks count by their target
    text and are not followed.

    :raises OSError: when a file cannot be read.
    """
    digest = hashlib.sha256()
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(current)
        for name in sorted(filenames) + sorted(d for d in dirnames if (here / d).is_symlink()):
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"L {rel} -> {os.readlink(path)}\n".encode())
                continue
            digest.update(f"F {rel} {path.stat().st_size}\n".encode())
            if name == MARKER_NAME or (name.startswith("result_") and name.endswith(".csv")):
                digest.update(path.read_bytes())
    return digest.hexdigest()
