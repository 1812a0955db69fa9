"""Jobs that measured nothing, and tarballs that must not be trusted: each becomes an infrastructure failure.

The delivery contract agreed with ``process-ci-results``: ``ci_in/<name>/`` holding only
``ovsperf-metadata.json`` with ``complete: false``, a one-sentence ``incomplete_reason``,
``infrastructure_failure: true``, ``beaker_job_id``, ``beaker_status``, the scenario and the build.
Nothing is ever written outside ``ci_in``, and no staging directory or tarball byte is left behind.
"""

from __future__ import annotations

import io
import json
import os
import tarfile

import pytest
from bkr.common.hub import HubProxy

from beakerwatch.cli import main
from ovsperf_common import metadata
from ovsperf_common.exitcodes import ExitCode
from tests.beakerwatch.conftest import (
    BUILD_URL,
    KOJI_TAG,
    NVRS,
    SCENARIO,
    TS,
    Lab,
    hostile_tarball,
    results_tarball,
)
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER
from tests.jobcreator.fakehub import FakeJob


def assert_infrastructure_failure(lab: Lab, job: FakeJob, status: str, *words: str) -> str:
    """Assert the one delivery is an infrastructure failure of ``job``; return its reason."""
    name = f"J{job.id}-{SCENARIO}-infrastructure-failure"
    assert lab.deliveries() == [name]
    delivery = lab.ci_in / name
    assert [p.name for p in delivery.iterdir()] == ["ovsperf-metadata.json"]
    raw = json.loads((delivery / "ovsperf-metadata.json").read_text())
    assert raw["complete"] is False
    assert raw["infrastructure_failure"] is True
    assert raw["beaker_job_id"] == f"J:{job.id}"
    assert raw["beaker_status"] == status
    assert raw["scenario"] == SCENARIO
    assert raw["build"] == {"nvrs": NVRS, "tag": KOJI_TAG, "jenkins_build_url": BUILD_URL}
    record = metadata.read(delivery)  # what process-ci-results reads
    assert record.infrastructure_failure
    reason = record.incomplete_reason
    assert reason is not None and "\n" not in reason
    assert reason.startswith(f"Beaker job 'J:{job.id}' ({SCENARIO}) ended {status}")
    for word in words:
        assert word in reason
    state = json.loads(lab.state.read_text())["jobs"][0]
    assert (state["state"], state["beaker_status"], state["delivery"]) == (
        "infrastructure-failure",
        status,
        name,
    )
    return reason


def tracked_job(lab: Lab) -> FakeJob:
    job = lab.submit()
    assert lab.track(job) == ExitCode.OK
    lab.hub.state.run_job(job.id)
    return job


def test_aborted_job(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    job = tracked_job(lab)
    lab.hub.state.abort_job(job.id, "Recipe 'R:1' failed to provision: no distro tree")
    assert lab.collect() == ExitCode.OK
    assert_infrastructure_failure(
        lab, job, "Aborted", "was Aborted", "failed to provision", "nothing was measured"
    )
    assert capsys.readouterr().out.splitlines()[-1].split("\t")[2:4] == ["infrastructure-failure", "Aborted"]


def test_cancelled_job(lab: Lab) -> None:
    job = tracked_job(lab)
    proxy = HubProxy(
        None, HUB_URL=lab.hub.url, AUTH_METHOD="password", USERNAME=HUB_USER, PASSWORD=HUB_PASSWORD
    )
    proxy.taskactions.stop(job.j_id, "cancel", "lab maintenance")  # what 'bkr job-cancel' sends
    assert lab.collect() == ExitCode.OK
    assert_infrastructure_failure(lab, job, "Cancelled", "was Cancelled", "lab maintenance")


def test_recipe_killed_by_the_external_watchdog(lab: Lab) -> None:
    job = tracked_job(lab)
    lab.hub.state.watchdog_abort(job.recipe("DUT").id)
    assert lab.collect() == ExitCode.OK
    assert_infrastructure_failure(lab, job, "Aborted", "External Watchdog Expired")


def test_completed_recipe_without_tarball(lab: Lab) -> None:
    job = tracked_job(lab)
    lab.finish(job, None)
    assert lab.collect() == ExitCode.OK
    assert_infrastructure_failure(lab, job, "Completed", "uploaded no results_<timestamp>.tar.gz")


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o644
    return info


def _good(ts: str = TS) -> list[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]]:
    return [_member(ts, tarfile.DIRTYPE), (_member(f"{ts}/result_0_phy2phy_tput_p2p.csv"), b"id\n")]


def _flip_middle(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 8]) + data[middle + 8 :]


BAD_TARBALLS = {
    "not gzip": (lambda tmp: os.urandom(4096), "not valid gzip"),
    "corrupt inside": (lambda tmp: _flip_middle(results_tarball(tmp)), "tarball"),
    "truncated": (lambda tmp: results_tarball(tmp)[:-40], "truncated"),
    "over the size cap": (
        lambda tmp: hostile_tarball([*_good(), (_member(f"{TS}/big"), os.urandom(64 << 10))]),
        "cap",
    ),
    "compression bomb": (
        lambda tmp: hostile_tarball([*_good(), (_member(f"{TS}/zeros"), bytes(8 << 20))]),
        "cap",
    ),
    "absolute path": (
        lambda tmp: hostile_tarball([*_good(), (_member(f"{tmp}/outside/evil"), b"x")]),
        "not a plain path",
    ),
    "dot-dot": (
        lambda tmp: hostile_tarball([*_good(), (_member(f"{TS}/../../outside-evil"), b"x")]),
        "not a plain path",
    ),
    "symlink out": (
        lambda tmp: hostile_tarball(
            [
                *_good(),
                _member(f"{TS}/link", tarfile.SYMTYPE, str(tmp / "outside")),
                (_member(f"{TS}/link/evil"), b"x"),
            ]
        ),
        "is a link to",
    ),
    "relative symlink out": (
        lambda tmp: hostile_tarball([*_good(), _member(f"{TS}/up", tarfile.SYMTYPE, "../../..")]),
        "is a link to",
    ),
    "hardlink out": (
        lambda tmp: hostile_tarball([*_good(), _member(f"{TS}/hard", tarfile.LNKTYPE, "etc/passwd")]),
        "is a link to",
    ),
    "device file": (
        lambda tmp: hostile_tarball([*_good(), _member(f"{TS}/null", tarfile.CHRTYPE)]),
        "device file",
    ),
    "fifo": (lambda tmp: hostile_tarball([*_good(), _member(f"{TS}/pipe", tarfile.FIFOTYPE)]), "FIFO"),
    "other top directory": (
        lambda tmp: hostile_tarball(_good("results_2020-01-01_00-00-00")),
        "not a plain path",
    ),
    "no metadata": (lambda tmp: hostile_tarball(_good()), "ovsperf-metadata.json"),
    "other scenario": (
        lambda tmp: results_tarball(tmp, scenario="OVS_KERNEL"),
        "names scenario 'OVS_KERNEL'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_TARBALLS))
def test_unusable_tarball(lab: Lab, case: str) -> None:
    make, words = BAD_TARBALLS[case]
    outside = lab.tmp / "outside"
    outside.mkdir()
    job = tracked_job(lab)
    lab.finish(job, make(lab.tmp))
    before = sorted(p.relative_to(lab.tmp).as_posix() for p in lab.tmp.rglob("*") if "ci_in" not in p.parts)

    assert lab.collect("--max-tarball-mb", "0.05", "--max-unpacked-mb", "1") == ExitCode.OK

    reason = assert_infrastructure_failure(lab, job, "Completed", f"'{TS}.tar.gz' is unusable", words)
    assert len(reason) < 600
    after = sorted(p.relative_to(lab.tmp).as_posix() for p in lab.tmp.rglob("*") if "ci_in" not in p.parts)
    # Nothing was written outside ci_in (only the state file changed, and the lock beside it).
    assert [p for p in after if p not in before] == []
    assert list(outside.iterdir()) == []
    assert not (lab.tmp / "outside-evil").exists()


def test_member_name_with_control_characters_stays_one_line(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hostile name (newline, escape, 3000 characters) must not break the state file or the report line."""
    evil = f"{TS}/x\n\x1b[2J" + "y" * 3000
    job = tracked_job(lab)
    lab.finish(job, hostile_tarball([*_good(), _member(evil, tarfile.FIFOTYPE)]))
    assert lab.collect() == ExitCode.OK
    reason = assert_infrastructure_failure(lab, job, "Completed", "FIFO", "x\\n\\x1b[2Jyyy")
    assert "\n" not in reason and "\x1b" not in reason and 250 < len(reason) < 1000
    capsys.readouterr()
    assert main(["status", "--state", str(lab.state)]) == ExitCode.OK  # the state file still loads
    assert capsys.readouterr().out.split("\t")[3] == "infrastructure-failure"


def test_good_tarball_with_an_inner_symlink_is_kept(lab: Lab) -> None:
    """A link that stays inside results_<ts>/ is harmless and is delivered as it is."""
    buffer = io.BytesIO(results_tarball(lab.tmp))
    # Re-pack the real tarball with one more member: a relative link inside the tree.
    with tarfile.open(fileobj=buffer) as source:
        members = [(m, source.extractfile(m).read()) if m.isfile() else m for m in source.getmembers()]  # type: ignore[union-attr]
    members.append(_member(f"{TS}/latest.csv", tarfile.SYMTYPE, "result_0_phy2phy_tput_p2p.csv"))
    job = tracked_job(lab)
    lab.finish(job, hostile_tarball(members))
    assert lab.collect() == ExitCode.OK
    link = lab.ci_in / f"J{job.id}-{SCENARIO}-{TS}" / TS / "latest.csv"
    assert link.is_symlink() and os.readlink(link) == "result_0_phy2phy_tput_p2p.csv"


def test_missing_tarball_url_is_an_infrastructure_failure(lab: Lab) -> None:
    """taskactions.files lists the tarball but the log server answers 404 (logs purged)."""
    job = tracked_job(lab)
    lab.finish(job, results_tarball(lab.tmp))
    original = lab.hub.state.serve_file
    lab.hub.state.serve_file = lambda path: None  # type: ignore[method-assign]
    try:
        assert lab.collect() == ExitCode.OK
    finally:
        lab.hub.state.serve_file = original  # type: ignore[method-assign]
    assert_infrastructure_failure(lab, job, "Completed", "HTTP 404")
