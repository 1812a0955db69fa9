"""Build a yum repository from Koji RPMs and publish it atomically into an HTTP-served directory.

Flow: resolve the builds (or scratch task) to test and check them (COMPLETE, watched package,
owner, tag) → download their x86_64/noarch RPMs (:mod:`kojiwatch.koji_client`) into a hidden
temporary directory next to the target → ``createrepo_c --no-database`` → write a ``.repo``
file → rename the directory into place. Readers (lab hosts installing from the URL) see either
the previous complete repo or the new complete one, never a half-written one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Final

from kojiwatch.errors import BuildRejectedError, NotTaggedError, RepoError
from kojiwatch.koji_client import KojiClient, verify_rpms
from kojiwatch.model import (
    DEFAULT_ARCHES,
    BuildSelection,
    BuildState,
    KojiBuild,
    PreparedRepo,
    RepoRecord,
    RpmFile,
    SelectionKind,
)
from ovsperf_common.atomicio import atomic_directory, atomic_write_text
from ovsperf_common.command import CommandError, run_command
from ovsperf_common.deadline import Deadline, DeadlineExceededError
from ovsperf_common.secrets import url_credentials

log = logging.getLogger(__name__)

CREATEREPO_TIMEOUT_S = 900.0
"""Longest createrepo_c run we wait for [s]."""
REPO_FILE_NAME = "ovsperf-under-test.repo"
"""Name of the yum ``.repo`` file written into every published repo."""


RPM_NAME_RE: Final = re.compile(r"\A[A-Za-z0-9_+][A-Za-z0-9._+-]{0,199}\Z")
"""A (sub-)package name as the hub gives it: RPM's name characters, not starting with ``.`` or ``-``."""
RPM_LABEL_RE: Final = re.compile(r"\A[A-Za-z0-9_+~^][A-Za-z0-9._+~^]{0,127}\Z")
"""An RPM version or release: RPM's characters (``~``, ``^`` included), no ``-``, ``/`` or leading ``.``."""
RPM_ARCH_RE: Final = re.compile(r"\A[A-Za-z0-9_]{1,32}\Z")
"""An RPM architecture (``x86_64``, ``noarch``)."""


def check_labels(what: str, name: str, version: str, release: str, arch: str | None = None) -> None:
    """Check the NVR(A) parts the hub gave before they become paths and URLs.

    The repo's directory is ``<publish dir>/<name>-<version>-<release>``, each RPM is saved as
    ``<name>-<version>-<release>.<arch>.rpm`` and fetched from ``packages/<n>/<v>/<r>/<arch>/``:
    a hub (or a man in the middle) answering release ``1/../../x`` would otherwise write outside
    the publish directory.

    :param what: the build or RPM, for the message (``"Koji build 1234"``).
    :raises BuildRejectedError: naming ``what`` and the part, the value escaped.
    """
    parts = [
        ("name", name, RPM_NAME_RE, "letters, digits and . _ + -"),
        ("version", version, RPM_LABEL_RE, "letters, digits and . _ + ~ ^"),
        ("release", release, RPM_LABEL_RE, "letters, digits and . _ + ~ ^"),
    ]
    if arch is not None:
        parts.append(("arch", arch, RPM_ARCH_RE, "letters, digits and _"))
    for part, value, rule, allowed in parts:
        if not rule.match(value):
            raise BuildRejectedError(
                f"{what} has {part} {value[:200]!r}, which is not an RPM {part} ({allowed}, not "
                "starting with '.'); as a path it could leave the publish directory. Not tested."
            )


def check_build(
    client: KojiClient, build: KojiBuild, selection: BuildSelection, tag_wait_s: float = 0.0
) -> None:
    """Check that ``build`` is one we test: COMPLETE, a watched package, the right owner and tag.

    When ``selection.tag`` is set and the build is not yet in it, poll for up to ``tag_wait_s``
    (Koji tags a build a few seconds after its COMPLETE message) [s].

    :raises BuildRejectedError: naming the build and the field that does not match, or a part of
        its NVR that is not an RPM label (:func:`check_labels`).
    :raises NotTaggedError: when the build is not in ``selection.tag`` (after waiting).
    :raises KojiHubError: when the hub cannot be reached.
    """
    check_labels(f"Koji build {build.build_id}", build.name, build.version, build.release)
    if build.state is not BuildState.COMPLETE:
        raise BuildRejectedError(
            f"Koji build '{build.nvr}' is {build.state.value}, not COMPLETE; we test finished builds only."
        )
    if selection.packages and build.name not in selection.packages:
        raise BuildRejectedError(
            f"Koji build '{build.nvr}' is of package '{build.name}', not of the watched "
            f"package(s) {', '.join(selection.packages)}."
        )
    if selection.owner is not None and build.owner != selection.owner:
        raise BuildRejectedError(
            f"Koji build '{build.nvr}' is owned by '{build.owner}', not by '{selection.owner}'."
        )
    tag = selection.tag
    if tag is None:
        return
    if tag in client.build_tags(build):
        return
    if tag_wait_s > 0:
        log.info("Build '%s' is not in tag '%s' yet; waiting up to %.0f s.", build.nvr, tag, tag_wait_s)
        deadline = Deadline.in_seconds(tag_wait_s, f"Koji build '{build.nvr}' to be tagged into '{tag}'")
        try:
            deadline.poll(
                lambda: True if tag in client.build_tags(build) else None,
                interval_s=min(30.0, max(1.0, tag_wait_s / 20)),
                log=log,
            )
            return
        except DeadlineExceededError:
            pass
    raise NotTaggedError(f"Koji build '{build.nvr}' is not tagged into '{tag}'; it is not a build we test.")


def resolve(
    client: KojiClient, selection: BuildSelection, arches: tuple[str, ...], tag_wait_s: float = 0.0
) -> tuple[str, tuple[KojiBuild, ...], tuple[RpmFile, ...]]:
    """Return the repo name, the builds and the RPMs ``selection`` stands for, after checking the builds.

    The repo name is the builds' NVRs joined by ``+`` (sorted), or ``task-<id>`` for a scratch
    build, so the same builds always publish to the same place.

    :raises BuildRejectedError: when a build, task or tagged build does not exist.
    :raises BuildRejectedError: when a build must not be tested (see :func:`check_build`).
    :raises BuildRejectedError: when there are no RPMs for ``arches``.
    :raises KojiHubError: when the hub cannot be reached.
    """
    if selection.kind is SelectionKind.LATEST_TAGGED:
        builds = [client.latest_tagged(selection.ref, package) for package in selection.packages]
        # Already in the tag by construction: check only state, package and owner.
        unchecked_tag = BuildSelection(
            kind=SelectionKind.BUILD, ref=selection.ref, packages=selection.packages, owner=selection.owner
        )
        for build in builds:
            check_build(client, build, unchecked_tag)
    elif selection.kind is SelectionKind.BUILD:
        builds = [client.get_build(selection.ref)]
        check_build(client, builds[0], selection, tag_wait_s)
    else:
        task_id = int(selection.ref)
        task_build = client.build_of_task(task_id)
        if task_build is None:
            log.info("Task %d has no build entry (scratch build); using the task output.", task_id)
            if selection.tag is not None:
                log.info("Scratch builds are never tagged; not checking tag '%s'.", selection.tag)
            output = client.task_rpms(task_id, arches)
            for rpm in output.rpms:
                check_labels(f"An RPM of Koji task {task_id}", rpm.name, rpm.version, rpm.release, rpm.arch)
            if selection.packages and output.source_package not in selection.packages:
                raise BuildRejectedError(
                    f"Koji task {task_id} built '{output.source_package or 'an unknown package'}', not the "
                    f"watched package(s) {', '.join(selection.packages)}."
                )
            return f"task-{task_id}", (), output.rpms
        builds = [task_build]
        check_build(client, task_build, selection, tag_wait_s)
    builds.sort(key=lambda build: build.nvr)
    rpms = []
    for build in builds:
        for rpm in client.build_rpms(build, arches):
            check_labels(
                f"An RPM of Koji build {build.build_id}", rpm.name, rpm.version, rpm.release, rpm.arch
            )
            rpms.append(rpm)
    return (
        "+".join(build.nvr for build in builds),
        tuple(builds),
        tuple(sorted(rpms, key=lambda r: r.filename)),
    )


def createrepo(directory: Path, createrepo_c: str = "createrepo_c") -> None:
    """Run ``createrepo_c --no-database`` over ``directory`` (writes ``directory/repodata/``).

    :raises RepoError: when createrepo_c is missing, fails, times out or writes no ``repomd.xml``.
    """
    exe = shutil.which(createrepo_c)
    if exe is None:
        raise RepoError(f"'{createrepo_c}' not found on PATH; install createrepo_c (Debian: createrepo-c).")
    try:
        proc = run_command(
            [exe, "--no-database", "--quiet", str(directory)],
            timeout_s=CREATEREPO_TIMEOUT_S,
            what=f"createrepo_c over '{directory}'",
        )
    except CommandError as err:
        raise RepoError(str(err)) from err
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise RepoError(
            f"createrepo_c over '{directory}' failed (exit {proc.returncode}): "
            f"{detail[-1] if detail else 'no output'}"
        )
    if not (directory / "repodata" / "repomd.xml").is_file():
        raise RepoError(f"createrepo_c wrote no repodata/repomd.xml in '{directory}'.")


def repo_file_text(name: str, url: str) -> str:
    """Return a yum/dnf ``.repo`` file for the repo at ``url`` (unsigned test builds: gpgcheck off)."""
    section = "ovsperf-under-test"
    return (
        f"[{section}]\n"
        f"name=ovsperf builds under test: {name}\n"
        f"baseurl={url}\n"
        "enabled=1\n"
        "gpgcheck=0\n"
        "priority=1\n"
    )


def prepare_repo(
    client: KojiClient,
    selection: BuildSelection,
    publish_dir: Path,
    base_url: str,
    *,
    arches: tuple[str, ...] = DEFAULT_ARCHES,
    tag_wait_s: float = 0.0,
) -> PreparedRepo:
    """Build and publish the repo for ``selection``; return where it is.

    The repo lands in ``publish_dir/<name>/`` (name from :func:`resolve`), served at
    ``base_url/<name>/``. An existing repo of the same name is replaced atomically; on any
    failure nothing in ``publish_dir`` changes.

    :raises RepoError: when ``publish_dir`` is missing or not writable, or createrepo_c fails.
    :raises DownloadError: when an RPM cannot be downloaded intact.
    :raises BuildRejectedError, KojiHubError: see :func:`resolve`.
    """
    if not publish_dir.is_dir():
        raise RepoError(
            f"Publish directory '{publish_dir}' does not exist; give the directory a web server serves."
        )
    if not os.access(publish_dir, os.W_OK | os.X_OK):
        raise RepoError(f"Publish directory '{publish_dir}' is not writable.")
    if not base_url.startswith(("http://", "https://")):
        raise RepoError(f"Base URL {base_url!r} of '{publish_dir}' is not an http(s) URL.")
    credentials = url_credentials(base_url)
    if credentials is not None:
        raise RepoError(
            f"The base URL carries credentials ({credentials}); it would be written into the repo "
            "file, repo.json and every Beaker job. Give the URL without them."
        )
    name, builds, rpms = resolve(client, selection, arches, tag_wait_s)
    url = f"{base_url.rstrip('/')}/{name}/"
    target = publish_dir / name
    total_bytes = 0
    with atomic_directory(target) as tmp:
        downloaded = []
        for index, rpm in enumerate(rpms, start=1):
            path = client.download(rpm, tmp)
            downloaded.append((rpm, path))
            total_bytes += path.stat().st_size
            log.info("Downloaded %d/%d %s (%d B).", index, len(rpms), rpm.filename, path.stat().st_size)
        verify_rpms(downloaded)
        createrepo(tmp)
        atomic_write_text(tmp / REPO_FILE_NAME, repo_file_text(name, url))
    log.info("Published repo '%s' with %d RPMs (%d B) at %s", target, len(rpms), total_bytes, url)
    return PreparedRepo(path=target, url=url, builds=builds, rpms=rpms, koji_tag=selection.koji_tag)


def write_repo_record(path: Path, repo: PreparedRepo) -> None:
    """Write ``repo`` as JSON, atomically: ``{"url", "path", "builds": [nvr], "rpms": [name], "koji_tag"}``.

    :raises RepoError: when the file cannot be written.
    """
    record = {
        "url": repo.url,
        "path": str(repo.path),
        "builds": [build.nvr for build in repo.builds],
        "rpms": [rpm.filename for rpm in repo.rpms],
        "koji_tag": repo.koji_tag,
    }
    try:
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    except OSError as err:
        raise RepoError(f"Cannot write repo record '{path}': {err.strerror}.") from err


def read_repo_record(path: Path) -> RepoRecord:
    """Read a record :func:`write_repo_record` wrote: the repo URL, its build NVRs and Koji tag.

    :raises RepoError: when the file cannot be read or is not JSON, its ``url`` is not a string,
        its ``builds`` not a list of strings, or its ``koji_tag`` neither a string nor null.
    """
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise RepoError(f"Cannot read repo record '{path}': {err.strerror}.") from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RepoError(f"Repo record '{path}' is not JSON: {err}.") from err
    if not isinstance(record, dict):
        raise RepoError(f"Repo record '{path}' is not a JSON object.")
    url = record.get("url")
    builds = record.get("builds", [])
    koji_tag = record.get("koji_tag")
    if not isinstance(url, str) or not url:
        raise RepoError(f"Repo record '{path}' has no 'url' string.")
    if not isinstance(builds, list) or not all(isinstance(nvr, str) for nvr in builds):
        raise RepoError(f"Repo record '{path}': 'builds' is not a list of NVR strings.")
    if koji_tag is not None and not isinstance(koji_tag, str):
        raise RepoError(f"Repo record '{path}': 'koji_tag' is not a string.")
    return RepoRecord(url=url, builds=tuple(builds), koji_tag=koji_tag)
