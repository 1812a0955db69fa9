"""Build the PVP/PVVP guest image of ``ovsperf-lab run --guest-image`` with mmdebstrap, atomically.

A Debian 12 root file system of packages only (``mmdebstrap`` from the distribution's mirror, as
:mod:`vlab.image` builds the lab's VMs), made an ext4 disk with ``mke2fs -d`` and a qcow2 file with
``qemu-img convert``. At boot a systemd unit joins every virtio NIC of the guest (the lab gives it
two, on OVS's vhost-user ports) in the Linux bridge ``br0`` (STP off, no learning: ``ageing_time
0`` floods each frame to the other port), the ``linux_bridge`` loopback of the catalog, and then
prints :data:`~ovsperf_common.labfiles.GUEST_MARKER` on the serial console, which the lab waits
for (a failure prints a line starting with :data:`~ovsperf_common.labfiles.GUEST_ERROR_PREFIX`,
on which the lab fails at once). IPv6 is off and no address is
set, so the guest sends no frame of its own into the measured path.

The disk has no partition table and no boot sector: it boots through the image's own GRUB, whose
core image (``grub-mkimage``, ``i386-pc`` with ``lnxboot.img`` in front) QEMU loads with ``-kernel``
and which reads ``/boot/grub/grub.cfg`` from the disk, as :mod:`vlab.image` does. The core image is
written beside the disk as ``OUT.kernel`` (:func:`kernel_path`); ``ovsperf-lab run`` passes it to
QEMU when it is there. The sidecars' names are :mod:`ovsperf_common.labfiles`'. The build holds the
lock ``.OUT.lock``, removes what a killed build left (``.OUT.*.tmp``), writes the manifest ``OUT.json``
(:func:`manifest_path`) marked incomplete, builds in a hidden sibling directory, renames the disk
and its core image into place and marks the manifest complete last. A file at ``OUT`` or at one of
its sidecars without our manifest is not ours and is never replaced.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovsperf_common.atomicio import atomic_write_text, check_replaceable
from ovsperf_common.filelock import exclusive_lock
from ovsperf_common.labfiles import (
    GUEST_BUILD_LOG_SUFFIX,
    GUEST_ERROR_PREFIX,
    GUEST_KERNEL_SUFFIX,
    GUEST_MANIFEST_MAX_BYTES,
    GUEST_MANIFEST_SUFFIX,
    GUEST_MARKER,
    guest_sidecar_name,
)
from ovsperf_common.regularfile import read_regular_text
from vlab.config import SUITE, VlabError
from vlab.image import (
    LOCALHOST_HOOK,
    fstab_hook,
    grub_core_hooks,
    mmdebstrap_command,
    run_mmdebstrap,
    sweep_hidden_siblings,
    tarball_to_qcow2,
)

log = logging.getLogger(__name__)

BUILDER = "ovsperf-vlab guest-image"
"""What the manifest names as the builder: a file at the output path is replaced only when it says so."""
RECIPE = 3
"""Version of what the build puts in the image; a cached image of another recipe is rebuilt [1]."""
LOOPBACK_APP = "linux_bridge"
"""What forwards in the guest (the catalog's ``loopback``): the manifest records it."""
ROOT_LABEL = "ovsguest"
"""ext4 label of the guest's root file system."""
IMAGE_SIZE = "2G"
"""Size of the ext4 root file system (sparse: only what is written takes disk space)."""
KERNEL_ARGS = "console=ttyS0,115200 ipv6.disable=1 mitigations=off"
"""The guest kernel's arguments: serial console, no IPv6 (no router solicitations into the path)."""
PACKAGES = (
    "linux-image-amd64",
    "initramfs-tools",
    "systemd-sysv",
    "udev",
    "kmod",
    "iproute2",
    "e2fsprogs",
    "grub-pc-bin",
)
"""Debian packages of the guest (with their dependencies; variant ``minbase`` adds Essential and apt)."""

BRIDGE_SCRIPT = f"""#!/bin/sh
# ovsperf guest: join the two virtio NICs in a Linux bridge (the linux_bridge loopback), then say so.
set -u
say() {{ echo "$*" > /dev/ttyS0; }}
# Let udev name the NICs first (a rename after they are listed would lose one).
udevadm settle --timeout=60 || :
tries=0
while :; do
    nics=""
    for dev in /sys/class/net/*; do
        [ -e "$dev/device" ] && nics="$nics $(basename "$dev")"
    done
    # shellcheck disable=SC2086  # one word per NIC name
    set -- $nics
    [ "$#" -ge 2 ] && break
    tries=$((tries + 1))
    if [ "$tries" -ge 300 ]; then
        say "{GUEST_ERROR_PREFIX}: found NICs '$nics', need 2"
        exit 1
    fi
    sleep 1
done
modprobe bridge
ip link add br0 type bridge stp_state 0 ageing_time 0 mcast_snooping 0 \\
    || {{ say "{GUEST_ERROR_PREFIX}: no bridge"; exit 1; }}
for nic in "$1" "$2"; do
    if ! ip link set "$nic" master br0 || ! ip link set "$nic" up; then
        say "{GUEST_ERROR_PREFIX}: cannot bridge $nic"
        exit 1
    fi
done
ip link set br0 up
say "{GUEST_MARKER} $1 $2 (linux_bridge)"
"""
"""``/usr/local/sbin/ovsperf-guest-bridge``: find the two NICs, bridge them, print the marker."""
BRIDGE_UNIT = """[Unit]
Description=ovsperf guest: bridge the two virtio NICs (linux_bridge loopback)
After=systemd-udevd.service systemd-modules-load.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/ovsperf-guest-bridge

[Install]
WantedBy=multi-user.target
"""
"""systemd unit running :data:`BRIDGE_SCRIPT` at boot."""
GRUB_CFG = f"""set timeout=0
linux /vmlinuz root=LABEL={ROOT_LABEL} ro {KERNEL_ARGS}
initrd /initrd.img
boot
"""
"""``/boot/grub/grub.cfg`` the guest's GRUB core image reads from the disk."""


def kernel_path(image: Path) -> Path:
    """Return the file beside ``image`` QEMU loads with ``-kernel`` (``g.qcow2`` → ``g.qcow2.kernel``)."""
    return image.with_name(guest_sidecar_name(image.name, GUEST_KERNEL_SUFFIX))


def manifest_path(image: Path) -> Path:
    """Return the manifest beside ``image`` (``guest.qcow2`` → ``guest.qcow2.json``), completed last."""
    return image.with_name(guest_sidecar_name(image.name, GUEST_MANIFEST_SUFFIX))


def build_log_path(image: Path) -> Path:
    """Return the mmdebstrap log beside ``image`` (``g.qcow2`` → ``g.qcow2.build.log``)."""
    return image.with_name(guest_sidecar_name(image.name, GUEST_BUILD_LOG_SUFFIX))


def sidecars(image: Path) -> tuple[Path, Path, Path]:
    """Return the files a build writes beside ``image``: core image, manifest, build log."""
    return kernel_path(image), manifest_path(image), build_log_path(image)


def check_plain_path(image: Path) -> None:
    """Refuse an output path that the build's shell hooks would need to quote.

    :raises VlabError: naming the path when ``shlex.quote`` would change it (spaces, quotes, ``$``).
    """
    text = str(image)
    if shlex.quote(text) != text:  # mmdebstrap splits its 'upload' hooks like a shell: a plain path only
        raise VlabError(
            f"The guest image path {text[:120]!r} ('OUT') is not a plain path (letters, digits and "
            "'@%+=:,./-_' only): the build's mmdebstrap hooks cannot take it; choose another."
        )


@dataclass(frozen=True)
class GuestImage:
    """A complete guest image: its disk, its bootloader and how it was built."""

    disk: Path
    """The qcow2 disk (QEMU opens it with ``snapshot=on``: it is never written)."""
    kernel: Path
    """The GRUB core image QEMU loads with ``-kernel`` (:func:`kernel_path`)."""
    built_at: float
    """When the build finished [s since the epoch]."""
    reused: bool
    """Whether an earlier build was kept instead of building."""


def load_guest_image(image: Path) -> GuestImage | None:
    """Return the complete build of ours at ``image`` of this :data:`RECIPE`, else ``None``.

    :raises VlabError: when ``image`` or one of its sidecars (:func:`sidecars`) is there and the
        manifest is not one of :data:`BUILDER` (absent, unreadable, another builder's): none of
        them is ever replaced.
    """
    manifest = manifest_path(image)
    data = _read_manifest(manifest)
    if data is None or data.get("builder") != BUILDER:
        present = [path for path in (image, *sidecars(image)) if os.path.lexists(path)]
        if present:
            raise VlabError(
                f"'{present[0]}' exists and is not part of a guest image built by '{BUILDER}' (no "
                f"manifest '{manifest}' of it); it is left untouched: choose another path or remove it."
            )
        return None
    built_at = data.get("built_at")
    if (
        data.get("complete") is False
        or data.get("recipe") != RECIPE
        or isinstance(built_at, bool)
        or not isinstance(built_at, (int, float))
        or not image.is_file()
        or not kernel_path(image).is_file()
    ):
        return None  # ours, but incomplete or of another recipe: rebuilt
    return GuestImage(image, kernel_path(image), float(built_at), reused=True)


def _read_manifest(manifest: Path) -> dict[str, Any] | None:
    """Return the JSON object in ``manifest``, else ``None``.

    ``None``: absent, not a regular file of at most
    :data:`~ovsperf_common.labfiles.GUEST_MANIFEST_MAX_BYTES`, or not a JSON object.
    """
    if not os.path.lexists(manifest):
        return None
    try:
        data = json.loads(read_regular_text(manifest, max_bytes=GUEST_MANIFEST_MAX_BYTES))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def mmdebstrap_argv(tarball: Path, mirror: str, files: Path, nice: int) -> list[str]:
    """Return the mmdebstrap command writing the guest's root file system to ``tarball``.

    ``files`` holds the bridge script, its unit and ``grub.cfg`` (uploaded by the hooks).

    :raises VlabError: when ``files`` is not a plain path (:func:`check_plain_path`).
    """
    check_plain_path(files)
    hooks = [
        f"upload {files / 'bridge.sh'} /usr/local/sbin/ovsperf-guest-bridge",
        'chmod 755 "$1/usr/local/sbin/ovsperf-guest-bridge"',
        f"upload {files / 'bridge.service'} /etc/systemd/system/ovsperf-guest.service",
        'chroot "$1" systemctl enable ovsperf-guest.service',
        fstab_hook(ROOT_LABEL, fsck_pass=0),
        'printf "ovsperf-guest\\n" > "$1/etc/hostname"',
        LOCALHOST_HOOK,
        'mkdir -p "$1/boot/grub"',
        f"upload {files / 'grub.cfg'} /boot/grub/grub.cfg",
        *grub_core_hooks("ovsperf-grub"),
        'rm -rf "$1/var/cache/apt/archives/"*.deb "$1/var/lib/apt/lists/"*',
    ]
    return mmdebstrap_command(PACKAGES, hooks, tarball, mirror, nice)


def build_guest_image(image: Path, mirror: str, *, nice: int = 0, rebuild: bool = False) -> GuestImage:
    """Build the guest image at ``image`` (and its ``.kernel`` and ``.json``), or keep an earlier build.

    :param rebuild: build even when a complete build of this recipe is there.
    :param nice: niceness of the build's processes.
    :raises VlabError: when ``image`` is not a plain path, it or a sidecar is not ours, another build
        of it runs, or mmdebstrap, tar, mke2fs or qemu-img fails.
    :raises UnsafeTargetError: when ``image`` or a sidecar is a symbolic link, directory or device.
    :raises LockError: when the lock file ``.OUT.lock`` cannot be opened.
    :raises CommandError: when one of the tools is missing or outlives its timeout.
    """
    image = image.absolute()
    check_plain_path(image)
    image.parent.mkdir(parents=True, exist_ok=True)
    lock = image.with_name(f".{image.name}.lock")
    with exclusive_lock(lock) as taken:
        if not taken:
            raise VlabError(f"Another build of '{image}' is running (it holds '{lock}'); wait for it to end.")
        return _build_locked(image, mirror, nice, rebuild)


def _build_locked(image: Path, mirror: str, nice: int, rebuild: bool) -> GuestImage:
    """Build or keep the image, holding its lock (see :func:`build_guest_image`)."""
    kept = load_guest_image(image)
    if kept is not None and not rebuild:
        log.info("Guest image '%s' is there (built %s); not rebuilt.", image, time.ctime(kept.built_at))
        return kept
    for path in (image, *sidecars(image)):
        check_replaceable(path)
    sweep_hidden_siblings(image, "guest image")
    _write_manifest(image, mirror, None)  # ours from now on, incomplete until the end
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{image.name}.", suffix=".tmp", dir=image.parent))
    try:
        files = tmp / "files"
        files.mkdir()
        (files / "bridge.sh").write_text(BRIDGE_SCRIPT, encoding="utf-8")
        (files / "bridge.service").write_text(BRIDGE_UNIT, encoding="utf-8")
        (files / "grub.cfg").write_text(GRUB_CFG, encoding="utf-8")
        tarball = tmp / "rootfs.tar"
        build_log = build_log_path(image)
        log.info("Building the guest image with mmdebstrap from %s (%s); log '%s'.", mirror, SUITE, build_log)
        run_mmdebstrap(mmdebstrap_argv(tarball, mirror, files, nice), build_log)
        _extract_bootloader(tarball, tmp / "kernel")
        disk = tmp / "disk.qcow2"
        tarball_to_qcow2(tarball, disk, label=ROOT_LABEL, size=IMAGE_SIZE, nice=nice)
        (tmp / "kernel").replace(kernel_path(image))
        disk.replace(image)
        built_at = time.time()
        _write_manifest(image, mirror, built_at)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("Guest image built in %.0f s: '%s'.", time.monotonic() - start, image)
    return GuestImage(image, kernel_path(image), built_at, reused=False)


def _write_manifest(image: Path, mirror: str, built_at: float | None) -> None:
    """Write ``image``'s manifest atomically.

    Complete with ``built_at`` [s since the epoch]; ``None``: ``"complete": false`` (a build under
    way or stopped: ours, so replaceable, and never reused).
    """
    manifest: dict[str, Any] = {"builder": BUILDER, "recipe": RECIPE, "complete": built_at is not None}
    if built_at is not None:
        manifest |= {"suite": SUITE, "mirror": mirror, "packages": list(PACKAGES),
                     "loopback": LOOPBACK_APP, "marker": GUEST_MARKER,
                     "kernel": kernel_path(image).name, "built_at": built_at}  # fmt: skip
    atomic_write_text(manifest_path(image), json.dumps(manifest, indent=2) + "\n")


def _extract_bootloader(tarball: Path, target: Path) -> None:
    """Copy the GRUB core image ``boot/ovsperf-grub.lnx`` of ``tarball`` to ``target``.

    :raises VlabError: when the tarball has none.
    """
    with tarfile.open(tarball) as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
        member = members.get("boot/ovsperf-grub.lnx")
        source = tar.extractfile(member) if member is not None else None
        if source is None:
            raise VlabError(
                f"The guest image built in '{tarball}' has no GRUB core image '/boot/ovsperf-grub.lnx'."
            )
        with source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
