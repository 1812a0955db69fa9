"""Load the scenario catalog (YAML) into validated :class:`~ovsperf_catalog.model.Scenario` records.

The catalog is the single source of truth for jobcreator, the VSperf configuration generator,
the local lab, remote, kojiwatch and ciflow. The packaged default is
``ovsperf_catalog/scenarios.yaml``; every command that reads it also takes another one
(``--catalog FILE``; ciflow: ``catalog:`` in its configuration).
"""

from __future__ import annotations

import importlib.resources
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ovsperf_catalog.errors import CatalogError
from ovsperf_catalog.model import (
    MAX_FLOWS,
    Engine,
    Guest,
    GuestLoopback,
    Hugepages,
    Scenario,
    Topology,
    TunnelType,
    VsperfTest,
    Vswitch,
)
from ovsperf_common import fields
from ovsperf_common.errorfmt import located
from ovsperf_common.errors import FieldError
from ovsperf_common.regularfile import read_regular_text
from ovsperf_common.units import (
    MAX_FRAME_SIZE_BYTES,
    MIN_FRAME_SIZE_BYTES,
    RFC2544_FRAME_SIZES_BYTES,
    check_frame_size,
)

log = logging.getLogger(__name__)

_SCENARIO_KEYS = frozenset(
    {
        "description",
        "vswitch",
        "tests",
        "queues",
        "guest",
        "frame_sizes_bytes",
        "acceptable_loss_percent",
        "search_trial_s",
        "validation_trial_s",
        "hugepages",
        "kernel_options",
        "engine",
        "tunnel_type",
        "flows",
    }
)
_DEFAULT_KEYS = frozenset(
    {
        "frame_sizes_bytes",
        "search_trial_s",
        "validation_trial_s",
        "hugepages",
        "kernel_options",
        "guest",
        "engine",
    }
)
_GUEST_KEYS = frozenset({"loopback", "vcpus", "memory_mb", "nic_queues"})


def default_catalog_path() -> Path:
    """Return the path of the catalog shipped with the package."""
    return Path(str(importlib.resources.files("ovsperf_catalog").joinpath("scenarios.yaml")))


@dataclass(frozen=True)
class Catalog:
    """All scenarios of one catalog file, by name, in file order."""

    path: Path
    """The file the catalog was read from."""
    scenarios: Mapping[str, Scenario]
    """Scenario name → scenario, in file order."""

    def get(self, name: str) -> Scenario:
        """Return the scenario called ``name``.

        :raises CatalogError: listing the valid names when there is none.
        """
        try:
            return self.scenarios[name]
        except KeyError:
            valid = ", ".join(self.scenarios)
            raise CatalogError(
                located(f"Unknown scenario '{name}'; valid scenarios are: {valid}.", self.path)
            ) from None

    def names(self) -> tuple[str, ...]:
        """Return the scenario names in file order."""
        return tuple(self.scenarios)


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate the scenario catalog at ``path`` (default: the packaged one).

    :returns: the catalog with every scenario validated.
    :raises CatalogError: naming the file, the scenario and the field when the file cannot be
        read, is not YAML, or an entry is malformed (unknown key, wrong type, invalid value).
    """
    path = Path(path) if path is not None else default_catalog_path()
    try:
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as err:
        raise CatalogError(located(f"cannot read the scenario catalog: {err}.", path)) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CatalogError(located(f"not valid YAML: {err}", path)) from err
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), dict):
        raise CatalogError(located("expected a mapping with a 'scenarios' mapping at the top level.", path))
    try:
        fields.reject_unknown(data, ("defaults", "scenarios"))
        defaults = dict(fields.mapping(data.get("defaults") or {}, "defaults"))
        fields.reject_unknown(defaults, _DEFAULT_KEYS, "defaults")
    except FieldError as err:
        raise CatalogError(err.located(path), field=err.field) from err
    scenarios: dict[str, Scenario] = {}
    for name, entry in data["scenarios"].items():
        try:
            scenarios[str(name)] = _parse_scenario(str(name), entry, defaults)
        except FieldError as err:
            raise CatalogError(err.located(path, ("scenario", str(name))), field=err.field) from err
    if not scenarios:
        raise CatalogError(located("the catalog defines no scenarios.", path))
    log.debug("Loaded %d scenarios from '%s'.", len(scenarios), path)
    return Catalog(path=path, scenarios=scenarios)


def _parse_scenario(name: str, entry: Any, defaults: dict[str, Any]) -> Scenario:
    """Return the scenario of one catalog entry merged over ``defaults``.

    :raises FieldError: naming the field that is missing, unknown or invalid.
    """
    entry = dict(fields.mapping(entry))
    unknown = sorted(set(entry) - _SCENARIO_KEYS)
    if unknown:
        raise FieldError(f"unknown field; expected some of {sorted(_SCENARIO_KEYS)}.", field=unknown[0])
    merged = {**{k: v for k, v in defaults.items() if k != "guest"}, **entry}

    description = fields.string(fields.required(merged, "description"), "description")
    vswitch = Vswitch.from_spec(fields.required(merged, "vswitch"), field="vswitch")
    raw_tests = fields.required(merged, "tests")
    if not isinstance(raw_tests, list) or not raw_tests:
        raise FieldError("at least one VSperf test is required (a list).", field="tests")
    tests = tuple(VsperfTest.from_spec(t, field="tests") for t in raw_tests)
    if len(set(tests)) != len(tests):
        raise FieldError("a test is listed twice.", field="tests")
    queues = fields.positive_int(fields.required(merged, "queues"), "queues")
    frame_sizes = _frame_sizes(merged.get("frame_sizes_bytes"))
    loss_percent = merged.get("acceptable_loss_percent")
    if (
        isinstance(loss_percent, bool)
        or not isinstance(loss_percent, (int, float))
        or not 0 <= loss_percent < 100
    ):
        raise FieldError(
            f"{loss_percent!r} is not a percentage in [0, 100).", field="acceptable_loss_percent"
        )
    search_s = fields.positive_int(fields.required(merged, "search_trial_s"), "search_trial_s")
    validation_s = fields.positive_int(fields.required(merged, "validation_trial_s"), "validation_trial_s")
    raw_huge = fields.mapping(fields.required(merged, "hugepages"), "hugepages")
    hugepages = Hugepages(
        size=str(raw_huge.get("size")), count=fields.positive_int(raw_huge.get("count"), "hugepages.count")
    )
    raw_options = fields.required(merged, "kernel_options")
    if not isinstance(raw_options, list):
        raise FieldError("expected a list of kernel options.", field="kernel_options")
    kernel_options = tuple(fields.kernel_option(o, f"kernel_options[{i}]") for i, o in enumerate(raw_options))

    engine = Engine.from_spec(merged.get("engine", Engine.VSPERF.value), field="engine")

    guest = _parse_guest(entry.get("guest"), defaults.get("guest") or {}, queues)
    needs_guest = any(t.topology in (Topology.PVP, Topology.PVVP) for t in tests)
    if needs_guest and guest is None:
        raise FieldError("a PVP/PVVP test needs a 'guest' entry.", field="guest")
    if guest is not None and not needs_guest:
        raise FieldError(
            "a guest is given but no test uses it (add 'pvp_tput' or 'pvvp_tput').", field="guest"
        )
    if vswitch is Vswitch.OVS_VANILLA and guest is not None and guest.loopback.uses_dpdk:
        raise FieldError("testpmd in the guest needs vhost-user, i.e. vswitch 'OvsDpdkVhost'.", field="guest")
    tunnel_type = _tunnel_type(merged.get("tunnel_type"), tests)
    if tunnel_type is not None:
        _check_overlay_frame_sizes(tunnel_type, tests, frame_sizes)
    _check_datapath(vswitch, tests)
    flows = _flows(merged.get("flows", [1]))

    scenario = Scenario(
        name=name,
        description=description,
        vswitch=vswitch,
        tests=tests,
        rx_queues=queues,
        tx_queues=queues,
        guest=guest,
        frame_sizes_bytes=frame_sizes,
        loss_ratio_limit=float(loss_percent) / 100.0,
        search_trial_s=search_s,
        validation_trial_s=validation_s,
        hugepages=hugepages,
        kernel_options=kernel_options,
        engine=engine,
        tunnel_type=tunnel_type,
        flows=flows,
    )
    if guest is not None:
        _check_guest_memory(scenario, guest)
    return scenario


def _check_guest_memory(scenario: Scenario, guest: Guest) -> None:
    """Refuse hugepages that cannot back every guest a test boots at once (PVVP: two).

    :raises FieldError: naming ``hugepages.count`` with the memory needed and reserved [MiB].
    """
    page_mb = {"2M": 2, "1G": 1024}[scenario.hugepages.size]
    reserved_mb = scenario.hugepages.count * page_mb
    needed_mb = scenario.guest_count * guest.memory_mb
    if needed_mb >= reserved_mb:
        raise FieldError(
            f"{scenario.hugepages.count} x {scenario.hugepages.size} hugepages ({reserved_mb} MiB) "
            f"cannot back {scenario.guest_count} guest(s) x {guest.memory_mb} MiB and leave OVS its DPDK "
            "memory; reserve more pages or give the guest less memory.",
            field="hugepages.count",
        )


def _tunnel_type(raw: Any, tests: tuple[VsperfTest, ...]) -> TunnelType | None:
    """Return the ``tunnel_type`` of a scenario: required with an overlay test, refused without.

    :raises FieldError: naming ``tunnel_type`` when it is missing, invalid or given without an
        overlay test; naming ``tests`` when overlay tests share the scenario with others (VSperf
        runs a scenario's tests in one invocation, and ``--integration`` knows only its
        integration tests).
    """
    overlay = [t.value for t in tests if t.tunnel_operation is not None]
    if raw is None:
        if overlay:
            raise FieldError(
                f"the overlay test(s) {', '.join(overlay)} need a tunnel type; "
                f"expected one of {[t.value for t in TunnelType]}.",
                field="tunnel_type",
            )
        return None
    if not overlay:
        raise FieldError(
            "a tunnel type is given but no test uses it "
            "(add 'overlay_p2p_decap_tput' or 'overlay_p2p_tput').",
            field="tunnel_type",
        )
    others = [t.value for t in tests if t.tunnel_operation is None]
    if others:
        raise FieldError(
            f"the overlay tests run under 'vsperf --integration', which knows none of {', '.join(others)}; "
            "give the overlay tests a scenario of their own.",
            field="tests",
        )
    return TunnelType.from_spec(raw, field="tunnel_type")


def _check_overlay_frame_sizes(
    tunnel_type: TunnelType, tests: tuple[VsperfTest, ...], frame_sizes: tuple[int, ...]
) -> None:
    """Refuse frame sizes an overlay test cannot send.

    A decapsulation test's frame is the tunnel frame: at least the encapsulation plus a 64 B inner
    frame. An encapsulation test's frame is the inner one: its tunnel frame must stay within
    1518 B (a 1500 B MTU on the generator's receiving port).

    :raises FieldError: naming ``frame_sizes_bytes`` with the first size out of range.
    """
    overhead = tunnel_type.overhead_bytes
    smallest, largest = MIN_FRAME_SIZE_BYTES + overhead, MAX_FRAME_SIZE_BYTES - overhead
    operations = {t.tunnel_operation for t in tests}
    if "decapsulation" in operations and frame_sizes[0] < smallest:
        raise FieldError(
            f"{frame_sizes[0]} B is too small for '{VsperfTest.OVERLAY_P2P_DECAP_TPUT}': its frames are "
            f"{tunnel_type} tunnel frames, {overhead} B of headers around a frame of at least "
            f"{MIN_FRAME_SIZE_BYTES} B, so at least {smallest} B.",
            field="frame_sizes_bytes",
        )
    if "encapsulation" in operations and frame_sizes[-1] > largest:
        raise FieldError(
            f"{frame_sizes[-1]} B is too large for '{VsperfTest.OVERLAY_P2P_TPUT}': {tunnel_type} adds "
            f"{overhead} B, so frames above {largest} B leave as tunnel frames "
            f"above {MAX_FRAME_SIZE_BYTES} B.",
            field="frame_sizes_bytes",
        )


def _check_datapath(vswitch: Vswitch, tests: tuple[VsperfTest, ...]) -> None:
    """Refuse userspace conntrack and overlay tests on the kernel datapath.

    The conntrack tests measure OVS's userspace conntrack, and the overlay tests' VSperf settings
    (docs/beaker_tasks.md) describe OVS-DPDK's tunnel ports; neither is the kernel datapath.

    :raises FieldError: naming ``tests`` when the vswitch is ``OvsVanilla`` and a test needs OVS-DPDK.
    """
    if vswitch is not Vswitch.OVS_VANILLA:
        return
    userspace = [t.value for t in tests if t.conntrack is not None or t.tunnel_operation is not None]
    if userspace:
        raise FieldError(
            f"the test(s) {', '.join(userspace)} measure OVS-DPDK's userspace datapath "
            "(conntrack, tunnel ports); use vswitch 'OvsDpdkVhost'.",
            field="tests",
        )


def _flows(raw: Any) -> tuple[int, ...]:
    """Return the ``flows`` of a scenario: distinct flow counts per direction, in the given order [1].

    :raises FieldError: naming ``flows`` when it is not a non-empty list of distinct integers in
        [1, :data:`~ovsperf_catalog.model.MAX_FLOWS`].
    """
    if not isinstance(raw, list) or not raw:
        raise FieldError("expected a non-empty list of flow counts per direction.", field="flows")
    flows = tuple(fields.positive_int(f, "flows") for f in raw)
    above = [f for f in flows if f > MAX_FLOWS]
    if above:
        raise FieldError(
            f"{above[0]} flows per direction are more than the traffic generator tells apart ({MAX_FLOWS}).",
            field="flows",
        )
    if len(set(flows)) != len(flows):
        raise FieldError("a flow count is listed twice.", field="flows")
    return flows


def _parse_guest(raw: Any, defaults: dict[str, Any], queues: int) -> Guest | None:
    """Return the guest of a scenario entry, or None when it has none.

    :raises FieldError: naming the ``guest.*`` field that is unknown or invalid.
    """
    if raw is None:
        return None
    raw = fields.mapping(raw, "guest")
    unknown = set(raw) - _GUEST_KEYS
    if unknown:
        raise FieldError(
            f"unknown keys {sorted(unknown)}; expected some of {sorted(_GUEST_KEYS)}.", field="guest"
        )
    merged = {**defaults, "nic_queues": queues, **raw}
    return Guest(
        loopback=GuestLoopback.from_spec(
            fields.required(merged, "loopback", "guest"), field="guest.loopback"
        ),
        vcpus=fields.positive_int(fields.required(merged, "vcpus", "guest"), "guest.vcpus"),
        memory_mb=fields.positive_int(fields.required(merged, "memory_mb", "guest"), "guest.memory_mb"),
        nic_queues=fields.positive_int(fields.required(merged, "nic_queues", "guest"), "guest.nic_queues"),
    )


def _frame_sizes(raw: Any) -> tuple[int, ...]:
    """Return the frame sizes of ``frame_sizes_bytes`` (a list, or ``'rfc2544'``), ascending [B].

    :raises FieldError: naming ``frame_sizes_bytes`` when a size is invalid or listed twice.
    """
    if raw == "rfc2544":
        return RFC2544_FRAME_SIZES_BYTES
    if not isinstance(raw, list) or not raw:
        raise FieldError("expected a non-empty list of sizes [B] or 'rfc2544'.", field="frame_sizes_bytes")
    try:
        sizes = [check_frame_size(s) for s in raw]
    except ValueError as err:
        raise FieldError(str(err), field="frame_sizes_bytes") from err
    if len(set(sizes)) != len(sizes):
        raise FieldError("a frame size is listed twice.", field="frame_sizes_bytes")
    return tuple(sorted(sizes))
