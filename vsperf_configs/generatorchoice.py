"""Choose what VSperf drives on a DUT's traffic generator: the option, else the inventory's.

The inventory's ``generator`` of the DUT's peer (``trafficgen.generator``: ``moongen`` or ``trex``)
and the ``--generator`` option of ``jobcreator`` and ``ovsperf-remote`` must agree; both commands
choose here, so a mismatch is refused the same way wherever the job is made.
"""

from __future__ import annotations

from ovsperf_catalog.model import Engine, VsperfTrafficgen
from ovsperf_common.errors import FieldError
from ovsperf_common.runner import one_line
from vsperf_configs.errors import InventoryError
from vsperf_configs.inventory import Inventory
from vsperf_configs.model import HostInventory, HostRole

PEER_GENERATOR_FIELD = "trafficgen.generator"
"""The inventory field saying what VSperf drives on the DUT's traffic generator peer."""


def dut_entry(inventory: Inventory, dut_host: str) -> HostInventory | None:
    """Return the DUT's entry: the one named ``dut_host``, else the inventory's only DUT; else None."""
    try:
        return inventory.get(dut_host)
    except InventoryError:
        duts = [h for h in inventory.hosts.values() if h.role is HostRole.DUT]
        return duts[0] if len(duts) == 1 else None  # the DUT given as an address or an SSH alias


def inventory_generator(inventory: Inventory | None, dut_host: str) -> VsperfTrafficgen | None:
    """Return the inventory's ``generator`` of the DUT's traffic generator peer; None when unknown.

    :param inventory: the local inventory file, loaded; None when ``--inventory`` is a path on the
        hosts (or not given): then nothing is known here.
    :param dut_host: the DUT as given; the inventory's only DUT stands in when no entry has its name.
    """
    if inventory is None:
        return None
    dut = dut_entry(inventory, dut_host)
    if dut is None or dut.moongen is None:
        return None
    return dut.moongen.generator


def choose_generator(
    option: VsperfTrafficgen | None, inventory: Inventory | None, dut_host: str, engine: Engine
) -> VsperfTrafficgen:
    """Return what VSperf drives on the TG: ``--generator``, else the inventory's, else MoonGen.

    The inventory's ``generator`` is VSperf's: with the engine ``ovsperf`` (``ovsperf-trafficgen`` on
    the TG) it is not taken, and an explicit ``--generator trex`` is refused by jobcreator's
    ``plan_job``.

    :param option: ``--generator``; None when not given.
    :param inventory: the local inventory file, loaded (:func:`inventory_generator`).
    :param engine: the engine that measures.
    :raises FieldError: naming ``--generator`` when it and the inventory's
        :data:`PEER_GENERATOR_FIELD` disagree.
    """
    found = inventory_generator(inventory, dut_host)
    if option is not None and found is not None and option is not found and inventory is not None:
        raise FieldError(
            f"'{option.value}' disagrees with the inventory '{one_line(inventory.path)}': its DUT "
            f"'{one_line(dut_host)}' has '{PEER_GENERATOR_FIELD}: {found.value}'. Leave --generator out "
            "to follow the inventory, or change the one that is wrong.",
            field="--generator",
        )
    if option is not None:
        return option
    return found if found is not None and engine is Engine.VSPERF else VsperfTrafficgen.MOONGEN
