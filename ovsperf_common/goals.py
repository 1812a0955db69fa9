"""Name a throughput by its loss-ratio goal: NDR (0 %) or PDR (a loss ratio above 0).

RFC 2544 §26.1 throughput is the zero-loss rate (FD.io CSIT: NDR, "non drop rate"); a rate at a
small accepted loss is a PDR ("partial drop rate", CSIT's 0.5 %). Results carry the goal with every
throughput (docs/results-format.md), and numbers are compared only when their goals are equal.
"""

from __future__ import annotations


def goal_label(loss_goal_percent: float) -> str:
    """Return ``'NDR'`` for a 0 % goal, else ``'PDR 0.5 %'`` (the goal in % with ``:g``)."""
    return "NDR" if loss_goal_percent == 0 else f"PDR {loss_goal_percent:g} %"
