"""A package's builds from a Koji tag's history, each made ready on demand: downloaded, verified, unpacked.

The range is the package's builds in the order they were first tagged into the tag (the hub's
``queryHistory``, as ``koji list-history``), from the good NVR to the bad one. A build is made
ready only when a step needs it: its COMPLETE state and NVR checked and its RPMs listed
(kojiwatch's :func:`~kojiwatch.repo.check_build`), each RPM downloaded with its size checked
(:meth:`~kojiwatch.koji_client.KojiClient.download`), all of them verified (``rpm -K`` and the
header's SIGMD5 against Koji's payload hash, :func:`~kojiwatch.koji_client.verify_rpms`) and
unpacked (:mod:`ovsperf_lab.bisect.rpmunpack`) into ``builds/<NVR>/root/``, renamed into place
when complete (a resumed bisection reuses it).

Hub calls and downloads that fail for a transient reason are retried (tenacity: up to
:data:`ATTEMPTS` attempts, exponential waits up to :data:`MAX_WAIT_S`). A hub still unreachable
then is :class:`KojiUnreachableError` (exit 2; the bisection's state is kept). A build that does
not exist, is not COMPLETE, has no RPMs, or whose RPMs cannot be downloaded, verified or unpacked
is :class:`~ovsperf_lab.bisect.model.BuildUnavailableError`: the bisection skips it with the reason.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import tenacity

from kojiwatch.errors import BuildRejectedError, DownloadError, KojiHubError, KojiHubRefusedError
from kojiwatch.koji_client import KojiClient, resolve_server, verify_rpms
from kojiwatch.model import BuildSelection, KojiServer, SelectionKind
from kojiwatch.repo import check_build, check_labels
from ovsperf_common.atomicio import atomic_directory
from ovsperf_lab.bisect.model import Build, BuildKind, BuildUnavailableError
from ovsperf_lab.bisect.options import KojiRange
from ovsperf_lab.bisect.rpmunpack import UnpackError, unpack_rpm
from ovsperf_lab.errors import LabError

log = logging.getLogger(__name__)

ATTEMPTS = 4
"""Tries of a hub call or download before giving up [1]."""
MAX_WAIT_S = 30.0
"""Longest wait between two tries [s]."""

_T = TypeVar("_T")


class KojiUnreachableError(LabError):
    """The Koji hub or file server stayed unreachable through every retry (exit 2, state kept)."""


def koji_range(
    profile: str | None,
    hub: str | None,
    topurl: str | None,
    *,
    tag: str,
    package: str,
    good: str,
    bad: str,
    arches: tuple[str, ...],
) -> KojiRange:
    """Return the Koji range the options give (hub and topurl from the profile unless given).

    :raises KojiWatchError: when the profile does not exist or no hub or topurl results.
    """
    server = resolve_server(profile, hub, topurl)
    return KojiRange(
        hub_url=server.hub_url,
        topurl=server.topurl,
        tag=tag,
        package=package,
        good=good,
        bad=bad,
        arches=arches,
        ca_bundle=server.ca_bundle,
        timeout_s=server.timeout_s,
    )


class KojiBuilds:
    """List a Koji range and make its builds ready, with bounded retries."""

    def __init__(self, koji: KojiRange, *, attempts: int = ATTEMPTS, first_wait_s: float = 1.0) -> None:
        """Connect (lazily: nothing is sent before the first call).

        :param attempts: tries per hub call or download [1].
        :param first_wait_s: wait before the second try; doubled per try up to :data:`MAX_WAIT_S` [s].
        """
        self.koji = koji
        self.attempts = attempts
        self.first_wait_s = first_wait_s
        self.client = KojiClient(
            KojiServer(
                hub_url=koji.hub_url, topurl=koji.topurl, timeout_s=koji.timeout_s, ca_bundle=koji.ca_bundle
            )
        )

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()

    def _retry(self, what: str, call: Callable[[], _T], transient: tuple[type[Exception], ...]) -> _T:
        """Return ``call()``, retried on ``transient`` errors (never on a hub's refusal).

        :raises KojiUnreachableError: when a hub error remains after the last try.
        :raises DownloadError: when a download error remains after the last try.
        """

        def before_sleep(state: tenacity.RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome is not None else None
            log.warning("%s failed (try %d of %d): %s", what, state.attempt_number, self.attempts, failure)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=tenacity.wait_exponential(multiplier=self.first_wait_s, max=MAX_WAIT_S),
            retry=tenacity.retry_if_exception(
                lambda err: isinstance(err, transient) and not isinstance(err, KojiHubRefusedError)
            ),
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            return retrying(call)
        except KojiHubRefusedError:
            raise
        except KojiHubError as err:
            raise KojiUnreachableError(f"{what}: still failing after {self.attempts} tries: {err}") from err

    def list_range(self) -> tuple[Build, ...]:
        """Return the builds from the good NVR to the bad one, in the order first tagged.

        :raises LabError: when the tag's history holds the good or the bad build not, or the bad one
            before the good one (swapped?), or the hub refuses (no such tag).
        :raises KojiUnreachableError: when the hub stays unreachable.
        """
        koji = self.koji
        try:
            nvrs = self._retry(
                f"Listing the history of '{koji.package}' in Koji tag '{koji.tag}'",
                lambda: self.client.tag_history(koji.tag, koji.package),
                (KojiHubError,),
            )
        except KojiHubRefusedError as err:
            raise LabError(f"Cannot list the builds of the Koji range: {err}") from err
        for option, nvr in (("--good", koji.good), ("--bad", koji.bad)):
            if nvr not in nvrs:
                raise LabError(
                    f"Option '{option}': build '{nvr}' was never tagged into '{koji.tag}' as package "
                    f"'{koji.package}' ({len(nvrs)} builds were)."
                )
        first, last = nvrs.index(koji.good), nvrs.index(koji.bad)
        if first >= last:
            raise LabError(
                f"Options '--good' and '--bad': '{koji.good}' was tagged into '{koji.tag}' "
                f"{'after' if first > last else 'as'} '{koji.bad}'; the good build must come first "
                "(swapped?)."
            )
        return tuple(
            Build(index, nvr, BuildKind.KOJI, nvr) for index, nvr in enumerate(nvrs[first : last + 1])
        )

    def prepare(self, build: Build, builds_dir: Path) -> Path:
        """Return the directory of ``build``'s unpacked RPMs (a package tree ``compare`` takes).

        :raises BuildUnavailableError: naming the build and the reason (see the module docstring).
        :raises KojiUnreachableError: when the hub or file server stays unreachable.
        """
        nvr = build.source
        try:
            check_labels(f"Koji build '{nvr}'", *_split_nvr(nvr))
        except BuildRejectedError as err:
            raise BuildUnavailableError(str(err)) from err
        target = builds_dir / nvr
        if (target / "root").is_dir():
            return target / "root"
        builds_dir.mkdir(parents=True, exist_ok=True)
        try:
            with atomic_directory(target) as tmp:
                self._fetch(nvr, tmp)
        except (BuildRejectedError, KojiHubRefusedError, DownloadError, UnpackError) as err:
            raise BuildUnavailableError(f"Koji build '{nvr}' cannot be made ready: {err}") from err
        return target / "root"

    def _fetch(self, nvr: str, tmp: Path) -> None:
        """Download, verify and unpack build ``nvr`` into ``tmp/root``.

        :raises BuildRejectedError, KojiHubRefusedError, DownloadError, UnpackError: the build is
            unavailable.
        :raises KojiUnreachableError: when the hub stays unreachable.
        """
        koji, client = self.koji, self.client
        found = self._retry(f"Looking up Koji build '{nvr}'", lambda: client.get_build(nvr), (KojiHubError,))
        selection = BuildSelection(kind=SelectionKind.BUILD, ref=nvr, packages=(koji.package,))
        self._retry(
            f"Checking Koji build '{nvr}'", lambda: check_build(client, found, selection), (KojiHubError,)
        )
        rpms = self._retry(
            f"Listing the RPMs of '{nvr}'", lambda: client.build_rpms(found, koji.arches), (KojiHubError,)
        )
        (tmp / "rpms").mkdir()
        downloaded = []
        for rpm in rpms:
            check_labels(f"An RPM of Koji build '{nvr}'", rpm.name, rpm.version, rpm.release, rpm.arch)
            path = self._retry(
                f"Downloading '{rpm.url}'",
                lambda rpm=rpm: client.download(rpm, tmp / "rpms"),  # type: ignore[misc]
                (KojiHubError, DownloadError),
            )
            downloaded.append((rpm, path))
        verify_rpms(downloaded)
        files = sum(unpack_rpm(path, tmp / "root") for _, path in downloaded)
        shutil.rmtree(tmp / "rpms")
        log.info("Koji build '%s': %d RPMs verified, %d files unpacked.", nvr, len(downloaded), files)


def _split_nvr(nvr: str) -> tuple[str, str, str]:
    """Return (name, version, release) of ``nvr``.

    :raises BuildRejectedError: when it has no name, version and release.
    """
    name, _, rest = nvr.rpartition("-")
    name, _, version = name.rpartition("-")
    if not name or not version or not rest:
        raise BuildRejectedError(f"'{nvr}' is not an NVR (name-version-release).")
    return name, version, rest
