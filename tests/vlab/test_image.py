"""The image build: a killed build leaves no image that anything uses; the next build sweeps it and completes.

mmdebstrap and qemu-img are stand-ins here (CI's `make test` installs neither, and a real build
downloads ~300 MB): the stand-in mmdebstrap writes a root file system tarball with a kernel and
an initrd in /boot, as the real one does; ``mke2fs -d`` and ``tar`` are the real ones.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from ovsperf_common.deadline import Deadline
from vlab.config import LabPaths
from vlab.image import build_image, load_image, mmdebstrap_argv

FAKE_MMDEBSTRAP = """#!/bin/bash
# Stand-in for mmdebstrap: the tarball is the argument before the mirror (the last one).
set -o errexit -o nounset
out=${@: -2:1}
echo $$ > "${FAKE_PIDS}/mmdebstrap.$$"
if [[ -n ${FAKE_TRAP:-} ]]; then
    # As mmdebstrap does: on SIGTERM it unmounts and removes its temporary root, then exits.
    trap 'echo cleaned > "${FAKE_PIDS}/cleaned.$$"; exit 1' TERM
    head -c 100000 /dev/zero > "${out}"
    sleep 60 & wait $!
    exit 0
fi
if [[ -n ${FAKE_HANG:-} ]]; then
    head -c 100000 /dev/zero > "${out}"   # a partial tarball, then the build is killed
    exec sleep 60
fi
cp "${FAKE_TARBALL}" "${out}"
"""

FAKE_QEMU_IMG = """#!/bin/bash
# Stand-in for 'qemu-img convert -O qcow2 RAW OUT': copies.
set -o errexit -o nounset
cp "${@: -2:1}" "${@: -1}"
"""


def _rootfs_tarball(path: Path) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in (("./boot/vmlinuz-6.1.0-99-amd64", b"kernel"),
                           ("./boot/initrd.img-6.1.0-99-amd64", b"initrd"),
                           ("./boot/vlab-grub.lnx", b"grub"),
                           ("./etc/hostname", b"vlab\n")):  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def fake_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Put the stand-ins first on PATH; return the environment for a builder process."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("mmdebstrap", FAKE_MMDEBSTRAP), ("qemu-img", FAKE_QEMU_IMG)):
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    pids = tmp_path / "pids"
    pids.mkdir()
    tarball = tmp_path / "rootfs.tar"
    _rootfs_tarball(tarball)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_PIDS": str(pids), "FAKE_TARBALL": str(tarball)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _kill_stand_ins(pids: Path) -> None:
    """End the stand-in mmdebstrap processes this test started (by the pids they wrote)."""
    for entry in pids.glob("mmdebstrap.*"):
        pid = int(entry.read_text().strip())
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_killed_build_leaves_no_image_and_the_next_build_completes(
    tmp_path: Path, fake_tools: dict[str, str]
) -> None:
    state_dir = tmp_path / "state"
    paths = LabPaths(state_dir)
    builder_code = (
        "import sys; from pathlib import Path; from vlab.config import LabPaths; "
        "from vlab.image import build_image; "
        "build_image(LabPaths(Path(sys.argv[1])), 'http://mirror.invalid/debian')"
    )
    env = {**os.environ, **fake_tools, "FAKE_HANG": "1"}
    builder = subprocess.Popen([sys.executable, "-c", builder_code, str(state_dir)], env=env)
    try:
        partial = Deadline(what="the partial tarball", timeout_s=60.0).poll(
            lambda: next(iter(state_dir.glob(".image.*.tmp/rootfs.tar")), None), interval_s=0.1
        )
        time.sleep(0.3)
        builder.kill()  # SIGKILL: no cleanup runs in the builder
        builder.wait(timeout=30)
    finally:
        if builder.poll() is None:
            builder.kill()
            builder.wait(timeout=30)
        _kill_stand_ins(Path(fake_tools["FAKE_PIDS"]))
    assert partial.is_file()  # the half-built image is there, under its hidden name
    assert not paths.image_dir.exists()
    assert load_image(paths) is None  # so nothing uses it: 'up' would build
    image = build_image(paths, "http://mirror.invalid/debian")
    assert not partial.parent.exists()  # swept
    assert [p.name for p in state_dir.iterdir() if p.name.startswith(".image")] == []
    assert (image.kernel_version, image.kernel.read_bytes(), image.initrd.read_bytes(),
            image.bootloader.read_bytes()) == ("6.1.0-99-amd64", b"kernel", b"initrd", b"grub")  # fmt: skip
    assert sorted(p.name for p in paths.image_dir.iterdir()) == [
        "grub.lnx",
        "initrd.img",
        "manifest.json",
        "root.qcow2",
        "vmlinuz",
    ]
    assert load_image(paths) == image
    assert paths.key.is_file() and paths.key.with_suffix(".pub").read_text().startswith("ssh-ed25519 ")


def test_a_failed_build_keeps_the_previous_image(
    tmp_path: Path, fake_tools: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = LabPaths(tmp_path / "state")
    first = build_image(paths, "http://mirror.invalid/debian")
    monkeypatch.setenv("FAKE_TARBALL", str(tmp_path / "missing.tar"))
    from vlab.config import VlabError

    with pytest.raises(VlabError) as caught:
        build_image(paths, "http://mirror.invalid/debian")
    log = paths.state_dir / "build.log"
    assert str(caught.value).startswith(f"mmdebstrap failed with exit status 1 (log '{log}'): ")
    assert "missing.tar" in str(caught.value)
    assert load_image(paths) == first
    assert [p.name for p in paths.state_dir.iterdir() if p.name.startswith(".image")] == []


def test_mmdebstrap_builds_from_the_mirror_with_the_packages_and_authorises_the_key() -> None:
    argv = mmdebstrap_argv(
        Path("/b/rootfs.tar"), "http://deb.debian.org/debian", Path("/s/id_ed25519.pub"), 19
    )
    assert argv[:4] == ["nice", "-n", "19", "mmdebstrap"]
    assert argv[-3:] == ["bookworm", "/b/rootfs.tar", "http://deb.debian.org/debian"]
    (include,) = [a for a in argv if a.startswith("--include=")]
    packages = include.removeprefix("--include=").split(",")
    for needed in (
        "linux-image-amd64",
        "openssh-server",
        "openvswitch-switch-dpdk",
        "dpdk",
        "python3",
        "rsync",
    ):
        assert needed in packages
    hooks = [a.removeprefix("--customize-hook=") for a in argv if a.startswith("--customize-hook=")]
    assert 'install -m 600 "/s/id_ed25519.pub" "$1/root/.ssh/authorized_keys"' in hooks
    assert "--format=tar" in argv and "--variant=minbase" in argv


def test_sigterm_to_up_lets_mmdebstrap_clean_up_and_leaves_no_image(
    tmp_path: Path, fake_tools: dict[str, str]
) -> None:
    """A stopped `up` (SIGTERM, as a CI timeout sends) gives mmdebstrap its SIGTERM and waits for it.

    Killed with its parent instead, or left to write into a closed pipe, mmdebstrap dies with
    /proc, /sys and /dev/pts still mounted in its temporary root.
    """
    state_dir = tmp_path / "state"
    script = Path(sys.executable).parent / "ovsperf-vlab"
    env = {**os.environ, **fake_tools, "FAKE_TRAP": "1"}
    argv = [
        str(script),
        "up",
        "--state-dir",
        str(state_dir),
        "--accel",
        "tcg",
        "--mirror",
        "http://m.invalid/d",
    ]
    up = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids = Path(fake_tools["FAKE_PIDS"])
    try:
        Deadline(what="the stand-in mmdebstrap", timeout_s=60.0).poll(
            lambda: next(iter(state_dir.glob(".image.*.tmp/rootfs.tar")), None), interval_s=0.1
        )
        time.sleep(0.3)
        up.send_signal(signal.SIGTERM)
        out, err = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(timeout=30)
        _kill_stand_ins(pids)
    assert (up.returncode, out) == (2, "")
    assert err.splitlines()[-1] == "ovsperf-vlab: error: interrupted."
    assert len(list(pids.glob("cleaned.*"))) == 1  # the stand-in got SIGTERM and cleaned up
    assert load_image(LabPaths(state_dir)) is None
    assert [
        p.name for p in state_dir.iterdir() if p.name.startswith(".image")
    ] == []  # removed on the way out


def test_an_image_from_before_the_grub_boot_is_rebuilt_not_used(tmp_path: Path) -> None:
    paths = LabPaths(tmp_path)
    paths.image_dir.mkdir(parents=True)
    for name in ("root.qcow2", "vmlinuz", "initrd.img"):
        (paths.image_dir / name).write_bytes(b"x")
    manifest = {"suite": "bookworm", "kernel_version": "6.1.0-99-amd64", "built_at": 1.0}
    (paths.image_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert load_image(paths) is None  # 'up' builds a new one
    (paths.image_dir / "grub.lnx").write_bytes(b"grub")
    (paths.image_dir / "manifest.json").write_text(json.dumps({**manifest, "bootloader": "grub.lnx"}))
    image = load_image(paths)
    assert image is not None and image.bootloader == paths.image_dir / "grub.lnx"
