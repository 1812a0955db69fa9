"""Hold the records kojiwatch passes between Koji, the repo builder, the submitter and the watcher."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kojiwatch.errors import KojiWatchError
from ovsperf_common.spec import SpecEnum

DEFAULT_ARCHES: tuple[str, ...] = ("x86_64", "noarch")
"""Architectures whose RPMs go into the repo: the lab hosts are x86_64 (``noarch`` always needed)."""

_PACKAGE_NAME = re.compile(r"^[A-Za-z0-9._+-]+$")


class BuildState(SpecEnum):
    """State of a Koji build, by its ``koji.BUILD_STATES`` name (koji 1.36 ``koji/__init__.py``)."""

    BUILDING = "BUILDING"
    COMPLETE = "COMPLETE"
    DELETED = "DELETED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @classmethod
    def spec_label(cls) -> str:
        """Return ``'Koji build state'`` for messages."""
        return "Koji build state"

    @classmethod
    def from_code(cls, code: object) -> BuildState:
        """Return the state for Koji's integer code (0 BUILDING, 1 COMPLETE, 2 DELETED, 3 FAILED, 4 CANCELED).

        :raises KojiWatchError: when ``code`` is not one of those integers.
        """
        order = list(cls)
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < len(order):
            raise KojiWatchError(
                f"Unknown Koji build state {code!r}; expected 0..{len(order) - 1} "
                f"({', '.join(s.value for s in order)})."
            )
        return order[code]


class SelectionKind(SpecEnum):
    """How the builds to test are chosen."""

    BUILD = "build"
    """One build by id or NVR (the Jenkins trigger, or by hand)."""
    TASK = "task"
    """A build task id; a scratch build's RPMs come from the task output."""
    LATEST_TAGGED = "latest-tagged"
    """The latest build of each watched package in a tag (the nightly job)."""


def check_package_name(name: str) -> str:
    """Return ``name`` if it is a plausible RPM package name.

    :raises KojiWatchError: when it is empty or has characters RPM names never contain.
    """
    if not _PACKAGE_NAME.match(name):
        raise KojiWatchError(f"Package name {name!r} is not a valid RPM package name.")
    return name


@dataclass(frozen=True)
class KojiServer:
    """Where the Koji hub and its file server are."""

    hub_url: str
    """XML-RPC endpoint, e.g. ``https://koji.fedoraproject.org/kojihub``."""
    topurl: str
    """Base URL of the Koji file tree (``packages/``, ``work/``), without a trailing ``/``."""
    profile: str | None = None
    """Koji client profile the URLs came from (``/etc/koji.conf.d``), ``None`` when given directly."""
    timeout_s: float = 60.0
    """Timeout of one hub call or file request [s]."""
    ca_bundle: str | None = None
    """PEM CA bundle verifying the hub's and file server's TLS certificates; ``None``: the default store."""

    def __post_init__(self) -> None:
        """Reject non-HTTP URLs and normalise the topurl (koji's PathInfo doubles a trailing ``/``)."""
        for name in ("hub_url", "topurl"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                raise KojiWatchError(f"Koji {name} {value!r} is not an http(s) URL.")
        object.__setattr__(self, "topurl", self.topurl.rstrip("/"))
        if self.timeout_s <= 0:
            raise KojiWatchError(f"Koji timeout {self.timeout_s!r} s is not positive.")


@dataclass(frozen=True)
class KojiBuild:
    """One Koji build, from the hub's ``getBuild``/``listTagged`` dicts."""

    build_id: int
    """Koji build id."""
    name: str
    """Package name, e.g. ``openvswitch``."""
    version: str
    """RPM version."""
    release: str
    """RPM release."""
    state: BuildState
    """Build state; only COMPLETE builds are tested."""
    owner: str
    """Koji user name of the build's owner."""
    task_id: int | None
    """Build task id; ``None`` for imported builds."""
    volume_name: str | None = None
    """Koji storage volume (``DEFAULT`` or ``None`` = the main one)."""

    @property
    def nvr(self) -> str:
        """Return ``name-version-release``."""
        return f"{self.name}-{self.version}-{self.release}"


@dataclass(frozen=True)
class RpmFile:
    """One RPM to download: its identity and the URL on the Koji file server."""

    name: str
    """RPM name (sub-package name, e.g. ``python3-openvswitch``)."""
    version: str
    """RPM version."""
    release: str
    """RPM release."""
    arch: str
    """RPM architecture (``x86_64``, ``noarch``)."""
    url: str
    """Where to download it."""
    size_bytes: int | None
    """Expected size [B]; ``None`` when Koji does not say (task output)."""
    payloadhash: str | None = None
    """Koji's ``payloadhash`` (the RPM header SIGMD5, hex); ``None`` for task output."""

    @property
    def filename(self) -> str:
        """Return the file name ``name-version-release.arch.rpm``."""
        return f"{self.name}-{self.version}-{self.release}.{self.arch}.rpm"


@dataclass(frozen=True)
class TaskRpms:
    """What a (scratch) build task wrote: its binary RPMs and the package its SRPM names."""

    task_id: int
    """The build task asked for."""
    source_package: str | None
    """Name of the task's ``.src.rpm`` (the package built), ``None`` when the output has none."""
    rpms: tuple[RpmFile, ...]
    """Binary RPMs for the requested arches, sorted by file name."""


@dataclass(frozen=True)
class BuildSelection:
    """What to build a repo from: one build, one task, or the latest tagged builds."""

    kind: SelectionKind
    """How ``ref`` is interpreted."""
    ref: str
    """Build id or NVR (BUILD), task id (TASK) or the tag name (LATEST_TAGGED)."""
    packages: tuple[str, ...] = ()
    """Watched packages: required for LATEST_TAGGED; for BUILD/TASK the build must be one of them (if any)."""
    owner: str | None = None
    """Required build owner, ``None`` for any."""
    tag: str | None = None
    """For BUILD/TASK: the build must be tagged into this tag, ``None`` for no check."""

    @property
    def koji_tag(self) -> str | None:
        """Return the Koji tag the selected builds are in: the LATEST_TAGGED tag, else ``tag``."""
        return self.ref if self.kind is SelectionKind.LATEST_TAGGED else self.tag

    def __post_init__(self) -> None:
        """Validate ids and package names.

        :raises KojiWatchError: naming the bad value.
        """
        for package in self.packages:
            check_package_name(package)
        if not self.ref:
            raise KojiWatchError(f"Empty {self.kind.value} reference.")
        if self.kind is SelectionKind.TASK and not self.ref.isdigit():
            raise KojiWatchError(f"Koji task id {self.ref!r} is not a number.")
        if self.kind is SelectionKind.LATEST_TAGGED and not self.packages:
            raise KojiWatchError(f"Latest tagged builds of tag '{self.ref}' need at least one --package.")


@dataclass(frozen=True)
class PreparedRepo:
    """A published yum repository built from Koji RPMs."""

    path: Path
    """Directory on disk (under the publish directory)."""
    url: str
    """URL the lab hosts use as ``--kickrepo``, with a trailing ``/``."""
    builds: tuple[KojiBuild, ...]
    """Builds whose RPMs are in the repo (empty for a scratch task)."""
    rpms: tuple[RpmFile, ...]
    """RPMs in the repo, sorted by file name."""
    koji_tag: str | None = None
    """The Koji tag the builds were selected in or checked against; ``None`` when no tag was involved."""


@dataclass(frozen=True)
class RepoRecord:
    """What ``prepare-repo --output-json`` recorded about a repo, as ``submit --repo-json`` reads it."""

    url: str
    """URL of the repo (the kick repo of the jobs)."""
    builds: tuple[str, ...]
    """NVRs of the Koji builds in it (empty for a scratch task)."""
    koji_tag: str | None = None
    """The Koji tag the builds were selected in, when known."""


@dataclass(frozen=True)
class SubmitRequest:
    """Everything the Beaker submission of each scenario needs (what ``jobcreator --autosubmit`` takes)."""

    repo_urls: tuple[str, ...]
    """``--kickrepo`` URLs, at least one."""
    generator_host: str
    """Traffic generator (MoonGen) host, the first ``--host``."""
    dut_host: str
    """Device under test host, the second ``--host``."""
    distro: str
    """Beaker distro name, e.g. ``RHEL-9.4.0``."""
    scenarios: tuple[str, ...]
    """Scenario names from the catalog, e.g. ``OVS_DPDK1q_GUEST_DPDK1q``."""
    tag: str
    """Beaker whiteboard text (``--tag``)."""
    baseline: str | None = None
    """Baseline label the results will be compared against; recorded with the job ids."""
    reserve_h: float | None = None
    """Hours to keep the hosts reserved after the run (``--reserve``) [h]; ``None`` for none."""
    job_xml_dir: Path | None = None
    """Keep each rendered Beaker job as ``<dir>/<scenario>.xml`` (jobcreator ``--output``), or not."""
    builds: tuple[str, ...] = ()
    """NVRs of the Koji builds in the repos under test, when known; recorded with the job ids so the
    results can name what was tested."""
    koji_tag: str | None = None
    """The Koji tag the builds were selected in, when known (recorded with the job ids)."""
    collector: str | None = None
    """rsync destination ``vsperf_test`` pushes the results to (jobcreator ``--collector``, ``COLLECTOR``);
    ``None``: the results stay in Beaker and the collector pulls them (``ovsperf-beaker collect``)."""
    task_repo: str | None = None
    """URL of an archive or git repository holding ``beaker_tasks/`` (jobcreator ``--task-repo``);
    ``None``: the ``/ovsperf/*`` tasks are installed in Beaker's task library."""
    inventory: str | None = None
    """Host inventory for the tasks (jobcreator ``--inventory``, ``INVENTORY``), relative to the task
    repository root or absolute."""
    catalog_path: Path | None = None
    """Scenario catalog (jobcreator ``--catalog``); ``None``: the packaged one."""

    def __post_init__(self) -> None:
        """Reject empty inputs and non-URL repos before anything is submitted.

        :raises KojiWatchError: naming the bad field.
        """
        if not self.repo_urls:
            raise KojiWatchError("No --repo given; need the URL of the repo with the builds under test.")
        for url in self.repo_urls:
            if not url.startswith(("http://", "https://", "ftp://")):
                raise KojiWatchError(f"Repo {url!r} is not an http(s)/ftp URL.")
        for name in ("generator_host", "dut_host", "distro", "tag"):
            if not getattr(self, name).strip():
                raise KojiWatchError(f"Empty {name.replace('_', ' ')}.")
        if not self.scenarios:
            raise KojiWatchError("No --scenario given.")
        if len(set(self.scenarios)) != len(self.scenarios):
            raise KojiWatchError(f"Scenario listed twice in {list(self.scenarios)}.")
        if self.reserve_h is not None and self.reserve_h < 0:
            raise KojiWatchError(f"Reserve time {self.reserve_h} h is negative.")


@dataclass(frozen=True)
class SubmittedJob:
    """One Beaker job submitted for one scenario."""

    scenario: str
    """Scenario name."""
    job_id: str
    """Beaker job id as the hub answered it, e.g. ``J:1234`` (``jobcreator.jobmodel.JOB_ID_RE``)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential back-off for hub errors while watching."""

    initial_s: float = 10.0
    """First wait after a failure [s]."""
    max_s: float = 600.0
    """Longest single wait [s]."""
    max_failures: int = 6
    """Consecutive failed polls before giving up [1]."""

    def __post_init__(self) -> None:
        """Validate the bounds.

        :raises KojiWatchError: when a bound is not positive.
        """
        if self.initial_s <= 0 or self.max_s < self.initial_s or self.max_failures < 1:
            raise KojiWatchError(
                f"Bad retry policy: initial {self.initial_s} s, max {self.max_s} s, "
                f"{self.max_failures} failures (need 0 < initial <= max, failures >= 1)."
            )

    def delay_s(self, failures: int) -> float:
        """Return the wait after the ``failures``-th failure in a row: ``initial * 2**(n-1)``, capped [s]."""
        return float(min(self.max_s, self.initial_s * 2 ** max(0, failures - 1)))


@dataclass(frozen=True)
class WatchConfig:
    """What the watcher polls for and how often."""

    tag: str
    """Koji tag whose new builds are tested."""
    packages: tuple[str, ...]
    """Watched package names."""
    owner: str | None
    """Only builds owned by this Koji user, ``None`` for any."""
    state_path: Path
    """JSON state file (seen builds, submitted jobs)."""
    interval_s: float = 300.0
    """Time between polls [s]."""
    max_polls: int = 1
    """Polls before exiting; 1 = one pass (cron/systemd timer) [1]."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """Back-off for hub errors."""

    def __post_init__(self) -> None:
        """Validate the bounds and names.

        :raises KojiWatchError: naming the bad field.
        """
        if not self.packages:
            raise KojiWatchError("Watch needs at least one --package.")
        for package in self.packages:
            check_package_name(package)
        if self.max_polls < 1:
            raise KojiWatchError(f"--max-polls {self.max_polls} must be at least 1.")
        if self.interval_s < 0:
            raise KojiWatchError(f"--interval-s {self.interval_s} is negative.")


@dataclass(frozen=True)
class BuildMessage:
    """What a Koji bus message says about a build (see :mod:`kojiwatch.message` for the shapes)."""

    build_id: int
    """Koji build id."""
    name: str | None
    """Package name, when the message carries it."""
    owner: str | None
    """Owner's Koji user name, when the message carries it."""
    new_state: BuildState | None
    """New build state of a state-change message; ``None`` for a tag message."""
    tag: str | None
    """Tag of a tag message; ``None`` for a state-change message."""
