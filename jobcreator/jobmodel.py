"""Define the records of one Beaker job run: options, the job plan, hub settings, request/outcome.

``JobOptions`` (from the command line) and a :class:`~ovsperf_catalog.model.Scenario` (from the
catalog) go into :func:`jobcreator.render.plan_job`, which decides a :class:`JobPlan`; the
templates only spell that plan in XML. Every record validates itself in ``__post_init__`` and
raises :class:`~jobcreator.errors.JobCreatorError` naming the command-line option.
"""

from __future__ import annotations

import enum
import math
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jobcreator.errors import option_error
from ovsperf_catalog.model import Engine, VsperfTrafficgen
from ovsperf_common.errors import FieldError
from ovsperf_common.fields import rsync_destination
from ovsperf_common.secrets import url_credentials

DEFAULT_MOONGEN_COMMIT: Final = "7746ff2f0afdbb222aa9cb220b48355e2d19552b"
"""MoonGen (github.com/emmericp/MoonGen) commit built on the TG: master of 2022-04-10.

Its libmoon (dfceafcb, DPDK 17.08 built with warnings ignored) still provides every MoonGen/libmoon
call ``trafficgen.lua`` at :data:`DEFAULT_TRAFFICGEN_COMMIT` makes (checked by reading both
trees: docs/beaker_tasks.md, "The upstream pins").
"""

DEFAULT_TRAFFICGEN_COMMIT: Final = "61caf959e3ad38f490d4fa75a39f6115492680a1"
"""lua-trafficgen (github.com/atheurer/lua-trafficgen) commit of 2020-08-28: the last one with
``trafficgen.lua`` (VSperf's MoonGen script; upstream removed it in cc4f4e5 the same day)."""

BEAKER_ARCHES: Final = ("x86_64", "aarch64", "ppc64le", "ppc64", "s390x", "i386")
"""Architectures Beaker knows distro trees for (``distro_arch`` values)."""

KICK_REPO_SCHEMES: Final = ("http", "https", "ftp", "nfs")
"""URL schemes Anaconda accepts for a kickstart ``repo`` line (Beaker ``<repo url>``)."""

TASK_REPO_SCHEMES: Final = ("http", "https", "git")
"""URL schemes restraint accepts in ``<fetch url>`` (tarball over HTTP(S), or git)."""

MAX_TAG_CHARS: Final = 200
"""Longest ``--tag`` we accept [characters]; the job whiteboard adds scenario and hosts."""

_HOSTNAME_RE: Final = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_COMMIT_RE: Final = re.compile(r"^[0-9a-f]{7,40}$")
_TOKEN_RE: Final = re.compile(r"^[A-Za-z0-9._+-]+$")


class ReserveMode(enum.Enum):
    """How ``--reserve HOURS`` keeps both hosts after the run (see docs/jobcreator.md)."""

    RESERVESYS = "reservesys"
    """Beaker's ``<reservesys duration when="always"/>``: holds the host even after an abort."""
    SLEEPER = "sleeper"
    """Our ``/ovsperf/sleeper`` task as the last task, with ``SLEEP_HOURS``."""


class DistroMatch(enum.Enum):
    """Which ``distroRequires`` field ``--distro`` selects on."""

    NAME = "distro_name"
    """An exact Beaker distro name, e.g. ``RHEL-7.3`` (the default)."""
    FAMILY = "distro_family"
    """A Beaker OS family (osmajor), e.g. ``RedHatEnterpriseLinux7``, given as ``family:…``."""


def _check_url(value: str, option: str, schemes: tuple[str, ...]) -> str:
    """Return ``value`` if it is an absolute URL with one of ``schemes`` and no credentials.

    :raises JobCreatorError: naming ``option`` when it is not.
    """
    if not value or any(c.isspace() for c in value):
        raise option_error(option, f"'{value}' is not a URL (empty or contains white space).")
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme not in schemes or not parsed.netloc:
        raise option_error(option, f"'{value}' is not a URL; expected {'/'.join(schemes)}://host/path.")
    credentials = url_credentials(value)
    if parsed.username is not None or credentials is not None:
        raise option_error(
            option,
            f"the URL carries credentials ({credentials or 'a user name'}), which would be stored in the job "
            "XML; give a URL without 'user:password@', tokens or secret parameters.",
        )
    return value


def _check_hostname(value: str, option: str) -> str:
    if not _HOSTNAME_RE.match(value):
        raise option_error(option, f"'{value}' is not a valid host name (RFC 1123).")
    return value


def _check_text(value: str, option: str, max_chars: int) -> str:
    if len(value) > max_chars:
        raise option_error(option, f"longer than {max_chars} characters.")
    if any(not c.isprintable() for c in value):
        raise option_error(
            option, f"{value!r} contains control characters (newline, tab, …); use one plain line."
        )
    return value


@dataclass(frozen=True)
class JobOptions:
    """Everything about one Beaker job that does not come from the scenario catalog.

    Built by ``cli.py`` from the command line; ``__post_init__`` validates every field, so a
    ``JobOptions`` that exists is renderable. Holds no credentials: the job XML never does.
    """

    trafficgen_host: str
    """FQDN of the traffic-generator (MoonGen) host: the first ``--host``."""
    dut_host: str
    """FQDN of the device under test (OVS-DPDK): the second ``--host``."""
    distro: str
    """``--distro``: a Beaker distro name (``RHEL-7.3``) or ``family:<osmajor>``."""
    arch: str = "x86_64"
    """Distro tree architecture (``distro_arch``)."""
    variant: str | None = None
    """Distro variant (``distro_variant``, e.g. ``Server``), ``None`` for any."""
    kick_repos: tuple[str, ...] = ()
    """Extra package repositories for every recipe, guest included (``<repos>``), in order."""
    tag: str | None = None
    """Free text put first in the job whiteboard, e.g. ``nightly``."""
    reserve_hours: float | None = None
    """Keep both hosts this long after the run [h]; ``None`` or 0 for no reservation."""
    reserve_mode: ReserveMode = ReserveMode.RESERVESYS
    """How the reservation is made."""
    collector: str | None = None
    """Where ``vsperf_test run`` sends the results (rsync destination, ``COLLECTOR``)."""
    moongen_commit: str = DEFAULT_MOONGEN_COMMIT
    """MoonGen commit ``build_moongen`` checks out (``MOONGEN_COMMIT``)."""
    trafficgen_commit: str = DEFAULT_TRAFFICGEN_COMMIT
    """lua-trafficgen commit ``build_moongen`` checks out (``TRAFFICGEN_COMMIT``)."""
    task_repo: str | None = None
    """URL of an archive or git repository holding ``beaker_tasks/``; ``None`` means the
    ``/ovsperf/*`` tasks are installed in Beaker's task library."""
    inventory: str | None = None
    """Host inventory for the tasks (``INVENTORY``): a path relative to the root of the fetched
    repository, or absolute, e.g. ``vsperf_configs/inventory.yaml``."""
    engine: Engine | None = None
    """``--engine``: what measures the scenario; ``None``: the scenario's own (the catalog's ``engine``)."""
    generator: VsperfTrafficgen = VsperfTrafficgen.MOONGEN
    """``--generator``: what VSperf drives on the TG (engine ``vsperf``): MoonGen (``build_moongen``)
    or TRex (``setup_trex``); it must agree with the inventory's ``generator`` of the DUT's peer."""

    def __post_init__(self) -> None:
        _check_hostname(self.trafficgen_host, "--host")
        _check_hostname(self.dut_host, "--host")
        if self.trafficgen_host.lower() == self.dut_host.lower():
            raise option_error(
                "--host",
                f"the traffic generator and the DUT are both '{self.dut_host}'; give two different hosts.",
            )
        distro_value = self.distro_value
        if not distro_value or not _TOKEN_RE.match(distro_value):
            raise option_error(
                "--distro",
                f"'{self.distro}' is not a distro name (expected e.g. 'RHEL-7.3' or "
                "'family:RedHatEnterpriseLinux7'; no spaces).",
            )
        if self.arch not in BEAKER_ARCHES:
            raise option_error(
                "--arch", f"'{self.arch}' is not an architecture; expected one of {', '.join(BEAKER_ARCHES)}."
            )
        if self.variant is not None and not _TOKEN_RE.match(self.variant):
            raise option_error("--variant", f"'{self.variant}' is not a distro variant.")
        for url in self.kick_repos:
            _check_url(url, "--kickrepo", KICK_REPO_SCHEMES)
        if len(set(self.kick_repos)) != len(self.kick_repos):
            raise option_error("--kickrepo", "a repository is given twice.")
        if self.tag is not None:
            _check_text(self.tag, "--tag", MAX_TAG_CHARS)
        if self.reserve_hours is not None and (
            isinstance(self.reserve_hours, bool)
            or not math.isfinite(self.reserve_hours)
            or self.reserve_hours < 0
        ):
            raise option_error("--reserve", f"{self.reserve_hours!r} is not a duration; expected hours >= 0.")
        if self.reserve_hours is not None and self.reserve_hours * 3600 > MAX_RESERVE_S:
            raise option_error(
                "--reserve",
                f"{self.reserve_hours:g} h is more than Beaker reserves a system for "
                f"({MAX_RESERVE_S // 3600} h, /distribution/reservesys RESERVETIME <= {MAX_RESERVE_S} s).",
            )
        if self.collector is not None:
            try:
                rsync_destination(self.collector)
            except FieldError as err:
                raise option_error("--collector", err.reason) from err
        for option, commit in (
            ("--moongen-commit", self.moongen_commit),
            ("--trafficgen-commit", self.trafficgen_commit),
        ):
            if not _COMMIT_RE.match(commit):
                raise option_error(
                    option, f"'{commit}' is not a git commit id (7 to 40 lower-case hex digits)."
                )
        if self.task_repo is not None:
            _check_url(self.task_repo, "--task-repo", TASK_REPO_SCHEMES)
        if self.inventory is not None and (
            not self.inventory
            or any(c.isspace() or not c.isprintable() for c in self.inventory)
            or ".." in self.inventory.split("/")
        ):
            raise option_error(
                "--inventory", f"'{self.inventory}' is not an inventory path (no white space, no '..')."
            )
        if self.engine is not None:
            try:
                Engine.from_spec(self.engine, field="--engine")
            except FieldError as err:
                raise option_error("--engine", err.reason) from err
        try:
            VsperfTrafficgen.from_spec(self.generator, field="--generator")
        except FieldError as err:
            raise option_error("--generator", err.reason) from err

    @property
    def distro_match(self) -> DistroMatch:
        """Return whether ``--distro`` names a distro or an OS family."""
        return DistroMatch.FAMILY if self.distro.startswith("family:") else DistroMatch.NAME

    @property
    def distro_value(self) -> str:
        """Return the distro name or family without the ``family:`` prefix."""
        return self.distro.removeprefix("family:")

    @property
    def reserve_s(self) -> int | None:
        """Return the reservation [s], ``None`` when there is none."""
        if not self.reserve_hours:
            return None
        return math.ceil(self.reserve_hours * 3600)


@dataclass(frozen=True)
class TaskStep:
    """One Beaker task of a recipe, with its parameters (environment variables of the task)."""

    name: str
    """Beaker task name, e.g. ``'/ovsperf/perf_synchronization'``."""
    params: tuple[tuple[str, str], ...] = ()
    """``(name, value)`` pairs in order; values are strings, as Beaker passes them."""
    fetch_url: str | None = None
    """Where restraint fetches the task from (``<fetch url>``), ``None`` for the task library."""


@dataclass(frozen=True)
class GuestPlan:
    """The ``<guestrecipe>`` of the DUT: a VM Beaker installs with ``virt-install``."""

    name: str
    """``guestname``: the libvirt domain name."""
    args: str
    """``guestargs``: extra ``virt-install`` arguments (memory, vCPUs, disk)."""
    whiteboard: str
    """Recipe whiteboard."""
    tasks: tuple[TaskStep, ...]
    """Tasks run inside the guest, in order."""


@dataclass(frozen=True)
class RecipePlan:
    """One host recipe of the job: the traffic generator or the DUT."""

    role: str
    """Recipe role; becomes an environment variable holding the host's FQDN on every host."""
    hostname: str
    """FQDN the recipe is pinned to (``hostRequires/hostname``)."""
    whiteboard: str
    """Recipe whiteboard."""
    kernel_options_post: str
    """Kernel command line for the installed system (hugepages, IOMMU)."""
    tasks: tuple[TaskStep, ...]
    """Tasks, in order."""
    guest: GuestPlan | None = None
    """The guest recipe, on the DUT of a PVP scenario."""
    reserve_s: int | None = None
    """``<reservesys duration>`` [s], ``None`` for none."""


@dataclass(frozen=True)
class JobPlan:
    """Everything the job template needs, already decided: the templates only spell it in XML."""

    whiteboard: str
    """Job whiteboard."""
    distro_match: DistroMatch
    """Whether the distro is selected by name or by family."""
    distro: str
    """Distro name or family."""
    arch: str
    """Distro tree architecture."""
    variant: str | None
    """Distro variant, ``None`` for any."""
    ks_meta: str
    """Kickstart metadata, e.g. the harness to install."""
    repos: tuple[tuple[str, str], ...]
    """``(name, url)`` kick repositories, the same on every recipe."""
    recipes: tuple[RecipePlan, ...]
    """Host recipes: the traffic generator first, then the DUT."""


@dataclass(frozen=True)
class HubSettings:
    """Bound every call to the Beaker hub: timeout and retries.

    Never credentials: those stay in the Beaker client configuration files.
    """

    timeout_s: float = 120.0
    """Socket timeout of each XML-RPC request [s] (bkr's own default)."""
    retries: int = 2
    """Extra attempts after a connection failure [1]; an upload is only retried when the
    connection was refused, so a job is never submitted twice."""
    retry_interval_s: float = 10.0
    """Pause between attempts [s]."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise option_error("--hub-timeout", f"{self.timeout_s!r} is not a positive number of seconds.")
        if isinstance(self.retries, bool) or self.retries < 0:
            raise option_error("--hub-retries", f"{self.retries!r} is not a count >= 0.")
        if not (math.isfinite(self.retry_interval_s) and self.retry_interval_s >= 0):
            raise option_error("--hub-retries", f"{self.retry_interval_s!r} is not a pause >= 0 s.")

    @property
    def worst_case_s(self) -> float:
        """Return the longest one hub call can take, all attempts included [s]."""
        return (self.retries + 1) * self.timeout_s + self.retries * self.retry_interval_s


@dataclass(frozen=True)
class JobRequest:
    """One ``jobcreator`` invocation: which scenario, how, and what to do with the job."""

    scenario_name: str
    """Catalog name of the scenario (``--config``)."""
    options: JobOptions
    """Hosts, distro, repositories, reservation, … ."""
    catalog_path: Path | None = None
    """Scenario catalog (``--catalog``); ``None`` for the packaged one."""
    output: Path | None = None
    """Write the job XML here (``--output``); ``None`` prints it unless it is submitted."""
    autosubmit: bool = False
    """Submit the job to the Beaker hub (``--autosubmit``)."""
    dry_run: bool = False
    """Render and validate only; never contact the hub (``--dry-run``)."""
    hub: HubSettings = HubSettings()
    """Timeouts for the hub."""


MAX_RESERVE_S: Final = 356400
"""Longest reservation Beaker grants [s] (``/distribution/reservesys`` ``RESERVETIME`` maximum: 99 h)."""

JOB_ID_RE: Final = re.compile(r"^J:\d+$")
"""A Beaker job id as ``jobs.upload`` answers it and ``jobcreator --autosubmit`` prints it: ``J:1234``."""


def is_job_id(text: object) -> bool:
    """Return whether ``text`` is a Beaker job id ``J:<n>`` (:data:`JOB_ID_RE`)."""
    return isinstance(text, str) and JOB_ID_RE.match(text) is not None


@dataclass(frozen=True)
class JobOutcome:
    """What :func:`jobcreator.workflow.create_job` produced."""

    xml: str
    """The validated job XML."""
    written_to: Path | None
    """The file the XML was written to, if any."""
    job_id: str | None
    """``'J:<n>'`` when submitted, else ``None``."""
