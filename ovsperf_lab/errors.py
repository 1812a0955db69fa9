"""Define the exceptions of the local lab: one base and those the run and the search tell apart."""

from __future__ import annotations

from ovsperf_common.errors import OvsperfError


class LabError(OvsperfError):
    """Base of every error the local lab reports: bad options, unwritable results, cleanup (exit 2)."""


class TrafficGeneratorError(LabError):
    """The traffic generator failed: it would not start, replied with an error, hung or died."""


class SearchError(LabError):
    """The throughput search cannot produce a result (nothing passed, too many invalid trials).

    Caught per frame size: the run records the failure and goes on with the next frame size.
    """


class GeneratorLimitedError(SearchError):
    """Every repeat of a trial fell short of its rate: the generator, not the DUT, was the limit."""

    def __init__(self, message: str, *, achieved_pps: float) -> None:
        super().__init__(message)
        self.achieved_pps = achieved_pps
        """Highest TX rate per direction the generator achieved in those trials [pps]; the search
        lowers its ceiling below it."""


class RefusedScenarioError(LabError):
    """Refuse a scenario this machine cannot run; raised before anything is started."""

    def __init__(self, scenario: str, reasons: tuple[str, ...]) -> None:
        super().__init__(f"Scenario '{scenario}' cannot run on this machine: " + " ".join(reasons))
        self.scenario = scenario
        """Catalog name of the refused scenario."""
        self.reasons = reasons
        """One sentence per unmet requirement, each naming the fix (``doctor`` lists them)."""


class OvsError(LabError):
    """The sandboxed OVS failed: a daemon would not start, died, or a command was refused."""

    def __init__(self, message: str, *, log_path: str | None = None) -> None:
        """Build the message, pointing at ``log_path`` (the log that shows the cause) when given."""
        super().__init__(message + (f" See '{log_path}'." if log_path else ""))


class OvsOverloadedError(OvsError):
    """A wait for the sandboxed OVS ran out while the machine was overloaded and OVS was still alive.

    Not the build's fault as far as anyone can tell: ``compare`` and ``bisect`` never count it as a
    crash of the side (a bisection stops with its state kept instead of calling the build bad).
    """


class VnfError(LabError):
    """The PVP forwarder (testpmd process or QEMU guest) failed to start or died."""


class GuestBootError(VnfError):
    """A QEMU guest did not come up (its QEMU exited, or its console never showed the marker in time).

    Its message already names the guest, the exit status and the console's end: the testbed raises
    it as it is, not as the bare death of the forwarder process.
    """
