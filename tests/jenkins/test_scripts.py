"""Run the Jenkins builder scripts as Jenkins would (bash, job parameters in the environment) and by hand.

Real: bash, ``ovsperf-koji`` (the installed console script), koji's client library, rpmbuild-built
RPMs, createrepo_c. Stand-ins: the Koji hub (XML-RPC + file server on 127.0.0.1) and the Beaker hub.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kojiwatch.fakebeaker import RecordingBeaker
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer, unused_port
from tests.kojiwatch.repocheck import repo_packages
from tests.kojiwatch.rpmtools import build_rpm

ROOT = Path(__file__).resolve().parents[2]
TAG = "fdp-el9-candidate"
OWNER = "ovs-team"


@pytest.fixture(scope="module")
def rpms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    work = tmp_path_factory.mktemp("rpms")
    return {
        "ovs": build_rpm(work, "openvswitch", "3.3.0", "2.el9fdp", subpackages=(("python", "noarch"),)),
        "dpdk": build_rpm(work, "dpdk", "23.11", "1.el9", subpackages=(("doc", "noarch"),)),
    }


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A Jenkins workspace: the checkout's jenkins/ directory (the SCM step) and nothing else."""
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "jenkins").symlink_to(ROOT / "jenkins")
    return ws


@pytest.fixture
def beaker(tmp_path: Path) -> Iterator[RecordingBeaker]:
    """The stand-in Beaker hub; the builders' ovsperf-koji reaches it through ``BEAKER_CLIENT_CONF``."""
    with RecordingBeaker(tmp_path / "beaker") as fake:
        yield fake


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An OVSPERF_VENV as install.sh leaves it, as far as the builders use it: ``bin/ovsperf-koji``."""
    root = tmp_path_factory.mktemp("venv")
    (root / "bin").mkdir()
    (root / "bin" / "ovsperf-koji").symlink_to(Path(sys.executable).parent / "ovsperf-koji")
    return str(root)


def jenkins_env(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    venv: str,
    **params: str,
) -> dict[str, str]:
    """Environment of a Jenkins build of our jobs: job parameters plus what Jenkins sets."""
    env = beaker.env()
    env.update(
        {
            "WORKSPACE": str(workspace),
            "JOB_NAME": "ovsperf-openvswitch-koji-build",
            "BUILD_NUMBER": "17",
            "OVSPERF_VENV": venv,
            "KOJI_PROFILE": "",
            "KOJI_HUB": hub.hub_url,
            "KOJI_TOPURL": hub.topurl,
            "KOJI_TAG": TAG,
            "KOJI_OWNER": OWNER,
            "KOJI_TAG_WAIT_S": "0",
            "PACKAGE": "openvswitch",
            "GENERATOR_HOST": "moongen.lab",
            "DUT_HOST": "dut.lab",
            "DISTRO": "RHEL-9.4.0",
            "SCENARIOS": "OVS_DPDK1q_GUEST_DPDK1q OVS_DPDK2q",
            "BASELINE": "openvswitch-3.2.0-1.el9fdp",
            "RESERVE_HOURS": "",
            "REPO_PUBLISH_DIR": str(web.root),
            "REPO_BASE_URL": web.base_url,
            "KOJI_BUILD_ID": "",
            "KOJI_TASK_ID": "",
            "CI_MESSAGE": "",
        }
    )
    env.update(params)
    return env


def bash(script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_trigger_job_from_ci_message_to_submitted_jobs(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    venv: str,
) -> None:
    build_id = hub.add_build(rpms["ovs"], owner=OWNER, tags=(TAG,))
    message = {
        "info": {"id": build_id, "name": "openvswitch", "owner_name": OWNER, "task_id": 4242},
        "attribute": "state",
        "old": 0,
        "new": 1,
        "btypes": {"rpm": None},
    }
    env = jenkins_env(hub, web, workspace, beaker, venv, CI_MESSAGE=json.dumps(message))
    prep = bash(workspace / "jenkins/builders/prepare-repo-trigger.sh", env)
    assert prep.returncode == 0, prep.stderr
    url = f"{web.base_url}/openvswitch-3.3.0-2.el9fdp/"
    out = workspace / "out"
    assert (out / "repo-url.txt").read_text() == url + "\n"
    assert f"Repo: {url}" in prep.stdout
    assert json.loads((out / "ci-message.json").read_text()) == message
    assert repo_packages(url) == {
        ("openvswitch", "x86_64", "3.3.0", "2.el9fdp"),
        ("openvswitch-python", "noarch", "3.3.0", "2.el9fdp"),
    }
    assert json.loads((out / "repo.json").read_text())["builds"] == ["openvswitch-3.3.0-2.el9fdp"]

    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 0, sub.stderr
    assert sub.stdout.splitlines() == ["J:4201", "J:4202"]
    assert (out / "job-ids.txt").read_text().splitlines() == ["J:4201", "J:4202"]
    ids = json.loads((out / "job-ids.json").read_text())
    assert ids["jobs"] == [
        {"scenario": "OVS_DPDK1q_GUEST_DPDK1q", "job_id": "J:4201"},
        {"scenario": "OVS_DPDK2q", "job_id": "J:4202"},
    ]
    assert ids["baseline"] == "openvswitch-3.2.0-1.el9fdp" and ids["repos"] == [url]
    assert sorted(p.name for p in (out / "beaker-jobs").iterdir()) == [
        "OVS_DPDK1q_GUEST_DPDK1q.xml",
        "OVS_DPDK2q.xml",
    ]
    assert beaker.calls()[0] == [
        "--host",
        "moongen.lab",
        "--host",
        "dut.lab",
        "--config",
        "OVS_DPDK1q_GUEST_DPDK1q",
        "--distro",
        "RHEL-9.4.0",
        "--kickrepo",
        url,
        "--tag",
        "ovsperf-openvswitch-koji-build #17",
        "--autosubmit",
    ]


def test_nightly_job_tests_latest_tagged_builds(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    venv: str,
) -> None:
    hub.add_build(rpms["ovs"], tags=(TAG,))
    hub.add_build(rpms["dpdk"], tags=(TAG,))
    env = jenkins_env(
        hub,
        web,
        workspace,
        beaker,
        venv,
        JOB_NAME="ovsperf-nightly",
        PACKAGES="openvswitch dpdk",
        SCENARIOS="OVS_DPDK1q",
        RESERVE_HOURS="2",
    )
    prep = bash(workspace / "jenkins/builders/prepare-repo-nightly.sh", env)
    assert prep.returncode == 0, prep.stderr
    url = f"{web.base_url}/dpdk-23.11-1.el9+openvswitch-3.3.0-2.el9fdp/"
    assert (workspace / "out/repo-url.txt").read_text() == url + "\n"
    assert {p[0] for p in repo_packages(url)} == {"dpdk", "dpdk-doc", "openvswitch", "openvswitch-python"}
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 0, sub.stderr
    (call,) = beaker.calls()
    assert call[call.index("--kickrepo") + 1] == url and call[call.index("--reserve") + 1] == "2"


def test_build_not_in_the_tag_is_unstable_and_submits_nothing(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    venv: str,
) -> None:
    build_id = hub.add_build(rpms["ovs"], tags=("rhel-9.2-fdp-candidate",))
    env = jenkins_env(hub, web, workspace, beaker, venv, KOJI_BUILD_ID=str(build_id))
    prep = bash(workspace / "jenkins/builders/prepare-repo-trigger.sh", env)
    assert prep.returncode == 3  # the job's unstableReturn
    assert "is not tagged into 'fdp-el9-candidate'" in prep.stderr
    assert list(web.root.iterdir()) == [] and beaker.calls() == []
    # Jenkins runs the next builder after an UNSTABLE step: it must submit nothing and not fail.
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 0, sub.stderr
    assert "nothing submitted: The build is not in fdp-el9-candidate" in sub.stderr
    assert sub.stdout == "" and beaker.calls() == []


def test_failed_submission_fails_the_builder(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    venv: str,
) -> None:
    (workspace / "out").mkdir()
    (workspace / "out/repo-url.txt").write_text(f"{web.base_url}/openvswitch-3.3.0-2.el9fdp/\n")
    env = jenkins_env(hub, web, workspace, beaker, venv)
    beaker.refuse("OVS_DPDK2q")
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 2
    assert "1 of 2 submissions failed: 'OVS_DPDK2q'" in sub.stderr
    assert sub.stdout == "J:4201\n"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "none of KOJI_BUILD_ID, KOJI_TASK_ID, CI_MESSAGE names a build"),
        ({"KOJI_BUILD_ID": "424242"}, "Koji has no build '424242'"),
        ({"KOJI_TASK_ID": "5150"}, "Koji has no task 5150"),
        (
            {"CI_MESSAGE": '{"info": {"id": 1000, "name": "openvswitch"}, "new": 3}'},
            "as FAILED, not COMPLETE",
        ),
        ({"KOJI_HUB": "UNREACHABLE"}, "unreachable during getBuild"),
    ],
    ids=["nothing-named", "unknown-build", "unknown-task", "failed-build-message", "hub-unreachable"],
)
def test_trigger_builder_bad_input_fails_cleanly(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    params: dict[str, str],
    message: str,
    venv: str,
) -> None:
    hub.add_build(rpms["ovs"], tags=(TAG,))
    if params.get("KOJI_HUB") == "UNREACHABLE":
        params = {"KOJI_HUB": f"http://127.0.0.1:{unused_port()}/kojihub", "KOJI_BUILD_ID": "1000"}
    env = jenkins_env(hub, web, workspace, beaker, venv, **params)
    prep = bash(workspace / "jenkins/builders/prepare-repo-trigger.sh", env)
    assert prep.returncode == 2
    assert message in prep.stderr
    assert list(web.root.iterdir()) == [] and beaker.calls() == []
    assert not (workspace / "out/repo-url.txt").exists() or (workspace / "out/repo-url.txt").read_text() == ""


def test_builders_without_the_install_step_say_so(workspace: Path, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "WORKSPACE": str(workspace),
        "OVSPERF_VENV": str(tmp_path / "no-venv"),
        "KOJI_TAG": TAG,
        "PACKAGES": "openvswitch",
        "REPO_PUBLISH_DIR": str(tmp_path),
        "REPO_BASE_URL": "http://127.0.0.1/",
    }
    proc = bash(workspace / "jenkins/builders/prepare-repo-nightly.sh", env)
    assert proc.returncode == 2
    assert f"'{tmp_path}/no-venv/bin/ovsperf-koji' is missing; the install step must run first" in proc.stderr


def test_submit_without_a_repo_fails_and_submits_nothing(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    venv: str,
) -> None:
    env = jenkins_env(hub, web, workspace, beaker, venv)
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 2
    assert "out/repo-url.txt is missing or empty; the prepare step made no repo" in sub.stderr
    assert beaker.calls() == []


def test_process_results_builder_writes_junit_and_maps_exit_codes(tmp_path: Path) -> None:
    """The collector's builder as Jenkins runs it: a regression exits 1 (UNSTABLE), nothing new 0."""
    from tests.ciflow.helpers import CANDIDATE, deliver, write_config

    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "jenkins").symlink_to(ROOT / "jenkins")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "process-ci-results").symlink_to(Path(sys.executable).parent / "process-ci-results")
    collector = tmp_path / "collector"
    collector.mkdir()
    config = write_config(collector)
    deliver(collector / "ci_in", "night-1", CANDIDATE)
    env = {
        "PATH": "/usr/bin:/bin",
        "WORKSPACE": str(ws),
        "OVSPERF_VENV": str(venv),
        "CIFLOW_CONFIG": str(config),
    }
    script = str(ROOT / "jenkins" / "builders" / "process-results.sh")
    first = subprocess.run(
        ["bash", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert first.returncode == 1, first.stderr
    assert first.stdout.startswith("processed\tnight-1\tREGRESSION\t")
    junit = ws / "out" / "ovsperf-junit.xml"
    text = junit.read_text(encoding="utf-8")
    assert text.count("<testcase ") == 14 and text.count("<failure ") == 1
    assert (ws / "out" / "processed.txt").read_text() == first.stdout
    again = subprocess.run(
        ["bash", script], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 0, again.stderr
    assert "nothing new in ci_in" in again.stderr
    assert junit.read_text(encoding="utf-8").count("<testcase ") == 0  # no stale cases from the last pass
