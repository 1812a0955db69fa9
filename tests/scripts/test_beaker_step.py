"""scripts/beaker-step.sh: the main job's Beaker step points at a Beaker hub by configuration alone.

Without ``BEAKER_CLIENT_CONF`` it renders the job only (what ``make run`` does on a machine with no
lab). With it, the REAL ``ovsperf-koji submit`` / ``ovsperf-beaker track`` / ``collect`` run
against the stand-in hub (tests/jobcreator/fakehub.py: beaker-client's real ``HubProxy``, results
downloaded over HTTP): the hub "runs" the job by planting the DUT task's results tarball, and the
step prints the job XML, the job id and the delivered results directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from lxml import etree

from ovsperf_common import metadata
from tests.beakerwatch.conftest import results_tarball
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub, FakeJob

ROOT = Path(__file__).resolve().parents[2]
STEP = ROOT / "scripts" / "beaker-step.sh"
VENV = Path(sys.prefix)
SCENARIO = "OVS_DPDK1q"
TS = "results_2026-11-26_01-00-00"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEAKER_")}
    env.update(VENV=str(VENV), OUT=str(tmp_path / "out"), LAB_STATE_DIR=str(tmp_path / "state"), **extra)
    return env


def _lab_env(tmp_path: Path, conf: Path, kickrepos: str, **extra: str) -> dict[str, str]:
    """Return the step's environment for a lab at the stand-in hub of ``conf`` (fast polling)."""
    return _env(
        tmp_path,
        BEAKER_CLIENT_CONF=str(conf),
        BEAKER_SCENARIO=SCENARIO,
        BEAKER_TG="tg.lab.example.com",
        BEAKER_DUT="dut.lab.example.com",
        BEAKER_DISTRO="RHEL-9.4.0",
        BEAKER_KICKREPOS=kickrepos,
        BEAKER_POLL_S="0.2",
        BEAKER_DEADLINE_S="60",
        **extra,
    )


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(STEP)], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_without_a_hub_renders_the_job_only(tmp_path: Path) -> None:
    done = _run(_env(tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [str(tmp_path / "out" / "job-OVS_DPDK1q_GUEST_DPDK1q.xml")]
    job = etree.parse(lines[0]).getroot()
    assert job.tag == "job"
    assert [r.get("role") for r in job.iter("recipe")] == ["TRAFFICGEN", "DUT"]


def test_missing_lab_settings_are_named(tmp_path: Path) -> None:
    conf = write_client_conf(tmp_path / "client.conf", "http://127.0.0.1:9")
    done = _run(_env(tmp_path, BEAKER_CLIENT_CONF=str(conf), BEAKER_TG="tg.lab.example.com"))
    assert done.returncode == 2
    assert "BEAKER_DUT is not set" in done.stderr
    assert done.stdout == ""


def test_a_configured_hub_is_submitted_to_followed_and_collected(tmp_path: Path) -> None:
    with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
        conf = write_client_conf(tmp_path / "client.conf", hub.url)
        tarball = results_tarball(tmp_path, ts=TS, scenario=SCENARIO)

        def run_job(job: FakeJob) -> None:
            # The lab "runs" the job a moment later: the DUT's run task uploads its tarball.
            def later() -> None:
                hub.state.run_job(job.id)
                task = job.task("DUT", "/ovsperf/vsperf_test", VSPERF_ACTION="run")
                hub.state.add_task_file(task.id, f"{TS}.tar.gz", tarball)
                hub.state.finish_job(job.id)

            threading.Timer(0.5, later).start()

        hub.state.on_upload = run_job
        kickrepos = "http://repo.lab.example.com/ovs/ http://repo.lab.example.com/dpdk/"
        done = _run(_lab_env(tmp_path, conf, kickrepos, BEAKER_NVRS="openvswitch3.3-3.3.0-2.el9fdp"))
    assert done.returncode == 0, done.stderr
    job_xml, job_id, delivered = done.stdout.splitlines()
    assert job_id == f"J:{hub.state.first_job_id}"
    submitted = etree.fromstring(hub.state.uploads[0].encode())
    assert etree.parse(job_xml).getroot().findtext("whiteboard") == submitted.findtext("whiteboard")
    repos = {
        r.get("url") for r in submitted.iter("repo") if r.get("name", "").startswith("ovsperf-kickrepo-")
    }
    assert repos == {"http://repo.lab.example.com/ovs/", "http://repo.lab.example.com/dpdk/"}
    hosts = [r.find("hostRequires/and/hostname").get("value") for r in submitted.iter("recipe")]
    assert hosts == ["tg.lab.example.com", "dut.lab.example.com"]
    path = Path(delivered)
    assert path.parent == tmp_path / "out" / "beaker" / "ci_in"
    assert (path / TS / "result_0_phy2phy_tput_p2p.csv").is_file()
    meta = metadata.read(path)
    assert meta.scenario == SCENARIO
    raw = json.loads((path / metadata.METADATA_FILE).read_text())
    assert raw["beaker_job_id"] == job_id
    assert raw["build"]["nvrs"] == ["openvswitch3.3-3.3.0-2.el9fdp"]
    # The password of the client configuration is nowhere in what the step printed or wrote.
    assert HUB_PASSWORD not in done.stdout + done.stderr
    for file in (tmp_path / "out").rglob("*"):
        if file.is_file():
            assert HUB_PASSWORD.encode() not in file.read_bytes(), file
    state = json.loads((tmp_path / "state" / "beaker-jobs.json").read_text())
    assert job_id in json.dumps(state)


def test_an_aborted_job_is_an_error_not_results(tmp_path: Path) -> None:
    with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
        conf = write_client_conf(tmp_path / "client.conf", hub.url)
        hub.state.on_upload = lambda job: threading.Timer(
            0.5, hub.state.abort_job, (job.id, "External Watchdog Expired")
        ).start()
        done = _run(_lab_env(tmp_path, conf, "http://repo.lab.example.com/ovs/"))
    assert done.returncode == 2
    assert "an infrastructure failure, no results" in done.stderr
    assert "Aborted" in done.stderr
