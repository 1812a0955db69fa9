"""Turn a scenario and job options into Beaker job XML (pure: no I/O besides templates).

Two steps: :func:`plan_job` decides the job — recipes, task order, task parameters, timeouts —
as a :class:`~jobcreator.jobmodel.JobPlan`; :func:`render_plan` spells the plan in XML through
``templates/beaker/job.xml.j2``. Only the templates know Beaker's XML; the task *sequence* of
the design lives here, so it can be tested without parsing XML. The result is not yet
validated: :mod:`jobcreator.validate` does that before anything is printed or submitted.

Task sequence (one recipe set, all tasks ``role="STANDALONE"``; see docs/jobcreator.md):

* TRAFFICGEN: check-install → build_moongen → setup_dpdk (reboots itself and resumes) →
  sync wait DUT_SSH_KEY (installs the DUT's public key) → sync set MOONGEN_READY (publishes
  this host's SSH host keys) → sync wait VSPERF_END
* DUT: check-install → vsperf_test setup (reboots itself and resumes; creates the SSH key
  pair) → sync set DUT_SSH_KEY → [virt/install → virt/start] → sync wait MOONGEN_READY
  (installs the TG's host keys) → vsperf_test run → sync set VSPERF_END
* guest (PVP scenarios): check-install → vsperf_test setup with ``GUEST=1``

With ``--generator trex`` (engine ``vsperf``; VSperf drives TRex, docs/beaker_tasks.md "TRex"):

* TRAFFICGEN: check-install → setup_trex (download, SHA-256, unpack, /etc/trex_cfg.yaml, the
  unit) → setup_dpdk → setup_trex start (trex.service, waits for its port) → sync wait
  DUT_SSH_KEY → sync set MOONGEN_READY → sync wait VSPERF_END → setup_trex stop
* DUT: as above, with setup_trex (TRex's client library for VSperf) after vsperf_test setup

With the engine ``ovsperf`` (the scenario's ``engine`` or ``--engine``; docs/engines.md):

* TRAFFICGEN: check-install → build_trafficgen → setup_dpdk → sync wait DUT_SSH_KEY → sync set
  TRAFFICGEN_READY → sync wait OVSPERF_END
* DUT: check-install → ovsperf_test setup (ovsperf-lab's venv, the SSH key pair) → setup_dpdk
  (reboots itself and resumes; binds the DUT's test NICs) → sync set DUT_SSH_KEY → sync wait
  TRAFFICGEN_READY → ovsperf_test run → sync set OVSPERF_END
* no guest recipe: ``ovsperf-lab`` boots the PVP guest itself from the inventory's ``guest_image``.

The key exchange through ``perf_synchronization`` (``SYNC_DATA``) lets VSperf on the DUT log in
to the MoonGen host without any key or password in the job. All DUT reboots happen before
``virt/start``: a host reboot after it aborts the guest's running task (restraint issue #294).
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Final

import jinja2
from ovsperf_templates import environment  # type: ignore[import-not-found, unused-ignore]

from jobcreator.errors import JobCreatorError, option_error
from jobcreator.jobmodel import GuestPlan, JobOptions, JobPlan, RecipePlan, ReserveMode, TaskStep
from ovsperf_catalog.model import Engine, Scenario, VsperfTrafficgen

TASK_NAMESPACE: Final = "/ovsperf"
"""Beaker task-library namespace of our tasks (``beaker_tasks/<name>`` → ``/ovsperf/<name>``)."""

CHECK_INSTALL_TASK: Final = "/distribution/check-install"
VIRT_INSTALL_TASK: Final = "/distribution/virt/install"
VIRT_START_TASK: Final = "/distribution/virt/start"

TRAFFICGEN_ROLE: Final = "TRAFFICGEN"
DUT_ROLE: Final = "DUT"

DUT_SSH_KEY: Final = "DUT_SSH_KEY"
"""Sync state the DUT sets after its setup, carrying its SSH public key (the TG installs it)."""
MOONGEN_READY: Final = "MOONGEN_READY"
"""Sync state the TG sets once MoonGen is built, DPDK is bound and the DUT's key is installed,
carrying the TG's SSH host keys (the DUT waits for it and trusts them)."""
VSPERF_END: Final = "VSPERF_END"
"""Sync state the DUT sets after the VSperf run (the TG waits for it, then finishes)."""
TRAFFICGEN_READY: Final = "TRAFFICGEN_READY"
"""Engine ``ovsperf``: the TG's :data:`MOONGEN_READY` (ovsperf-trafficgen built, NICs bound, the
DUT's key installed; carries the TG's SSH host keys)."""
OVSPERF_END: Final = "OVSPERF_END"
"""Engine ``ovsperf``: sync state the DUT sets after ``ovsperf_test run``."""

GUEST_NAME: Final = "ovsperf-guest"
"""libvirt domain name of the PVP guest."""
GUEST_DISK_GB: Final = 20
"""Guest disk size for Beaker's ``virt/install`` (``--file-size``) [GB]."""

KS_META: Final = "harness=restraint-rhts"
"""Install restraint with the legacy rhts-* commands our tasks fall back to."""

HOST_SETUP_BUDGET_S: Final = 4 * 3600
"""Time allowed for either host's setup after provisioning — MoonGen build, DPDK setup and
reboot on the TG; VSperf setup, reboot and guest install on the DUT [s]."""
MAX_SEARCH_TRIALS: Final = 20
"""Upper bound of binary-search trials per frame size (lua-trafficgen ``binary-search.py``) [1]."""
RUN_MARGIN: Final = 1.5
"""Factor on the trial time for traffic-generator start-up and VSperf's own setup [1]."""
VSPERF_SETUP_PER_TEST_S: Final = 900
"""VSperf's per-test setup: start OVS, boot the guest, stop everything [s]."""


def vsperf_run_budget_s(scenario: Scenario) -> int:
    """Return an upper bound of the VSperf run of ``scenario`` on the DUT [s].

    ``tests × frame sizes × (MAX_SEARCH_TRIALS × search_trial_s + validation_trial_s)``,
    times :data:`RUN_MARGIN`, plus :data:`VSPERF_SETUP_PER_TEST_S` per test.
    """
    per_size_s = MAX_SEARCH_TRIALS * scenario.search_trial_s + scenario.validation_trial_s
    trials_s = len(scenario.tests) * len(scenario.frame_sizes_bytes) * per_size_s
    return math.ceil(trials_s * RUN_MARGIN) + len(scenario.tests) * VSPERF_SETUP_PER_TEST_S


def ovsperf_run_budget_s(scenario: Scenario) -> int:
    """Return an upper bound of the ``ovsperf-lab run`` of ``scenario`` on the DUT [s].

    :func:`vsperf_run_budget_s` once per flow count of the scenario's ``flows``: the lab sweeps
    them all (VSperf measures the first only), each a search of every test and frame size.
    """
    return vsperf_run_budget_s(scenario) * len(scenario.flows)


def sync_timeouts_s(scenario: Scenario) -> dict[str, int]:
    """Return the wait timeout of each sync state [s].

    ``DUT_SSH_KEY``, ``MOONGEN_READY`` and ``TRAFFICGEN_READY``: :data:`HOST_SETUP_BUDGET_S` (both
    hosts start together; each waits for the other's setup). ``VSPERF_END`` and ``OVSPERF_END``:
    the DUT's setup budget plus :func:`vsperf_run_budget_s`, :func:`ovsperf_run_budget_s` (the
    ovsperf engine's trials are no longer than the binary search's, but it sweeps every flow count).
    """
    return {
        DUT_SSH_KEY: HOST_SETUP_BUDGET_S,
        MOONGEN_READY: HOST_SETUP_BUDGET_S,
        VSPERF_END: HOST_SETUP_BUDGET_S + vsperf_run_budget_s(scenario),
        TRAFFICGEN_READY: HOST_SETUP_BUDGET_S,
        OVSPERF_END: HOST_SETUP_BUDGET_S + ovsperf_run_budget_s(scenario),
    }


def _format_hours(hours: float) -> str:
    return f"{hours:g}"


def plan_job(scenario: Scenario, options: JobOptions) -> JobPlan:
    """Decide the Beaker job for ``scenario`` on the hosts and distro of ``options``.

    :returns: the plan: two host recipes (TG first), the DUT carrying the guest recipe when
        the scenario has a guest (engine ``vsperf`` only).
    :raises JobCreatorError: naming ``--generator`` when it is ``trex`` with the engine ``ovsperf``
        (VSperf's generator; ``ovsperf-lab`` has its own TRex backend).
    """
    engine = options.engine if options.engine is not None else scenario.engine
    trex = options.generator is VsperfTrafficgen.TREX
    if trex and engine is not Engine.VSPERF:
        raise option_error(
            "--generator",
            f"'trex' is what VSperf drives (engine 'vsperf'); scenario '{scenario.name}' runs on the "
            f"engine '{engine.value}', whose generator is ovsperf-trafficgen.",
        )

    def ours(task: str, *params: tuple[str, str]) -> TaskStep:
        fetch = f"{options.task_repo}#beaker_tasks/{task}" if options.task_repo else None
        return TaskStep(name=f"{TASK_NAMESPACE}/{task}", params=tuple(params), fetch_url=fetch)

    timeouts = sync_timeouts_s(scenario)

    def sync_set(state: str, *data: tuple[str, str]) -> TaskStep:
        return ours("perf_synchronization", ("SYNC_ACTION", "set"), ("SYNC_STATE", state), *data)

    def sync_wait(state: str, peer: str, *data: tuple[str, str]) -> TaskStep:
        return ours(
            "perf_synchronization",
            ("SYNC_ACTION", "wait"),
            ("SYNC_STATE", state),
            ("SYNC_PEER", peer),
            ("SYNC_TIMEOUT_S", str(timeouts[state])),
            *data,
        )

    inventory = (("INVENTORY", options.inventory),) if options.inventory is not None else ()
    pubkey = ("SYNC_DATA", "ssh-pubkey")
    hostkey = ("SYNC_DATA", "ssh-hostkey")

    check_install = TaskStep(name=CHECK_INSTALL_TASK)
    sleeper: tuple[TaskStep, ...] = ()
    reserve_s = options.reserve_s
    if reserve_s is not None and options.reserve_mode is ReserveMode.SLEEPER:
        assert options.reserve_hours is not None
        sleeper = (ours("sleeper", ("SLEEP_HOURS", _format_hours(options.reserve_hours))),)
        reserve_s = None

    trafficgen = RecipePlan(
        role=TRAFFICGEN_ROLE,
        hostname=options.trafficgen_host,
        whiteboard=f"ovsperf {scenario.name}: traffic generator {options.trafficgen_host}",
        kernel_options_post=" ".join(scenario.all_kernel_options),
        tasks=(
            check_install,
            ours(
                "build_moongen",
                ("MOONGEN_COMMIT", options.moongen_commit),
                ("TRAFFICGEN_COMMIT", options.trafficgen_commit),
                *inventory,
            ),
            ours("setup_dpdk", *inventory),
            sync_wait(DUT_SSH_KEY, options.dut_host, pubkey),
            sync_set(MOONGEN_READY, hostkey),
            sync_wait(VSPERF_END, options.dut_host),
            *sleeper,
        ),
        reserve_s=reserve_s,
    )
    if trex:
        trafficgen = replace(
            trafficgen,
            tasks=(
                check_install,
                ours("setup_trex", *inventory),
                ours("setup_dpdk", *inventory),
                ours("setup_trex", ("SETUP_TREX_ACTION", "start"), *inventory),
                sync_wait(DUT_SSH_KEY, options.dut_host, pubkey),
                sync_set(MOONGEN_READY, hostkey),
                sync_wait(VSPERF_END, options.dut_host),
                ours("setup_trex", ("SETUP_TREX_ACTION", "stop"), *inventory),
                *sleeper,
            ),
        )
    if engine is Engine.OVSPERF:
        trafficgen = replace(
            trafficgen,
            tasks=(
                check_install,
                ours("build_trafficgen"),
                ours("setup_dpdk", *inventory),
                sync_wait(DUT_SSH_KEY, options.dut_host, pubkey),
                sync_set(TRAFFICGEN_READY, hostkey),
                sync_wait(OVSPERF_END, options.dut_host),
                *sleeper,
            ),
        )

    guest: GuestPlan | None = None
    virt: tuple[TaskStep, ...] = ()
    if scenario.guest is not None and engine is Engine.VSPERF:
        guest = GuestPlan(
            name=GUEST_NAME,
            args=(
                f"--ram={scenario.guest.memory_mb} --vcpus={scenario.guest.vcpus} --file-size={GUEST_DISK_GB}"
            ),
            whiteboard=f"ovsperf {scenario.name}: guest on {options.dut_host}",
            tasks=(
                check_install,
                ours("vsperf_test", ("VSPERF_ACTION", "setup"), ("SCENARIO", scenario.name), ("GUEST", "1")),
            ),
        )
        virt = (TaskStep(name=VIRT_INSTALL_TASK), TaskStep(name=VIRT_START_TASK))

    collector = (("COLLECTOR", options.collector),) if options.collector is not None else ()
    dut = RecipePlan(
        role=DUT_ROLE,
        hostname=options.dut_host,
        whiteboard=f"ovsperf {scenario.name}: DUT {options.dut_host}",
        kernel_options_post=" ".join(scenario.all_kernel_options),
        tasks=(
            check_install,
            ours("vsperf_test", ("VSPERF_ACTION", "setup"), ("SCENARIO", scenario.name), *inventory),
            *((ours("setup_trex", *inventory),) if trex else ()),
            sync_set(DUT_SSH_KEY, pubkey),
            *virt,
            sync_wait(MOONGEN_READY, options.trafficgen_host, hostkey),
            ours(
                "vsperf_test",
                ("VSPERF_ACTION", "run"),
                ("SCENARIO", scenario.name),
                *inventory,
                *collector,
                ("VSPERF_TIMEOUT_S", str(vsperf_run_budget_s(scenario))),
            ),
            sync_set(VSPERF_END),
            *sleeper,
        ),
        guest=guest,
        reserve_s=reserve_s,
    )
    if engine is Engine.OVSPERF:
        dut = replace(
            dut,
            tasks=(
                check_install,
                ours("ovsperf_test", ("OVSPERF_ACTION", "setup"), *inventory),
                ours("setup_dpdk", *inventory),
                sync_set(DUT_SSH_KEY, pubkey),
                sync_wait(TRAFFICGEN_READY, options.trafficgen_host, hostkey),
                ours(
                    "ovsperf_test",
                    ("OVSPERF_ACTION", "run"),
                    ("SCENARIO", scenario.name),
                    *inventory,
                    *collector,
                    ("OVSPERF_TIMEOUT_S", str(ovsperf_run_budget_s(scenario))),
                ),
                sync_set(OVSPERF_END),
                *sleeper,
            ),
        )

    prefix = f"[{options.tag}] " if options.tag else ""
    return JobPlan(
        whiteboard=(
            f"{prefix}ovsperf {scenario.name} on {options.distro_value} {options.arch}: "
            f"DUT {options.dut_host}, TG {options.trafficgen_host}"
        ),
        distro_match=options.distro_match,
        distro=options.distro_value,
        arch=options.arch,
        variant=options.variant,
        ks_meta=KS_META,
        repos=tuple((f"ovsperf-kickrepo-{i}", url) for i, url in enumerate(options.kick_repos, start=1)),
        recipes=(trafficgen, dut),
    )


@functools.lru_cache(maxsize=8)
def _template(name: str) -> jinja2.Template:
    """Return the compiled template ``templates/beaker/<name>`` (compiled once per process)."""
    env: jinja2.Environment = environment("beaker", autoescape=True)
    return env.get_template(name)


def render_plan(plan: JobPlan, template: str = "job.xml.j2") -> str:
    """Spell ``plan`` as Beaker job XML with ``templates/beaker/<template>``.

    :returns: the job XML, starting with the XML declaration, UTF-8 text.
    :raises JobCreatorError: when the template is missing or fails (a template bug).
    """
    try:
        return _template(template).render(plan=plan)
    except jinja2.TemplateError as err:
        raise JobCreatorError(f"Template 'beaker/{template}' failed: {err}") from err


def render_job(scenario: Scenario, options: JobOptions) -> str:
    """Return the (not yet validated) Beaker job XML for ``scenario`` with ``options``."""
    return render_plan(plan_job(scenario, options))
