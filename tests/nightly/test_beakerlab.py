"""The lab executor alone: a job jobcreator submits to the stand-in Beaker hub runs on two
namespace hosts over SSH and comes back as Beaker's.

The job is OVS_DPDK1q for a real openvswitch build in a createrepo_c repository (the job's kick
repository); the hosts run the real tasks with their params, reboot once each, synchronise through
perf_synchronization; every task's status, results and files reach the hub, which answers
beaker-client's ``taskactions`` calls and serves the files over HTTP; the DUT's results tarball
holds VSperf's numbers for that build: 64 B 10 % slower, as planted for it. A task that aborts
aborts its recipe and stops the other host.
"""

from __future__ import annotations

import csv
import io
import json
import tarfile
import time
import urllib.request
import xmlrpc.client
from dataclasses import replace
from pathlib import Path

import pytest

from ovsperf_common.metadata import METADATA_FILE
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub
from tests.kojiwatch.fakes import StaticHttpServer

from .beakerlab import BeakerLab, RecordingFeedback, parse_job
from .conftest import Lab, publish_build, render_job
from .hublink import attach

pytestmark = pytest.mark.dpdk  # root: namespaces, sshd

LINE_FPS_2X10G = {size: 2 * 10e9 / ((size + 20) * 8) for size in (64, 576, 1280, 1500)}
"""Line rate of two 10 GbE ports per frame size [fps] (64 B: 29,761,905)."""
SLOW_NVR = "openvswitch3.3-3.3.0-8.el9fdp"


def test_a_submitted_job_runs_on_the_lab_and_comes_back_like_beaker(
    beaker_lab: tuple[BeakerLab, Lab],
    web: StaticHttpServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    beaker, lab = beaker_lab
    repo = publish_build(web, tmp_path / "rpms", "openvswitch3.3", "3.3.0", "8.el9fdp")
    beaker.config = replace(beaker.config, slow_nvrs=(SLOW_NVR,))
    with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
        attach(hub.state, beaker)
        monkeypatch.setenv("BEAKER_CLIENT_CONF", str(write_client_conf(tmp_path / "bkr.conf", hub.url)))
        started = time.monotonic()
        render_job(tmp_path / "job.xml", lab.tg.address, lab.dut.address, repo, "--autosubmit")
        [number] = hub.state.jobs
        beaker.wait(300)
        elapsed = time.monotonic() - started
        [run] = beaker.runs
        logs = {p.name: p.read_text()[-3000:] for p in (run.work / "logs").glob("*.log")}
        assert run.failures == {}, logs

        # beaker-client's view (what ovsperf-beaker reads): the job and each recipe finished, Pass.
        proxy = xmlrpc.client.ServerProxy(f"{hub.url}/client/", allow_none=True)
        info = proxy.taskactions.task_info(f"J:{number}")
        assert (info["state_label"], info["result"], info["is_finished"]) == ("Completed", "Pass", True)
        job = hub.state.job(number)
        tg, dut = job.recipe("TRAFFICGEN"), job.recipe("DUT")
        assert [t.name for t in tg.tasks] == [
            "/distribution/check-install", "/ovsperf/build_moongen", "/ovsperf/setup_dpdk",
            *["/ovsperf/perf_synchronization"] * 3,
        ]  # fmt: skip
        for task in job.tasks:
            assert (task.status, task.result) == ("Completed", "Pass"), task.name
            if task.name.startswith("/ovsperf/"):  # the real task ran: its results and console
                assert task.results and "taskout.log" in task.files, task.name
            else:  # Beaker-only: passed as done
                assert task.results == [] and task.files == {}, task.name
        # The tasks' own results, as restraint reported them (the phases of vsperf_test run).
        run_task = job.task("DUT", "/ovsperf/vsperf_test", VSPERF_ACTION="run")
        assert [r.path for r in run_task.results] == [
            "vsperf_test/config", "vsperf_test/preflight", "vsperf_test/vsperf", "vsperf_test/collect",
        ]  # fmt: skip
        assert "vsperf_test/config/01-config.log" in run_task.files
        # Both setups asked for a reboot and ran again with the next reboot count.
        setup = job.task("DUT", "/ovsperf/vsperf_test", VSPERF_ACTION="setup")
        for task in (job.task("TRAFFICGEN", "/ovsperf/setup_dpdk"), setup):
            console = task.files["taskout.log"].decode()
            assert "reboot count 0" in console and "reboot count 1" in console, task.name

        # The results tarball, as a lab controller serves it, and in the results XML.
        logs_of_dut = proxy.taskactions.files(f"R:{dut.id}")
        [tarball] = [log for log in logs_of_dut if log["filename"].endswith(".tar.gz")]
        assert tarball["filename"].startswith("results_")
        with urllib.request.urlopen(tarball["url"], timeout=10) as answer:
            data = answer.read()
        assert data == run_task.files[tarball["filename"]]
        results_xml = proxy.taskactions.to_xml(f"J:{number}", False, False, True)
        assert tarball["url"] in results_xml

    # Its metadata names this job, recipe and build; its numbers are the planted ones.
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        members = {m.name: m for m in archive.getmembers()}
        top = tarball["filename"].removesuffix(".tar.gz")
        metadata = json.load(archive.extractfile(members[f"{top}/{METADATA_FILE}"]))  # type: ignore[arg-type]
        [csv_name] = [n for n in members if n.endswith("_phy2phy_tput_p2p.csv")]
        rows = list(csv.DictReader(io.TextIOWrapper(archive.extractfile(members[csv_name]))))  # type: ignore[arg-type]
    assert metadata["beaker_job_id"] == f"J:{number}"
    assert metadata["beaker_recipe_id"] == str(dut.id)
    assert metadata["scenario"] == "OVS_DPDK1q"
    assert metadata["packages"]["openvswitch3.3"] == "3.3.0-8.el9fdp.x86_64"
    assert metadata["packages"]["openvswitch3.3-python"] == "3.3.0-8.el9fdp.noarch"
    rates = {int(row["packet_size"]): float(row["throughput_rx_fps"]) for row in rows}
    # Planted: 40 % of the line rate at 64 B, 95 % above; this build 10 % slower at 64 B.
    assert rates == pytest.approx(
        {size: line * (0.9 * 0.40 if size == 64 else 0.95) for size, line in LINE_FPS_2X10G.items()}
    )
    assert {int(row["packet_size"]): float(row["throughput_rx_percent"]) for row in rows} == {
        64: 36.0, 576: 95.0, 1280: 95.0, 1500: 95.0
    }  # fmt: skip
    print(f"lab job: {elapsed:.1f} s")
    assert elapsed < 120


def test_a_task_aborting_aborts_its_recipe_and_stops_the_other(
    beaker_lab: tuple[BeakerLab, Lab], web: StaticHttpServer, tmp_path: Path
) -> None:
    """The traffic generator is not in the inventory the job names: setup_dpdk reports WARN and
    calls rstrnt-abort; its recipe is Aborted from that task on, the DUT's is stopped (Aborted)."""
    beaker, lab = beaker_lab
    repo = publish_build(web, tmp_path / "rpms", "openvswitch3.3", "3.3.0", "8.el9fdp")
    beaker.config = replace(beaker.config, env={"SETUP_DPDK_HOST": "unknown.example.com"})
    job = parse_job(render_job(tmp_path / "job.xml", lab.tg.address, lab.dut.address, repo), 4202)
    feedback = RecordingFeedback()
    beaker.submit(job, feedback)
    beaker.wait(120)
    [run] = beaker.runs
    assert set(run.failures) == {"TRAFFICGEN", "DUT"}
    tg, dut = job.recipes
    assert feedback.final(tg.id) == ("Aborted", "Warn")
    assert feedback.final(dut.id) == ("Aborted", "Warn")
    assert [feedback.final(t.id) for t in tg.tasks] == [
        ("Completed", "Pass"), ("Completed", "Pass"), *[("Aborted", "Warn")] * 4,
    ]  # fmt: skip
    assert feedback.statuses[tg.tasks[2].id][0] == ("Running", None)
    assert feedback.results[tg.tasks[2].id] == [("setup_dpdk/abort", "Warn", "")]
    assert b"unknown.example.com" in feedback.files[tg.tasks[2].id]["abort.log"]
    assert all(feedback.final(t.id)[0] == "Aborted" for t in dut.tasks[1:])
