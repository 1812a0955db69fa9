"""Talk to Koji: the only module that calls the hub (koji's ``ClientSession``) or its file server.

Hub calls used (koji 1.36, ``kojihub/kojihub.py``): ``getBuild``, ``listBuilds(taskID=)``,
``listTagged``, ``listTags(build=)``, ``listRPMs(buildID=, arches=)``, ``getTaskInfo``,
``getTaskChildren``, ``listTaskOutput``, ``queryHistory`` (a tag's history). File URLs come from
``koji.PathInfo(topdir=topurl)``:
``<topurl>/packages/<n>/<v>/<r>/<arch>/<nvra>.rpm`` for builds and
``<topurl>/work/tasks/<id % 10000>/<id>/<file>`` for (scratch) task output, the same paths
``koji download-build`` and ``koji download-task`` use.

The session is created with koji's own retries off (``anon_retry`` false, ``max_retries`` 0):
waiting and back-off are the caller's decision (:mod:`kojiwatch.watch`), so a single call here
fails fast with :class:`KojiHubError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import xml.parsers.expat
import xmlrpc.client
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import koji
import requests

from kojiwatch.errors import (
    BuildRejectedError,
    DownloadError,
    KojiHubError,
    KojiHubRefusedError,
    KojiWatchError,
)
from kojiwatch.model import BuildState, KojiBuild, KojiServer, RpmFile, TaskRpms
from ovsperf_common.command import CommandError, run_command
from ovsperf_common.deadline import Deadline, DeadlineExceededError, run_within

log = logging.getLogger(__name__)

_TASK_CLOSED = koji.TASK_STATES["CLOSED"]
_BUILD_TASK_METHODS = ("build", "buildArch")
_DOWNLOAD_CHUNK_BYTES = 1 << 20
# Sub-packages a perf run never installs (koji download-build skips them unless --debuginfo).
_SKIPPED_SUFFIXES = ("-debuginfo", "-debugsource")
_HUB_ERRORS = (
    DeadlineExceededError,
    koji.GenericError,
    xmlrpc.client.Error,
    requests.RequestException,
    OSError,
    xml.parsers.expat.ExpatError,
)


def resolve_server(
    profile: str | None,
    hub_url: str | None,
    topurl: str | None,
    timeout_s: float = 60.0,
    ca_bundle: str | None = None,
) -> KojiServer:
    """Return the hub and file server to use: explicit values win over the koji ``profile``'s.

    The profile is read the way the ``koji`` CLI reads it (``/etc/koji.conf``,
    ``/etc/koji.conf.d/``, ``~/.koji/config``; section ``[profile]``, keys ``server``, ``topurl``
    and ``serverca``, the CA bundle for TLS).

    :raises KojiWatchError: when the profile does not exist, no hub URL or topurl results, or the
        CA bundle is not a file.
    """
    config: dict[str, Any] = {}
    if profile is not None and (hub_url is None or topurl is None or ca_bundle is None):
        try:
            config = koji.read_config(profile)
        except koji.ConfigurationError as err:
            raise KojiWatchError(
                f"Koji profile '{profile}' not found ({err}); give --hub and --topurl or add the profile "
                "to /etc/koji.conf.d/."
            ) from err
    hub = hub_url or config.get("server")
    top = topurl or config.get("topurl")
    if not hub:
        raise KojiWatchError("No Koji hub: give --hub URL or --profile NAME.")
    if not top:
        raise KojiWatchError(
            f"No Koji topurl for hub '{hub}': give --topurl URL (the file server, e.g. "
            "https://kojipkgs.fedoraproject.org) or set topurl in the profile."
        )
    ca = ca_bundle or config.get("serverca") or None
    if ca is not None and not os.path.isfile(ca):
        raise KojiWatchError(f"Koji CA bundle '{ca}' is not a file.")
    return KojiServer(hub_url=hub, topurl=top, profile=profile, timeout_s=timeout_s, ca_bundle=ca)


def _build_from_info(info: dict[str, Any]) -> KojiBuild:
    """Translate a hub build dict (``getBuild``/``listTagged``/``listBuilds``) into a :class:`KojiBuild`."""
    owner = info.get("owner_name") or info.get("owner") or ""
    task_id = info.get("task_id")
    return KojiBuild(
        build_id=int(info.get("build_id") or info["id"]),
        name=str(info.get("name") or info["package_name"]),
        version=str(info["version"]),
        release=str(info["release"]),
        state=BuildState.from_code(info["state"]),
        owner=str(owner),
        task_id=int(task_id) if task_id is not None else None,
        volume_name=info.get("volume_name"),
    )


def _wanted(name: str, arch: str, arches: Iterable[str]) -> bool:
    """Return whether an RPM of ``name``/``arch`` belongs in the repo."""
    return arch in arches and not name.endswith(_SKIPPED_SUFFIXES)


class KojiClient:
    """A read-only (anonymous) connection to one Koji hub and its file server."""

    def __init__(self, server: KojiServer) -> None:
        """Create the session; nothing is sent to the hub until the first call."""
        self.server = server
        opts: dict[str, Any] = {"timeout": server.timeout_s, "anon_retry": False, "max_retries": 0}
        if server.ca_bundle is not None:
            opts["serverca"] = server.ca_bundle
        self._session = koji.ClientSession(server.hub_url, opts)
        self._paths = koji.PathInfo(topdir=server.topurl)
        self._http = koji.request_with_retry(retries=2, backoff_factor=0.5)
        if server.ca_bundle is not None:
            self._http.verify = server.ca_bundle

    def close(self) -> None:
        """Close the HTTP connections of the session and the file downloads."""
        self._http.close()
        if self._session.rsession is not None:
            self._session.rsession.close()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call hub ``method``; translate every transport or hub failure into :class:`KojiHubError`.

        :raises KojiHubRefusedError: when the hub answers with a fault (no such tag, bad argument).
        :raises KojiHubError: when the hub cannot be reached or is offline (worth retrying).
        """
        log.debug("Koji call %s%r %r", method, args, kwargs)
        try:
            # One deadline over the whole call: the session's timeout holds per socket read only.
            return run_within(
                self.server.timeout_s,
                f"Koji call {method}",
                lambda: self._session.callMethod(method, *args, **kwargs),
            )
        except (koji.ServerOffline, koji.RetryError) as err:
            raise KojiHubError(f"Koji hub '{self.server.hub_url}' is offline during {method}: {err}") from err
        except koji.GenericError as err:
            raise KojiHubRefusedError(f"Koji hub '{self.server.hub_url}' refused {method}: {err}") from err
        except _HUB_ERRORS as err:
            raise KojiHubError(
                f"Koji hub '{self.server.hub_url}' unreachable during {method}: {type(err).__name__}: {err}"
            ) from err

    def get_build(self, ref: str) -> KojiBuild:
        """Return the build with id or NVR ``ref``.

        :raises BuildRejectedError: when the hub knows no such build.
        :raises KojiHubError: when the hub cannot be reached.
        """
        info = self._call("getBuild", int(ref) if ref.isdigit() else ref)
        if not info:
            raise BuildRejectedError(f"Koji has no build '{ref}' (hub '{self.server.hub_url}').")
        return _build_from_info(info)

    def build_of_task(self, task_id: int) -> KojiBuild | None:
        """Return the build a build task produced, ``None`` for a scratch build.

        Same lookup as ``koji download-build --task-id``.

        :raises KojiHubError: when the hub cannot be reached.
        """
        builds = self._call("listBuilds", taskID=task_id)
        return _build_from_info(builds[0]) if builds else None

    def list_tagged(self, tag: str, package: str, *, latest: bool = False) -> list[KojiBuild]:
        """Return the builds of ``package`` in ``tag`` (hub order); only the latest if ``latest``.

        :raises KojiHubError: when the hub cannot be reached or the tag does not exist.
        """
        infos = self._call("listTagged", tag, package=package, latest=latest)
        return [_build_from_info(info) for info in infos]

    def latest_tagged(self, tag: str, package: str) -> KojiBuild:
        """Return the latest build of ``package`` in ``tag`` (``koji download-build --latestfrom``).

        :raises BuildRejectedError: when the tag holds no build of that package.
        :raises KojiHubError: when the hub cannot be reached or the tag does not exist.
        """
        builds = self.list_tagged(tag, package, latest=True)
        if not builds:
            raise BuildRejectedError(
                f"Koji tag '{tag}' has no build of package '{package}'; is the package name right?"
            )
        return builds[0]

    def tag_history(self, tag: str, package: str) -> list[str]:
        """Return the NVRs of ``package``'s builds ever tagged into ``tag``, in the order first tagged.

        Hub ``queryHistory(tables=['tag_listing'])``, as ``koji list-history --tag --package``;
        a build untagged since is still listed (it was in the tag when it was built upon).

        :raises KojiHubError: when the hub cannot be reached or refuses (no such tag or package).
        """
        entries = self._call("queryHistory", tables=["tag_listing"], tag=tag, package=package)
        first: dict[int, tuple[int, str]] = {}
        for entry in entries.get("tag_listing", []):
            build_id, event = int(entry["build_id"]), int(entry["create_event"])
            nvr = f"{entry['name']}-{entry['version']}-{entry['release']}"
            if build_id not in first or event < first[build_id][0]:
                first[build_id] = (event, nvr)
        return [nvr for _, nvr in sorted(first.values())]

    def build_tags(self, build: KojiBuild) -> list[str]:
        """Return the names of the tags ``build`` is in.

        :raises KojiHubError: when the hub cannot be reached.
        """
        return [str(tag["name"]) for tag in self._call("listTags", build=build.build_id)]

    def build_rpms(self, build: KojiBuild, arches: tuple[str, ...]) -> list[RpmFile]:
        """Return the RPMs of ``build`` for ``arches``, debuginfo excluded, sorted by file name.

        :raises BuildRejectedError: when the build has none for those arches.
        :raises KojiHubError: when the hub cannot be reached.
        """
        infos = self._call("listRPMs", buildID=build.build_id, arches=list(arches))
        base = self._paths.build(
            {
                "name": build.name,
                "version": build.version,
                "release": build.release,
                "volume_name": build.volume_name,
            }
        )
        rpms = [
            RpmFile(
                name=str(info["name"]),
                version=str(info["version"]),
                release=str(info["release"]),
                arch=str(info["arch"]),
                url=f"{base}/{self._paths.rpm(info)}",
                size_bytes=int(info["size"]) if info.get("size") is not None else None,
                payloadhash=str(info["payloadhash"]) if info.get("payloadhash") else None,
            )
            for info in infos
            if _wanted(str(info["name"]), str(info["arch"]), arches)
        ]
        if not rpms:
            raise BuildRejectedError(f"Koji build '{build.nvr}' has no RPMs for {', '.join(arches)}.")
        return sorted(rpms, key=lambda rpm: rpm.filename)

    def task_rpms(self, task_id: int, arches: tuple[str, ...]) -> TaskRpms:
        """Return the RPMs a CLOSED build/buildArch task wrote (scratch builds; ``koji download-task``).

        :raises BuildRejectedError: when there is no such task.
        :raises BuildRejectedError: when the task is not a finished build task or produced no RPM for
            ``arches``.
        :raises KojiHubError: when the hub cannot be reached.
        """
        info = self._call("getTaskInfo", task_id)
        if not info:
            raise BuildRejectedError(f"Koji has no task {task_id} (hub '{self.server.hub_url}').")
        method = str(info.get("method"))
        if method not in _BUILD_TASK_METHODS:
            raise BuildRejectedError(
                f"Koji task {task_id} is a '{method}' task, not a build or buildArch task; it has no RPMs."
            )
        if info.get("state") != _TASK_CLOSED:
            state = koji.TASK_STATES.get(info.get("state"), info.get("state"))
            raise BuildRejectedError(
                f"Koji task {task_id} is {state}, not CLOSED; only a successful build task has RPMs."
            )
        task_ids = [task_id]
        if method == "build":
            children = self._call("getTaskChildren", task_id)
            task_ids = [int(child["id"]) for child in children if child.get("method") == "buildArch"]
        rpms: list[RpmFile] = []
        source: str | None = None
        for tid in task_ids:
            for fname in self._call("listTaskOutput", tid):
                if fname.endswith(".src.rpm"):
                    source = str(koji.parse_NVRA(fname)["name"])
                if not fname.endswith(".rpm") or fname.endswith(".src.rpm"):
                    continue
                nvra = koji.parse_NVRA(fname)
                if _wanted(nvra["name"], nvra["arch"], arches):
                    rpms.append(
                        RpmFile(
                            name=nvra["name"],
                            version=nvra["version"],
                            release=nvra["release"],
                            arch=nvra["arch"],
                            url=f"{self._paths.task(tid)}/{fname}",
                            size_bytes=None,
                        )
                    )
        if not rpms:
            raise BuildRejectedError(f"Koji task {task_id} produced no RPMs for {', '.join(arches)}.")
        return TaskRpms(
            task_id=task_id, source_package=source, rpms=tuple(sorted(rpms, key=lambda r: r.filename))
        )

    def download(self, rpm: RpmFile, dest_dir: Path) -> Path:
        """Download ``rpm`` into ``dest_dir`` (flat, like ``koji download-build``) and verify it.

        The file is written under a temporary name and renamed when complete. Checks: HTTP status,
        ``Content-Length`` and Koji's size; the RPM contents are checked by :func:`verify_rpms`.

        :raises DownloadError: naming the URL when the download fails or the file is damaged.
        """
        target = dest_dir / rpm.filename
        part = dest_dir / f".{rpm.filename}.part"
        log.debug("Downloading %s", rpm.url)
        try:
            with self._http.get(rpm.url, stream=True, timeout=self.server.timeout_s) as resp:
                if resp.status_code != 200:
                    raise DownloadError(f"Download of '{rpm.url}' failed: HTTP {resp.status_code}.")
                deadline = Deadline.in_seconds(
                    self.server.timeout_s + (rpm.size_bytes or 0) / MIN_DOWNLOAD_BYTES_PER_S,
                    f"the download of '{rpm.url}'",
                )
                with open(part, "wb") as handle:
                    for chunk in resp.iter_content(_DOWNLOAD_CHUNK_BYTES):
                        handle.write(chunk)
                        deadline.check()  # a server trickling bytes cannot hold the download
                expected = resp.headers.get("Content-Length")
        except (requests.RequestException, OSError) as err:  # DeadlineExceededError is an OSError
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
            raise DownloadError(f"Download of '{rpm.url}' failed: {type(err).__name__}: {err}") from err
        size = part.stat().st_size
        try:
            if expected is not None and size != int(expected):
                raise DownloadError(f"Download of '{rpm.url}' truncated: {size} B of {expected} B.")
            if rpm.size_bytes is not None and size != rpm.size_bytes:
                raise DownloadError(f"'{rpm.url}' is {size} B but Koji lists {rpm.size_bytes} B.")
        except DownloadError:
            part.unlink()
            raise
        os.replace(part, target)
        return target


MIN_DOWNLOAD_BYTES_PER_S = 1_000_000
"""Slowest download rate an RPM is given time for, on top of the server timeout [B/s]."""

RPM_TIMEOUT_S = 600.0
"""Longest time one ``rpm -K`` or ``rpm -qp`` over all downloaded files may take [s]."""

_SIGMD5_FORMAT = "%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH} %{SIGMD5}\n"
"""``rpm -qp --qf`` format: NEVRA.arch and the header's SIGMD5 (Koji's ``payloadhash``)."""


def verify_rpms(files: list[tuple[RpmFile, Path]]) -> None:
    """Check downloaded RPMs: their own digests, and their SIGMD5 against Koji's ``payloadhash``.

    ``rpm -K --nosignature`` catches a damaged file; comparing the header SIGMD5 with Koji's
    ``payloadhash`` (what ``koji download-build`` checks) catches a file of another build at the
    same path. One ``rpm`` run per check for all files (a run per file costs ~20 ms). Skipped with
    a DEBUG log when the ``rpm`` tool is not installed; the size checks of :meth:`KojiClient.download`
    still apply.

    :raises DownloadError: naming the first bad file's URL.
    """
    rpm_tool = shutil.which("rpm")
    if rpm_tool is None or not files:
        log.debug("No 'rpm' tool or no files; skipping RPM digest checks.")
        return
    paths = [str(path) for _, path in files]
    try:
        check = run_command([rpm_tool, "-K", "--nosignature", *paths], timeout_s=RPM_TIMEOUT_S, what="rpm -K")
        query = run_command(
            [rpm_tool, "-qp", "--nosignature", "--nodigest", "--qf", _SIGMD5_FORMAT, *paths],
            timeout_s=RPM_TIMEOUT_S,
            what="rpm -qp",
        )
    except CommandError as err:
        raise DownloadError(f"Cannot check the downloaded RPMs: {err}") from err
    if check.returncode != 0:
        report = (check.stdout + check.stderr).splitlines()
        for rpm, path in files:
            bad = [line for line in report if str(path) in line and "digests OK" not in line]
            if bad:
                raise DownloadError(f"'{rpm.url}' arrived damaged: {bad[0].replace(str(path), rpm.filename)}")
        raise DownloadError(f"rpm -K failed: {report[-1] if report else 'no output'}")
    sigmd5 = dict(line.split(" ", 1) for line in query.stdout.splitlines() if " " in line)
    for rpm, _ in files:
        if rpm.payloadhash is None:
            continue
        found = sigmd5.get(rpm.filename.removesuffix(".rpm"))
        if found is None or found.strip().lower() != rpm.payloadhash.lower():
            raise DownloadError(
                f"'{rpm.url}' has payload hash {found or '?'} but Koji lists {rpm.payloadhash}."
            )
