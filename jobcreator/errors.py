"""Define the exceptions of the jobcreator package (one base, typed subclasses)."""

from __future__ import annotations

from pathlib import Path

from ovsperf_common.errorfmt import located


class JobCreatorError(Exception):
    """Base of every error jobcreator reports to the user; ``main()`` turns it into exit 2."""


class CatalogError(JobCreatorError):
    """The scenario catalog cannot be read, or an entry or field in it is invalid.

    ``reason`` is the bare message; ``path`` is the catalog file, ``entry`` the scenario name and
    ``key`` the field, each ``None`` when not applicable. ``str()`` joins them into one sentence.
    """

    def __init__(
        self,
        message: str,
        *,
        path: Path | None = None,
        entry: str | None = None,
        key: str | None = None,
    ) -> None:
        self.reason = message
        self.path = path
        self.entry = entry
        self.key = key
        super().__init__(located(message, path, ("scenario", entry), ("field", key)))


class UnknownScenarioError(CatalogError):
    """A scenario name is not in the catalog; the message lists the valid names."""


class UsageError(JobCreatorError):
    """The command line is malformed (unknown option, missing value, bad number)."""


class JobOptionsError(JobCreatorError):
    """A job option (host, distro, kick repo, reservation, …) has an invalid value.

    ``option`` is the command-line option the value came from, e.g. ``'--kickrepo'``.
    """

    def __init__(self, message: str, *, option: str) -> None:
        self.reason = message
        self.option = option
        super().__init__(f"Option '{option}': {message}")


class RenderError(JobCreatorError):
    """A job template is missing or failed to render (a bug in ``templates/beaker``)."""


class JobValidationError(JobCreatorError):
    """A rendered job violates Beaker's ``beaker-job.rng`` or one of our semantic rules.

    ``line`` is the 1-based line in the job XML and ``path`` the XPath of the offending element,
    each ``None`` when unknown (e.g. the schema itself could not be loaded).
    """

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None) -> None:
        self.reason = message
        self.line = line
        self.path = path
        where = []
        if line is not None:
            where.append(f"line {line}")
        if path is not None:
            where.append(f"at '{path}'")
        suffix = f" ({', '.join(where)})" if where else ""
        super().__init__(f"Invalid Beaker job{suffix}: {message}")


class SubmitError(JobCreatorError):
    """Submitting the job to the Beaker hub failed; ``hub_url`` is the hub, when known."""

    def __init__(self, message: str, *, hub_url: str | None = None) -> None:
        self.reason = message
        self.hub_url = hub_url
        super().__init__(message)


class ClientConfigError(SubmitError):
    """The Beaker client configuration is missing, unreadable or incomplete."""


class HubUnreachableError(SubmitError):
    """The hub did not answer: connection refused, DNS failure, TLS failure or timeout."""


class LoginRefusedError(SubmitError):
    """The hub refused the login (wrong user name or password, unknown user)."""


class JobRejectedError(SubmitError):
    """The hub refused the job (``jobs.upload`` raised a Fault, e.g. ``Invalid task(s)``)."""


class OutputError(JobCreatorError):
    """The job XML could not be written to the ``--output`` file."""
