"""Issue 25, "Paths and shells": an SQLite ``--db`` is a regular file or a new file in a directory.

SQLite writes ``<file>-journal``/``-wal``/``-shm`` beside its file: ``--db /dev/null`` created
``/dev/null-journal``; a FIFO would block the open; a dangling link would create its target.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from resultstore.cli import main

DEV_NULL = Path("/dev/null")


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith("ovsperf-results: error: ")
    return line


def test_dev_null_is_refused_and_nothing_is_created_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    beside = [Path(f"/dev/null{suffix}") for suffix in ("-journal", "-wal", "-shm")]
    before = [p for p in beside if p.exists()]  # [] unless an older ovsperf left one
    assert main(["--db", str(DEV_NULL), "list"]) == ExitCode.ERROR
    line = _error_line(capsys)
    assert "'/dev/null': it is a character device, not a regular file; give an SQLite file" in line
    assert [p for p in beside if p.exists()] == before


@pytest.mark.parametrize("kind", ["directory", "fifo", "socket", "dangling-link", "link-to-device"])
def test_a_path_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    db = tmp_path / "results.sqlite"
    expected = {
        "directory": "it is a directory, not a regular file",
        "fifo": "it is a FIFO (named pipe), not a regular file",
        "socket": "it is a socket, not a regular file",
        "dangling-link": "is a symbolic link to a missing file",
        "link-to-device": "it is a character device, not a regular file",
    }[kind]
    server = None
    if kind == "directory":
        db.mkdir()
    elif kind == "fifo":
        os.mkfifo(db)  # opening it would wait for a writer, for ever
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(db))
    elif kind == "dangling-link":
        db.symlink_to(tmp_path / "elsewhere" / "created-by-sqlite")
        (tmp_path / "elsewhere").mkdir()
    else:
        db.symlink_to(DEV_NULL)
    try:
        assert main(["--db", str(db), "list"]) == ExitCode.ERROR
    finally:
        if server is not None:
            server.close()
    line = _error_line(capsys)
    assert f"'{db}'" in line and expected in line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["results.sqlite", *(["elsewhere"] if kind == "dangling-link" else [])]
    )
    if kind == "dangling-link":
        assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_new_file_in_a_directory_and_an_existing_store_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "results.sqlite"
    assert main(["--db", str(db), "list"]) == ExitCode.NO_RESULTS
    assert db.is_file()
    link = tmp_path / "link.sqlite"
    link.symlink_to(db)  # a link to a regular file is that file
    assert main(["--db", str(link), "list"]) == ExitCode.NO_RESULTS
    capsys.readouterr()
