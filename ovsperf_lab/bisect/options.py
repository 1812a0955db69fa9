"""The options of ``ovsperf-lab bisect`` and the frozen request they make (light: the parser shows them).

The builds are given in build order, oldest first, the good build first and the bad build last:

* ``--builds SRC SRC …``: each as ``compare --b`` takes a side (``system``, an ovs-vswitchd binary,
  a directory of unpacked packages) or ``lib:DIR`` (the system's ovs-vswitchd with the DPDK
  libraries in ``DIR``, as ``--b-lib-dir``);
* ``--koji-package NAME --koji-tag TAG --good NVR --bad NVR``: the package's builds in the order
  they were tagged into ``TAG`` (Koji's tag history), from the good to the bad one.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovsperf_lab.bisect.model import Build, BuildKind
from ovsperf_lab.compare.config import CompareConfig, add_round_options
from ovsperf_lab.errors import LabError

LIB_PREFIX = "lib:"
"""``--builds`` item prefix of a DPDK library directory run under the system's ovs-vswitchd."""

DEFAULT_ARCHES = ("x86_64", "noarch")
"""RPM architectures unpacked from a Koji build."""

EPILOG = (
    "exit codes: 1 the first bad build was found (or narrowed to a few, skipped builds between); "
    "2 error, the range does not bracket a regression, a step stayed undecidable, Koji unreachable, "
    "or interrupted (the state is kept: --resume DIR continues)"
)


@dataclass(frozen=True)
class KojiRange:
    """Where a Koji-backed range's builds come from."""

    hub_url: str
    """Koji hub XML-RPC URL."""
    topurl: str
    """Koji file server (``packages/…``)."""
    tag: str
    """The tag whose history orders the builds."""
    package: str
    """The package (its builds' name)."""
    good: str
    """NVR of the good build."""
    bad: str
    """NVR of the bad build."""
    arches: tuple[str, ...] = DEFAULT_ARCHES
    """RPM architectures to unpack."""
    ca_bundle: str | None = None
    """CA bundle for TLS to the hub, from the koji profile."""
    timeout_s: float = 60.0
    """Per-call deadline [s]."""


@dataclass(frozen=True)
class BisectRequest:
    """What ``ovsperf-lab bisect`` was asked for, parsed; stored in the state file for ``--resume``."""

    scenario: str
    """Catalog scenario with ``phy2phy_tput`` whose CPU plan is used (``--config``)."""
    config: CompareConfig
    """How each step's comparison measures (frame size, metric, rounds, MDC target)."""
    builds: tuple[Build, ...] = ()
    """The builds, good first, bad last (``--builds``); empty for a Koji range until listed."""
    koji: KojiRange | None = None
    """A Koji-backed range (``--koji-*``)."""
    catalog: Path | None = None
    """Scenario catalog (``--catalog``); ``None``: the packaged one."""

    def __post_init__(self) -> None:
        """Check that exactly one kind of range is given.

        :raises LabError: naming the options.
        """
        if (self.koji is None) == (not self.builds):
            raise LabError(
                "Give the builds either as '--builds' (at least 2) or as a Koji range ('--koji-*')."
            )
        if self.koji is None and len(self.builds) < 2:
            raise LabError(f"Option '--builds' needs at least 2 builds (good, bad), got {len(self.builds)}.")

    def to_json(self) -> dict[str, Any]:
        """Return the request as a JSON object."""
        return {
            "scenario": self.scenario,
            "config": dataclasses.asdict(self.config),
            "builds": [b.to_json() for b in self.builds],
            "koji": None if self.koji is None else dataclasses.asdict(self.koji),
            "catalog": None if self.catalog is None else str(self.catalog),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BisectRequest:
        """Return the request :meth:`to_json` wrote.

        :raises LabError: for a missing or bad field.
        """
        try:
            koji = data.get("koji")
            return cls(
                scenario=str(data["scenario"]),
                config=CompareConfig(**data["config"]),
                builds=tuple(Build.from_json(b) for b in data["builds"]),
                koji=None if koji is None else KojiRange(**{**koji, "arches": tuple(koji["arches"])}),
                catalog=None if data.get("catalog") is None else Path(data["catalog"]),
            )
        except (KeyError, TypeError) as err:
            raise LabError(f"The request in the state file is malformed: {err!r}.") from err


def local_builds(items: list[str], steal_percent: float | None, steal_from: int | None) -> tuple[Build, ...]:
    """Return ``--builds`` items as builds, the test aid's CPU steal on builds ``steal_from`` … (from 1).

    :raises LabError: naming the option for an empty ``lib:`` item or a bad ``--cpu-steal-from``.
    """
    if (steal_percent is None) != (steal_from is None):
        raise LabError("Options '--cpu-steal' and '--cpu-steal-from' go together (a test aid).")
    if steal_from is not None and not 2 <= steal_from <= len(items):
        raise LabError(
            f"Option '--cpu-steal-from' must be in [2, {len(items)}] (a build after the good one)."
        )
    builds = []
    for index, item in enumerate(items):
        lib_dir = None
        source = item
        if item.startswith(LIB_PREFIX):
            lib_dir, source = item[len(LIB_PREFIX) :], "system"
            if not lib_dir:
                raise LabError(f"Option '--builds': item {index + 1} {item!r} names no library directory.")
        steal = steal_percent if steal_from is not None and index + 1 >= steal_from else None
        builds.append(Build(index, f"#{index + 1} {item}", BuildKind.LOCAL, source, lib_dir, steal))
    return tuple(builds)


def add_parser(sub: Any, generator_option: Callable[[Any], None]) -> None:
    """Add ``ovsperf-lab bisect`` to the sub-parsers ``sub`` (docs/lab.md "bisect").

    :param generator_option: adds ``--generator`` as ``compare`` has it.
    """
    bi = sub.add_parser(
        "bisect",
        help="which build made OVS slower? interleaved A/B comparisons over the builds between a good and a "
        "bad one",
        epilog=EPILOG,
    )
    bi.add_argument(
        "--config", help="catalog scenario with phy2phy_tput (e.g. OVS_DPDK1q); not with --resume"
    )
    bi.add_argument("--frame-sizes", default="64", help="one frame size incl. FCS [B] (64)")
    bi.add_argument(
        "--builds",
        nargs="+",
        metavar="SRC",
        help="the builds in build order, good first, bad last: 'system', an ovs-vswitchd binary, a dir of "
        f"unpacked packages, or '{LIB_PREFIX}DIR' (DPDK libraries for the system's ovs-vswitchd)",
    )
    koji = bi.add_argument_group("Koji range (instead of --builds)")
    koji.add_argument("--koji-package", metavar="NAME", help="package whose builds are bisected")
    koji.add_argument("--koji-tag", metavar="TAG", help="tag whose history orders the builds")
    koji.add_argument("--good", metavar="NVR", help="the good build")
    koji.add_argument("--bad", metavar="NVR", help="the bad build")
    koji.add_argument("--profile", help="koji profile (hub, topurl, CA) as the koji CLI reads it")
    koji.add_argument("--hub", help="Koji hub URL (overrides the profile's)")
    koji.add_argument("--topurl", help="Koji file server URL (overrides the profile's)")
    koji.add_argument(
        "--arch", action="append", help="RPM architecture to unpack (repeatable; x86_64 and noarch)"
    )
    bi.add_argument("--metric", choices=["mrr", "pdr"], default="mrr", help="as compare's (mrr)")
    generator_option(bi)
    add_round_options(bi, per="step")
    bi.add_argument("--seed", type=int, help="seed of the random A/B order of every step")
    bi.add_argument(
        "--cpu-steal", type=float, metavar="PCT",
        help="TEST AID: take this share of the PMD CPU of the builds from --cpu-steal-from on [%%]",
    )  # fmt: skip
    bi.add_argument("--cpu-steal-from", type=int, metavar="K", help="TEST AID: first slowed build (from 1)")
    bi.add_argument("--output", type=Path, default=Path("/tmp"), help="where bisect_<timestamp>/ goes (/tmp)")
    bi.add_argument(
        "--resume", type=Path, metavar="DIR", help="continue the bisection in DIR (its state.json)"
    )
    bi.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def request_from_args(args: argparse.Namespace, frame_size_bytes: int) -> BisectRequest:
    """Return the request the options of a new bisection make.

    :raises LabError: naming the option for a missing or bad one.
    """
    if not args.config:
        raise LabError("Option '--config' is required (or '--resume DIR').")
    config = CompareConfig(
        frame_size_bytes=frame_size_bytes,
        trial_s=args.trial_duration,
        min_rounds=args.min_rounds,
        max_rounds=args.rounds,
        target_mdc_percent=args.target_mdc,
        threshold_percent=args.threshold,
        seed=args.seed,
        metric=args.metric,
        generator=args.generator,
    )
    koji_given = [args.koji_package, args.koji_tag, args.good, args.bad]
    if args.builds and any(koji_given):
        raise LabError("Give the builds either as '--builds' or as a Koji range, not both.")
    if args.builds:
        builds = local_builds(args.builds, args.cpu_steal, args.cpu_steal_from)
        return BisectRequest(args.config, config, builds=builds, catalog=args.catalog)
    if not all(koji_given):
        raise LabError("A Koji range needs '--koji-package', '--koji-tag', '--good' and '--bad'.")
    if args.cpu_steal is not None:
        raise LabError("Option '--cpu-steal' is a test aid for '--builds' only.")
    from ovsperf_lab.bisect.kojibuilds import koji_range  # koji, requests: only for a Koji range

    return BisectRequest(
        args.config,
        config,
        koji=koji_range(
            args.profile,
            args.hub,
            args.topurl,
            tag=args.koji_tag,
            package=args.koji_package,
            good=args.good,
            bad=args.bad,
            arches=tuple(args.arch) if args.arch else DEFAULT_ARCHES,
        ),
        catalog=args.catalog,
    )
