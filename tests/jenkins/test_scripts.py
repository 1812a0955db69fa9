"""Run the Jenkins builder scripts as Jenkins would (bash, job parameters in the environment) and by hand.

Real: bash, ``ovsperf-koji`` (the installed console script), koji's client library, rpmbuild-built
RPMs, createrepo_c. Stand-ins: the Koji hub (XML-RPC + file server on 127.0.0.1) and the Beaker hub.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
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


def console_scripts(bin_dir: Path, *names: str) -> None:
    """Write ``bin_dir/<name>`` as pip writes a console script, running this interpreter.

    The test's own interpreter has every install group; which groups each job really needs is
    checked in clean venvs by ``test_install_groups.py``. ``PYTHONPATH`` makes the checkout's
    packages importable however the test venv was installed.
    """
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        module, _, function = scripts[name].partition(":")
        path = bin_dir / name
        path.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
            f"from {module} import {function}\nsys.exit({function}())\n"
        )
        path.chmod(0o755)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An OVSPERF_VENV as install.sh leaves it, as far as the builders use it: the ovsperf commands."""
    root = tmp_path_factory.mktemp("venv")
    console_scripts(root / "bin", "ovsperf-koji", "ovsperf-beaker", "process-ci-results")
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
            "BUILD_URL": "https://jenkins.lab/job/ovsperf-openvswitch-koji-build/17/",
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
            "TASK_REPO": "",
            "INVENTORY": "",
            "SCENARIO_CATALOG": "",
            "COLLECTOR": "",
            "BEAKER_STATE": "",
        }
    )
    env.update(params)
    return env


def made_repo(workspace: Path, web: StaticHttpServer) -> None:
    """Leave ``out/repo.json`` as the prepare step does, for a build the submit step then submits."""
    (workspace / "out").mkdir()
    url = f"{web.base_url}/openvswitch-3.3.0-2.el9fdp/"
    (workspace / "out/repo.json").write_text(
        json.dumps({"url": url, "builds": ["openvswitch-3.3.0-2.el9fdp"]})
    )


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
    # What was tested, for the collector and the report: the build and the tag it was checked in.
    assert (ids["builds"], ids["koji_tag"]) == (["openvswitch-3.3.0-2.el9fdp"], TAG)
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
    ids = json.loads((workspace / "out/job-ids.json").read_text())
    assert ids["builds"] == ["dpdk-23.11-1.el9", "openvswitch-3.3.0-2.el9fdp"] and ids["koji_tag"] == TAG


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
    made_repo(workspace, web)
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
    assert "out/repo.json is missing or empty; the prepare step made no repo" in sub.stderr
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


def tracked(state: Path) -> list[dict[str, object]]:
    """The jobs of a collector state file, as ``ovsperf-beaker`` wrote them."""
    jobs: list[dict[str, object]] = json.loads(state.read_text())["jobs"]
    return jobs


def test_submitted_jobs_are_tracked_for_the_collector_with_their_build(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    venv: str,
    tmp_path: Path,
) -> None:
    build_id = hub.add_build(rpms["ovs"], owner=OWNER, tags=(TAG,))
    state = tmp_path / "shared" / "beaker-state.json"
    state.parent.mkdir()
    env = jenkins_env(
        hub,
        web,
        workspace,
        beaker,
        venv,
        KOJI_BUILD_ID=str(build_id),
        BEAKER_STATE=str(state),
        TASK_REPO="https://git.lab/ovsperf/archive/main.tar.gz",
        INVENTORY="lab/inventory.yaml",
    )
    prep = bash(workspace / "jenkins/builders/prepare-repo-trigger.sh", env)
    assert prep.returncode == 0, prep.stderr
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 0, sub.stderr
    # stdout: the job ids (ovsperf-koji submit), then one "<job id>\t<scenario>" per job tracked.
    assert sub.stdout.splitlines() == [
        "J:4201",
        "J:4202",
        "J:4201\tOVS_DPDK1q_GUEST_DPDK1q",
        "J:4202\tOVS_DPDK2q",
    ]
    build = {
        "nvrs": ["openvswitch-3.3.0-2.el9fdp"],
        "tag": TAG,
        "jenkins_build_url": "https://jenkins.lab/job/ovsperf-openvswitch-koji-build/17/",
    }
    assert [(j["job_id"], j["scenario"], j["build"], j["state"]) for j in tracked(state)] == [
        ("J:4201", "OVS_DPDK1q_GUEST_DPDK1q", build, "tracked"),
        ("J:4202", "OVS_DPDK2q", build, "tracked"),
    ]
    # The lab options reached the jobs: tasks from the task repo, the inventory on vsperf_test.
    for xml in beaker.hub.state.offered:
        assert 'url="https://git.lab/ovsperf/archive/main.tar.gz#beaker_tasks/vsperf_test"' in xml
        assert '<param name="INVENTORY" value="lab/inventory.yaml"/>' in xml
        assert "COLLECTOR" not in xml  # pull: the DUT pushes nothing
    # A second build of the same job tracks its own jobs beside the first ones.
    again = bash(workspace / "jenkins/builders/submit.sh", {**env, "BUILD_NUMBER": "18"})
    assert again.returncode == 0, again.stderr
    assert [j["job_id"] for j in tracked(state)] == ["J:4201", "J:4202", "J:4203", "J:4204"]


def test_jobs_submitted_before_a_failed_submission_are_still_tracked(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    venv: str,
    tmp_path: Path,
) -> None:
    made_repo(workspace, web)
    state = tmp_path / "beaker-state.json"
    env = jenkins_env(hub, web, workspace, beaker, venv, BEAKER_STATE=str(state))
    beaker.refuse("OVS_DPDK2q")
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    # The build fails, and the collector follows the job that was submitted.
    assert sub.returncode == 2
    assert "1 of 2 submissions failed: 'OVS_DPDK2q'" in sub.stderr
    assert [(j["job_id"], j["state"]) for j in tracked(state)] == [("J:4201", "tracked")]


def test_a_state_file_that_cannot_be_written_fails_the_build_and_says_where_the_ids_are(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    venv: str,
    tmp_path: Path,
) -> None:
    made_repo(workspace, web)
    state = tmp_path / "not-shared" / "beaker-state.json"  # its directory does not exist
    env = jenkins_env(hub, web, workspace, beaker, venv, BEAKER_STATE=str(state), SCENARIOS="OVS_DPDK2q")
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 2
    assert str(state) in sub.stderr
    assert "their ids are in the archived out/job-ids.json" in sub.stderr
    ids = json.loads((workspace / "out/job-ids.json").read_text())
    assert ids["jobs"] == [{"scenario": "OVS_DPDK2q", "job_id": "J:4201"}]
    assert not state.exists()


def test_results_pushed_with_collector_are_not_tracked_too(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    workspace: Path,
    beaker: RecordingBeaker,
    venv: str,
    tmp_path: Path,
) -> None:
    """COLLECTOR (rsync push) and BEAKER_STATE both set: one delivery per run, so no tracking."""
    made_repo(workspace, web)
    state = tmp_path / "beaker-state.json"
    push = "ovsperf@collector.lab:/srv/ovsperf/ci_in"
    env = jenkins_env(
        hub, web, workspace, beaker, venv, BEAKER_STATE=str(state), COLLECTOR=push, SCENARIOS="OVS_DPDK2q"
    )
    sub = bash(workspace / "jenkins/builders/submit.sh", env)
    assert sub.returncode == 0, sub.stderr
    assert "COLLECTOR is set: the DUT pushes the results; the jobs are not tracked" in sub.stderr
    assert sub.stdout == "J:4201\n" and not state.exists()
    (xml,) = beaker.hub.state.offered
    assert f'<param name="COLLECTOR" value="{push}"/>' in xml


def collector_rig(tmp_path: Path) -> tuple[Path, Path]:
    """A collector job's workspace and a ciflow configuration whose ci_in holds one regressed result."""
    from tests.ciflow.helpers import CANDIDATE, deliver, write_config

    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "jenkins").symlink_to(ROOT / "jenkins")
    collector = tmp_path / "collector"
    collector.mkdir()
    config = write_config(collector)
    deliver(collector / "ci_in", "night-1", CANDIDATE)
    return ws, config


def collector_env(ws: Path, venv: str, config: Path, state: str, **extra: str) -> dict[str, str]:
    """The collector job's environment: what Jenkins sets and the job's parameters."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(ws.parent),
        "WORKSPACE": str(ws),
        "JOB_NAME": "ovsperf-process-results",
        "BUILD_NUMBER": "3",
        "BUILD_URL": "https://jenkins.lab/job/ovsperf-process-results/3/",
        "OVSPERF_VENV": venv,
        "CIFLOW_CONFIG": str(config),
        "CI_IN": str(config.parent / "ci_in"),
        "BEAKER_STATE": state,
        "COLLECT_DEADLINE_S": "60",
    }
    env.update(extra)
    return env


def test_collect_failure_still_processes_what_was_delivered_and_keeps_the_job_ids(
    tmp_path: Path, venv: str
) -> None:
    """Collect exits 2 (a tracked job the hub does not know); the pass still processes ci_in: FAILURE."""
    ws, config = collector_rig(tmp_path)
    ids = tmp_path / "job-ids.json"
    ids.write_text(
        json.dumps(
            {
                "builds": ["openvswitch-3.3.0-2.el9fdp"],
                "jobs": [{"scenario": "OVS_DPDK2q", "job_id": "J:999"}],
            }
        )
    )
    state = tmp_path / "beaker-state.json"
    with RecordingBeaker(tmp_path / "beaker") as beaker:
        track = subprocess.run(
            [f"{venv}/bin/ovsperf-beaker", "track", "--state", str(state), "--ids-file", str(ids)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert track.returncode == 0, track.stderr
        env = beaker.env(collector_env(ws, venv, config, str(state)))
        proc = bash(ROOT / "jenkins/builders/process-results.sh", env)
    assert proc.returncode == 2, proc.stderr  # FAILURE: the collector could not follow J:999
    assert "collect failed (exit 2); processing what was delivered" in proc.stderr
    assert "J:999" in proc.stderr
    # ... and the delivered result was processed all the same: its regression is in the JUnit file.
    assert (ws / "out/processed.txt").read_text().startswith("processed\tnight-1\tREGRESSION\t")
    junit = (ws / "out/ovsperf-junit.xml").read_text(encoding="utf-8")
    assert junit.count("<testcase ") == 14 and junit.count("<failure ") == 1
    assert (ws / "out/reports/night-1/index.html").is_file()
    assert [(j["job_id"], j["state"]) for j in tracked(state)] == [("J:999", "tracked")]  # kept for next pass


@pytest.mark.parametrize("tracking", ["off", "nothing-tracked"])
def test_collector_with_nothing_to_collect_processes_and_a_regression_is_unstable(
    tmp_path: Path, venv: str, tracking: str
) -> None:
    """BEAKER_STATE empty (a lab pushing results) or no job tracked: no failure; a regression is UNSTABLE."""
    ws, config = collector_rig(tmp_path)
    state = "" if tracking == "off" else str(tmp_path / "beaker-state.json")
    with RecordingBeaker(tmp_path / "beaker") as beaker:
        proc = bash(
            ROOT / "jenkins/builders/process-results.sh", beaker.env(collector_env(ws, venv, config, state))
        )
    assert proc.returncode == 1, proc.stderr
    assert (ws / "out/collected.txt").exists() == (tracking == "nothing-tracked")
    assert ("no Beaker job is tracked in" in proc.stderr) == (tracking == "nothing-tracked")
    assert (ws / "out/processed.txt").read_text().startswith("processed\tnight-1\tREGRESSION\t")
    assert (ws / "out/reports/night-1/index.html").is_file()


def test_an_unexpected_collector_failure_is_failure_never_unstable(tmp_path: Path, venv: str) -> None:
    """Exit 1 means a regression to Jenkins; a broken workspace (out/ is a file) must exit 2."""
    ws, config = collector_rig(tmp_path)
    (ws / "out").write_text("not a directory")
    proc = bash(ROOT / "jenkins/builders/process-results.sh", collector_env(ws, venv, config, ""))
    assert proc.returncode == 2, proc.stderr
    assert "File exists" in proc.stderr
