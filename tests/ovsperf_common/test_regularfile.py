"""ovsperf_common.regularfile: inputs are read only when they are regular files (issue 25 item 14)."""

from __future__ import annotations

import errno
import socket
import time
from pathlib import Path

import pytest

from ovsperf_common.regularfile import (
    NotRegularFileError,
    read_regular_bytes,
    read_regular_text,
    require_regular,
)
from tests.fifoguard import fifo_watchdog


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text("hunter2\n")
    link = tmp_path / "link"
    link.symlink_to(path)
    assert read_regular_text(path) == "hunter2\n"
    assert read_regular_bytes(link) == b"hunter2\n"
    require_regular(link)


def test_a_fifo_is_refused_at_once_without_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    with fifo_watchdog(fifo, timeout_s=3) as freed:
        started = time.monotonic()
        with pytest.raises(NotRegularFileError) as caught:
            read_regular_text(fifo)
        with pytest.raises(NotRegularFileError):
            require_regular(fifo)
        assert time.monotonic() - started < 1
    assert freed == []
    assert caught.value.errno == errno.EINVAL
    assert caught.value.strerror == "it is a FIFO (named pipe), not a regular file"
    assert caught.value.filename == str(fifo)
    assert isinstance(caught.value, OSError)  # every `except OSError` of a caller reports it


@pytest.mark.parametrize(
    ("name", "kind"),
    [("/dev/zero", "a character device"), ("/dev/null", "a character device"), ("/", "a directory")],
)
def test_devices_and_directories_are_refused(name: str, kind: str) -> None:
    with pytest.raises(NotRegularFileError, match=f"it is {kind}, not a regular file"):
        read_regular_bytes(Path(name))


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(OSError) as caught:  # opening a socket file fails (ENXIO) or is refused
            read_regular_bytes(path)
    assert caught.value.errno in (errno.ENXIO, errno.EINVAL)


def test_size_cap_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    assert read_regular_bytes(path, max_bytes=101) == b"x" * 101
    with pytest.raises(NotRegularFileError, match="larger than 100 B") as caught:
        read_regular_bytes(path, max_bytes=100)
    assert caught.value.errno == errno.EFBIG
    with pytest.raises(FileNotFoundError):
        read_regular_bytes(tmp_path / "missing")
