"""Issue 25, "Paths and shells": what the hub and the command line give never leaves its directory.

* A hub's NVR parts become paths (``<publish dir>/<n>-<v>-<r>/``, ``<n>-<v>-<r>.<arch>.rpm``): a
  release ``1/../../x`` must be refused before anything is created or downloaded.
* ``--collector`` is an rsync destination whose path reaches the collector's shell (rsync <= 3.2.3):
  ``watch`` refuses a bad one before it talks to Koji, ``submit`` before it submits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from tests.kojiwatch.cliutil import koji_args, run, watch_argv
from tests.kojiwatch.conftest import TAG
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer

HOSTILE_COLLECTOR = "root@h:/ci_in;touch${IFS}/tmp/x;"


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize(
    ("part", "value"),
    [("release", "1/../../x"), ("version", ".."), ("release", "1\nfc39"), ("name", "../openvswitch")],
)
def test_a_build_whose_nvr_would_leave_the_publish_dir_is_refused(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    part: str,
    value: str,
) -> None:
    build_id = hub.add_build(rpms["ovs31"], tags=(TAG,))
    hub.builds[build_id][part] = value
    if part == "name":
        hub.builds[build_id]["package_name"] = value
    for info in hub.rpms[build_id]:  # the hub's RPM list agrees with its build
        info[part] = value
    (web.root / "openvswitch-3.1.0-1").mkdir()  # an earlier build's repo: '..' can climb out of it
    around = _listing(web.root.parent)
    code, out, err = run(["prepare-repo", "--build", str(build_id), *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR and out == ""
    (line,) = [line for line in err.splitlines() if line.startswith("ovsperf-koji: error: ")]
    assert f"Koji build {build_id} has {part} {value!r}, which is not an RPM {part}" in line
    assert hub.downloads == []
    assert _listing(web.root) == ["openvswitch-3.1.0-1"] and _listing(web.root / "openvswitch-3.1.0-1") == []
    assert _listing(web.root.parent) == around


def test_an_rpm_whose_name_would_leave_the_repo_is_refused(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    build_id = hub.add_build(rpms["ovs31"])
    hub.rpms[build_id][0]["name"] = "../../../evil"
    code, _, err = run(["prepare-repo", "--build", str(build_id), *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR
    assert f"An RPM of Koji build {build_id} has name '../../../evil', which is not an RPM name" in err
    assert hub.downloads == [] and _listing(web.root) == []


def test_a_scratch_task_file_climbing_out_is_refused(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_scratch_task(67000, rpms["ovs32"])
    hub.task_output[67001].append("../../../evil-1-1.x86_64.rpm")
    code, _, err = run(["prepare-repo", "--task", "67000", *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR
    assert "An RPM of Koji task 67000 has name '../../../evil', which is not an RPM name" in err
    assert hub.downloads == [] and _listing(web.root) == []


def test_watch_refuses_a_hostile_collector_before_talking_to_koji(
    hub: FakeKojiHub, web: StaticHttpServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = tmp_path / "watch-state.json"
    code, out, err = run(watch_argv(hub, web, state, "--collector", HOSTILE_COLLECTOR), capsys)
    assert code == ExitCode.ERROR and out == ""
    (line,) = err.splitlines()
    assert line.startswith("ovsperf-koji: error: Option '--collector': ")
    assert "is not an rsync destination 'user@host:/absolute/path'" in line
    assert hub.calls == [] and not state.exists()
