"""What ``ovsperf-remote`` runs where: the Beaker job's plan, taken from jobcreator, host by host.

There is one source of truth for the order of the tasks and their parameters:
``jobcreator.render.plan_job`` (what ``jobcreator`` renders into the Beaker job XML). This module
calls it for the scenario and the two hosts and keeps, per host recipe, our ``/ovsperf/*`` tasks
in order with their parameters unchanged. What only Beaker does is left out, each with a note:

* ``/distribution/check-install`` (Beaker's install check): the hosts are already installed;
* ``/distribution/virt/install`` and ``virt/start`` and the guest recipe (PVP): there is no Beaker
  guest; ``vsperf_test run`` then finds no libvirt domain and VSperf boots the inventory's
  ``guest_image`` as it is, so that image must have been prepared (docs/remote.md);
* ``/ovsperf/sleeper`` (Beaker reservations): nothing to reserve.

What VSperf drives on the traffic generator (``jobcreator --generator``) is the inventory's
``generator`` of the DUT's peer (:func:`~vsperf_configs.generatorchoice.choose_generator`, which
jobcreator applies too): ``trex`` plans ``setup_trex`` where ``moongen`` plans ``build_moongen``,
as the Beaker job does.

The distro, kick repositories and whiteboard the plan also carries are Beaker's and unused here.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from jobcreator.jobmodel import JobOptions, TaskStep
from jobcreator.render import TASK_NAMESPACE, plan_job
from ovsperf_catalog.model import Engine, Scenario, VsperfTrafficgen
from ovsperf_common.errors import FieldError
from ovsperf_common.runner import one_line
from vsperf_configs.errors import InventoryError
from vsperf_configs.generatorchoice import choose_generator, dut_entry
from vsperf_configs.inventory import Inventory, trex_peer

UNUSED_DISTRO = "family:preprovisioned"
"""The distro ``plan_job`` needs for the Beaker job header; pre-provisioned hosts have theirs."""

BEAKER_ONLY = {"sleeper"}
"""Our tasks that only make sense under Beaker (reservations)."""
TREX_TASK = "setup_trex"
"""The task that installs, starts and stops TRex (in place of ``build_moongen``)."""


@dataclass(frozen=True)
class RemoteStep:
    """One task to run on a host: ``beaker_tasks/<task>/runtest.sh`` with ``params`` in its environment."""

    task: str
    """Directory under ``beaker_tasks/``, e.g. ``vsperf_test``."""
    params: tuple[tuple[str, str], ...]
    """``(name, value)`` environment of the task, exactly as the Beaker job passes them."""


@dataclass(frozen=True)
class HostPlan:
    """The steps of one host, in order, and what was left out (and why)."""

    role: str
    """``TRAFFICGEN`` or ``DUT`` (the Beaker recipe's role)."""
    host: str
    """The host name as given (``SYNC_PEER`` of the other host's tasks uses it)."""
    steps: tuple[RemoteStep, ...]
    skipped: tuple[str, ...]
    """One sentence per Beaker-only task that is not run."""


def _host_plan(role: str, host: str, tasks: tuple[TaskStep, ...], guest: bool) -> HostPlan:
    steps: list[RemoteStep] = []
    skipped: list[str] = []
    for task in tasks:
        if task.name.startswith(TASK_NAMESPACE + "/"):
            name = task.name[len(TASK_NAMESPACE) + 1 :]
            if name in BEAKER_ONLY:
                skipped.append(f"{task.name}: a Beaker reservation; nothing to reserve here.")
            else:
                steps.append(RemoteStep(name, task.params))
        elif task.name.endswith("/check-install"):
            skipped.append(f"{task.name}: Beaker's install check; the host is already installed.")
        else:
            skipped.append(
                f"{task.name}: Beaker's guest install; VSperf boots the inventory's guest_image as it is."
            )
    if guest:
        skipped.append("guest recipe (vsperf_test setup GUEST=1): run it inside the guest image beforehand.")
    return HostPlan(role, host, tuple(steps), tuple(skipped))


def trex_tarball_url(inventory: Inventory, trafficgen_host: str, dut_host: str) -> str:
    """Return the URL ``setup_trex`` installs TRex from: the ``trex:`` record of the DUT's peer.

    ``setup_trex`` runs on the host given as ``--tg`` and reads that record there, so the DUT's peer
    must be that host (its inventory name or its ``address``, as ``ovsperf-remote lab`` checks).

    :raises FieldError: naming ``--tg`` when the DUT's peer is another host; ``--inventory`` when no
        traffic generator record of the inventory gives a TRex tarball for ``trafficgen_host``.
    """
    dut = dut_entry(inventory, dut_host)
    if dut is not None and dut.moongen is not None and dut.moongen.generator is VsperfTrafficgen.TREX:
        peer = dut.moongen
        if trafficgen_host.lower() not in (peer.host.lower(), peer.address.lower()):
            raise FieldError(
                f"'{one_line(trafficgen_host)}' is not the traffic generator of the DUT "
                f"'{one_line(dut_host)}' in '{one_line(inventory.path)}', which drives TRex on "
                f"'{one_line(peer.host)}' (address '{one_line(peer.address)}'): setup_trex would install "
                "another host's TRex.",
                field="--tg",
            )
        tg = trex_peer(dut, inventory.hosts)  # checked when the inventory was loaded
    else:
        try:
            tg = inventory.get(trafficgen_host)
        except InventoryError:
            tg = None
    if tg is None or tg.trex is None:
        raise FieldError(
            f"'{one_line(inventory.path)}' gives no TRex tarball for the traffic generator "
            f"'{one_line(trafficgen_host)}': setup_trex needs its 'trex:' record (url, sha256, "
            "install_dir, ports).",
            field="--inventory",
        )
    return tg.trex.url


def remote_plan(
    scenario: Scenario,
    trafficgen_host: str,
    dut_host: str,
    *,
    inventory: str | None = None,
    collector: str | None = None,
    engine: Engine | None = None,
    generator: VsperfTrafficgen | None = None,
    local_inventory: Inventory | None = None,
) -> tuple[HostPlan, HostPlan]:
    """Return the traffic generator's and the DUT's steps for ``scenario`` (module docstring).

    :param inventory: ``INVENTORY`` of the tasks: a path on the hosts, or relative to the
        uploaded repository copy.
    :param collector: ``COLLECTOR`` of ``vsperf_test run`` (``ovsperf_test run``; ``user@host:/path``),
        or None to keep the results on the DUT.
    :param engine: ``--engine``; None for the scenario's own.
    :param generator: ``--generator``; None for the inventory's (``choose_generator``).
    :param local_inventory: the inventory file ``--inventory`` names here, loaded; None when it is
        a path on the hosts.
    :raises OvsperfError: (jobcreator's option errors) when a host name or value is invalid,
        naming the option; ``--generator trex`` with the engine ``ovsperf``.
    :raises FieldError: naming ``--generator`` when it disagrees with the inventory.
    """
    measuring = engine if engine is not None else scenario.engine
    options = JobOptions(
        trafficgen_host=trafficgen_host,
        dut_host=dut_host,
        distro=UNUSED_DISTRO,
        inventory=inventory,
        collector=collector,
        engine=engine,
        generator=choose_generator(generator, local_inventory, dut_host, measuring),
    )
    plan = plan_job(scenario, options)
    trafficgen, dut = plan.recipes
    return (
        _host_plan(trafficgen.role, trafficgen.hostname, trafficgen.tasks, guest=False),
        _host_plan(dut.role, dut.hostname, dut.tasks, guest=dut.guest is not None),
    )


def render_plan(plans: tuple[HostPlan, HostPlan]) -> str:
    """Return the plans as text: per host its numbered steps with parameters, then what is skipped."""
    lines: list[str] = []
    for plan in plans:
        lines.append(f"{plan.role} {one_line(plan.host)}:")
        for number, step in enumerate(plan.steps, start=1):
            params = " ".join(f"{k}={shlex.quote(v)}" for k, v in step.params)
            lines.append(f"  {number}. {step.task}{' ' + one_line(params) if params else ''}")
        lines += [f"  (not run: {one_line(note)})" for note in plan.skipped]
    return "\n".join(lines) + "\n"
