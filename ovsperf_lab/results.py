"""Own a lab run's VSperf results directory: create it, keep it consistent, write each file atomically.

``reporting`` reads it like Beaker results. This module decides which file holds what and when it
is (re)written; the rows are :mod:`ovsperf_lab.resultrow`'s, their CSV/.md/.rst text
:mod:`ovsperf_lab.resultrender`'s, the trial records :mod:`ovsperf_lab.trialjson`'s.

Layout (VSperf ``vsperf`` main and ``testcases/testcase.py``; reference vsperf.md §1):

* ``results_<YYYY-mm-dd_HH-MM-SS>/`` (local time, like VSperf), created empty and never reused;
* ``result_<i>_<test>_<deployment>.csv``: one row per frame size, VSperf's MoonGen columns in
  VSperf's order, plus ``frame_loss_percent`` after the latency columns (where VSperf's Dummy and
  Trex drivers put it) and the goal columns (``GOAL_COLUMNS``: NDR and PDR,
  docs/results-format.md); latency is measured (``''``, i.e. "not measured", when none);
* ``result_<i>_<test>_<deployment>.md`` and ``.rst``: the environment block in VSperf's
  ``* vSwitch: X, Version: Y, GIT tag: Z`` style and a metrics table per frame size;
* ``ovsperf-trials.json``: every trial of every search (rewritten after each trial);
* ``ovsperf-telemetry.json``: DUT telemetry around final / validation trials;
* ``ovsperf-latency.json``: latency at shares of the PDR load, with HdrHistograms (MLRsearch);
* ``vswitchd_<ts>.log`` and the forwarder/generator logs (copied at the end);
* ``ovsperf-metadata.json``: written LAST; ``"complete": false`` with the reason when the run
  crashed or was interrupted (the CSV then holds the frame sizes finished so far).

Every file is written atomically (a reader never sees half a row). The run feeds the writer
through :class:`ResultsSink`: each search's trials as they end, its row (or its failure) once it
ends, the metadata once at the end. Loss goals arrive as ratios [1]; the percentages of the CSV
and the JSON files are made when a row is written
(:func:`~ovsperf_lab.resultrow.goal_percent`).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ovsperf_catalog.model import GuestLoopback, TunnelType, VsperfTest
from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.framemix import item_json, item_name
from ovsperf_common.labfiles import (
    HDRH_ENCODING,
    LATENCY_FILE,
    LATENCY_SCHEMA,
    TELEMETRY_FILE,
    TELEMETRY_SCHEMA,
    TRIALS_FILE,
    TRIALS_SCHEMA,
)
from ovsperf_common.metadata import METADATA_FILE, RunMetadata
from ovsperf_common.metadata import write as write_metadata
from ovsperf_common.resultdir import result_csv_name
from ovsperf_lab.errors import LabError
from ovsperf_lab.resultrender import TIME_FMT, csv_row, render_csv, render_md, render_rst
from ovsperf_lab.resultrow import Environment, FrameSizeResult, goal_percent

log = logging.getLogger(__name__)


_TUNNEL_FRAME_SIZE = {
    "decapsulation": "the tunnel frame sent, outer headers and FCS included; received 50 B shorter",
    "encapsulation": "the frame sent, FCS included; received tunnel-encapsulated, 50 B longer",
    "": "the frame sent, FCS included",
}
"""What an overlay test's frame size is (``ovsperf-metadata.json`` ``tests[].frame_size``), by VSperf's
``Tunnel Operation``."""


@dataclass(frozen=True)
class ResultPart:
    """One test's run as VSperf result ``index``: its CSV, ``.md`` and ``.rst`` and what they show."""

    index: int
    """VSperf result index [1] (``result_<index>_<test>_<deployment>.csv``)."""
    test: VsperfTest
    """The test."""
    env: Environment
    """The DUT environment written with the rows."""
    guest: GuestLoopback | None
    """The PVP guest's loopback (the CSV's ``guest`` column), ``None`` without a guest."""
    started: datetime
    """When the test started (the CSV's ``start_time``)."""
    searches: int
    """Searches the test runs (frame sizes × flow counts) [1]; the part is complete when each
    ended with a row."""
    tunnel_type: TunnelType | None = None
    """An overlay test's tunnel (the CSV's ``tunnel_type`` column), ``None`` for any other test."""


class ResultsSink(Protocol):
    """Receive a run's results as they come: trials as they end, a row per search, the metadata last."""

    def trials(self, part: ResultPart, records: Sequence[dict[str, Any]]) -> None:
        """Keep the current search's trial records so far (replacing those of the call before).

        :param records: ``ovsperf-trials.json`` objects (docs/results-format.md), in order.
        :raises LabError: when they cannot be written.
        """

    def telemetry(self, part: ResultPart, trial: dict[str, Any]) -> None:
        """Keep one final / validation trial's DUT telemetry (``ovsperf-telemetry.json`` object)."""

    def row(self, part: ResultPart, row: FrameSizeResult | None) -> Path | None:
        """End the current search with its row (``None``: it failed); rewrite what shows it.

        :returns: the part's CSV when it was written, else ``None``.
        :raises LabError: when a file cannot be written.
        """

    def finish(
        self,
        *,
        scenario: str,
        complete: bool,
        reason: str | None,
        hosts: dict[str, Any],
        extra: dict[str, Any],
    ) -> Path:
        """Write what is still unwritten and ``ovsperf-metadata.json``, the run's last file.

        :raises LabError: when a file cannot be written.
        """


@dataclass
class _PartRows:
    """What the writer holds of one :class:`ResultPart`: its rows so far and how its searches ended."""

    rows: list[FrameSizeResult]
    """Rows in search order [1]."""
    ended: int = 0
    """Searches ended so far [1]."""
    failed: bool = False
    """Some search ended without a row."""


class ResultsWriter(ResultsSink):
    """Create one ``results_<timestamp>`` directory and keep it consistent while the run goes on."""

    def __init__(self, output_root: Path, started: datetime) -> None:
        """Create ``output_root/results_<started>``.

        :raises LabError: when it exists already (VSperf would append to it: never mix
            runs) or cannot be created.
        """
        self.started = started
        self.timestamp = started.strftime("%Y-%m-%d_%H-%M-%S")
        self.path = Path(output_root) / f"results_{self.timestamp}"
        try:
            Path(output_root).mkdir(parents=True, exist_ok=True)
            self.path.mkdir()
        except FileExistsError as err:
            raise LabError(f"Results directory '{self.path}' exists already; not overwriting it.") from err
        except OSError as err:
            raise LabError(f"Cannot create results directory '{self.path}': {err}.") from err
        self._trials: list[dict[str, Any]] = []
        self._search_start = 0
        self._parts: dict[int, _PartRows] = {}
        self.latency: list[dict[str, Any]] = []
        self._telemetry: list[dict[str, Any]] = []
        self._telemetry_written = 0
        self.tests: dict[str, dict[str, Any]] = {}
        log.info("Creating result directory: %s", self.path)

    @staticmethod
    def _keyed(part: ResultPart, record: dict[str, Any]) -> dict[str, Any]:
        """Return ``record`` after the keys naming its test: ``result_index``, ``test``, ``deployment``."""
        return {
            "result_index": part.index,
            "test": part.test.value,
            "deployment": part.test.topology.value,
            **record,
        }

    def trials(self, part: ResultPart, records: Sequence[dict[str, Any]]) -> None:
        """Replace the current search's trials by ``records`` and rewrite ``ovsperf-trials.json``.

        :raises LabError: when the file cannot be written.
        """
        self._trials[self._search_start :] = [self._keyed(part, r) for r in records]
        self._write(
            TRIALS_FILE, json.dumps({"schema": TRIALS_SCHEMA, "trials": self._trials}, indent=1) + "\n"
        )

    def telemetry(self, part: ResultPart, trial: dict[str, Any]) -> None:
        """Keep one trial's DUT telemetry (written with the search's row, or by :meth:`finish`)."""
        csv_name = result_csv_name(part.test.value, part.test.topology.value, part.index)
        self._telemetry.append({**self._keyed(part, {}), "csv": csv_name, **trial})

    def row(self, part: ResultPart, row: FrameSizeResult | None) -> Path | None:
        """End the current search; rewrite the latency, telemetry and the part's CSV/.md/.rst.

        The CSV is rewritten after every row (partial results survive a crash) and once more
        when the part's last search failed; it is complete when every search gave a row.

        :returns: the CSV path when it was written.
        :raises LabError: when a file cannot be written.
        """
        held = self._parts.setdefault(part.index, _PartRows([]))
        held.ended += 1
        self._search_start = len(self._trials)
        if row is None:
            held.failed = True
        else:
            held.rows.append(row)
            self.write_latency(part, row)
        self.write_telemetry()
        last = held.ended >= part.searches
        if not held.rows or (row is None and not last):
            return None
        return self.write_test(
            part.index,
            part.test,
            held.rows,
            env=part.env,
            start=part.started,
            stop=datetime.now(),
            guest=part.guest,
            complete=last and not held.failed,
            tunnel_type=part.tunnel_type,
        )

    def write_telemetry(self) -> None:
        """Rewrite ``ovsperf-telemetry.json`` with every trial kept so far (docs/results-format.md).

        Nothing is written while no trial has telemetry (the file is absent: "not collected").

        :raises LabError: when the file cannot be written.
        """
        if len(self._telemetry) == self._telemetry_written:
            return
        document = {"schema": TELEMETRY_SCHEMA, "trials": self._telemetry}
        self._write(TELEMETRY_FILE, json.dumps(document, indent=1) + "\n")
        self._telemetry_written = len(self._telemetry)

    def write_latency(self, part: ResultPart, row: FrameSizeResult) -> None:
        """Add (or replace) ``row``'s latency levels and rewrite ``ovsperf-latency.json``.

        The levels are shares of the PDR load: the relevant lower bound of the row's highest goal.
        A row without latency levels (binary search, none asked for, no PDR load) writes nothing.

        :raises LabError: when the file cannot be written.
        """
        pdr = row.goals[-1]
        if not row.latency_levels or not pdr.lower_bound_pps:
            return
        csv_name = result_csv_name(part.test.value, part.test.topology.value, part.index)
        key = (csv_name, item_name(row.frame_size_bytes), row.flows)
        self.latency = [e for e in self.latency if (e["csv"], e["packet_size"], e["flows"]) != key]
        self.latency.append(
            {
                **self._keyed(part, {}),
                "csv": csv_name,
                **item_json(row.frame_size_bytes),
                "flows": row.flows,
                "pdr_loss_goal_percent": goal_percent(pdr.loss_ratio_limit),
                "pdr_fps_per_direction": pdr.lower_bound_pps,
                "levels": [level.to_json() for level in row.latency_levels],
            }
        )
        document = {"schema": LATENCY_SCHEMA, "histogram_encoding": HDRH_ENCODING, "results": self.latency}
        self._write(LATENCY_FILE, json.dumps(document, indent=1) + "\n")

    def write_test(
        self,
        index: int,
        test: VsperfTest,
        rows: Sequence[FrameSizeResult],
        *,
        env: Environment,
        start: datetime,
        stop: datetime,
        guest: GuestLoopback | None,
        complete: bool,
        tunnel_type: TunnelType | None = None,
    ) -> Path:
        """Write (or rewrite) the CSV, ``.md`` and ``.rst`` of test ``index`` with ``rows``.

        :returns: the CSV path.
        :raises LabError: when a file cannot be written.
        """
        stem = result_csv_name(test.value, test.topology.value, index).removesuffix(".csv")
        dict_rows = [
            csv_row(
                r,
                test=test,
                vswitch=env.vswitch,
                start=start,
                stop=stop,
                guest=guest,
                tunnel_type=tunnel_type,
            )
            for r in rows
        ]
        self._write(f"{stem}.csv", render_csv(dict_rows, guest, tunnel=tunnel_type is not None))
        self._write(f"{stem}.md", render_md(test, env, dict_rows, complete))
        self._write(f"{stem}.rst", render_rst(test, env, dict_rows, complete))
        self.tests[stem] = {
            "index": index,
            "test": test.value,
            "deployment": test.topology.value,
            **(
                {
                    "tunnel_type": tunnel_type.value,
                    "frame_size": _TUNNEL_FRAME_SIZE[test.tunnel_operation or ""],
                }
                if tunnel_type is not None
                else {}
            ),
            "packet_sizes": list(dict.fromkeys(item_name(r.frame_size_bytes) for r in rows)),
            "complete": complete,
            "start_time": start.strftime(TIME_FMT),
            "stop_time": stop.strftime(TIME_FMT),
        }
        return self.path / f"{stem}.csv"

    def copy_log(self, source: Path, name: str) -> None:
        """Copy ``source`` into the results as ``name`` (missing sources are skipped)."""
        if source.is_file():
            shutil.copyfile(source, self.path / name)

    def finish(
        self,
        *,
        scenario: str,
        complete: bool,
        reason: str | None,
        hosts: dict[str, Any],
        extra: dict[str, Any],
    ) -> Path:
        """Write the telemetry not yet written, then ``ovsperf-metadata.json``, the run's last file.

        The metadata's format: :mod:`ovsperf_common.metadata`.

        :param extra: the lab's own keys (options, versions, per-test throughput).
        :raises LabError: when a file cannot be written.
        """
        self.write_telemetry()  # what was collected after the last row survives a failure
        metadata = RunMetadata(
            scenario=scenario,
            producer="ovsperf-lab",
            complete=complete,
            incomplete_reason=reason,
            results_dir=str(self.path),
            started_at=self.started.astimezone().isoformat(),
            finished_at=datetime.now().astimezone().isoformat(),
            tests=list(self.tests.values()),
            hosts=hosts,
            extra={"trial_count": len(self._trials), **extra},
        )
        try:
            return write_metadata(self.path, metadata)
        except OSError as err:
            raise LabError(f"Cannot write '{self.path / METADATA_FILE}': {err}.") from err

    def _write(self, name: str, text: str) -> None:
        try:
            atomic_write_text(self.path / name, text)
        except OSError as err:
            raise LabError(f"Cannot write '{self.path / name}': {err}.") from err
