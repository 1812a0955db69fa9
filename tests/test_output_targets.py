"""No command replaces what is not its own: device nodes, FIFOs, sockets, directories, symlinks.

As root, ``--output /dev/null`` must leave ``/dev/null`` a character device.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jobcreator.cli import main as jobcreator_main
from vsperf_configs.cli import main as vsperf_config_main

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = ROOT / "vsperf_configs" / "inventory.example.yaml"
JOB = [
    "--host",
    "tg.example.com",
    "--host",
    "dut.example.com",
    "--config",
    "OVS_DPDK1q",
    "--distro",
    "RHEL-9.4.0",
]


def _commands(target: Path) -> dict[str, tuple[object, list[str]]]:
    return {
        "jobcreator": (jobcreator_main, [*JOB, "--output", str(target)]),
        "vsperf-config": (
            vsperf_config_main,
            ["--scenario", "OVS_DPDK1q", "--host", "dut01.example.com", "--inventory", str(INVENTORY),
             "--output", str(target)],
        ),
    }  # fmt: skip


@pytest.mark.parametrize("command", ["jobcreator", "vsperf-config"])
def test_dev_null_is_never_replaced(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = os.lstat("/dev/null")
    main, argv = _commands(Path("/dev/null"))[command]
    assert main(argv) == 2  # type: ignore[operator]
    err = capsys.readouterr().err
    assert "'/dev/null' exists and is a character device" in err.splitlines()[-1]
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


@pytest.mark.parametrize("command", ["jobcreator", "vsperf-config"])
@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink"])
def test_other_non_regular_targets_are_refused_and_kept(
    command: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
        (target / "mine.txt").write_text("user's")
    else:
        (tmp_path / "real.txt").write_text("user's")
        target.symlink_to(tmp_path / "real.txt")
    main, argv = _commands(target)[command]
    assert main(argv) == 2  # type: ignore[operator]
    assert "only a regular file is replaced" in capsys.readouterr().err
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
    elif kind == "directory":
        assert (target / "mine.txt").read_text() == "user's"
    else:
        assert target.is_symlink() and (tmp_path / "real.txt").read_text() == "user's"


@pytest.mark.parametrize("command", ["jobcreator", "vsperf-config"])
def test_a_regular_file_is_replaced_atomically(command: str, tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    main, argv = _commands(target)[command]
    assert main(argv) == 0  # type: ignore[operator]
    assert target.read_text() != "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
