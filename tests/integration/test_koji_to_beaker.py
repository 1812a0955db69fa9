"""The front of the pipeline end to end, with the real programs: a Koji build becomes Beaker jobs.

RPMs built with ``rpmbuild`` → the stand-in Koji hub (tests/kojiwatch/fakes.py) →
``jenkins/scripts/prepare-repo.sh`` (``ovsperf-koji prepare-repo``: the real koji client, real
``createrepo_c``) → ``jenkins/scripts/submit.sh`` (``ovsperf-koji submit``) running the REAL
jobcreator, in-process in ``ovsperf-koji submit`` → beaker-client's real ``HubProxy`` → the
stand-in Beaker hub (tests/jobcreator/fakehub.py). Only the two hubs are doubles; everything between
them is what Jenkins runs.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from ovsperf_catalog.catalog import load_catalog
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub
from tests.kojiwatch.cliutil import koji_args
from tests.kojiwatch.conftest import OWNER, TAG
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer
from tests.kojiwatch.repocheck import repo_packages
from tests.kojiwatch.rpmtools import build_rpm

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
"""The environment running the tests: it has the console scripts (``pip install -e .``)."""
KOJI = VENV / "bin" / "ovsperf-koji"
TG = "gen.lab.example.com"
DUT = "dut.lab.example.com"
DISTRO = "RHEL-9.4.0"
SCENARIOS = (
    "OVS_DPDK1q_GUEST_DPDK1q",
    "OVS_DPDK1q",
    "OVS_DPDK1q_PVVP",
    "OVS_DPDK1q_CT",
    "OVS_DPDK1q_VXLAN",
    "OVS_DPDK1q_GENEVE",
)
"""P2P, PVP, PVVP (two guests), conntrack (VSperf engine) and the overlays (ovsperf engine)."""
FIRST_JOB = 1234
"""The stand-in Beaker hub's first job id (tests/jobcreator/fakehub.py)."""


@pytest.fixture(scope="module")
def rng() -> etree.RelaxNG:
    """Beaker's own job schema from the installed beaker-common (not through jobcreator's code)."""
    resource = importlib.resources.files("bkr.common") / "schema" / "beaker-job.rng"
    return etree.RelaxNG(etree.fromstring(resource.read_bytes()))


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[tuple[FakeKojiHub, StaticHttpServer, FakeBeakerHub, dict[str, str]]]:
    """Both hubs and the lab web server running; the environment Jenkins would give the scripts."""
    koji_hub = FakeKojiHub(tmp_path / "kojiroot").start()
    (tmp_path / "www").mkdir()
    web = StaticHttpServer(tmp_path / "www").start()
    try:
        with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as beaker_hub:
            env = dict(os.environ)
            env["OVSPERF_VENV"] = str(VENV)
            env["BEAKER_CLIENT_CONF"] = str(write_client_conf(tmp_path / "client.conf", beaker_hub.url))
            env["HOME"] = str(tmp_path / "home")  # no ~/.beaker_client of the person running the tests
            yield koji_hub, web, beaker_hub, env
    finally:
        web.stop()
        koji_hub.stop()


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_koji_build_to_submitted_beaker_jobs(
    pipeline: tuple[FakeKojiHub, StaticHttpServer, FakeBeakerHub, dict[str, str]],
    rng: etree.RelaxNG,
    tmp_path: Path,
) -> None:
    koji_hub, web, beaker_hub, env = pipeline
    assert "kojiwatch.cli" in KOJI.read_text(), "the real ovsperf-koji console script must be used"
    rpms = build_rpm(
        tmp_path / "rpms", "openvswitch", "3.3.0", "7.el9fdp", subpackages=(("python", "noarch"),)
    )
    build_id = koji_hub.add_build(rpms, owner=OWNER, tags=(TAG,))

    # 1. prepare-repo: the Koji build's x86_64 + noarch RPMs as a published yum repo.
    which = ["--build", str(build_id), "--package", "openvswitch", "--owner", OWNER, "--tag", TAG]
    prep = _run([str(KOJI), "prepare-repo", *which, *koji_args(koji_hub, web)], env)
    assert prep.returncode == 0, prep.stderr
    repo_url = prep.stdout.strip()
    assert repo_url == f"{web.base_url}/openvswitch-3.3.0-7.el9fdp/"
    assert repo_packages(repo_url) == {
        ("openvswitch", "x86_64", "3.3.0", "7.el9fdp"),
        ("openvswitch-python", "noarch", "3.3.0", "7.el9fdp"),
    }
    assert {"getBuild", "listRPMs"} <= set(koji_hub.methods_called())

    # 2. submit: the real jobcreator (in-process), once per scenario, against the stand-in Beaker hub.
    ids_file = tmp_path / "out" / "job-ids.json"
    xml_dir = tmp_path / "out" / "beaker-jobs"
    sub = _run(
        [
            str(KOJI),
            "submit",
            "--repo",
            repo_url,
            "--host",
            TG,
            "--host",
            DUT,
            "--distro",
            DISTRO,
            "--scenario",
            ",".join(SCENARIOS),
            "--tag",
            "ovsperf-koji-openvswitch #42",
            "--ids-file",
            str(ids_file),
            "--job-xml-dir",
            str(xml_dir),
        ],
        env,
    )
    assert sub.returncode == 0, sub.stderr
    expected_ids = [f"J:{FIRST_JOB + i}" for i in range(len(SCENARIOS))]
    assert sub.stdout.splitlines() == expected_ids
    assert beaker_hub.state.calls.count("jobs.upload") == len(SCENARIOS)
    assert [j["job_id"] for j in json.loads(ids_file.read_text())["jobs"]] == expected_ids
    assert [j["scenario"] for j in json.loads(ids_file.read_text())["jobs"]] == list(SCENARIOS)

    catalog = load_catalog()
    for scenario, uploaded in zip(SCENARIOS, beaker_hub.state.uploads, strict=True):
        # What the hub received is exactly the archived job, and Beaker's schema accepts it.
        assert (xml_dir / f"{scenario}.xml").read_text(encoding="utf-8").strip() == uploaded.strip()
        job = etree.fromstring(uploaded.encode())
        assert rng.validate(job), f"{scenario}: {rng.error_log.last_error}"
        assert HUB_PASSWORD not in uploaded
        whiteboard = job.findtext("whiteboard", "")
        assert whiteboard.startswith(f"[ovsperf-koji-openvswitch #42] ovsperf {scenario} ")

        recipes = job.findall("recipeSet/recipe")
        guests = job.findall("recipeSet/recipe/guestrecipe")
        assert sorted(r.get("role") for r in recipes) == ["DUT", "TRAFFICGEN"]
        spec = catalog.get(scenario)
        # One guest recipe prepares the image; for PVVP VSperf boots it twice (QEMU -snapshot).
        assert len(guests) == (0 if spec.guest is None else 1), scenario
        for recipe in recipes + guests:
            # Every recipe, guest included, installs from the repo under test.
            assert [r.get("url") for r in recipe.findall("repos/repo")] == [repo_url], recipe.get("role")
            assert recipe.find("distroRequires/and/distro_name").get("value") == DISTRO
        pinned = {r.get("role"): r.find("hostRequires/and/hostname").get("value") for r in recipes}
        assert pinned == {"TRAFFICGEN": TG, "DUT": DUT}

        # The scenario reaches every task of its engine (setup and run on the DUT, setup in each
        # guest for VSperf); the other engine's task is absent.
        engine = spec.engine.value
        measuring = job.xpath(f"//task[@name='/ovsperf/{engine}_test']")
        other = "ovsperf" if engine == "vsperf" else "vsperf"
        assert not job.xpath(f"//task[@name='/ovsperf/{other}_test']"), scenario
        assert len(measuring) == 2 + (len(guests) if engine == "vsperf" else 0), scenario
        action = "VSPERF_ACTION" if engine == "vsperf" else "OVSPERF_ACTION"
        for task in measuring:
            params = {p.get("name"): p.get("value") for p in task.findall("params/param")}
            # ovsperf_test's setup installs the lab only; its run carries the scenario.
            if engine == "vsperf" or params[action] == "run":
                assert params["SCENARIO"] == scenario
        if engine == "ovsperf":
            # The TG builds the lab's generator instead of MoonGen.
            tg = next(r for r in recipes if r.get("role") == "TRAFFICGEN")
            names = [t.get("name") for t in tg.findall("task")]
            assert "/ovsperf/build_trafficgen" in names and "/ovsperf/build_moongen" not in names


def test_watch_submits_a_new_build_once_across_restarts(
    pipeline: tuple[FakeKojiHub, StaticHttpServer, FakeBeakerHub, dict[str, str]],
    rng: etree.RelaxNG,
    tmp_path: Path,
) -> None:
    """``ovsperf-koji watch`` (teams without Jenkins) drives the same real jobcreator, once per build."""
    koji_hub, web, beaker_hub, env = pipeline
    rpms = build_rpm(tmp_path / "rpms", "dpdk", "23.11", "1.el9", subpackages=(("doc", "noarch"),))
    koji_hub.add_build(rpms, owner=OWNER, tags=(TAG,))
    state = tmp_path / "watch-state.json"
    argv = [
        str(VENV / "bin" / "ovsperf-koji"),
        "watch",
        *("--tag", TAG, "--package", "dpdk", "--owner", OWNER, "--state-file", str(state)),
        *koji_args(koji_hub, web),
        *("--host", TG, "--host", DUT, "--distro", DISTRO, "--scenario", "OVS_DPDK2q"),
    ]
    # Run as a systemd unit would: the venv's bin is not on PATH (jobcreator runs in-process).
    env = {**env, "PATH": "/usr/bin:/bin"}
    first = _run(argv, env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [f"J:{FIRST_JOB}"]
    (uploaded,) = beaker_hub.state.uploads
    job = etree.fromstring(uploaded.encode())
    assert rng.validate(job), rng.error_log.last_error
    repo_url = f"{web.base_url}/dpdk-23.11-1.el9/"
    assert set(job.xpath("//repo/@url")) == {repo_url}
    assert repo_packages(repo_url) == {
        ("dpdk", "x86_64", "23.11", "1.el9"),
        ("dpdk-doc", "noarch", "23.11", "1.el9"),
    }
    # A restarted watcher remembers the build: nothing is submitted twice.
    again = _run(argv, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "" and len(beaker_hub.state.uploads) == 1
