"""The progress ``ovsperf-lab run`` shows on stderr: a live line per trial (``rich``).

Imported by the command once it runs (it needs the run module: ``ovsperf[lab]``); ``compare``
prints its own lines (:mod:`ovsperf_lab.compare.progress`).
"""

from __future__ import annotations

from ovsperf_catalog.model import VsperfTest
from ovsperf_common.goals import goal_label
from ovsperf_lab.generators.api import TrafficGenerator
from ovsperf_lab.resultrow import FrameSizeResult, goal_percent
from ovsperf_lab.run import RunObserver
from ovsperf_lab.search.binary import TrialKind, TrialRecord
from ovsperf_lab.search.mlr import MlrTrial


class RichProgress(RunObserver):
    """Show the current trial, its rate and loss, and the best rate so far on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.task = self.progress.add_task("starting", total=None)
        self.head = ""
        self.best = "none yet"
        self.last = ""

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _show(self, current: str) -> None:
        self.progress.update(
            self.task, description=f"{self.head} | {current} | best {self.best} | last {self.last}"
        )

    def frame_size_started(self, test: VsperfTest, what: str, number: int, total: int) -> None:
        self.head = f"{test.value} {what} ({number}/{total})"
        self.best = "none yet"
        self.last = "-"
        self._show("calibrating")

    def frame_size_finished(self, test: VsperfTest, result: FrameSizeResult | None) -> None:
        if result is None:
            text = "FAILED"
        else:
            text = ", ".join(
                f"{goal_label(goal_percent(g.loss_ratio_limit))} "
                + ("n/a" if g.rx_fps is None else f"{g.rx_fps / 1e6:.3f} Mpps")
                for g in result.goals
            )
        if result is not None and result.generator_limited:
            text += " (the generator's ceiling: the DUT forwards at least this)"
        self.progress.console.print(f"{self.head}: throughput {text}")

    def mlr_trial_finished(self, number: int, trial: MlrTrial) -> None:
        loss = " / ".join(f"{r * 100:.4f} %" for r in trial.loss_ratios)
        self.last = f"{trial.load_pps / 1e6:.3f} Mpps/dir for {trial.duration_s:g} s, loss {loss}"
        self._show(f"MLRsearch trial {number} done")

    def latency_started(self, percent_of_pdr: float, load_pps: float, duration_s: float) -> None:
        self._show(
            f"latency at {percent_of_pdr:g} % of PDR ({load_pps / 1e6:.3f} Mpps/dir, {duration_s:g} s)"
        )

    def generator_started(self, generator: TrafficGenerator) -> None:
        self._show("generator ready")

    def trial_started(self, index: int, kind: TrialKind, rate_pps: float, duration_s: float) -> None:
        self._show(f"trial {index} {kind.value} at {rate_pps / 1e6:.3f} Mpps/dir for {duration_s:g} s")

    def trial_finished(self, record: TrialRecord, best_pass_pps: float | None) -> None:
        self.last = f"{record.outcome.value}, loss {record.result.loss_ratio * 100:.4f} %"
        if best_pass_pps is not None:
            self.best = f"{best_pass_pps / 1e6:.3f} Mpps/dir"
        self._show(f"trial {record.index} done")
