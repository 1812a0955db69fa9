"""Define the exceptions of the local lab (one base, typed subclasses)."""

from __future__ import annotations


class LabError(Exception):
    """Base of every error the local lab reports to the user; ``main()`` turns it into exit 2."""


class TrafficGeneratorError(LabError):
    """The traffic generator failed: it would not start, replied with an error, hung or died."""


class TrialSpecError(LabError):
    """A trial was requested with invalid parameters (the message names the field)."""
