"""The progress ``ovsperf-lab compare`` shows on stderr: one line per measured side."""

from __future__ import annotations

import sys

from ovsperf_lab.compare.abstats import PairedEstimate
from ovsperf_lab.compare.abtest import CompareObserver, RoundValue


class CompareProgress(CompareObserver):
    """Print one line per measured side on stderr."""

    def measured(self, value: RoundValue, current: PairedEstimate | None) -> None:
        line = f"round {value.round} side {value.side}: MRR {value.mrr_pps / 1e6:.4f} Mpps"
        if current is not None and current.mdc_percent is not None:
            line += (
                f" | B vs A {current.change_percent:+.2f} % [{current.ci_low_percent:+.2f}, "
                f"{current.ci_high_percent:+.2f}], MDC {current.mdc_percent:.2f} %, {current.verdict.value}"
            )
        print(f"ovsperf-lab: {line}", file=sys.stderr)
