"""Define the exceptions of the kojiwatch package (one base, typed subclasses with fields)."""

from __future__ import annotations

from pathlib import Path


class KojiWatchError(Exception):
    """Base of every error ``ovsperf-koji`` reports to the user; ``main()`` turns it into exit 2."""


class KojiConfigError(KojiWatchError):
    """The Koji profile or the hub/topurl options are missing or unusable.

    ``profile`` names the koji profile looked up, ``None`` when the hub URL was given directly.
    """

    def __init__(self, message: str, *, profile: str | None = None) -> None:
        self.profile = profile
        super().__init__(message)


class KojiHubError(KojiWatchError):
    """The Koji hub could not be reached or refused a call.

    ``hub_url`` is the XML-RPC URL, ``method`` the hub call that failed.
    """

    def __init__(self, message: str, *, hub_url: str, method: str) -> None:
        self.hub_url = hub_url
        self.method = method
        super().__init__(message)


class KojiHubRefusedError(KojiHubError):
    """The hub answered but refused the call (Koji fault: no such tag, bad argument): not transient."""


class BuildNotFoundError(KojiWatchError):
    """No Koji build (or no tagged build) matches what was asked for.

    ``ref`` is the build id, NVR, task id or ``tag/package`` asked for.
    """

    def __init__(self, message: str, *, ref: str) -> None:
        self.ref = ref
        super().__init__(message)


class BuildRejectedError(KojiWatchError):
    """A build exists but must not be tested: wrong state, package, owner or tag.

    ``nvr`` names the build and ``field`` the property that did not match (``state``,
    ``package``, ``owner`` or ``tag``).
    """

    def __init__(self, message: str, *, nvr: str, field: str) -> None:
        self.nvr = nvr
        self.field = field
        super().__init__(message)


class NotTaggedError(BuildRejectedError):
    """A COMPLETE build of a watched package is not (yet) in the watched tag: not ours to test."""


class NoRpmsError(KojiWatchError):
    """A build or task has no RPM for the requested architectures. ``ref`` names it."""

    def __init__(self, message: str, *, ref: str) -> None:
        self.ref = ref
        super().__init__(message)


class DownloadError(KojiWatchError):
    """An RPM could not be downloaded from the Koji file server, or arrived damaged.

    ``url`` is the file's URL.
    """

    def __init__(self, message: str, *, url: str) -> None:
        self.url = url
        super().__init__(message)


class RepoError(KojiWatchError):
    """``createrepo_c`` failed or the publish directory is unusable. ``path`` is the directory."""

    def __init__(self, message: str, *, path: Path) -> None:
        self.path = path
        super().__init__(message)


class MessageError(KojiWatchError):
    """A CI message (``CI_MESSAGE``) is not a Koji build message we understand.

    ``path`` is the message file, ``key`` the JSON field that is missing or wrong.
    """

    def __init__(self, message: str, *, path: Path | None = None, key: str | None = None) -> None:
        self.path = path
        self.key = key
        super().__init__(message)


class SubmitError(KojiWatchError):
    """One or more ``jobcreator --autosubmit`` calls failed, or the request is invalid.

    ``failed`` maps scenario name → one-line reason; ``submitted`` lists the
    ``(scenario, job_id)`` pairs that did succeed before or despite the failures.
    """

    def __init__(
        self,
        message: str,
        *,
        failed: dict[str, str] | None = None,
        submitted: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.failed = dict(failed or {})
        self.submitted = submitted
        super().__init__(message)


class StateFileError(KojiWatchError):
    """The watch state file is unreadable, malformed or locked by another watcher. ``path`` names it."""

    def __init__(self, message: str, *, path: Path) -> None:
        self.path = path
        super().__init__(message)
