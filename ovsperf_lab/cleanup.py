"""Remove what crashed lab runs left behind: only runs recorded under the state root.

A run is *orphaned* when the ``ovsperf-lab`` process that owns it is gone (PID and start time no
longer match). Its recorded processes are stopped (only if PID and start time still match, so a
recycled PID is never touched), its DPDK hugepage files and runtime directories (by its own file
prefixes) and its state directory (sockets, OVS database and logs) are removed. Runs whose owner
is alive are left alone unless ``force`` is given.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ovsperf_lab.errors import LabError
from ovsperf_lab.state import LabRunState, release

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CleanupReport:
    """What a cleanup did."""

    removed_runs: tuple[str, ...]
    """Run ids cleaned up."""
    actions: tuple[str, ...]
    """One line per process stopped or path removed."""
    skipped_runs: tuple[str, ...]
    """Run ids left alone because their owner still runs."""


def cleanup(state_root: Path, *, force: bool = False) -> CleanupReport:
    """Clean up orphaned runs under ``state_root`` (all runs with ``force``).

    :raises LabError: listing the state directories that could not be read or removed.
    """
    removed: list[str] = []
    actions: list[str] = []
    skipped: list[str] = []
    problems: list[str] = []
    if not Path(state_root).is_dir():
        return CleanupReport((), (), ())
    for run_dir in sorted(p for p in Path(state_root).iterdir() if p.is_dir()):
        if not (run_dir / "state.json").is_file():
            continue
        try:
            state = LabRunState.load(run_dir)
        except (OSError, ValueError) as err:
            problems.append(f"'{run_dir}': {err}")
            continue
        if state.owner.alive() and not force:
            skipped.append(state.run_id)
            log.info("Run '%s' is still running (PID %d); leaving it alone.", state.run_id, state.owner.pid)
            continue
        actions += release(state)
        removed.append(state.run_id)
        if run_dir.exists():
            problems.append(f"'{run_dir}' could not be removed")
    if problems:
        raise LabError("Cleanup incomplete: " + "; ".join(problems) + ".")
    return CleanupReport(tuple(removed), tuple(actions), tuple(skipped))
