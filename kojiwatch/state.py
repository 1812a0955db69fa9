"""Keep the watcher's memory in a small JSON file so no build is tested twice or missed across restarts.

File shape (``version`` 1)::

    {"version": 1, "tag": "fdp-el9-candidate",
     "packages": {"openvswitch": {"initialized": true}},
     "builds": {"1234": {"nvr": "openvswitch-3.1.0-1.el9fdp", "package": "openvswitch",
                         "status": "submitted", "repo": "http://.../", "jobs": {"OVS_DPDK1q": "J:77"},
                         "baseline": "openvswitch-3.0.0-1.el9fdp",
                         "attempts": 1, "reason": null, "updated": "2026-01-01T02:00:00+00:00"}}}

``status`` is one of ``pending`` (work started; scenarios in ``jobs`` are done), ``submitted``
(all scenarios submitted), ``skipped`` (not ours or older than the watch start; ``reason`` says
why) and ``failed`` (gave up after repeated errors; ``reason``). Every change is written with an
atomic rename, and a lock file keeps a second watcher off the same state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kojiwatch.errors import KojiWatchError
from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.filelock import LockError, exclusive_lock
from ovsperf_common.regularfile import read_regular_text

STATE_VERSION = 1

MAX_STATE_BYTES = 64 * 1024 * 1024
"""Largest watch state read [B] (a state of ~100,000 builds is a few MB)."""
STATUSES = ("pending", "submitted", "skipped", "failed")


@dataclass
class WatchState:
    """The mutable content of the state file (see the module docstring for the JSON shape)."""

    path: Path
    """The JSON file."""
    tag: str
    """Watched tag; a state file of another tag is refused."""
    packages: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Package name → ``{"initialized": bool}``."""
    builds: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Build id (as a string) → record."""

    def record(self, build_id: int) -> dict[str, Any] | None:
        """Return the record of ``build_id``, ``None`` when never seen."""
        return self.builds.get(str(build_id))

    def update(self, build_id: int, **fields: Any) -> dict[str, Any]:
        """Create or update the record of ``build_id`` and save the file; return the record.

        :raises KojiWatchError: when the file cannot be written.
        """
        rec = self.builds.setdefault(
            str(build_id), {"status": "pending", "jobs": {}, "attempts": 0, "reason": None, "repo": None}
        )
        rec.update(fields)
        rec["updated"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        if rec["status"] not in STATUSES:
            raise KojiWatchError(f"Bug: unknown build status {rec['status']!r}.")
        self.save()
        return rec

    def save(self) -> None:
        """Write the state atomically.

        :raises KojiWatchError: when the file cannot be written.
        """
        data = {"version": STATE_VERSION, "tag": self.tag, "packages": self.packages, "builds": self.builds}
        try:
            atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        except OSError as err:
            raise KojiWatchError(f"Cannot write watch state '{self.path}': {err.strerror}.") from err


def load_state(path: Path, tag: str) -> WatchState:
    """Read the state file, or start an empty state when it does not exist yet.

    :raises KojiWatchError: naming the file when it is unreadable, not a regular file (a FIFO would
        block the watcher for ever), not our JSON shape, or of another tag.
    """
    if not path.exists():
        return WatchState(path=path, tag=tag)
    try:
        data = json.loads(read_regular_text(path, max_bytes=MAX_STATE_BYTES))
    except OSError as err:
        raise KojiWatchError(f"Cannot read watch state '{path}': {err.strerror}.") from err
    except UnicodeDecodeError as err:
        raise KojiWatchError(
            f"Watch state '{path}' is not UTF-8 text (byte {err.start}); fix or move it aside "
            "(a new one starts empty)."
        ) from err
    except json.JSONDecodeError as err:
        raise KojiWatchError(
            f"Watch state '{path}' is not valid JSON ({err}); fix or move it aside (a new one starts empty)."
        ) from err
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise KojiWatchError(f"Watch state '{path}' is not a version {STATE_VERSION} kojiwatch state.")
    if data.get("tag") != tag:
        raise KojiWatchError(
            f"Watch state '{path}' belongs to tag '{data.get('tag')}', not '{tag}'; use one file per tag."
        )
    packages, builds = data.get("packages"), data.get("builds")
    if not isinstance(packages, dict) or not isinstance(builds, dict):
        raise KojiWatchError(f"Watch state '{path}': 'packages' and 'builds' must be objects.")
    for key, rec in builds.items():
        if not key.isdigit() or not isinstance(rec, dict) or rec.get("status") not in STATUSES:
            raise KojiWatchError(f"Watch state '{path}': build entry '{key}' is malformed.")
    return WatchState(path=path, tag=tag, packages=packages, builds=builds)


@contextlib.contextmanager
def state_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock (``<state>.lock``, ``flock``) while watching.

    :raises KojiWatchError: when another watcher holds it or the lock file cannot be created.
    """
    lock_path = path.with_name(path.name + ".lock")
    try:
        with exclusive_lock(lock_path) as taken:
            if not taken:
                raise KojiWatchError(
                    f"Another 'ovsperf-koji watch' holds '{lock_path}'; "
                    "two watchers cannot share a state file."
                )
            yield
    except LockError as err:
        raise KojiWatchError(str(err)) from err
