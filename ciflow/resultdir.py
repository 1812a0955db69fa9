"""Read what a delivered result directory holds: its metadata marker and its VSperf result directories.

Layout written by the Beaker task ``vsperf_test`` and by ``ovsperf-lab`` (either is accepted)::

    <name>/ovsperf-metadata.json          written LAST: {"scenario": ..., versions, job id, hosts}
    <name>/results_<YYYY-mm-dd_HH-MM-SS>/ one or more VSperf result directories
            result_<i>_<test>_<deployment>.csv, .md, .rst, logs

A result may also hold the VSperf CSVs directly in ``<name>/``.
"""

from __future__ import annotations

from pathlib import Path

from ciflow.errors import ResultRejectedError
from ovsperf_common import metadata, resultdir
from ovsperf_common.metadata import RunMetadata


def read_metadata(result_dir: Path) -> RunMetadata:
    """Read ``<result_dir>/ovsperf-metadata.json`` (:func:`ovsperf_common.metadata.read`).

    :raises ResultRejectedError: when the file is missing, a symlink, too large, not UTF-8 JSON,
        not an object, or a field is invalid (e.g. no safe ``scenario``); the reason names the file.
    """
    try:
        return metadata.read(result_dir)
    except metadata.MetadataError as err:
        raise ResultRejectedError(str(err), name=result_dir.name) from err


def vsperf_result_dirs(root: Path) -> tuple[Path, ...]:
    """Return the VSperf results directories of a delivery (``ovsperf_common.resultdir``'s discovery).

    :returns: sorted paths; empty when there is none or ``root`` is gone.
    """
    try:
        return resultdir.find_results_dirs(root).dirs
    except OSError:
        return ()


def relocate(paths: tuple[Path, ...], old_root: Path, new_root: Path) -> tuple[Path, ...]:
    """Return ``paths`` (all inside ``old_root``) as they will be once ``old_root`` moves to ``new_root``."""
    return tuple(new_root / p.relative_to(old_root) for p in paths)
