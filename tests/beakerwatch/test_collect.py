"""``ovsperf-beaker track`` + ``collect`` against the stand-in hub: the delivered tree and its metadata."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from beakerwatch.cli import main
from ovsperf_common import metadata
from ovsperf_common.exitcodes import ExitCode
from tests.beakerwatch.conftest import BUILD_URL, CSV_TEXT, KOJI_TAG, NVRS, SCENARIO, TS, Lab, results_tarball


def test_finished_job_is_delivered_with_its_build(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    job = lab.submit()
    assert lab.track(job) == ExitCode.OK
    assert capsys.readouterr().out == f"J:{job.id}\t{SCENARIO}\n"
    lab.hub.state.run_job(job.id)

    assert lab.collect() == ExitCode.OK  # still running: nothing to deliver, nothing lost
    assert capsys.readouterr().out == ""
    assert lab.deliveries() == []

    lab.finish(job, results_tarball(lab.tmp))
    assert lab.collect() == ExitCode.OK
    name = f"J{job.id}-{SCENARIO}-{TS}"
    delivery = lab.ci_in / name
    out = capsys.readouterr().out
    assert out == f"J:{job.id}\t{SCENARIO}\tdelivered\tCompleted\t{delivery}\n"
    assert lab.deliveries() == [name]  # no hidden staging directory left
    files = sorted(p.relative_to(delivery).as_posix() for p in delivery.rglob("*"))
    assert files == [
        "ovsperf-metadata.json",
        TS,
        f"{TS}/moongen",
        f"{TS}/moongen/throughput.log",
        f"{TS}/result_0_phy2phy_tput_p2p.csv",
    ]
    assert (delivery / TS / "result_0_phy2phy_tput_p2p.csv").read_text() == CSV_TEXT
    record = metadata.read(delivery)
    assert record.scenario == SCENARIO
    assert record.producer == "vsperf_test"
    assert record.complete and not record.infrastructure_failure
    assert record.results_dir == TS
    assert record.tests == [{"index": 0, "test": "phy2phy_tput", "deployment": "p2p"}]
    assert record.build is not None
    assert record.build.nvrs == tuple(NVRS)
    assert (record.build.tag, record.build.jenkins_build_url) == (KOJI_TAG, BUILD_URL)
    assert record.beaker_job_id == f"J:{job.id}"
    assert record.beaker_status == "Completed"
    assert record.extra["beaker_recipe_id"] == f"R:{job.recipe('DUT').id}"
    assert record.extra["kernel"] == "5.14.0-427.el9.x86_64"  # the task's own keys are kept
    # Only the tarball was downloaded, over HTTP from the URL taskactions.files gave.
    run = lab.run_task(job)
    assert lab.hub.state.http_gets == [f"/recipes/{job.recipe('DUT').id}/tasks/{run.id}/logs/{TS}.tar.gz"]

    state = json.loads(lab.state.read_text())
    assert state["jobs"][0]["state"] == "delivered"
    assert state["jobs"][0]["delivery"] == name
    assert main(["status", "--state", str(lab.state)]) == ExitCode.OK
    assert capsys.readouterr().out == f"J:{job.id}\t{SCENARIO}\t{' + '.join(NVRS)}\tdelivered\t{name}\n"

    # A second pass has nothing to do and leaves the delivery alone.
    assert lab.collect() == ExitCode.OK
    assert capsys.readouterr().out == ""
    assert lab.hub.state.http_gets == [f"/recipes/{job.recipe('DUT').id}/tasks/{run.id}/logs/{TS}.tar.gz"]


def test_reserved_dut_does_not_hold_the_results_back(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """The DUT recipe reserves the host after the run: the job stays Running, the results are collected."""
    job = lab.submit()
    lab.track(job)
    lab.hub.state.run_job(job.id)
    run = lab.run_task(job)
    lab.hub.state.add_task_file(run.id, f"{TS}.tar.gz", results_tarball(lab.tmp))
    lab.hub.state.set_task(run.id, status="Completed", result="Pass")
    assert lab.hub.state.task_info(job.j_id)["state_label"] == "Running"
    capsys.readouterr()

    assert lab.collect() == ExitCode.OK
    assert capsys.readouterr().out.split("\t")[2:4] == ["delivered", "Completed"]
    assert lab.deliveries() == [f"J{job.id}-{SCENARIO}-{TS}"]


def test_collect_waits_for_running_jobs_until_they_finish(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    job = lab.submit()
    lab.track(job)
    lab.hub.state.run_job(job.id)
    finisher = threading.Timer(0.5, lab.finish, (job, results_tarball(lab.tmp)))
    finisher.start()
    try:
        assert lab.collect(once=False) == ExitCode.OK
    finally:
        finisher.join()
    assert lab.hub.state.calls.count("taskactions.task_info") > 3  # it looked again and again
    assert capsys.readouterr().out.count("\tdelivered\tCompleted\t") == 1


def test_deadline_with_jobs_still_running_exits_2_and_keeps_them(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    job = lab.submit()
    lab.track(job)
    lab.hub.state.run_job(job.id)
    before = lab.state.read_bytes()
    assert lab.collect("--deadline-s", "0.5", "--poll-s", "0.1", once=False) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "still unfinished after" in err and f"J:{job.id} (Running" in err
    assert lab.state.read_bytes() == before
    assert lab.deliveries() == []


def test_track_is_idempotent_and_status_lists_jobs(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = lab.submit(), lab.submit("OVS_DPDK2q")
    assert lab.track(first) == ExitCode.OK
    assert lab.track(first) == ExitCode.OK
    assert lab.track(second, scenario="OVS_DPDK2q") == ExitCode.OK
    out = capsys.readouterr().out
    assert out == f"J:{first.id}\t{SCENARIO}\nJ:{second.id}\tOVS_DPDK2q\n"
    state = json.loads(lab.state.read_text())
    assert [j["job_id"] for j in state["jobs"]] == [first.j_id, second.j_id]
    assert state["jobs"][0]["build"] == {"nvrs": NVRS, "tag": KOJI_TAG, "jenkins_build_url": BUILD_URL}
    assert main(["status", "--state", str(lab.state)]) == ExitCode.OK
    assert capsys.readouterr().out.splitlines() == [
        f"J:{first.id}\t{SCENARIO}\t{' + '.join(NVRS)}\ttracked\t-",
        f"J:{second.id}\tOVS_DPDK2q\t{' + '.join(NVRS)}\ttracked\t-",
    ]


def test_nvrs_from_the_command_line_and_the_repo_record(lab: Lab, tmp_path: Path) -> None:
    job = lab.submit()
    lab.write_ids([job])
    repo = tmp_path / "repo.json"
    repo.write_text(json.dumps({"url": "http://r/", "path": "/r", "builds": ["ovs-9-1"], "rpms": []}))
    argv = ["track", "--state", str(lab.state), "--ids-file", str(lab.ids_file), "--repo-json", str(repo)]
    assert main(argv) == ExitCode.OK
    assert json.loads(lab.state.read_text())["jobs"][0]["build"]["nvrs"] == ["ovs-9-1"]


def test_nothing_tracked_exits_3(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    assert lab.collect() == ExitCode.NO_RESULTS
    assert main(["status", "--state", str(lab.state)]) == ExitCode.NO_RESULTS
    assert "tracks no Beaker job" in capsys.readouterr().err


def test_build_url_with_credentials_is_refused(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    job = lab.submit()
    lab.write_ids([job])
    url = "https://bot:hunter2@jenkins.example.com/job/n/7/"
    argv = ["track", "--state", str(lab.state), "--ids-file", str(lab.ids_file), "--build-url", url]
    assert main(argv) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "hunter2" not in err and "password" in err
    assert not lab.state.exists()


def test_koji_tag_from_the_ids_file_unless_given(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    job = lab.submit()
    lab.write_ids([job])
    record = json.loads(lab.ids_file.read_text())
    lab.ids_file.write_text(json.dumps({**record, "koji_tag": "fdp-el9-ovs"}))
    argv = ["track", "--state", str(lab.state), "--ids-file", str(lab.ids_file)]
    assert main(argv) == ExitCode.OK
    assert json.loads(lab.state.read_text())["jobs"][0]["build"]["tag"] == "fdp-el9-ovs"
    lab.ids_file.write_text(json.dumps({**record, "koji_tag": "bad\ntag"}))
    assert main([*argv, "--state", str(lab.tmp / "other.json")]) == ExitCode.ERROR
    assert "koji_tag" in capsys.readouterr().err


def test_a_results_file_name_with_a_newline_is_no_results_tarball(lab: Lab) -> None:
    bad, good = lab.submit(), lab.submit()
    lab.track(bad, good)
    lab.finish(bad, results_tarball(lab.tmp), name=f"{TS}\n.tar.gz")
    lab.finish(good, results_tarball(lab.tmp / "good"))
    assert lab.collect() == ExitCode.OK
    assert [name for name in lab.deliveries() if not name.startswith(".")] == [
        f"J{bad.id}-{SCENARIO}-infrastructure-failure",
        f"J{good.id}-{SCENARIO}-{TS}",
    ]


def test_a_hub_url_with_credentials_is_refused(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    job = lab.submit()
    lab.track(job)
    host = lab.hub.url.removeprefix("http://")
    lab.conf.write_text(lab.conf.read_text().replace(lab.hub.url, f"http://bot:hunter2@{host}"))
    assert lab.collect() == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "HUB_URL is refused" in err and "hunter2" not in err
