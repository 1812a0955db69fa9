"""Decide how a catalog scenario runs on this machine, or refuse it before anything starts.

Input: a :class:`~ovsperf_catalog.model.Scenario`, the :class:`~ovsperf_lab.machine.MachineFacts`
and the user's :class:`LabOptions`. Output: a :class:`LabPlan` (CPU assignment, frame sizes,
search parameters, forwarder for PVP) or :class:`~ovsperf_lab.errors.RefusedScenarioError`
listing every unmet requirement with the command that fixes it. Pure: no processes; the only files
read are a guest image's sidecars (:func:`~ovsperf_lab.vnf.read_guest_image`).
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ovsperf_catalog.model import GuestLoopback, Scenario, Topology, VsperfTest, Vswitch
from ovsperf_common.framemix import FrameMix, FrameSizeItem
from ovsperf_common.spec import SpecEnum
from ovsperf_common.units import check_frame_size
from ovsperf_lab.devargs import parse_devargs
from ovsperf_lab.errors import LabError, RefusedScenarioError
from ovsperf_lab.generators.registry import DEFAULT_GENERATOR, generator_backend
from ovsperf_lab.generators.sshhost import SshTarget
from ovsperf_lab.machine import MachineFacts
from ovsperf_lab.model import MAX_FLOWS, check_generator_mix
from ovsperf_lab.requirements import Demand, Need, unmet
from ovsperf_lab.search import mlrconfig
from ovsperf_lab.search.binary import SearchConfig
from ovsperf_lab.vnf import GUEST_BOOT_TIMEOUT_S, GuestAccel, read_guest_image

DEFAULT_RING_SIZE = 8192
"""vhost-user ring size of the lab's generator and VNF ports [descriptors]. Measured on a
2-core VM without isolated CPUs (docs/lab.md, "Ring size"): kernel threads (DAMON's kdamond,
rcu_preempt) take a CPU from a busy-polling thread for ~4 ms at a time, so a ring must hold a
few ms of frames; larger rings buffer longer stalls but no longer fit in the caches, and the
generator and OVS slow down once they fill. P2P 64 B NDR, three searches each: 4096 → mean
0.72 Mpps per direction, CV 9.8 %; 8192 → 0.92 Mpps, CV 1.6 % (and 0.95 Mpps, CV 26 % in a
second benchmark while the VM's own capacity halved); 16384 → 1.4 Mpps in two runs, the third
ended generator-limited."""

SUPPORTED_TESTS = frozenset(
    {
        VsperfTest.PHY2PHY_TPUT,
        VsperfTest.PVP_TPUT,
        VsperfTest.PVVP_TPUT,
        VsperfTest.PHY2PHY_CT_TPUT,
        VsperfTest.PHY2PHY_CT_NAT_TPUT,
        VsperfTest.OVERLAY_P2P_DECAP_TPUT,
        VsperfTest.OVERLAY_P2P_TPUT,
    }
)
"""The catalog's tests the local lab runs; :func:`plan_run` refuses the others, naming them."""

MAX_REPEATS = 20
"""Most repeats of a run ``--repeats`` accepts [1]."""

_TUNNEL_OPTION_KEY_RE = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
_TUNNEL_OPTION_VALUE_RE = re.compile(r"[A-Za-z0-9._:/-]{1,128}\Z")
"""``--tunnel-option KEY=VALUE``: OVS's option names (``remote_ip``, ``dst_port``) and plain values
(addresses, numbers, ``true``, ``flow``): no quotes, braces, commas or blanks, which OVS's database
syntax would read as more than one value, and nothing that could break a log line."""

_CPU_LIST_RE = re.compile(r"\d{1,4}(?:-\d{1,4})?(?:,\d{1,4}(?:-\d{1,4})?)*\Z")
"""An EAL ``-l`` core list: ``2``, ``2-3``, ``2,4-5`` (``--tg-cpus``)."""

RING_SIZES = tuple(1 << n for n in range(8, 16))
"""Ring sizes ``--ring-size`` accepts: powers of two, 256 to 32768 (the virtio maximum)."""


MAX_GOALS = 2
"""Most ``--goal`` options: the results format carries an NDR and one PDR (docs/results-format.md)."""

LATENCY_LEVELS_PERCENT = (0.0, 10.0, 50.0, 90.0)
"""Loads of the latency trials as shares of the PDR load [%], as CSIT reports them; 0 % means
:data:`~ovsperf_lab.search.mlrconfig.CSIT_MIN_LOAD_PPS`."""


class SearchMethod(SpecEnum):
    """How the throughput is searched (``--search``)."""

    MLR = "mlr"
    """FD.io CSIT's MLRsearch: NDR and PDR in one search, then latency at fixed loads (default)."""
    BINARY = "binary"
    """lua-trafficgen's bisection with a validation trial, one loss limit (Beaker-lab numbers)."""


class FlowRules(SpecEnum):
    """What the bridge's OpenFlow rules match (``--flow-rules``; docs/lab.md, flow scale)."""

    PORTS = "ports"
    """``in_port=A,actions=output:B`` (VSperf's port-to-port flows). OVS >= 2.17 classifies such
    traffic by its *simple match* on the port, whatever the number of flows."""
    UDP = "udp"
    """``in_port=A,udp,actions=output:B``: the megaflow also matches the L3/L4 headers, so each
    generated flow takes an EMC/SMC/megaflow entry and the flow count exercises the caches."""


class VnfKind(enum.Enum):
    """What forwards frames in the middle of a PVP topology."""

    TESTPMD = "testpmd"
    """``dpdk-testpmd`` io forwarding in a host process (default; no image needed)."""
    QEMU = "qemu"
    """A QEMU guest (KVM or TCG) booted from the user's image; PVVP: two."""


@dataclass(frozen=True)
class LabOptions:
    """What the user asked for on the command line; ``None`` means "the scenario's value"."""

    frame_sizes_bytes: tuple[FrameSizeItem, ...] | None = None
    """Frame sizes including FCS [B] and frame-size mixes (``--frame-sizes``,
    ``ovsperf_common.framemix``); each is searched on its own."""
    search_trial_s: float | None = None
    """Search trial duration [s]."""
    validation_trial_s: float | None = None
    """Validation trial duration [s]."""
    loss_percent: float | None = None
    """Acceptable loss of the binary search [%] (``--loss``); ``None``: the scenario's. The run
    reads it as :attr:`loss_ratio_limit`."""
    pmd_cores: int | None = None
    """OVS PMD threads; default min(queues, CPUs - 1)."""
    guest_image: Path | None = None
    """Guest disk image for PVP/PVVP in QEMU guests; ``None`` uses the testpmd process VNF."""
    guest_accel: GuestAccel | None = None
    """How QEMU runs the guests (``--guest-accel``); ``None``: KVM when ``/dev/kvm`` is usable, else TCG."""
    guest_boot_timeout_s: float | None = None
    """Deadline of each guest's boot (``--guest-boot-timeout-s``) [s]; ``None``: by accelerator
    (:data:`~ovsperf_lab.vnf.GUEST_BOOT_TIMEOUT_S`)."""
    guest_memory_mb: int | None = None
    """Memory of each guest, hugepage-backed (``--guest-memory-mb``) [MiB]; ``None``: the
    scenario's, at most :data:`MAX_DEFAULT_GUEST_MEMORY_MB`."""
    granularity_percent: float = 1.0
    """Search granularity as a share of the start rate [%] (lua uses an absolute 0.1 Mpps)."""
    flows: int = SearchConfig.flows
    """UDP flows per direction (VSperf ``stream_count``) [1]; the first of :attr:`flow_sweep`."""
    flow_sweep: tuple[int, ...] = ()
    """``--flows 1,1000,1000000``: search every frame size at each of these flow counts, in this
    order [1]; empty: only :attr:`flows`."""
    flow_rules: FlowRules = FlowRules.PORTS
    """What the bridge's OpenFlow rules match (``--flow-rules``)."""
    max_trials: int = SearchConfig.max_trials
    """Bound on counted trials per frame size [1] (lua-trafficgen has none)."""
    nice: int = -10
    """Nice value of OVS, the generator and the forwarder (busy-polling threads) [1]."""
    drain_s: float = SearchConfig.drain_s
    """RX time after TX stops in each trial [s] (RFC 2544 §23: about 2 s)."""
    ovs_socket_mem_mb: int = 512
    """OVS ``dpdk-socket-mem`` [MiB]."""
    generator_memory_mb: int = 256
    """Generator EAL ``-m`` at least [MiB]; raised to what its rings need
    (:func:`~ovsperf_lab.generators.dpdk.pool_memory_mb`)."""
    vnf_memory_mb: int = 256
    """testpmd VNF EAL ``-m`` at least [MiB]; raised likewise."""
    ring_size: int = DEFAULT_RING_SIZE
    """Descriptors of every vhost-user ring the generator and the testpmd VNF serve [1]
    (``--ring-size``; virtio_user ``queue_size`` and ``--rxd``/``--txd``)."""
    tests: tuple[VsperfTest, ...] | None = None
    """Run only these tests of the scenario (``--test``)."""
    repeats: int = 1
    """How often every test runs (``--repeats``); repeat *r* of test *t* writes VSperf result
    index ``r * len(tests) + t``, which ``generate-report`` pools as samples of one test [1]."""
    search: SearchMethod = SearchMethod.MLR
    """Search method (``--search``)."""
    goals_percent: tuple[float, ...] = tuple(g * 100.0 for g in mlrconfig.CSIT_LOSS_RATIO_GOALS)
    """MLRsearch loss-ratio goals [%] (``--goal``, repeatable): 0 is the NDR, 0.5 CSIT's PDR. The
    run reads them as :attr:`loss_ratio_goals`."""
    goal_width_percent: float = mlrconfig.CSIT_RELATIVE_WIDTH * 100.0
    """MLRsearch goal width relative to the load [%] (``--goal-width``)."""
    exceed_ratio: float = mlrconfig.CSIT_EXCEED_RATIO
    """MLRsearch goal exceed ratio [1] (``--exceed-ratio``)."""
    final_trial_s: float = mlrconfig.CSIT_FINAL_TRIAL_S
    """MLRsearch final trial duration [s] (``--final-trial-duration``)."""
    duration_sum_s: float = mlrconfig.CSIT_DURATION_SUM_S
    """MLRsearch duration sum per goal [s] (``--duration-sum``)."""
    search_duration_max_s: float = mlrconfig.CSIT_SEARCH_DURATION_MAX_S
    """MLRsearch limit per frame size [s] (``--search-duration-max``)."""
    min_load_pps: float = mlrconfig.CSIT_MIN_LOAD_PPS
    """Lowest load MLRsearch tries and latency trials run at, per direction [pps] (``--min-load``;
    CSIT's 9001 unless a slow link, e.g. a virtual lab's, loses frames there)."""
    latency_levels_percent: tuple[float, ...] = LATENCY_LEVELS_PERCENT
    """Latency trial loads as shares of the PDR load [%] (``--latency-loads``); empty: none."""
    latency_trial_s: float = 10.0
    """Duration of each latency trial [s] (``--latency-time``): 10 s at 10 % of 1 Mpps gives
    1e6 frames, 1000 of them above the p99.9."""
    telemetry: bool = True
    """Collect DUT telemetry around each final / validation trial (``--no-telemetry`` turns it off;
    :mod:`ovsperf_lab.telemetry`)."""
    generator: str = DEFAULT_GENERATOR
    """Traffic generator backend (``--generator``; :mod:`ovsperf_lab.generators.registry`)."""
    dut_ports: tuple[str, ...] = ()
    """OVS's NIC ports as DPDK devargs, port 0 first (``--dut-port``, twice; two-host mode, docs/lab.md
    "Two hosts (NIC ports)"); empty: vhost-user ports to a generator on this machine."""
    tg_ports: tuple[str, ...] = ()
    """The generator's NIC ports as DPDK devargs, port 0 first (``--tg-port``, twice), cabled TG
    port 0 to DUT port 0 and TG port 1 to DUT port 1."""
    tg_ssh: SshTarget | None = None
    """The TG host the generator runs on over SSH (``--tg-ssh``, ``--tg-ssh-key``,
    ``--tg-known-hosts``); ``None``: this machine."""
    tg_binary: Path | None = None
    """The generator binary (on the TG with :attr:`tg_ssh`; ``--tg-binary``); ``None``: the
    backend's default (:data:`~ovsperf_lab.generators.sshhost.DEFAULT_REMOTE_BINARY` on a TG)."""
    tg_cpus: str | None = None
    """The generator's EAL core list (``--tg-cpus``, e.g. ``'2,3'``); ``None``: the plan's CPU."""
    pmd_cpus: tuple[int, ...] | None = None
    """OVS PMD CPUs (``--pmd-cpus``, from the inventory); ``None``: the lab picks them."""
    lcore_cpu: int | None = None
    """CPU of OVS's DPDK main lcore (``--lcore-cpu``); ``None``: the lab picks it."""
    ct_zone: int = 0
    """Conntrack zone of the conntrack tests' ``ct()`` actions (``--ct-zone``) [1]; OVS judges it
    (0 to 65535): a zone it refuses stops the test with OVS's message (:mod:`ovsperf_lab.conntrack`)."""
    tunnel_options: tuple[tuple[str, str], ...] = ()
    """More ``options:KEY=VALUE`` of the overlay tests' tunnel port (``--tunnel-option KEY=VALUE``,
    e.g. ``('csum', 'true')``); OVS judges them: one it refuses stops the test with OVS's message
    (:mod:`ovsperf_lab.overlay`)."""

    @property
    def wire(self) -> bool:
        """Return whether OVS's ports are NIC ports (``--dut-port``: two-host mode)."""
        return bool(self.dut_ports)

    @property
    def loss_ratio_limit(self) -> float | None:
        """Return ``--loss`` as a ratio [1], ``None`` when not given.

        The one conversion of the binary search's goal from the command line's percent: the run,
        the search and the results carry ratios; the results writer alone shows percentages.
        """
        return None if self.loss_percent is None else self.loss_percent / 100.0

    @property
    def loss_ratio_goals(self) -> tuple[float, ...]:
        """Return the MLRsearch goals as ratios [1], ascending (the one conversion of ``--goal``)."""
        return tuple(g / 100.0 for g in sorted(self.goals_percent))

    @property
    def flow_counts(self) -> tuple[int, ...]:
        """Return the flow counts to search each frame size at [1]: the sweep, else ``(flows,)``."""
        return self.flow_sweep or (self.flows,)

    def mlr_config(
        self, frame_size_bytes: FrameSizeItem, max_rate_pps: float, *, flows: int | None = None
    ) -> mlrconfig.MlrConfig:
        """Return the MLRsearch parameters for one frame size [B] or mix up to ``max_rate_pps`` per direction.

        :param flows: UDP flows per direction [1]; ``None``: :attr:`flows`.
        :raises LabError: naming the option whose value MLRsearch cannot take.
        """
        return mlrconfig.MlrConfig(
            frame_size_bytes=frame_size_bytes,
            max_rate_pps=max_rate_pps,
            loss_ratio_goals=self.loss_ratio_goals,
            exceed_ratio=self.exceed_ratio,
            relative_width=self.goal_width_percent / 100.0,
            initial_trial_s=min(mlrconfig.CSIT_INITIAL_TRIAL_S, self.final_trial_s),
            final_trial_s=self.final_trial_s,
            duration_sum_s=self.duration_sum_s,
            search_duration_max_s=self.search_duration_max_s,
            flows=self.flows if flows is None else flows,
            min_rate_pps=self.min_load_pps,
        )

    def hugepage_memory_mb(self, *, vnf: bool, forwarders: int = 1, forwarder_mb: int | None = None) -> int:
        """Return the hugepage memory OVS, the generator and the forwarders reserve on this machine [MiB].

        The generator counts unless it runs on a TG host; the forwarders (``forwarders`` of them,
        PVVP: 2) only with ``vnf``, each ``forwarder_mb`` [MiB] (a guest's memory), else
        :attr:`vnf_memory_mb`.
        """
        generator = 0 if self.tg_ssh is not None else self.generator_memory_mb
        each = self.vnf_memory_mb if forwarder_mb is None else forwarder_mb
        return self.ovs_socket_mem_mb + generator + (each * forwarders if vnf else 0)

    def __post_init__(self) -> None:
        """Check every option against its range.

        :raises LabError: naming the command-line option and the accepted range.
        """
        if self.frame_sizes_bytes is not None:
            if not self.frame_sizes_bytes:
                raise LabError("Option '--frame-sizes' names no frame size.")
            for size in self.frame_sizes_bytes:
                try:
                    if isinstance(size, FrameMix):
                        for entry, _ in size.entries:
                            check_frame_size(entry)
                        check_generator_mix(size)
                    else:
                        check_frame_size(size)
                except ValueError as err:
                    raise LabError(f"Option '--frame-sizes': {err}") from err
        for name in ("search_trial_s", "validation_trial_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise LabError(
                    f"Option '--{name.replace('_trial_s', '-time')}' must be positive, got {value!r}."
                )
        if self.loss_percent is not None and not 0 <= self.loss_percent < 100:
            raise LabError(f"Option '--loss' must be a percentage in [0, 100), got {self.loss_percent!r}.")
        if not 0 < self.granularity_percent < 50:
            raise LabError(f"Option '--granularity' must be in (0, 50) %, got {self.granularity_percent!r}.")
        if self.pmd_cores is not None and self.pmd_cores < 1:
            raise LabError(f"Option '--pmd-cores' must be >= 1, got {self.pmd_cores!r}.")
        if not 0 <= self.drain_s <= 30:
            raise LabError(f"Option '--drain-time' must be in [0, 30] s, got {self.drain_s!r}.")
        if self.max_trials < 2:
            raise LabError(f"Option '--max-trials' must be >= 2, got {self.max_trials!r}.")
        if self.ring_size not in RING_SIZES:
            raise LabError(
                f"Option '--ring-size' must be a power of two in [{RING_SIZES[0]}, {RING_SIZES[-1]}], "
                f"got {self.ring_size!r}."
            )
        for key, value in self.tunnel_options:
            if not _TUNNEL_OPTION_KEY_RE.match(key) or not _TUNNEL_OPTION_VALUE_RE.match(value):
                raise LabError(
                    f"Option '--tunnel-option' must be KEY=VALUE (a tunnel port option of OVS, such as "
                    f"csum=true), got {key!r}={value!r}."
                )
        if type(self.ct_zone) is not int or self.ct_zone < 0:
            raise LabError(f"Option '--ct-zone' must be a whole number >= 0, got {self.ct_zone!r}.")
        if not 1 <= self.repeats <= MAX_REPEATS:
            raise LabError(f"Option '--repeats' must be in [1, {MAX_REPEATS}], got {self.repeats!r}.")
        for flows in (self.flows, *self.flow_sweep):
            if type(flows) is not int or not 1 <= flows <= MAX_FLOWS:
                raise LabError(
                    f"Option '--flows' must be in [1, {MAX_FLOWS}] (the most flows per direction the "
                    f"generator can hold), got {flows!r}."
                )
        if self.guest_image is not None and (
            "," in str(self.guest_image) or not str(self.guest_image).isprintable()
        ):
            # QEMU splits '-drive file=PATH,...' at commas: one in the path would add drive options
            # (snapshot=off would let the guest write the image).
            raise LabError(
                f"Option '--guest-image': {str(self.guest_image)[:200]!r} holds a comma or a control "
                "character, which QEMU's -drive option cannot take; rename or link the image."
            )
        if self.guest_image is None:
            for name, value in (
                ("--guest-accel", self.guest_accel),
                ("--guest-memory-mb", self.guest_memory_mb),
                ("--guest-boot-timeout-s", self.guest_boot_timeout_s),
            ):
                if value is not None:
                    raise LabError(
                        f"Option '{name}' needs '--guest-image' (it sets how the QEMU guests run); "
                        "add '--guest-image' or drop it."
                    )
        if self.guest_boot_timeout_s is not None and not (
            math.isfinite(self.guest_boot_timeout_s) and 0 < self.guest_boot_timeout_s <= 7200
        ):
            raise LabError(
                f"Option '--guest-boot-timeout-s' must be in (0, 7200] s, got {self.guest_boot_timeout_s!r}."
            )
        if self.guest_memory_mb is not None and not (
            type(self.guest_memory_mb) is int
            and 128 <= self.guest_memory_mb <= 65536
            and self.guest_memory_mb % 2 == 0
        ):
            raise LabError(
                f"Option '--guest-memory-mb' must be an even number of MiB in [128, 65536] (2 MiB "
                f"hugepages), got {self.guest_memory_mb!r}."
            )
        if self.ovs_socket_mem_mb < 64 or self.generator_memory_mb < 16:
            raise LabError(
                f"Options '--socket-mem-mb' (>= 64) and '--tg-memory-mb' (>= 16) are too small: "
                f"{self.ovs_socket_mem_mb}, {self.generator_memory_mb}."
            )
        self._check_wire_options()
        if len(set(self.flow_sweep)) != len(self.flow_sweep):
            raise LabError(f"Option '--flows' names a flow count twice: {list(self.flow_sweep)}.")
        if self.flow_sweep and self.flow_sweep[0] != self.flows:
            raise LabError("Option '--flows': the first flow count of a sweep is the run's 'flows'.")
        self._check_mlr_options()

    def _check_wire_options(self) -> None:
        """Check the two-host options (``--dut-port``, ``--tg-*``) and the DUT CPU options.

        :raises LabError: naming the option.
        """
        for option, ports in (("--dut-port", self.dut_ports), ("--tg-port", self.tg_ports)):
            if ports and len(ports) != 2:
                raise LabError(
                    f"Option '{option}' must be given twice (port 0, then port 1), got {len(ports)}."
                )
            for text in ports:
                try:
                    parse_devargs(text)
                except ValueError as err:
                    raise LabError(f"Option '{option}': {err}.") from err
            if ports and parse_devargs(ports[0]).name == parse_devargs(ports[1]).name:
                raise LabError(f"Option '{option}' names the same device twice: {ports[0]!r}.")
        if bool(self.dut_ports) != bool(self.tg_ports):
            raise LabError("Options '--dut-port' and '--tg-port' go together (two-host mode: both, twice).")
        if not self.wire:
            given = [
                o for o, v in (("--tg-ssh", self.tg_ssh), ("--tg-binary", self.tg_binary)) if v is not None
            ]
            if given:
                raise LabError(
                    f"Option '{given[0]}' applies to two-host mode; give '--dut-port' and '--tg-port'."
                )
        elif not generator_backend(self.generator).wire:
            raise LabError(
                f"Option '--generator': '{self.generator}' cannot drive NIC ports ('--tg-port'); "
                "use 'trafficgen'."
            )
        if self.tg_cpus is not None and not _CPU_LIST_RE.match(self.tg_cpus):
            raise LabError(
                f"Option '--tg-cpus': {self.tg_cpus[:60]!r} is not a CPU list such as '2' or '2-3,6'."
            )
        if self.pmd_cpus is not None:
            if not self.pmd_cpus or len(set(self.pmd_cpus)) != len(self.pmd_cpus):
                raise LabError(f"Option '--pmd-cpus' must name different CPUs, got {list(self.pmd_cpus)!r}.")
            if self.pmd_cores is not None and self.pmd_cores != len(self.pmd_cpus):
                raise LabError(
                    f"Options '--pmd-cores' ({self.pmd_cores}) and '--pmd-cpus' "
                    f"({len(self.pmd_cpus)} CPUs) disagree."
                )
            if self.lcore_cpu is not None and self.lcore_cpu in self.pmd_cpus:
                raise LabError(f"Option '--lcore-cpu' {self.lcore_cpu} is one of '--pmd-cpus'.")

    def _check_mlr_options(self) -> None:
        """Check the MLRsearch and latency options (``--goal``, ``--latency-*``, binary-only ones).

        :raises LabError: naming the option.
        """
        if self.search is SearchMethod.MLR:
            for value, option in (
                (self.loss_percent, "--loss"),
                (self.search_trial_s, "--search-time"),
                (self.validation_trial_s, "--validation-time"),
            ):
                if value is not None:
                    raise LabError(
                        f"Option '{option}' applies to '--search binary'; MLRsearch takes '--goal' "
                        "and '--final-trial-duration'."
                    )
        if not 1.0 <= self.min_load_pps <= 1e9:
            raise LabError(f"Option '--min-load' must be within 1 and 1e9 pps, got {self.min_load_pps:g}.")
        goals = self.goals_percent
        if not 1 <= len(goals) <= MAX_GOALS or len(set(goals)) != len(goals):
            raise LabError(
                f"Option '--goal' must be given once or twice with different values (an NDR and one PDR), "
                f"got {list(goals)!r}."
            )
        if any(not (math.isfinite(g) and 0 <= g < 100) for g in goals):
            raise LabError(f"Option '--goal' must be loss percentages in [0, 100), got {list(goals)!r}.")
        self.mlr_config(64, 1e6)  # MlrConfig names the option of any other bad value
        levels = self.latency_levels_percent
        if any(not (math.isfinite(p) and 0 <= p <= 100) for p in levels) or len(set(levels)) != len(levels):
            raise LabError(
                f"Option '--latency-loads' must be different percentages of the PDR load in [0, 100], "
                f"got {list(levels)!r}."
            )
        if not (math.isfinite(self.latency_trial_s) and 0 < self.latency_trial_s <= 3600):
            raise LabError(f"Option '--latency-time' must be in (0, 3600] s, got {self.latency_trial_s!r}.")
        if not generator_backend(self.generator).paced:
            raise LabError(
                f"Option '--generator': '{self.generator}' cannot hold an offered load below its maximum, "
                "so it cannot run an RFC 2544 search; use it with 'ovsperf-lab compare' (MRR)."
            )


@dataclass(frozen=True)
class CpuPlan:
    """Which CPU runs what (2 CPUs: generator + OVS main lcore on the first, the PMD on the second)."""

    generator_cpu: int
    """CPU of the traffic generator's lcore."""
    ovs_lcore_cpu: int
    """CPU of OVS's DPDK main lcore (non-PMD threads)."""
    pmd_cpus: tuple[int, ...]
    """CPUs of OVS's PMD threads."""
    vnf_cpu: int | None
    """CPU of the PVP forwarder, ``None`` without PVP; without a spare CPU it shares the last
    PMD's (measured: far less loss than sharing the generator's CPU, whose RX must keep up)."""
    vnf_cpus: tuple[int, ...] = ()
    """CPU of each forwarder of a chain, in chain order (PVVP: two, the first is :attr:`vnf_cpu`);
    empty: one forwarder on :attr:`vnf_cpu`."""


MAX_DEFAULT_GUEST_MEMORY_MB = 2048
"""Most memory a guest gets from the scenario (``guest.memory_mb``) without ``--guest-memory-mb`` [MiB]."""


@dataclass(frozen=True)
class GuestPlan:
    """How the QEMU guests of a PVP or PVVP run, decided before anything starts."""

    image: Path
    """The disk image (``--guest-image``), opened read-only by every guest."""
    kernel: Path | None
    """What QEMU loads with ``-kernel`` (the GRUB core image beside the image), ``None``: the disk boots."""
    accel: GuestAccel
    """KVM or TCG."""
    memory_mb: int
    """Memory of each guest [MiB] (2 MiB hugepages)."""
    vcpus: int
    """vCPUs of each guest [1] (all on the guest's one host CPU)."""
    boot_timeout_s: float
    """Deadline of each guest's boot [s]."""
    loopback: GuestLoopback
    """What forwards in the guest, as its image says (else the scenario's): ``guest_loopback_app``."""
    marker: str | None
    """The console line that says a guest forwards (its image's manifest); ``None``: up is OVS
    seeing its vhost-user ports up."""
    count: int
    """Guests of the run (PVVP: 2, PVP: 1)."""


@dataclass(frozen=True)
class LabPlan:
    """Everything the run needs to know, decided before anything starts."""

    scenario: Scenario
    """The catalog entry."""
    tests: tuple[VsperfTest, ...]
    """Tests to run, in catalog order; their index is VSperf's result index."""
    frame_sizes_bytes: tuple[FrameSizeItem, ...]
    """Frame sizes including FCS, ascending [B]."""
    loss_ratio_limit: float
    """Acceptable loss per direction of the binary search [1]: ``--loss``, else the scenario's."""
    search_trial_s: float
    """Search trial duration [s]."""
    validation_trial_s: float
    """Validation trial duration [s]."""
    queues: int
    """RX queues per OVS port (``n_rxq``) and generator queues [1]."""
    cpus: CpuPlan
    """CPU assignment."""
    vnf: VnfKind | None
    """PVP forwarder, ``None`` without PVP."""
    guest_image: Path | None
    """Guest image for :attr:`VnfKind.QEMU`."""
    options: LabOptions
    """The user's options (memory sizes, flows, granularity)."""
    warnings: tuple[str, ...]
    """Degradations the user should know of (e.g. shared CPUs)."""
    guest: GuestPlan | None = None
    """The QEMU guests (:attr:`vnf` QEMU), ``None`` otherwise."""

    @property
    def max_loss_ratio(self) -> float:
        """Return the highest loss ratio a trial may have and still pass [1].

        The largest MLRsearch goal, or the binary search's limit (the cross-check's threshold,
        :class:`~ovsperf_lab.crosscheck.CrossCheckedGenerator`).
        """
        if self.options.search is SearchMethod.MLR:
            return max(self.options.loss_ratio_goals)
        return self.loss_ratio_limit

    @property
    def topologies(self) -> tuple[Topology, ...]:
        """Return the deployments of :attr:`tests`, in order, without repeats."""
        return tuple(dict.fromkeys(t.topology for t in self.tests))


def plan_run(scenario: Scenario, facts: MachineFacts, options: LabOptions) -> LabPlan:
    """Return how ``scenario`` runs here.

    :raises RefusedScenarioError: listing every reason the machine cannot run it (each with
        the fix), before anything is started.
    :raises LabError: when ``options.tests`` names a test the scenario does not have, or the guest
        image's manifest is there but invalid (:func:`~ovsperf_lab.vnf.read_guest_image`).
    """
    reasons: list[str] = []
    warnings: list[str] = []
    tests = scenario.tests
    if options.tests is not None:
        unknown = [t.value for t in options.tests if t not in scenario.tests]
        if unknown:
            valid = ", ".join(t.value for t in scenario.tests)
            raise LabError(f"Scenario '{scenario.name}' has no test {', '.join(unknown)}; it has: {valid}.")
        tests = tuple(t for t in scenario.tests if t in options.tests)
    needs_vnf = any(t.topology not in (Topology.P2P, Topology.OP2P) for t in tests)

    needs = {Need.ALWAYS}
    if scenario.vswitch is Vswitch.OVS_VANILLA:
        needs.add(Need.KERNEL_DATAPATH)
        if facts.kernel_ovs_module:
            reasons.append(
                "Vswitch 'OvsVanilla' (kernel datapath) is not supported by the local lab yet; "
                "choose an OVS-DPDK scenario (ovsperf-lab list)."
            )
    chained = any(t.topology is Topology.PVVP for t in tests)
    overlays = [t.value for t in tests if t.topology is Topology.OP2P]
    if overlays and options.generator != DEFAULT_GENERATOR:
        reasons.append(
            f"Test(s) {', '.join(overlays)} (tunnel frames) run with the '{DEFAULT_GENERATOR}' generator "
            "only (on this machine or on a TG host, '--dut-port'); drop '--generator', "
            "or pick other tests with '--test'."
        )
    unsupported = [t.value for t in tests if t not in SUPPORTED_TESTS and t.topology is not Topology.PVVP]
    if unsupported:
        reasons.append(
            f"Test(s) {', '.join(unsupported)} are not supported by the local lab yet; "
            "use '--test' to pick others."
        )

    vnf: VnfKind | None = None
    guest_plan: GuestPlan | None = None
    if needs_vnf:
        guest = scenario.guest
        if options.guest_image is not None:
            vnf = VnfKind.QEMU
            needs.add(Need.PVP_GUEST)
            guest_plan = _guest_plan(
                scenario, facts, options, options.guest_image, 2 if chained else 1, warnings
            )
            if guest_plan.accel is GuestAccel.KVM:
                needs.add(Need.PVP_GUEST_KVM)
        elif guest is not None and guest.loopback is GuestLoopback.LINUX_BRIDGE:
            reasons.append(
                "PVP with a 'linux_bridge' guest needs a guest image (kernel forwarding in a VM); "
                "pass '--guest-image FILE.qcow2', or choose a testpmd scenario."
            )
        else:
            vnf = VnfKind.TESTPMD
            needs.add(Need.PVP_TESTPMD)

    cpus = facts.cpus
    pmds = (
        options.pmd_cores
        if options.pmd_cores is not None
        else max(1, min(scenario.rx_queues, max(len(cpus) - 1, 0)))
    )
    if options.pmd_cpus is not None:
        pmds = len(options.pmd_cpus)
    # Named CPUs may lie outside this process's affinity (tuned cpu-partitioning keeps it on the
    # housekeeping CPUs while OVS pins PMD threads to isolated ones), not outside its cpuset.
    pinnable = facts.pinnable_cpus or cpus
    named = [c for c in (*(options.pmd_cpus or ()), options.lcore_cpu) if c is not None and c not in pinnable]
    if named:
        reasons.append(
            f"'--pmd-cpus'/'--lcore-cpu' name CPUs {', '.join(map(str, named))} this process may not pin "
            f"threads to (its cpuset has {','.join(map(str, pinnable))}); name others or widen the cpuset."
        )
    demand = Demand(
        pmd_cores=pmds,
        memory_mb=options.hugepage_memory_mb(
            vnf=needs_vnf,
            forwarders=2 if chained else 1,
            forwarder_mb=guest_plan.memory_mb if guest_plan is not None else None,
        ),
        needs=frozenset(needs),
        guest_image=options.guest_image,
        guests=guest_plan.count if guest_plan is not None else 0,
        guest_memory_mb=guest_plan.memory_mb if guest_plan is not None else 0,
        pmd_cpus_named=options.pmd_cpus is not None,
        local_generator=options.tg_ssh is None and options.generator != "trex",
    )
    reasons = unmet(facts, demand) + reasons
    if reasons:
        raise RefusedScenarioError(scenario.name, tuple(reasons))

    generator_cpu = cpus[0]
    pmd_cpus = options.pmd_cpus if options.pmd_cpus is not None else tuple(cpus[1 : 1 + pmds])
    lcore_cpu = options.lcore_cpu if options.lcore_cpu is not None else generator_cpu
    vnf_cpu: int | None = None
    vnf_cpus: tuple[int, ...] = ()
    if chained:
        vnf_cpus = _chain_cpus(scenario, cpus, generator_cpu, pmd_cpus, options, warnings)
        vnf_cpu = vnf_cpus[0]
    elif needs_vnf:
        # A generator on a TG host leaves its CPU here to the forwarder.
        spare = [c for c in cpus if (c != generator_cpu or options.tg_ssh is not None) and c not in pmd_cpus]
        if spare:
            vnf_cpu = spare[0]
        else:
            vnf_cpu = pmd_cpus[-1]
            warnings.append(
                f"The PVP forwarder shares CPU {vnf_cpu} with an OVS PMD thread (only {len(cpus)} "
                "CPUs): PVP numbers are limited by that, compare them only with runs on the same machine."
            )
    frame_sizes = tuple(
        sorted(
            set(options.frame_sizes_bytes or scenario.frame_sizes_bytes),
            key=lambda item: (0, item, "") if isinstance(item, int) else (1, 0, item.name),
        )
    )
    loss_ratio = options.loss_ratio_limit
    if loss_ratio is None:
        loss_ratio = scenario.loss_ratio_limit
    return LabPlan(
        scenario=scenario,
        tests=tests,
        frame_sizes_bytes=frame_sizes,
        loss_ratio_limit=loss_ratio,
        search_trial_s=options.search_trial_s
        if options.search_trial_s is not None
        else scenario.search_trial_s,
        validation_trial_s=(
            options.validation_trial_s
            if options.validation_trial_s is not None
            else scenario.validation_trial_s
        ),
        queues=scenario.rx_queues,
        cpus=CpuPlan(generator_cpu, lcore_cpu, pmd_cpus, vnf_cpu, vnf_cpus),
        vnf=vnf,
        guest_image=options.guest_image,
        options=options,
        warnings=tuple(warnings),
        guest=guest_plan,
    )


def _guest_plan(
    scenario: Scenario, facts: MachineFacts, options: LabOptions, image: Path, count: int, warnings: list[str]
) -> GuestPlan:
    """Return how the ``count`` guests run: accelerator, memory, boot deadline, loopback.

    The accelerator is ``--guest-accel``, else KVM when ``/dev/kvm`` opens, else TCG; the loopback
    is the one the image's manifest names (a WARNING when the scenario asks for another), else the
    scenario's.

    :raises LabError: when the image's manifest is there but invalid (naming the file and field).
    """
    guest = scenario.guest
    accel = options.guest_accel
    if accel is None:
        accel = GuestAccel.KVM if facts.kvm else GuestAccel.TCG
    memory_mb = options.guest_memory_mb
    if memory_mb is None:
        memory_mb = min(
            guest.memory_mb if guest else MAX_DEFAULT_GUEST_MEMORY_MB, MAX_DEFAULT_GUEST_MEMORY_MB
        )
    info = read_guest_image(image)
    kernel, image_loopback = info.kernel, info.loopback
    wanted = guest.loopback if guest is not None else GuestLoopback.TESTPMD
    loopback = wanted
    if image_loopback is not None:
        try:
            loopback = GuestLoopback(image_loopback)
        except ValueError:
            warnings.append(f"Guest image '{image}' names an unknown loopback {image_loopback!r}.")
        if loopback is not wanted:
            warnings.append(
                f"Scenario '{scenario.name}' asks for the '{wanted.value}' loopback in the guest; "
                f"guest image '{image}' runs '{loopback.value}', so the results record '{loopback.value}'."
            )
    if accel is GuestAccel.TCG:
        warnings.append(
            "The guests run under TCG (QEMU's binary translator, no KVM): their forwarding rate is tiny and "
            "says nothing of OVS; such numbers test the path, compare them only with TCG runs."
        )
    timeout_s = options.guest_boot_timeout_s
    return GuestPlan(
        image=image,
        kernel=kernel,
        accel=accel,
        memory_mb=memory_mb,
        vcpus=guest.vcpus if guest else 2,
        boot_timeout_s=timeout_s if timeout_s is not None else GUEST_BOOT_TIMEOUT_S[accel],
        loopback=loopback,
        marker=info.marker,
        count=count,
    )


def _chain_cpus(
    scenario: Scenario,
    cpus: tuple[int, ...],
    generator_cpu: int,
    pmd_cpus: tuple[int, ...],
    options: LabOptions,
    warnings: list[str],
) -> tuple[int, int]:
    """Return the CPUs of PVVP's two forwarders: spare CPUs first, then the PMDs' (last PMD first).

    Sharing a PMD's CPU is what the lab does on a small machine when it picks the PMD CPUs (a
    WARNING says so); when the user placed them (``--pmd-cpus``), each forwarder needs a CPU of its
    own, or the run is refused before anything starts.

    :raises RefusedScenarioError: when ``--pmd-cpus`` leaves fewer than two CPUs for the forwarders.
    """
    spare = [c for c in cpus if (c != generator_cpu or options.tg_ssh is not None) and c not in pmd_cpus]
    if len(spare) >= 2:
        return spare[0], spare[1]
    if options.pmd_cpus is not None:
        raise RefusedScenarioError(
            scenario.name,
            (
                f"PVVP runs two forwarders, each on a CPU of its own when '--pmd-cpus' places the PMD "
                f"threads; this machine has CPUs {','.join(map(str, cpus))}: the generator's CPU "
                f"{generator_cpu} and PMD CPUs {','.join(map(str, pmd_cpus))} leave "
                f"{len(spare)} ({','.join(map(str, spare)) or 'none'}). Name fewer PMD CPUs, or drop "
                "'--pmd-cpus' to let the forwarders share the PMDs' CPUs.",
            ),
        )
    shared = [*spare, *reversed(pmd_cpus), *reversed(pmd_cpus)]
    chain = (shared[0], shared[1])
    warnings.append(
        f"The two PVVP forwarders run on CPUs {chain[0]} and {chain[1]}, sharing them with OVS PMD "
        f"threads (only {len(cpus)} CPUs): PVVP numbers are limited by that, compare them only with "
        "runs on the same machine."
    )
    return chain
