"""Task directories follow Beaker's layout, `make` works as the harness calls it, shell passes ShellCheck."""

from __future__ import annotations

import configparser
import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .shims import REPO, TASKS

TASK_NAMES = (
    "setup_dpdk",
    "build_moongen",
    "perf_synchronization",
    "vsperf_test",
    "sleeper",
    "build_trafficgen",
    "ovsperf_test",
    "setup_trex",
)


def test_every_task_has_the_beaker_files() -> None:
    found = sorted(p.name for p in TASKS.iterdir() if (p / "runtest.sh").exists())
    assert found == sorted(TASK_NAMES)
    for name in TASK_NAMES:
        task = TASKS / name
        for required in ("Makefile", "metadata", "runtest.sh", "README.md"):
            assert (task / required).is_file(), f"{name}/{required}"
        assert os.access(task / "runtest.sh", os.X_OK)
        meta = configparser.ConfigParser()
        meta.read(task / "metadata")
        assert meta["General"]["name"] == f"/ovsperf/{name}"
        assert meta["General"]["license"] == "Apache-2.0"
        assert meta["restraint"]["entry_point"] == "make run"
        assert meta["restraint"]["max_time"][-1] in "mh"
        assert "beaker_tasks/lib" in meta["restraint"]["repoRequires"].split(";")
        assert "make" in meta["restraint"]["dependencies"].split(";")


@pytest.mark.parametrize("name", TASK_NAMES)
def test_make_testinfo_desc_without_rhts(tmp_path: Path, name: str) -> None:
    copy = tmp_path / "beaker_tasks"
    shutil.copytree(TASKS, copy, ignore=shutil.ignore_patterns("testinfo.desc"))
    proc = subprocess.run(
        ["make", "testinfo.desc", "build"], cwd=copy / name, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    fields: dict[str, list[str]] = {}
    for line in (copy / name / "testinfo.desc").read_text().splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key, []).append(value.strip())
    assert fields["Name"] == [f"/ovsperf/{name}"]
    assert fields["Path"] == [f"/mnt/tests/ovsperf/{name}"]
    assert fields["TestVersion"] == ["1.0"]
    assert fields["License"] == ["Apache-2.0"]
    assert fields["Owner"][0].endswith(">")
    assert fields["TestTime"][0][-1] in "mh"
    assert fields["Destructive"][0] in ("Yes", "No")
    assert "make" in fields["Requires"]
    assert {"Description", "Type", "RunFor", "Priority"} <= set(fields)
    proc = subprocess.run(["make", "clean"], cwd=copy / name, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and not (copy / name / "testinfo.desc").exists()


def _shellcheck_files() -> list[str]:
    """The files the Makefile's `shellcheck` target checks (its git ls-files patterns)."""
    makefile = (REPO / "Makefile").read_text()
    assert "git ls-files '*.sh' 'beaker_tasks/*/runtest.sh'" in makefile
    files = []
    for path in sorted(REPO.rglob("*")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith((".venv/", ".git/")) or not path.is_file():
            continue
        if fnmatch.fnmatch(rel, "*.sh") or fnmatch.fnmatch(rel, "beaker_tasks/*/runtest.sh"):
            files.append(rel)
    return files


def test_every_shell_file_of_ours_is_covered_by_the_shellcheck_target() -> None:
    files = _shellcheck_files()
    ours = [
        p.relative_to(REPO).as_posix()
        for p in (*TASKS.rglob("*"), *(REPO / "tests" / "beaker_tasks").rglob("*"))
    ]
    for rel in ours:
        path = REPO / rel
        if (
            path.is_file()
            and path.read_bytes()[:2] == b"#!"
            and b"bash" in path.read_bytes().split(b"\n", 1)[0]
        ):
            assert rel in files, f"{rel} is a shell script the shellcheck target misses"
    assert "beaker_tasks/lib/task.sh" in files


def test_shellcheck_clean() -> None:
    ours = [f for f in _shellcheck_files() if f.startswith(("beaker_tasks/", "tests/beaker_tasks/"))]
    proc = subprocess.run(["shellcheck", "-x", *ours], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout
