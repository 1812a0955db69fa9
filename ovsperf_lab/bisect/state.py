"""The state file of a bisection, ``<bisect dir>/state.json``: the request, the builds, every step.

Written atomically (``os.replace`` of a fsynced temporary file) after every step, so a bisection
stopped at any moment — Ctrl-C, SIGTERM, a reboot — has a complete file holding every step
finished before; ``ovsperf-lab bisect --resume DIR`` reads it and continues
(:func:`ovsperf_lab.bisect.search.next_step` replays the steps). Schema 1::

    {"schema": 1, "request": {...}, "builds": [{...}], "steps": [{...}]}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_lab.bisect.model import Build, Step
from ovsperf_lab.bisect.options import BisectRequest
from ovsperf_lab.errors import LabError

STATE_NAME = "state.json"
"""The state file's name in the bisection's directory."""
SCHEMA = 1
"""Version of the state file's layout."""


@dataclass(frozen=True)
class BisectState:
    """What a bisection has done so far."""

    request: BisectRequest
    """What it was asked for."""
    builds: tuple[Build, ...]
    """The builds of the range, good first (a Koji range's as listed at the start)."""
    steps: tuple[Step, ...] = ()
    """Every step so far, in order."""

    def with_step(self, step: Step) -> BisectState:
        """Return the state with ``step`` appended."""
        return BisectState(self.request, self.builds, (*self.steps, step))

    def write(self, directory: Path) -> Path:
        """Write ``directory/state.json`` atomically; return its path.

        :raises OSError: when it cannot be written.
        """
        path = directory / STATE_NAME
        data = {
            "schema": SCHEMA,
            "request": self.request.to_json(),
            "builds": [b.to_json() for b in self.builds],
            "steps": [s.to_json() for s in self.steps],
        }
        atomic_write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")
        return path


def read_state(directory: Path) -> BisectState:
    """Return the state in ``directory/state.json``.

    :raises LabError: naming the file when it is missing, not JSON, of another schema or malformed.
    """
    path = directory / STATE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise LabError(
            f"Option '--resume': '{directory}' holds no bisection ('{STATE_NAME}' missing)."
        ) from err
    except OSError as err:
        raise LabError(f"Cannot read '{path}': {err.strerror}.") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise LabError(f"'{path}' is not JSON: {err}.") from err
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise LabError(f"'{path}' is not a schema {SCHEMA} bisection state.")
    try:
        return BisectState(
            BisectRequest.from_json(data["request"]),
            tuple(Build.from_json(b) for b in data["builds"]),
            tuple(Step.from_json(s) for s in data["steps"]),
        )
    except (KeyError, TypeError) as err:
        raise LabError(f"'{path}' is malformed: {err!r}.") from err
