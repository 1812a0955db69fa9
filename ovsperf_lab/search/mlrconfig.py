"""The parameters of one MLRsearch: FD.io CSIT's defaults and :class:`MlrConfig`, without MLRsearch.

:mod:`ovsperf_lab.search.mlr` runs the search; :class:`ovsperf_lab.plan.LabOptions` takes its defaults
and checks its options here, so that ``ovsperf-lab --help`` and the option checks work without
the ``ovsperf[lab]`` install group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ovsperf_common.framemix import FrameSizeItem
from ovsperf_lab.errors import LabError

CSIT_MIN_LOAD_PPS = 9001.0
"""CSIT's minimum load: enough frames for a latency histogram [pps] (``Config.min_load``)."""

CSIT_LOSS_RATIO_GOALS = (0.0, 0.005)
"""CSIT's goals: NDR (0) and PDR (0.5 %) [1] (``perform_mlr_search``: ``[0.0, loss_ratio]``)."""
CSIT_EXCEED_RATIO = 0.5
"""CSIT's goal exceed ratio [1] (draft-ietf-bmwg-mlrsearch: RECOMMENDED 0.5)."""
CSIT_RELATIVE_WIDTH = 0.005
"""CSIT's goal width relative to the load [1] (``relative_width``)."""
CSIT_INITIAL_TRIAL_S = 1.0
"""CSIT's initial trial duration [s]."""
CSIT_FINAL_TRIAL_S = 1.0
"""CSIT's final trial duration [s]."""
CSIT_DURATION_SUM_S = 21.0
"""CSIT's duration sum per goal [s]."""
CSIT_SEARCH_DURATION_MAX_S = 1200.0
"""CSIT's search duration limit [s]."""


@dataclass(frozen=True)
class MlrConfig:
    """Parameters of one MLRsearch; ``LabError`` names the command-line option of a bad one."""

    frame_size_bytes: FrameSizeItem
    """Ethernet frame size including FCS [B]."""
    max_rate_pps: float
    """Highest load tried, per direction, usually line rate [pps] (``Config.max_load``)."""
    loss_ratio_goals: tuple[float, ...] = CSIT_LOSS_RATIO_GOALS
    """Goal loss ratios [1]: 0 is the NDR, 0.005 CSIT's PDR (``--goal`` in %)."""
    exceed_ratio: float = CSIT_EXCEED_RATIO
    """Share of trial time allowed above the goal loss ratio at a lower bound [1] (draft: RECOMMENDED 0.5)."""
    relative_width: float = CSIT_RELATIVE_WIDTH
    """Goal width as a share of the load [1] (``--goal-width`` in %)."""
    initial_trial_s: float = CSIT_INITIAL_TRIAL_S
    """Shortest trial [s]."""
    final_trial_s: float = CSIT_FINAL_TRIAL_S
    """Trial duration the final target requires [s] (``--final-trial-duration``)."""
    duration_sum_s: float = CSIT_DURATION_SUM_S
    """Trial time that classifies a load [s] (``--duration-sum``)."""
    search_duration_max_s: float = CSIT_SEARCH_DURATION_MAX_S
    """The search fails when it runs longer [s] (``--search-duration-max``)."""
    min_rate_pps: float = CSIT_MIN_LOAD_PPS
    """Lowest load tried, per direction [pps]."""
    bidirectional: bool = True
    """Send both directions."""
    flows: int = 1
    """UDP flows per direction [1]."""
    drain_s: float = 0.5
    """RX time after TX stops in each trial [s] (short: MLRsearch counts it as overhead)."""

    def __post_init__(self) -> None:
        """Check every field against its range.

        :raises LabError: naming the command-line option and the accepted range.
        """
        if not self.loss_ratio_goals or any(not 0 <= g < 1 for g in self.loss_ratio_goals):
            raise LabError(
                f"Option '--goal' must be loss percentages in [0, 100), got {self.loss_ratio_goals!r}."
            )
        if not 0 <= self.exceed_ratio < 1:
            raise LabError(f"Option '--exceed-ratio' must be in [0, 1), got {self.exceed_ratio!r}.")
        if not 0 < self.relative_width < 1:
            raise LabError(f"Option '--goal-width' must be in (0, 100) %, got {self.relative_width * 100!r}.")
        for option, value, upper in (
            ("--final-trial-duration", self.final_trial_s, 3600.0),
            ("--initial-trial-duration", self.initial_trial_s, 3600.0),
            ("--duration-sum", self.duration_sum_s, 86400.0),
            ("--search-duration-max", self.search_duration_max_s, 7 * 86400.0),
        ):
            if not (math.isfinite(value) and 0 < value <= upper):
                raise LabError(f"Option '{option}' must be in (0, {upper:g}] s, got {value!r}.")
        if self.final_trial_s < self.initial_trial_s or self.duration_sum_s < self.final_trial_s:
            raise LabError(
                "Trial durations must grow: initial <= final <= duration sum "
                f"({self.initial_trial_s:g} / {self.final_trial_s:g} / {self.duration_sum_s:g} s)."
            )
        if not 0 < self.min_rate_pps < self.max_rate_pps:
            raise LabError(
                f"Loads must satisfy 0 < min < max, got {self.min_rate_pps!r} / {self.max_rate_pps!r} pps."
            )
