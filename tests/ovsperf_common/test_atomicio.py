"""Atomic writes replace only regular files: never a device node, FIFO, socket, directory or link."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from ovsperf_common.atomicio import UnsafeTargetError, atomic_directory, atomic_write_text, check_replaceable


def test_writes_and_replaces_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "job.xml"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.xml"]


def test_refuses_dev_null_and_leaves_it_a_device() -> None:
    before = os.lstat("/dev/null")
    with pytest.raises(UnsafeTargetError, match="'/dev/null' exists and is a character device"):
        atomic_write_text(Path("/dev/null"), "x")
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_refuses_fifo_socket_directory_and_symlink(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")
    real = tmp_path / "real.txt"
    real.write_text("user's file")
    link = tmp_path / "link"
    link.symlink_to(real)
    try:
        for path, kind in (
            (fifo, "a FIFO"),
            (sock_path, "a socket"),
            (directory, "a directory"),
            (link, "a symbolic link"),
        ):
            with pytest.raises(UnsafeTargetError, match=kind) as info:
                atomic_write_text(path, "x")
            assert isinstance(info.value, OSError)
    finally:
        sock.close()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    assert (directory / "notes.txt").read_text() == "mine"
    assert link.is_symlink() and real.read_text() == "user's file"
    check_replaceable(tmp_path / "absent")


def test_atomic_directory_swaps_in_a_complete_tree(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with atomic_directory(out) as tmp:
        (tmp / "index.html").write_text("1")
    with pytest.raises(RuntimeError), atomic_directory(out) as tmp:
        (tmp / "index.html").write_text("2")
        raise RuntimeError("half-way")
    assert (out / "index.html").read_text() == "1"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]
