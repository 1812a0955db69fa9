"""Define the exceptions of the local lab (one base, typed subclasses)."""

from __future__ import annotations


class LabError(Exception):
    """Base of every error the local lab reports to the user; ``main()`` turns it into exit 2."""


class TrafficGeneratorError(LabError):
    """The traffic generator failed: it would not start, replied with an error, hung or died."""


class TrialSpecError(LabError):
    """A trial was requested with invalid parameters (the message names the field)."""


class SearchError(LabError):
    """The throughput search cannot produce a result (nothing passed, too many invalid trials)."""

    def __init__(self, message: str, *, frame_size_bytes: int | None = None) -> None:
        super().__init__(message)
        self.frame_size_bytes = frame_size_bytes
        """Frame size whose search failed [B]; ``None`` when not specific to one."""


class RefusedScenarioError(LabError):
    """Refuse a scenario this machine cannot run; raised before anything is started."""

    def __init__(self, scenario: str, reasons: tuple[str, ...]) -> None:
        super().__init__(f"Scenario '{scenario}' cannot run on this machine: " + " ".join(reasons))
        self.scenario = scenario
        """Catalog name of the refused scenario."""
        self.reasons = reasons
        """One sentence per unmet requirement, each naming the fix."""


class OvsError(LabError):
    """The sandboxed OVS failed: a daemon would not start, died, or a command was refused."""

    def __init__(self, message: str, *, log_path: str | None = None) -> None:
        super().__init__(message + (f" See '{log_path}'." if log_path else ""))
        self.log_path = log_path
        """Log file that shows the cause, when there is one."""


class VnfError(LabError):
    """The PVP forwarder (testpmd process or QEMU guest) failed to start or died."""


class ResultsError(LabError):
    """The results directory cannot be written (exists already, not writable, disk full)."""


class CleanupError(LabError):
    """Leftovers of an earlier run could not be removed (the message lists them)."""
