"""The PVP/PVVP guest image's build: what it installs, what it never replaces, what it keeps.

The build itself (mmdebstrap, minutes) runs in ``make vlab-test`` (``ovsperf-vlab guest-test``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ovsperf_common.atomicio import UnsafeTargetError
from ovsperf_common.labfiles import GUEST_ERROR_PREFIX, GUEST_MARKER
from vlab import guestimage, image
from vlab.cli import main
from vlab.config import VlabError


def test_a_file_that_is_not_our_build_is_never_replaced(tmp_path: Path) -> None:
    theirs = tmp_path / "disk.qcow2"
    theirs.write_bytes(b"someone's disk")
    with pytest.raises(
        VlabError, match=r"exists and is not part of a guest image built by 'ovsperf-vlab guest-image'"
    ):
        guestimage.build_guest_image(theirs, "http://deb.debian.org/debian")
    assert theirs.read_bytes() == b"someone's disk"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".disk.qcow2.lock", "disk.qcow2"]  # nothing built
    assert main(["guest-image", str(theirs)]) == 2


def test_an_earlier_build_of_this_recipe_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    disk = tmp_path / "g.qcow2"
    disk.write_bytes(b"QFI\xfb")
    guestimage.kernel_path(disk).write_bytes(b"grub")
    manifest = {"builder": guestimage.BUILDER, "recipe": guestimage.RECIPE, "built_at": 1.0, "complete": True}
    guestimage.manifest_path(disk).write_text(json.dumps(manifest))
    kept = guestimage.build_guest_image(disk, "http://deb.debian.org/debian")
    assert kept.reused and kept.disk == disk and kept.kernel == tmp_path / "g.qcow2.kernel"
    assert main(["guest-image", str(disk)]) == 0
    assert capsys.readouterr().out == f"{disk}\t{disk}.kernel\treused\n"
    stale = {**manifest, "recipe": guestimage.RECIPE - 1}
    guestimage.manifest_path(disk).write_text(json.dumps(stale))
    assert guestimage.load_guest_image(disk) is None  # another recipe: rebuilt (replaceable: ours)


def test_the_image_bridges_its_nics_and_prints_the_marker(tmp_path: Path) -> None:
    argv = guestimage.mmdebstrap_argv(tmp_path / "root.tar", "http://mirror/debian", tmp_path, 0)
    assert argv[:4] == ["mmdebstrap", "--mode=root", "--variant=minbase", "--format=tar"]
    assert (
        "--include=linux-image-amd64,initramfs-tools,systemd-sysv,udev,kmod,iproute2,e2fsprogs,grub-pc-bin"
        in argv
    )
    hooks = [a.removeprefix("--customize-hook=") for a in argv if a.startswith("--customize-hook=")]
    assert f"upload {tmp_path / 'bridge.sh'} /usr/local/sbin/ovsperf-guest-bridge" in hooks
    assert 'chroot "$1" systemctl enable ovsperf-guest.service' in hooks
    assert argv[-3:] == ["bookworm", str(tmp_path / "root.tar"), "http://mirror/debian"]
    script = guestimage.BRIDGE_SCRIPT
    assert "stp_state 0 ageing_time 0" in script and f'say "{GUEST_MARKER} $1 $2 (linux_bridge)"' in script
    # udev names the NICs before they are listed; a failure says so on the console, as the lab expects.
    assert script.index("udevadm settle") < script.index("/sys/class/net/")
    assert script.count(f'say "{GUEST_ERROR_PREFIX}: ') == 3
    assert (
        "ipv6.disable=1" in guestimage.GRUB_CFG
        and f"root=LABEL={guestimage.ROOT_LABEL}" in guestimage.GRUB_CFG
    )
    checked = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr


MIRROR = "http://deb.debian.org/debian"


@pytest.mark.parametrize("sidecar", [".kernel", ".json", ".build.log"])
def test_a_sidecar_that_is_not_ours_is_never_replaced_even_without_the_disk(
    tmp_path: Path, sidecar: str
) -> None:
    disk = tmp_path / "g.qcow2"
    theirs = tmp_path / f"g.qcow2{sidecar}"
    theirs.write_text('{"builder": "someone else"}')
    with pytest.raises(VlabError, match=rf"'{theirs}' exists and is not part of a guest image built by"):
        guestimage.build_guest_image(disk, MIRROR)
    assert theirs.read_text() == '{"builder": "someone else"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == [".g.qcow2.lock", theirs.name]


def test_a_build_log_that_is_a_link_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    disk = tmp_path / "g.qcow2"
    guestimage.manifest_path(disk).write_text(json.dumps({"builder": guestimage.BUILDER, "complete": False}))
    target = tmp_path / "precious"
    target.write_text("keep")
    guestimage.build_log_path(disk).symlink_to(target)
    with pytest.raises(UnsafeTargetError, match=r"g\.qcow2\.build\.log"):
        guestimage.build_guest_image(disk, MIRROR)
    assert target.read_text() == "keep"


@pytest.mark.parametrize("name", ["my disk.qcow2", "g$HOME.qcow2", "g'.qcow2"])
def test_an_output_path_the_hooks_would_have_to_quote_is_refused(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    with pytest.raises(VlabError, match=r"\('OUT'\) is not a plain path") as refused:
        guestimage.build_guest_image(out, MIRROR)
    assert name in str(refused.value)
    assert list(tmp_path.iterdir()) == []
    assert main(["guest-image", str(out)]) == 2


def test_a_stopped_build_leaves_an_incomplete_manifest_and_the_next_sweeps_its_leftovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmp_path / "g.qcow2"
    killed = tmp_path / ".g.qcow2.x1y2.tmp"  # what a SIGKILLed build leaves
    (killed / "files").mkdir(parents=True)
    other = tmp_path / ".h.qcow2.x1y2.tmp"  # another image's: not touched
    other.mkdir()
    seen: list[list[str]] = []

    def stopped(argv: list[str], build_log: Path) -> None:
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        build_log.write_text("stopped\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(guestimage, "run_mmdebstrap", stopped)
    with pytest.raises(KeyboardInterrupt):
        guestimage.build_guest_image(disk, MIRROR)
    assert ".g.qcow2.x1y2.tmp" not in seen[0] and ".h.qcow2.x1y2.tmp" in seen[0]
    manifest = json.loads(guestimage.manifest_path(disk).read_text())
    assert manifest == {"builder": guestimage.BUILDER, "recipe": guestimage.RECIPE, "complete": False}
    assert guestimage.load_guest_image(disk) is None  # ours, not reused: the next build replaces it
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".g.qcow2.lock", ".h.qcow2.x1y2.tmp", "g.qcow2.build.log", "g.qcow2.json"
    ]  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        guestimage.build_guest_image(disk, MIRROR)  # not refused: the files are ours


@pytest.mark.parametrize("built_at", ["yesterday", None, True])
def test_a_manifest_of_ours_with_a_bad_field_is_rebuilt_not_a_crash(tmp_path: Path, built_at: object) -> None:
    disk = tmp_path / "g.qcow2"
    disk.write_bytes(b"QFI\xfb")
    guestimage.kernel_path(disk).write_bytes(b"grub")
    manifest = {"builder": guestimage.BUILDER, "recipe": guestimage.RECIPE, "built_at": built_at}
    guestimage.manifest_path(disk).write_text(json.dumps(manifest))
    assert guestimage.load_guest_image(disk) is None


def test_a_huge_manifest_is_not_ours(tmp_path: Path) -> None:
    disk = tmp_path / "g.qcow2"
    disk.write_bytes(b"QFI\xfb")
    manifest = {
        "builder": guestimage.BUILDER,
        "recipe": guestimage.RECIPE,
        "built_at": 1.0,
        "pad": "x" * 70000,
    }
    guestimage.manifest_path(disk).write_text(json.dumps(manifest))
    with pytest.raises(VlabError, match="is not part of a guest image"):
        guestimage.load_guest_image(disk)


def test_both_images_share_the_grub_and_fstab_hooks(tmp_path: Path) -> None:
    guest = guestimage.mmdebstrap_argv(tmp_path / "r.tar", MIRROR, tmp_path, 0)
    lab = image.mmdebstrap_argv(tmp_path / "r.tar", MIRROR, tmp_path / "k.pub", 0)
    for hook in image.grub_core_hooks("ovsperf-grub"):
        assert f"--customize-hook={hook}" in guest
    assert f"--customize-hook={image.fstab_hook(guestimage.ROOT_LABEL, fsck_pass=0)}" in guest
    assert (
        f"--customize-hook={image.LOCALHOST_HOOK}" in guest
        and f"--customize-hook={image.LOCALHOST_HOOK}" in lab
    )
    assert (
        "--customize-hook=printf 'LABEL=vlabroot / ext4 errors=remount-ro 0 1\\n' > \"$1/etc/fstab\"" in lab
    )


def test_a_tarball_becomes_a_qcow2_disk(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("ovsperf-guest\n")
    tarball = tmp_path / "rootfs.tar"
    subprocess.run(["tar", "-cf", str(tarball), "-C", str(root), "."], check=True)
    work = tmp_path / "work"
    work.mkdir()
    disk = work / "disk.qcow2"
    image.tarball_to_qcow2(tarball, disk, label="ovsguest", size="8M")
    info = json.loads(subprocess.run(["qemu-img", "info", "--output=json", str(disk)], check=True,
                                     capture_output=True, text=True).stdout)  # fmt: skip
    assert info["format"] == "qcow2" and info["virtual-size"] == 8 * 1024 * 1024
    assert sorted(p.name for p in work.iterdir()) == ["disk.qcow2"] and not tarball.exists()


def test_sweep_removes_only_hidden_build_leftovers_of_that_target(tmp_path: Path) -> None:
    target = tmp_path / "g.qcow2"
    for name in (".g.qcow2.a.tmp", ".g.qcow2.b.old", ".g.qcow2.c.keep", ".gg.qcow2.d.tmp"):
        (tmp_path / name).mkdir()
    (tmp_path / ".g.qcow2.e.tmp").write_text("a file, not a build directory")
    removed = image.sweep_hidden_siblings(target, "guest image")
    assert [p.name for p in removed] == [".g.qcow2.a.tmp", ".g.qcow2.b.old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".g.qcow2.c.keep",
        ".g.qcow2.e.tmp",
        ".gg.qcow2.d.tmp",
    ]
