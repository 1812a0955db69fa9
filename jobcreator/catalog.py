"""Load the scenario catalog (YAML) into validated :class:`~jobcreator.model.Scenario` records.

The catalog is the single source of truth for jobcreator, the VSperf configuration generator
and the local lab. The packaged default is ``jobcreator/scenarios.yaml``; every command that
reads it also takes ``--catalog FILE``.
"""

from __future__ import annotations

import importlib.resources
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jobcreator.errors import CatalogError, UnknownScenarioError
from jobcreator.model import Guest, GuestLoopback, Hugepages, Scenario, VsperfTest, Vswitch
from ovsperf_common.units import RFC2544_FRAME_SIZES_BYTES, check_frame_size

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
    }
)
_DEFAULT_KEYS = frozenset(
    {"frame_sizes_bytes", "search_trial_s", "validation_trial_s", "hugepages", "kernel_options", "guest"}
)
_GUEST_KEYS = frozenset({"loopback", "vcpus", "memory_mb", "nic_queues"})


def default_catalog_path() -> Path:
    """Return the path of the catalog shipped with the package."""
    return Path(str(importlib.resources.files("jobcreator").joinpath("scenarios.yaml")))


@dataclass(frozen=True)
class Catalog:
    """All scenarios of one catalog file, by name, in file order."""

    path: Path
    """The file the catalog was read from."""
    scenarios: Mapping[str, Scenario]
    """Scenario name → scenario, in file order."""

    def get(self, name: str) -> Scenario:
        """Return the scenario called ``name``.

        :raises UnknownScenarioError: listing the valid names when there is none.
        """
        try:
            return self.scenarios[name]
        except KeyError:
            valid = ", ".join(self.scenarios)
            raise UnknownScenarioError(
                f"Unknown scenario '{name}'; valid scenarios are: {valid}.", path=self.path
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
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CatalogError(f"cannot read the scenario catalog: {err}.", path=path) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise CatalogError(f"not valid YAML: {err}", path=path) from err
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), dict):
        raise CatalogError("expected a mapping with a 'scenarios' mapping at the top level.", path=path)
    unknown_top = set(data) - {"defaults", "scenarios"}
    if unknown_top:
        raise CatalogError(
            f"unknown top-level keys {sorted(unknown_top)}; expected 'defaults', 'scenarios'.", path=path
        )
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise CatalogError("'defaults' must be a mapping.", path=path, key="defaults")
    unknown_defaults = set(defaults) - _DEFAULT_KEYS
    if unknown_defaults:
        raise CatalogError(
            f"unknown keys {sorted(unknown_defaults)}; expected some of {sorted(_DEFAULT_KEYS)}.",
            path=path,
            key="defaults",
        )
    scenarios: dict[str, Scenario] = {}
    for name, entry in data["scenarios"].items():
        try:
            scenarios[str(name)] = _parse_scenario(str(name), entry, defaults)
        except CatalogError as err:
            raise CatalogError(
                err.reason,
                path=path,
                entry=str(name),
                key=err.key,
            ) from err
    if not scenarios:
        raise CatalogError("the catalog defines no scenarios.", path=path)
    log.debug("Loaded %d scenarios from '%s'.", len(scenarios), path)
    return Catalog(path=path, scenarios=scenarios)


def _parse_scenario(name: str, entry: Any, defaults: dict[str, Any]) -> Scenario:
    if not isinstance(entry, dict):
        raise CatalogError("the entry must be a mapping of fields.")
    unknown = set(entry) - _SCENARIO_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise CatalogError(f"unknown field; expected some of {sorted(_SCENARIO_KEYS)}.", key=key)
    merged = {**{k: v for k, v in defaults.items() if k != "guest"}, **entry}

    description = _require(merged, "description", str)
    vswitch = _enum(Vswitch, merged, "vswitch")
    raw_tests = _require(merged, "tests", list)
    if not raw_tests:
        raise CatalogError("at least one VSperf test is required.", key="tests")
    tests = tuple(_enum_value(VsperfTest, t, "tests") for t in raw_tests)
    if len(set(tests)) != len(tests):
        raise CatalogError("a test is listed twice.", key="tests")
    queues = _positive_int(merged, "queues")
    frame_sizes = _frame_sizes(merged.get("frame_sizes_bytes"))
    loss_percent = merged.get("acceptable_loss_percent")
    if (
        isinstance(loss_percent, bool)
        or not isinstance(loss_percent, (int, float))
        or not 0 <= loss_percent < 100
    ):
        raise CatalogError(
            f"{loss_percent!r} is not a percentage in [0, 100).", key="acceptable_loss_percent"
        )
    search_s = _positive_int(merged, "search_trial_s")
    validation_s = _positive_int(merged, "validation_trial_s")
    raw_huge = _require(merged, "hugepages", dict)
    hugepages = Hugepages(size=str(raw_huge.get("size")), count=raw_huge.get("count"))
    kernel_options = tuple(str(o) for o in _require(merged, "kernel_options", list))

    guest = _parse_guest(entry.get("guest"), defaults.get("guest") or {}, queues)
    needs_guest = any(t is not VsperfTest.PHY2PHY_TPUT for t in tests)
    if needs_guest and guest is None:
        raise CatalogError("a PVP/PVVP test needs a 'guest' entry.", key="guest")
    if guest is not None and not needs_guest:
        raise CatalogError("a guest is given but no test uses it (add 'pvp_tput').", key="guest")
    if vswitch is Vswitch.OVS_VANILLA and guest is not None and guest.loopback.uses_dpdk:
        raise CatalogError("testpmd in the guest needs vhost-user, i.e. vswitch 'OvsDpdkVhost'.", key="guest")

    return Scenario(
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
    )


def _parse_guest(raw: Any, defaults: dict[str, Any], queues: int) -> Guest | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise CatalogError("must be a mapping with 'loopback'.", key="guest")
    unknown = set(raw) - _GUEST_KEYS
    if unknown:
        raise CatalogError(
            f"unknown keys {sorted(unknown)}; expected some of {sorted(_GUEST_KEYS)}.", key="guest"
        )
    merged = {**defaults, "nic_queues": queues, **raw}
    loopback = _enum(GuestLoopback, merged, "loopback", prefix="guest.")
    return Guest(
        loopback=loopback,
        vcpus=_positive_int(merged, "vcpus", prefix="guest."),
        memory_mb=_positive_int(merged, "memory_mb", prefix="guest."),
        nic_queues=_positive_int(merged, "nic_queues", prefix="guest."),
    )


def _frame_sizes(raw: Any) -> tuple[int, ...]:
    if raw == "rfc2544":
        return RFC2544_FRAME_SIZES_BYTES
    if not isinstance(raw, list) or not raw:
        raise CatalogError("expected a non-empty list of sizes [B] or 'rfc2544'.", key="frame_sizes_bytes")
    try:
        sizes = [check_frame_size(s) for s in raw]
    except ValueError as err:
        raise CatalogError(str(err), key="frame_sizes_bytes") from err
    if len(set(sizes)) != len(sizes):
        raise CatalogError("a frame size is listed twice.", key="frame_sizes_bytes")
    return tuple(sorted(sizes))


def _require(data: dict[str, Any], key: str, kind: type, prefix: str = "") -> Any:
    if key not in data:
        raise CatalogError("required field is missing.", key=prefix + key)
    value = data[key]
    if not isinstance(value, kind):
        raise CatalogError(f"expected {kind.__name__}, got {value!r}.", key=prefix + key)
    return value


def _positive_int(data: dict[str, Any], key: str, prefix: str = "") -> int:
    value = _require(data, key, int, prefix)
    if isinstance(value, bool) or value <= 0:
        raise CatalogError(f"expected a positive integer, got {value!r}.", key=prefix + key)
    return int(value)


def _enum(cls: Any, data: dict[str, Any], key: str, prefix: str = "") -> Any:
    if key not in data:
        raise CatalogError("required field is missing.", key=prefix + key)
    return _enum_value(cls, data[key], prefix + key)


def _enum_value(cls: Any, value: Any, key: str) -> Any:
    try:
        return cls.from_spec(value)
    except CatalogError as err:
        raise CatalogError(err.reason, key=key) from err
