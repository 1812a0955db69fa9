"""Run Beaker task runtest.sh scripts here, with recording shims for every system command they call.

Each shim appends its name and arguments (shell-quoted) to ``calls.log`` and imitates just enough of
the real command (dpdk-devbind.py re-points the fake sysfs driver link, git creates checkouts, rsync
copies to a local "collector"). System paths the tasks touch (/sys, /proc, /etc, the state directory,
$HOME) point into ``tmp_path`` through TASK_SYSFS, TASK_PROC, TASK_ETC, TASK_STATE_DIR and HOME.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "beaker_tasks"
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin"
FAKE_VSPERF = Path(__file__).with_name("fake_vsperf.py")
VSPERF_STUB = Path(__file__).with_name("vsperf_stub")
"""VSperf's modules our collector imports (``conf``, ``tools.collectors.sysmetrics.pidstat``)."""
OVS_FIXTURES = REPO / "tests" / "ovsperf_lab" / "fixtures" / "telemetry"
PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
"""The public key the ssh-keygen shim writes."""

SHIM_DIR = Path(__file__).with_name("shims")
RECORD_ONLY = (
    "rstrnt-report-result",
    "rstrnt-report-log",
    "rstrnt-abort",
    "rstrnt-reboot",
    "rstrnt-adjust-watchdog",
    "systemctl",
    "grubby",
    "update-grub",
    "nmcli",
    "dpdk-testpmd",
)
SPECIFIC = (
    "modprobe",
    "firewall-cmd",
    "ethtool",
    "ovs-vswitchd",
    "ssh",
    "tuned-adm",
    "dpdk-devbind.py",
    "rpm",
    "dpkg-query",
    "ssh-keygen",
    "git",
    "rsync",
    "vsperf-base-python",
    "virsh",
    "ovs-appctl",
    "ovs-vsctl",
    "mount",
    "umount",
    "ip",
)
HOST_HUGEPAGES = "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=1024M 0 0\n"
"""The host's own hugetlbfs mount (systemd's dev-hugepages.mount) in the fake /proc/mounts."""
HARNESS = (
    "rstrnt-report-result",
    "rstrnt-report-log",
    "rstrnt-abort",
    "rstrnt-reboot",
    "rstrnt-adjust-watchdog",
)


@dataclass
class Result:
    """A finished runtest.sh: exit status, output and the recorded shim calls."""

    returncode: int
    stdout: str
    stderr: str
    calls: list[list[str]]

    def reported(self) -> list[tuple[str, str]]:
        """Return (result name, result) of every rstrnt-report-result call, in order."""
        out = []
        for call in self.calls:
            if call[0] == "rstrnt-report-result":
                args = call[1:]
                if args[:1] == ["-o"]:
                    args = args[2:]
                out.append((args[0], args[1]))
        return out

    def called(self, name: str) -> list[list[str]]:
        """Return the argument lists of every call of shim ``name``."""
        return [c[1:] for c in self.calls if c[0] == name]

    def index(self, name: str, *args: str) -> int:
        """Return the position of the first call of ``name`` whose arguments start with ``args``."""
        for i, call in enumerate(self.calls):
            if call[0] == name and tuple(call[1 : 1 + len(args)]) == args:
                return i
        raise AssertionError(f"no call {name} {args} in {self.calls}")


class Lab:
    """A fake machine under ``root``: shims on PATH, fake /sys, /proc, /etc, HOME and state dir."""

    def __init__(
        self, root: Path, *, harness: bool = True, nics: tuple[str, ...] = ("0000:03:00.0", "0000:03:00.1")
    ):
        self.root = root
        self.bin = root / "bin"
        self.log = root / "calls.log"
        self.sysfs = root / "sys"
        self.proc = root / "proc"
        self.etc = root / "etc"
        self.home = root / "home"
        self.state = root / "state"
        for path in (self.bin, self.sysfs, self.proc, self.etc, self.home, self.state):
            path.mkdir(parents=True, exist_ok=True)
        for name in RECORD_ONLY + SPECIFIC:
            if not harness and name in HARNESS:
                continue
            target = SHIM_DIR / (f"{name}.sh" if name in SPECIFIC else "generic.sh")
            (self.bin / name).symlink_to(target)
        (self.proc / "cmdline").write_text(
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on isolcpus=2-23\n"
        )
        self.set_hugepages(16)
        proc_mount = "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
        (self.proc / "mounts").write_text(proc_mount + HOST_HUGEPAGES)
        (self.sysfs / "kernel" / "iommu_groups" / "0").mkdir(parents=True)
        (self.sysfs / "bus" / "pci" / "drivers" / "ixgbe").mkdir(parents=True)
        for index, pci in enumerate(nics):
            self.add_nic(pci, f"ens1f{index}")

    def add_nic(self, pci: str, netdev: str) -> None:
        device = self.sysfs / "bus" / "pci" / "devices" / pci
        (device / "net" / netdev).mkdir(parents=True)
        (device / "driver").symlink_to(self.sysfs / "bus" / "pci" / "drivers" / "ixgbe")

    def mounts(self) -> list[tuple[str, str, str]]:
        """Return (source, mount point, type) of each line of the fake /proc/mounts, bottom first."""
        return [
            (fields[0], fields[1], fields[2])
            for fields in (line.split() for line in (self.proc / "mounts").read_text().splitlines())
        ]

    def driver(self, pci: str) -> str:
        return os.readlink(self.sysfs / "bus" / "pci" / "devices" / pci / "driver").rsplit("/", 1)[-1]

    def set_hugepages(self, count: int) -> None:
        directory = self.sysfs / "kernel" / "mm" / "hugepages" / "hugepages-1048576kB"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "nr_hugepages").write_text(f"{count}\n")

    def env(self, **params: str) -> dict[str, str]:
        env = {
            "PATH": f"{self.bin}:{VENV_BIN}:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "SHIM_LOG": str(self.log),
            "TASK_STATE_DIR": str(self.state),
            "TASK_SYSFS": str(self.sysfs),
            "TASK_PROC": str(self.proc),
            "TASK_ETC": str(self.etc),
            "FAKE_VSPERF": str(FAKE_VSPERF),
            "FAKE_VSPERF_STUB_DIR": str(VSPERF_STUB),
            "FAKE_OVS_FIXTURES": str(OVS_FIXTURES),
            # VSperf's own hugetlbfs mount point: here, never the test machine's /dev.
            "VSPERF_HUGEPAGE_DIR": str(self.root / "hugepages-vsperf"),
            # Where vsperf_test installs the guest DPDK adapter: here, never the test machine's /opt.
            "VSPERF_GUEST_DPDK_DIR": str(self.root / "opt" / "vsperf-guest-dpdk"),
        }
        env.update(params)
        return env

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [shlex.split(line) for line in self.log.read_text().splitlines() if line.strip()]

    def run(
        self,
        task: str,
        reboot: int | None = 0,
        timeout_s: float = 60,
        prefix: tuple[str, ...] = (),
        **params: str,
    ) -> Result:
        """Run ``beaker_tasks/<task>/runtest.sh`` as restraint would after ``reboot`` reboots.

        ``prefix`` runs it through another command, e.g. ``("ip", "netns", "exec", NS)``.
        """
        self.log.unlink(missing_ok=True)
        env = self.env(**params)
        if reboot is not None:
            env["RSTRNT_REBOOTCOUNT"] = str(reboot)
        proc = subprocess.run(
            [*prefix, str(TASKS / task / "runtest.sh")],
            cwd=TASKS / task,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr, self.calls())
