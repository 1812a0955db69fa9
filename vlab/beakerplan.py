"""Run a scenario's Beaker plan on the two VMs with ``ovsperf-remote run``, then report (``make vlab-test``).

What a lab admin does with two real hosts, done on the VMs:

1. the lab at its saved state (``reset`` when it runs, else ``up``, which resumes the saved state);
2. a host inventory for the VMs (:func:`vm_inventory`: the data NICs as test NICs, the DUT's CPUs,
   the TG as the DUT's traffic generator by its name ``tg`` on the interconnect) copied to both VMs,
   and an SSH config naming ``tg``/``dut`` as their forwarded ports on 127.0.0.1 — the same names the
   VMs use for each other, so the plan's host names are right on both sides;
3. ``ovsperf-remote run --config C --engine E`` with that inventory, the lab's key and known hosts,
   and a local collector directory: every task of the Beaker job on its VM (setup_dpdk with its real
   kernel arguments and the real reboot waited for by boot id, perfsync between the VMs over the
   interconnect, the engine's tasks), results fetched into the collector;
4. ``process-ci-results`` over the collector with the scenario's baseline (the first run's result
   is kept as the baseline of the next ones: the first comparison is A/A), writing the report.

Everything of one run is under ``<state>/plans/<run id>/``. Wall times of the steps and the peak RSS
of the two QEMU processes (sampled while the plan runs) are returned for docs/vlab.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.command import run_command
from vlab.config import VM_NAMES, LabConfig, LabPaths, VlabError
from vlab.guest import ssh_argv
from vlab.lab import Timing, UpOptions, reset, running_vms, up
from vlab.qemu import FIRST_DATA_SLOT

log = logging.getLogger(__name__)

REMOTE_INVENTORY = "/etc/ovsperf/vlab-inventory.yaml"
"""Where the VMs' inventory is put on both VMs (the tasks' ``INVENTORY``)."""
RSS_SAMPLE_S = 5.0
"""How often the QEMU processes' RSS is sampled while the plan runs [s]."""
REPORT_TIMEOUT_S = 900.0
"""Longest ``process-ci-results`` may take [s]."""
COPY_TIMEOUT_S = 120.0
"""Longest copying the inventory to one VM may take [s]."""
_CONFIG_RE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


@dataclass(frozen=True)
class PlanOptions:
    """What ``ovsperf-vlab plan`` runs."""

    config: str = "OVS_DPDK1q"
    """Catalog scenario (``jobcreator --list-configs``)."""
    engine: str = "ovsperf"
    """What measures: ``ovsperf`` (ovsperf-lab + ovsperf-trafficgen) or ``vsperf``."""
    timeout_s: float = 4 * 3600.0
    """Deadline of ``ovsperf-remote run`` [s]."""
    reboot_timeout_s: float = 1200.0
    """Longest a VM may take to come back from a reboot [s] (TCG: ~1–4 min here)."""
    lab_args: tuple[str, ...] = ()
    """More ``ovsperf-lab run`` options for the DUT's ovsperf_test (``OVSPERF_LAB_ARGS``), e.g. a
    short search on the slow VMs."""
    up: UpOptions = field(default_factory=UpOptions)
    """How the lab is brought up when it is not running."""

    def __post_init__(self) -> None:
        """Refuse a scenario name that could not be one (it enters command lines and paths).

        :raises VlabError: naming ``--config``.
        """
        if not self.config or not set(self.config) <= _CONFIG_RE_CHARS or len(self.config) > 100:
            raise VlabError(
                f"'--config' {self.config[:80]!r} is not a scenario name (letters, digits, '_-.')."
            )


@dataclass
class PlanReport:
    """What one plan run measured and where its outputs are."""

    run_dir: Path
    """``<state>/plans/<run id>``: inventory, SSH config, remote logs, collector, reports."""
    timings: list[Timing] = field(default_factory=list)
    """Wall time of each step [s]."""
    peak_rss_bytes: dict[str, int] = field(default_factory=dict)
    """VM → the highest RSS of its QEMU seen while the plan ran [B]."""
    results: list[str] = field(default_factory=list)
    """``process-ci-results``' stdout lines (``processed <name> <verdict> <report>``)."""
    remote_status: int = 0
    """``ovsperf-remote run``'s exit status: 0, or 1 when a step reported FAIL but results came."""
    report_status: int = 0
    """``process-ci-results``' exit status: 0 no regression, 1 a regression, 2 an error or INVALID."""

    @property
    def passed(self) -> bool:
        """Return whether every step passed and the report was written without an error.

        A REGRESSION verdict (``process-ci-results`` exit 1) is the report's finding, not a failure
        of the plan: the VMs' numbers are noise (docs/vlab.md, "Limits").
        """
        return self.remote_status == 0 and self.report_status in (0, 1)


def vm_inventory() -> dict[str, object]:
    """Return the host inventory of the two VMs (vsperf-config's format, docs in inventory.example.yaml).

    Each VM's two data NICs are its test NICs, port 0 then port 1 (TG NIC ``i`` is wired to DUT NIC
    ``i``); the DUT runs OVS's non-PMD threads on CPU 0 and one PMD on CPU 1 with 256 MiB of DPDK
    memory (the VMs reserve 512 MiB of hugepages); the TG's generator runs on CPU 1 and the DUT
    reaches it as ``tg`` over the interconnect.
    """
    nics = [f"0000:00:{FIRST_DATA_SLOT + i:02x}.0" for i in range(2)]
    return {
        "hosts": {
            "dut": {
                "role": "dut",
                "nics": nics,
                "numa_node": 0,
                "numa_nodes": 1,
                "socket_mem_mb": 256,
                "cpus": {"ovs_lcore": "0", "pmd": "1"},
                "trafficgen": {
                    "host": "tg",
                    "address": "tg",
                    "user": "root",
                    "ports": [0, 1],
                    "base_dir": "/root/lua-trafficgen",
                },
            },
            "tg": {
                "role": "trafficgen",
                "nics": nics,
                "numa_node": 0,
                "numa_nodes": 1,
                "cpus": {"isolated": "1", "generator": "1"},
            },
        }
    }


def ssh_config_text(config: LabConfig, paths: LabPaths) -> str:
    """Return an OpenSSH client config naming each VM by its hostname (``tg``, ``dut``) at its port."""
    lines = []
    for vm in VM_NAMES:
        lines += [f"Host {vm}", "    HostName 127.0.0.1", f"    Port {config.ssh_port_of(vm)}",
                  "    User root", f"    IdentityFile {paths.key}", "    IdentitiesOnly yes", ""]  # fmt: skip
    return "\n".join(lines)


def remote_run_argv(
    options: PlanOptions, paths: LabPaths, run_dir: Path, collector: Path, *, remote: str = "ovsperf-remote"
) -> list[str]:
    """Return the ``ovsperf-remote run`` command of the plan (the hosts by name through the SSH config)."""
    argv = [
        remote, "run",
        "--config", options.config,
        "--engine", options.engine,
        "--tg", "root@tg",
        "--dut", "root@dut",
        "--ssh-config", str(run_dir / "ssh_config"),
        "--identity", str(paths.key),
        "--known-hosts", str(paths.known_hosts),
        "--inventory", REMOTE_INVENTORY,
        "--collector", str(collector),
        "--log-dir", str(run_dir / "remote"),
        "--timeout", f"{options.timeout_s / 3600:g}",
        "--reboot-timeout", f"{options.reboot_timeout_s:g}",
    ]  # fmt: skip
    if options.lab_args:
        argv += ["--dut-env", f"OVSPERF_LAB_ARGS={shlex.join(options.lab_args)}"]
    return argv


def ciflow_config(run_dir: Path, baseline: Path, scenario: str) -> dict[str, object]:
    """Return the process-ci-results configuration of the plan's collector (docs/ciflow.md)."""
    return {
        "ci_in": str(run_dir / "ci_in"),
        "ci_processed": str(run_dir / "ci_processed"),
        "ci_failed": str(run_dir / "ci_failed"),
        "reports": str(run_dir / "reports"),
        "database": f"sqlite:///{run_dir / 'results.sqlite'}",
        "quiet_period_s": 0,
        "scenarios": {scenario: {"baseline": str(baseline)}},
    }


def _tool(name: str) -> str:
    """Return the console script ``name`` of this installation (beside this Python), else from PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise VlabError(f"'{name}' is not installed beside {sys.executable} nor on PATH; run 'make setup'.")
    return found


def _copy_inventory(paths: LabPaths, config: LabConfig, text: str) -> None:
    """Put the inventory at :data:`REMOTE_INVENTORY` on both VMs (over the lab's SSH, from stdin)."""
    for vm in VM_NAMES:
        tmp = f"{REMOTE_INVENTORY}.tmp"
        command = f"mkdir -p /etc/ovsperf && cat > {tmp} && mv {tmp} {REMOTE_INVENTORY}"
        done = run_command(
            ssh_argv(paths, config.ssh_port_of(vm), command),
            timeout_s=COPY_TIMEOUT_S,
            what=f"copying the inventory to VM '{vm}'",
            input_text=text,
        )
        if done.returncode != 0:
            raise VlabError(f"Copying the inventory to VM '{vm}' failed: {done.stderr.strip()}")


class _RssSampler:
    """Sample the RSS of the lab's QEMU processes every :data:`RSS_SAMPLE_S` until stopped; keep the peak."""

    def __init__(self, paths: LabPaths, peak: dict[str, int]) -> None:
        self._paths = paths
        self._peak = peak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="vlab-rss")

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=RSS_SAMPLE_S * 2)

    def _loop(self) -> None:
        while True:
            for vm in running_vms(self._paths):
                proc = vm.process()
                if proc is not None:
                    try:
                        rss = proc.memory_info().rss
                    except Exception:  # noqa: BLE001 - a QEMU ending between listing and reading
                        continue
                    self._peak[vm.vm] = max(self._peak.get(vm.vm, 0), rss)
            if self._stop.wait(RSS_SAMPLE_S):
                return


def run_plan(config: LabConfig, options: PlanOptions) -> PlanReport:
    """Run the plan (module docstring) and return what it measured.

    :returns: what it measured; :attr:`PlanReport.passed` says whether every step passed and the
        report found nothing wrong (a FAIL step that still delivered results is reported).
    :raises VlabError: when the lab cannot be brought up, the inventory cannot be copied,
        ``ovsperf-remote run`` fails without results or outlives its deadline, or
        ``process-ci-results`` handles no result (each message names the step and the log to read).
    """
    paths = LabPaths(config.state_dir)
    run_id = time.strftime("%Y%m%d-%H%M%S")
    run_dir = paths.state_dir / "plans" / f"{options.config}-{options.engine}-{run_id}"
    run_dir.mkdir(parents=True)
    report = PlanReport(run_dir)
    start = time.monotonic()
    if running_vms(paths):
        report.timings += reset(config)
    else:
        _vms, timings = up(config, options.up)
        report.timings += timings
    report.timings.append(Timing("lab at its saved state", time.monotonic() - start))

    inventory = yaml.safe_dump(vm_inventory(), sort_keys=False)
    atomic_write_text(run_dir / "inventory.yaml", inventory)
    atomic_write_text(run_dir / "ssh_config", ssh_config_text(config, paths))
    _copy_inventory(paths, config, inventory)
    collector = run_dir / "ci_in"
    collector.mkdir()

    argv = remote_run_argv(options, paths, run_dir, collector, remote=_tool("ovsperf-remote"))
    log.info("Running the Beaker plan of %s (engine %s) on the VMs: %s", options.config, options.engine,
             shlex.join(argv))  # fmt: skip
    start = time.monotonic()
    with _RssSampler(paths, report.peak_rss_bytes):
        status = _run_live(argv, timeout_s=options.timeout_s + 600.0, what="ovsperf-remote run")
    report.timings.append(Timing("ovsperf-remote run", time.monotonic() - start))
    report.remote_status = status
    if status not in (0, 1):
        raise VlabError(
            f"ovsperf-remote run exited with status {status}; its logs are in '{run_dir / 'remote'}'."
        )
    if status == 1:
        log.warning("A step of the plan reported FAIL (its logs are in '%s'); its results are reported.",
                    run_dir / "remote")  # fmt: skip
    delivered = sorted(p for p in collector.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not delivered:
        raise VlabError(f"ovsperf-remote run delivered no result into '{collector}'.")

    baseline = paths.state_dir / "plans" / f"baseline-{options.config}-{options.engine}"
    if not baseline.is_dir():
        log.info("First plan run of %s: its result is the baseline of the next ones (this one is A/A).",
                 options.config)  # fmt: skip
        shutil.copytree(delivered[0], baseline.with_name(baseline.name + ".tmp"), dirs_exist_ok=False)
        baseline.with_name(baseline.name + ".tmp").rename(baseline)
    atomic_write_text(run_dir / "ciflow.yaml", json.dumps(ciflow_config(run_dir, baseline, options.config)))
    start = time.monotonic()
    ci = [_tool("process-ci-results"), "--config", str(run_dir / "ciflow.yaml")]
    processed = run_command(ci, timeout_s=REPORT_TIMEOUT_S, what="process-ci-results")
    report.timings.append(Timing("process-ci-results", time.monotonic() - start))
    report.results = [line for line in processed.stdout.splitlines() if line.strip()]
    report.report_status = processed.returncode
    if not any(line.startswith(("processed", "failed")) for line in report.results):
        raise VlabError(
            f"process-ci-results exited with status {processed.returncode}: "
            f"{(processed.stderr or processed.stdout).strip()[-2000:]}"
        )
    return report


def _run_live(argv: list[str], *, timeout_s: float, what: str) -> int:
    """Run ``argv`` with its output on this process's stderr (progress); return its exit status.

    It runs in its own process group; past ``timeout_s`` [s] the group is sent SIGTERM (ovsperf-remote
    then ends its remote tasks and keeps its state for ``--resume``), then SIGKILL after 60 s.

    :raises VlabError: when it outlives its deadline.
    """
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr,
                            start_new_session=True)  # fmt: skip
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60.0)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60.0)
        raise VlabError(f"{what} outlived its deadline of {timeout_s:.0f} s and was stopped.") from None
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=60.0)
        raise
