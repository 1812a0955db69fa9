"""Build the lab's Debian 12 disk image with mmdebstrap from the distribution's mirror, atomically.

The image is packages only (never a downloaded image): ``mmdebstrap`` writes the root file system
as a tarball, ``mke2fs -d`` turns it into an ext4 file system, ``qemu-img convert`` into the qcow2
base the VMs' overlays stand on; the kernel and initrd are taken out of the image's own ``/boot``
for the KVM probe's direct kernel boot. The VMs boot through the image's own GRUB: a GRUB core
image built in the image (``grub-mkimage``, ``i386-pc`` with ``lnxboot.img`` in front, so that QEMU's
``-kernel`` loads it as it would a Linux kernel) reads ``/boot/grub/grub.cfg`` from the root disk on
every boot and reboot, so the kernel arguments that ``update-grub`` writes in the guest (setup_dpdk's
hugepages and IOMMU settings) take effect as on a host with GRUB. Everything is built in a hidden
sibling of the image directory
(:func:`~ovsperf_common.atomicio.atomic_directory`) and renamed into place only when complete, with
its manifest written last: a build that is interrupted, even killed, leaves at most a hidden
``.image.*.tmp`` directory that nothing reads and the next build removes.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.atomicio import TEMPORARY_SUFFIXES, atomic_directory, atomic_write_text
from ovsperf_common.command import run_command
from vlab.config import INTERCONNECT_ADDRESS, SUITE, VM_NAMES, LabPaths, VlabError, interconnect_mac

log = logging.getLogger(__name__)

PACKAGES = (
    "linux-image-amd64",
    "initramfs-tools",
    "systemd-sysv",
    "udev",
    "dbus",
    "kmod",
    "e2fsprogs",
    "iproute2",
    "pciutils",
    "procps",
    "ethtool",
    "iputils-ping",
    "openssh-server",
    "openvswitch-switch-dpdk",
    "dpdk",
    "python3",
    "python3-yaml",
    "rsync",
    # What the Beaker tasks use on a lab host (ovsperf-remote check lists them): setup_dpdk's tuned,
    # irqbalance and, on Debian, update-grub; the generator hosts' build tools.
    "tuned",
    "irqbalance",
    "grub2-common",
    "grub-pc-bin",
    "git",
    "make",
    "gcc",
    "pkg-config",
    # What the ovsperf engine's tasks need: build_trafficgen builds the generator against the
    # distribution's DPDK; ovsperf_test makes a venv for ovsperf-lab.
    "libdpdk-dev",
    "python3-venv",
    "python3-pip",
    "hostname",
)
"""Debian packages of the image (with their dependencies; variant ``minbase`` adds Essential and apt)."""

IMAGE_SIZE = "6G"
"""Size of the ext4 root file system (sparse: only what is written takes disk space)."""
ROOT_LABEL = "vlabroot"
"""ext4 label of the root file system."""
MGMT_MAC = "52:54:00:00:01:01"
"""MAC of each VM's management NIC; the image's systemd-networkd runs DHCP on it alone."""
MANIFEST = "manifest.json"
"""Written last into a build: an image directory without it is not an image."""
BUILD_TIMEOUT_S = 3600.0
"""Longest an mmdebstrap run may take (a slow mirror, a loaded machine) [s]."""
CONVERT_TIMEOUT_S = 900.0
"""Longest ``mke2fs`` or ``qemu-img convert`` may take [s]."""

NETWORK_UNIT = f"""[Match]
MACAddress={MGMT_MAC}

[Network]
DHCP=ipv4
"""
"""systemd-networkd unit of the management NIC (the data NICs stay unconfigured, for DPDK)."""

INTERCONNECT_UNITS = {
    vm: f"""[Match]
MACAddress={interconnect_mac(vm)}

[Network]
Address={INTERCONNECT_ADDRESS[vm]}/24
"""
    for vm in VM_NAMES
}
"""systemd-networkd units of the interconnect NIC, one per VM (each VM has only its own MAC)."""
HOSTS_LINES = "".join(f"{INTERCONNECT_ADDRESS[vm]}\t{vm}\n" for vm in VM_NAMES)
"""/etc/hosts lines naming the VMs by their interconnect addresses."""

GUEST_KERNEL_ARGS = "console=ttyS0,115200 intel_iommu=on default_hugepagesz=2M hugepages=256"
"""The image's ``GRUB_CMDLINE_LINUX``: serial console, the emulated IOMMU on (``vfio-pci`` binding),
512 MiB of 2 MiB hugepages at boot; setup_dpdk adds its own to it as on any Debian host."""
BOOTLOADER = "grub.lnx"
"""The GRUB core image QEMU loads with ``-kernel`` (in the image directory)."""
GRUB_MODULES = ("biosdisk", "ext2", "linux", "normal", "configfile", "search", "echo", "test", "serial",
                "terminal", "gzio", "part_msdos", "ls", "cat")  # fmt: skip
"""GRUB modules built into the core image: read the partitionless ext4 disk (hd0), load Linux,
run grub.cfg."""
BOOTSTRAP_GRUB_CFG = f"""set timeout=0
linux /vmlinuz root=LABEL={ROOT_LABEL} ro {GUEST_KERNEL_ARGS}
initrd /initrd.img
boot
"""
"""``/boot/grub/grub.cfg`` until the guest's own ``update-grub`` writes one (a chroot cannot probe
the root device, so the build does not run ``grub-mkconfig``)."""


@dataclass(frozen=True)
class Image:
    """A complete image: its files and what it was built from."""

    disk: Path
    """qcow2 base of the root file system (read only: the VMs write to their overlays)."""
    kernel: Path
    """The image's own kernel (``/boot/vmlinuz-*``)."""
    initrd: Path
    """The image's own initrd (``/boot/initrd.img-*``)."""
    bootloader: Path
    """The image's GRUB core image, bootable by QEMU's ``-kernel`` (:data:`BOOTLOADER`)."""
    kernel_version: str
    """``uname -r`` of that kernel."""
    built_at: float
    """When the build finished [s since the epoch]; overlays older than it are stale."""


def load_image(paths: LabPaths) -> Image | None:
    """Return the complete image under ``paths``, or ``None`` when none was built (or it is incomplete).

    :raises VlabError: when the manifest is unreadable.
    """
    manifest = paths.image_dir / MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        kernel_version = str(data["kernel_version"])
        built_at = float(data["built_at"])
        boots_grub = data.get("bootloader") == BOOTLOADER
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise VlabError(
            f"Image manifest '{manifest}' is unreadable ({err}); rebuild with 'up --rebuild'."
        ) from err
    if not boots_grub:
        log.info("The image in '%s' predates the GRUB boot (no %s); it is rebuilt.",
                 paths.image_dir, BOOTLOADER)  # fmt: skip
        return None
    image = Image(
        disk=paths.image_dir / "root.qcow2",
        kernel=paths.image_dir / "vmlinuz",
        initrd=paths.image_dir / "initrd.img",
        bootloader=paths.image_dir / BOOTLOADER,
        kernel_version=kernel_version,
        built_at=built_at,
    )
    for part in (image.disk, image.kernel, image.initrd, image.bootloader):
        if not part.is_file():
            raise VlabError(
                f"Image file '{part}' is missing beside its manifest; rebuild with 'up --rebuild'."
            )
    return image


def ensure_key(paths: LabPaths) -> Path:
    """Return the lab's SSH public key, generating the ed25519 pair first if there is none.

    :raises VlabError: when ``ssh-keygen`` fails.
    """
    public = paths.key.with_suffix(".pub")
    if paths.key.is_file() and public.is_file():
        return public
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    for stale in (paths.key, public):
        stale.unlink(missing_ok=True)
    done = run_command(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ovsperf-vlab", "-f", str(paths.key)],
        timeout_s=60.0,
        what="ssh-keygen for the lab key",
    )
    if done.returncode != 0:
        raise VlabError(f"ssh-keygen could not create '{paths.key}': {done.stderr.strip()}")
    return public


def mmdebstrap_argv(tarball: Path, mirror: str, public_key: Path, nice: int) -> list[str]:
    """Return the mmdebstrap command that writes the image's root file system to ``tarball``.

    The hooks authorise ``public_key`` for root, give the management NIC DHCP, mount the root by
    label and let the serial console log in nobody (no password is set).
    """
    key = str(public_key)
    if shlex.quote(key) != key:  # the hooks run as root in a shell: a plain path only (LabConfig)
        raise VlabError(
            f"The lab's public key path {key[:80]!r} is not a plain path; choose another --state-dir."
        )
    hooks = [
        'mkdir -p -m 700 "$1/root/.ssh"',
        f'install -m 600 "{key}" "$1/root/.ssh/authorized_keys"',
        f"printf '%s' '{NETWORK_UNIT}' > \"$1/etc/systemd/network/10-mgmt.network\"",
        *(
            f"printf '%s' '{unit}' > \"$1/etc/systemd/network/20-interconnect-{vm}.network\""
            for vm, unit in INTERCONNECT_UNITS.items()
        ),
        LOCALHOST_HOOK,
        f"printf '{HOSTS_LINES}' >> \"$1/etc/hosts\"",
        'chroot "$1" systemctl enable systemd-networkd',
        'chroot "$1" systemctl mask systemd-networkd-wait-online.service',
        fstab_hook(ROOT_LABEL, fsck_pass=1),
        'printf "vlab\\n" > "$1/etc/hostname"',
        # setup_dpdk on Debian edits /etc/default/grub and runs update-grub, as on a host with GRUB;
        # the VMs boot through the image's GRUB, which reads the grub.cfg update-grub writes.
        'mkdir -p "$1/boot/grub"',
        'cp "$1/usr/share/grub/default/grub" "$1/etc/default/grub"',
        f'sed -i \'s/^GRUB_CMDLINE_LINUX=.*/GRUB_CMDLINE_LINUX="{GUEST_KERNEL_ARGS}"/; '
        's/^GRUB_TIMEOUT=.*/GRUB_TIMEOUT=0/\' "$1/etc/default/grub"',
        f"printf '%s' '{BOOTSTRAP_GRUB_CFG}' > \"$1/boot/grub/grub.cfg\"",
        *grub_core_hooks("vlab-grub"),
    ]
    return mmdebstrap_command(PACKAGES, hooks, tarball, mirror, nice)


def mmdebstrap_command(
    packages: Sequence[str], hooks: Sequence[str], tarball: Path, mirror: str, nice: int
) -> list[str]:
    """Return the mmdebstrap command writing a ``minbase`` :data:`SUITE` root of ``packages`` to ``tarball``.

    ``hooks`` are its ``--customize-hook`` shell commands, in order (``$1``: the root); ``nice``:
    the niceness it runs at (0: as this process).
    """
    argv = ["nice", "-n", str(nice)] if nice else []
    argv += ["mmdebstrap", "--mode=root", "--variant=minbase", "--format=tar"]
    argv += [f"--include={','.join(packages)}"]
    argv += [f"--customize-hook={hook}" for hook in hooks]
    argv += [SUITE, str(tarball), mirror]
    return argv


def build_image(paths: LabPaths, mirror: str, *, nice: int = 0) -> Image:
    """Build the image into a hidden sibling of ``paths.image_dir`` and rename it into place.

    Leftovers of interrupted builds (hidden ``.image.*`` siblings) are removed first; the caller
    holds the lab's lock, so none of them is a build still running.

    :param nice: niceness of the build's processes (19: leave the CPUs to others).
    :raises VlabError: when mmdebstrap, mke2fs or qemu-img fails, or the image has no kernel.
    :raises CommandError: when one of them is missing or outlives its timeout.
    """
    public_key = ensure_key(paths)
    sweep_partial_builds(paths)
    start = time.monotonic()
    with atomic_directory(paths.image_dir) as tmp:
        tarball = tmp / "rootfs.tar"
        log.info("Building the image with mmdebstrap from %s (%s); this takes minutes.", mirror, SUITE)
        run_mmdebstrap(mmdebstrap_argv(tarball, mirror, public_key, nice), paths.build_log)
        kernel_version = _extract_boot(tarball, tmp)
        tarball_to_qcow2(tarball, tmp / "root.qcow2", label=ROOT_LABEL, size=IMAGE_SIZE, nice=nice)
        manifest = {"suite": SUITE, "mirror": mirror, "packages": list(PACKAGES),
                    "kernel_version": kernel_version, "bootloader": BOOTLOADER,
                    "built_at": time.time()}  # fmt: skip
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    paths.known_hosts.unlink(missing_ok=True)  # the new image has new host keys
    log.info("Image built in %.0f s: '%s' (kernel %s).", time.monotonic() - start, paths.image_dir,
             kernel_version)  # fmt: skip
    image = load_image(paths)
    assert image is not None
    return image


LOCALHOST_HOOK = 'grep -qs localhost "$1/etc/hosts" || printf \'127.0.0.1\tlocalhost\n\' >> "$1/etc/hosts"'
"""mmdebstrap hook: name 127.0.0.1 localhost in the image's ``/etc/hosts`` unless it is there."""


def fstab_hook(label: str, *, fsck_pass: int) -> str:
    """Return the mmdebstrap hook writing an ``/etc/fstab`` that mounts the ext4 ``label`` at ``/``.

    :param fsck_pass: fstab's sixth field (1: checked at boot, 0: never).
    """
    return f"printf 'LABEL={label} / ext4 errors=remount-ro 0 {fsck_pass}\\n' > \"$1/etc/fstab\""


def grub_core_hooks(core_name: str) -> list[str]:
    """Return the mmdebstrap hooks that build ``/boot/<core_name>.lnx``, a GRUB core image for ``-kernel``.

    ``grub-mkimage`` (``i386-pc``, :data:`GRUB_MODULES`, prefix ``(hd0)/boot/grub``: the
    partitionless disk) with ``lnxboot.img`` in front, so that QEMU's ``-kernel`` loads it as it
    would a Linux kernel; the modules grub.cfg loads (``insmod``) are copied to ``/boot/grub``, as
    grub-install would. The image needs ``grub-pc-bin`` and a ``/boot/grub``.
    """
    core = f"/boot/{core_name}.core"
    return [
        f'chroot "$1" grub-mkimage -O i386-pc -o {core} -p "(hd0)/boot/grub" ' + " ".join(GRUB_MODULES),
        f'cat "$1/usr/lib/grub/i386-pc/lnxboot.img" "$1{core}" > "$1/boot/{core_name}.lnx"',
        f'rm "$1{core}"',
        'cp -r "$1/usr/lib/grub/i386-pc" "$1/boot/grub/"',
    ]


def tarball_to_qcow2(tarball: Path, qcow2: Path, *, label: str, size: str, nice: int = 0) -> None:
    """Turn mmdebstrap's ``tarball`` into the qcow2 disk ``qcow2``: an ext4 file system, no partition table.

    ``tar`` extracts it beside ``qcow2`` (numeric owners, xattrs), ``mke2fs -d`` makes the ext4
    file system ``label`` of ``size`` (sparse), ``qemu-img convert`` the qcow2; the tarball and
    each intermediate are removed as soon as the next step has them.

    :param nice: niceness of mke2fs and qemu-img.
    :raises VlabError: when tar, mke2fs or qemu-img fails.
    :raises CommandError: when one of them is missing or outlives :data:`CONVERT_TIMEOUT_S`.
    """
    niced = ["nice", "-n", str(nice)] if nice else []
    tree = qcow2.with_name(qcow2.name + ".rootfs")
    tree.mkdir()
    untar = ["tar", "--numeric-owner", "--xattrs", "-xpf", str(tarball), "-C", str(tree)]
    _check("tar", run_command(untar, timeout_s=CONVERT_TIMEOUT_S, what="tar extracting the root file system"))
    tarball.unlink()
    raw = qcow2.with_name(qcow2.name + ".raw")
    mke2fs = [*niced, "mke2fs", "-q", "-t", "ext4", "-L", label, "-d", str(tree), str(raw), size]
    _check("mke2fs", run_command(mke2fs, timeout_s=CONVERT_TIMEOUT_S, what="mke2fs"))
    shutil.rmtree(tree)
    convert = [*niced, "qemu-img", "convert", "-O", "qcow2", str(raw), str(qcow2)]
    _check("qemu-img", run_command(convert, timeout_s=CONVERT_TIMEOUT_S, what="qemu-img convert"))
    raw.unlink()


def sweep_partial_builds(paths: LabPaths) -> list[Path]:
    """Remove the hidden leftovers of interrupted builds beside the image directory; return them."""
    return sweep_hidden_siblings(paths.image_dir, "image")


def sweep_hidden_siblings(target: Path, what: str) -> list[Path]:
    """Remove the hidden ``.<target>.*.tmp`` (or ``.old``) directories beside ``target``; return them.

    What an atomic build of ``target`` left when it was killed. The caller holds the build's lock,
    so none of them is a build still running.

    :param what: what was built, for the log (``'image'``, ``'guest image'``).
    """
    removed: list[Path] = []
    parent = target.parent
    if not parent.is_dir():
        return removed
    for entry in sorted(parent.glob(f".{target.name}.*")):
        if entry.name.endswith(TEMPORARY_SUFFIXES) and entry.is_dir() and not entry.is_symlink():
            log.info("Removing '%s', left by an interrupted %s build.", entry, what)
            shutil.rmtree(entry)
            removed.append(entry)
    return removed


def _extract_boot(tarball: Path, into: Path) -> str:
    """Copy the kernel, initrd and GRUB core image in ``tarball`` to ``into``; return the kernel's version.

    :raises VlabError: when the tarball holds no ``boot/vmlinuz-*`` with its ``boot/initrd.img-*``,
        or no ``boot/vlab-grub.lnx``.
    """
    with tarfile.open(tarball) as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
        kernels = sorted(n for n in members if n.startswith("boot/vmlinuz-"))
        if not kernels:
            raise VlabError(
                f"The image built in '{tarball}' has no kernel in /boot (is linux-image-amd64 in it?)."
            )
        version = kernels[-1].removeprefix("boot/vmlinuz-")
        initrd = f"boot/initrd.img-{version}"
        if initrd not in members:
            raise VlabError(f"The image built in '{tarball}' has kernel {version} but no '/{initrd}'.")
        grub = "boot/vlab-grub.lnx"
        if grub not in members:
            raise VlabError(f"The image built in '{tarball}' has no GRUB core image '/{grub}'.")
        for name, target in ((kernels[-1], "vmlinuz"), (initrd, "initrd.img"), (grub, BOOTLOADER)):
            source = tar.extractfile(members[name])
            assert source is not None
            with source, open(into / target, "wb") as out:
                shutil.copyfileobj(source, out)
    return version


def run_mmdebstrap(argv: list[str], build_log: Path, timeout_s: float = BUILD_TIMEOUT_S) -> None:
    """Run mmdebstrap to its end with its output in ``build_log``; on a stop, let it clean up first.

    mmdebstrap mounts /proc, /sys and /dev/pts in its own temporary root file system while it
    installs. Its output goes to a file, not to a pipe of this process: a pipe closed by a killed
    parent makes it die without unmounting. When this process is interrupted (Ctrl-C, SIGTERM turned
    into ``KeyboardInterrupt``) or the timeout passes, its process group gets SIGTERM, on which it
    unmounts and removes its temporary directory (measured: 7 s), and SIGKILL only after
    :data:`STOP_GRACE_S`.

    :raises VlabError: when it exits non-zero (with the end of its log) or outlives ``timeout_s`` [s].
    """
    build_log.parent.mkdir(parents=True, exist_ok=True)
    with open(build_log, "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
        except OSError as err:
            raise VlabError(
                f"Cannot run mmdebstrap: '{argv[0]}': {err.strerror} (make vlab installs it)."
            ) from err
    try:
        returncode = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop_gently(proc)
        raise VlabError(
            f"mmdebstrap did not finish within {timeout_s:g} s and was stopped; see '{build_log}'."
        ) from None
    except BaseException:
        _stop_gently(proc)
        raise
    if returncode != 0:
        lines = build_log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        tail = " ".join(line[:300] for line in lines[-3:])
        raise VlabError(f"mmdebstrap failed with exit status {returncode} (log '{build_log}'): {tail}")


STOP_GRACE_S = 120.0
"""Time mmdebstrap gets after SIGTERM to unmount and clean up before SIGKILL [s]."""


def _stop_gently(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM ``proc``'s process group (started by us), wait for it, SIGKILL after :data:`STOP_GRACE_S`."""
    for signum, wait_s in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            log.warning(
                "mmdebstrap (pid %d) is still running %.0f s after signal %d.", proc.pid, wait_s, signum
            )


def _check(what: str, done: object) -> None:
    """Raise when the finished command ``done`` (a CompletedProcess) failed.

    :raises VlabError: naming ``what`` and the end of its error output.
    """
    returncode = getattr(done, "returncode", 1)
    if returncode != 0:
        tail = " ".join(str(getattr(done, "stderr", "")).strip().splitlines()[-5:])
        raise VlabError(f"{what} failed with exit status {returncode}: {tail}")
