"""Nightly in a box: Koji build → Jenkins → Beaker job executed on a lab → results collected →
report, JUnit, trend pages and mail, for two builds, as one system (issue 24, item 4).

* A stand-in Koji hub (``tests/kojiwatch/fakes.py``) has build N, then build N+1 of openvswitch:
  real RPMs (rpmbuild), each announced to the trigger job as the Koji message the JMS Messaging
  plugin passes (``CI_MESSAGE``).
* The Jenkins jobs are those ``jenkins-jobs test`` renders from ``jenkins/``; their shell builders
  run in order with Jenkins' environment and the site's parameter values
  (``tests/nightly/jenkinsbox.py``; the install builder is skipped: ``OVSPERF_VENV`` is this
  checkout's venv).
* The trigger job's ``ovsperf-koji`` makes the repo (createrepo_c) and submits the Beaker job
  through the real beaker-client to the stand-in Beaker hub, which executes it on two namespace
  hosts over SSH (``tests/nightly/beakerlab.py``: the real tasks; VSperf and MoonGen stand-ins
  whose 64 B rate is 10 % lower on build N+1); ``ovsperf-beaker track`` records the job.
* The collector job, built on its timer, finds the job unfinished (nothing to do) until
  ``ovsperf-beaker collect`` sees it Completed and fetches its results tarball from the hub's log
  URLs into ``ci_in``; ``process-ci-results --junit`` reports against the baseline (a reference
  run of the same lab, unpacked by the test as a lab admin would), judges the trend over the
  store's history (HISTORY_BUILDS earlier nightlies at the reference's rates, seeded), records,
  rewrites the trend pages and mails (aiosmtpd on 127.0.0.1); the test reads the JUnit file the
  job's publisher would.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import lxml.html
import pytest
import yaml

from ciflow.config import load_config
from reporting.model import TREND_MIN_HISTORY
from resultstore.connect import database_url
from resultstore.model import ResultStatus
from resultstore.samples import BuildInfo, samples_from_sets
from resultstore.store import ResultStore
from resultstore.trend import load_sets
from tests.ciflow.test_trend_mail import Inbox, smtp  # noqa: F401  (the SMTP server fixture)
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub
from tests.kojiwatch.conftest import hub as koji  # noqa: F401  (the stand-in Koji hub)
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer
from tests.kojiwatch.rpmtools import build_rpm

from .beakerlab import BeakerLab, RecordingFeedback, parse_job
from .conftest import Lab, publish_build, render_job
from .hublink import attach
from .jenkinsbox import JENKINS_URL, REPO, BuildResult, JenkinsJob, make_workspace, render_jobs

pytestmark = [pytest.mark.dpdk, pytest.mark.slow]  # root: namespaces, sshd

TAG = "fdp-el9-candidate"
OWNER = "ovs-team"
SCENARIO = "OVS_DPDK1q"
BUILD_N = ("openvswitch", "3.3.0", "1.el9")
BUILD_N1 = ("openvswitch", "3.3.0", "2.el9")
REFERENCE = ("openvswitch", "3.3.0", "0.el9")
TICK_S = 3.0
"""The collector job's timer in the box [s] ('H/15 * * * *' in a lab)."""
COLLECT_WAIT_S = 150.0
"""Longest the collector job is built on its timer before the test gives up [s]."""
FRAME_SIZES = (64, 576, 1280, 1500)
"""The frame sizes OVS_DPDK1q measures (the catalog's), one trend series each."""
HISTORY_BUILDS = TREND_MIN_HISTORY + 2
"""Earlier nightlies of the scenario in the results store, at the reference's rates: the trend
decides from them (tests/resultstore/history.py, as the ciflow trend tests seed it)."""
BUDGET_S = 300.0
"""Issue 24: the loop test takes at most 5 min of CI time."""


def nvr(build: tuple[str, str, str]) -> str:
    return "-".join(build)


def koji_message(build_id: int, build: tuple[str, str, str]) -> str:
    """Return the UMB build-state message Koji's protonmsg sends when a build becomes COMPLETE."""
    name, version, release = build
    info = {"id": build_id, "name": name, "version": version, "release": release, "nvr": nvr(build)}
    return json.dumps({"info": {**info, "owner_name": OWNER}, "attribute": "state", "old": 0, "new": 1})


def reference_baseline(
    beaker: BeakerLab, lab: Lab, server: StaticHttpServer, work: Path, target: Path
) -> None:
    """Run the reference build on the lab (as a lab admin makes a baseline) and unpack its results."""
    repo = publish_build(server, work / "rpms-reference", *REFERENCE)
    job = parse_job(render_job(work / "reference.xml", lab.tg.address, lab.dut.address, repo), 1)
    feedback = RecordingFeedback()
    beaker.submit(job, feedback)
    beaker.wait(180)
    dut = job.recipes[1]
    files = feedback.files[dut.tasks[4].id]
    [tarball] = [name for name in files if name.endswith(".tar.gz")]
    (work / tarball).write_bytes(files[tarball])
    with tarfile.open(work / tarball) as archive:
        archive.extractall(work / "reference", filter="data")
    shutil.move(work / "reference" / tarball.removesuffix(".tar.gz"), target)


def seed_history(database: Path, reference: Path) -> list[str]:
    """Record HISTORY_BUILDS earlier nightlies of the scenario at the reference run's NDRs (each
    with 0.2 % × (n mod 3) of noise, as tests/resultstore/history.py makes them, keeping the
    samples' traffic label: 1024 flows); return their NVRs, oldest first."""
    ndr = [s for s in samples_from_sets(load_sets([reference])) if s.metric == "ndr_fps"]
    assert {s.frame_size for s in ndr} >= {64}, ndr
    now = datetime.now(UTC)
    nvrs = []
    with ResultStore.open(database_url(str(database))) as store:
        for number in range(HISTORY_BUILDS):
            name = f"openvswitch-3.2.0-{number + 1}.el9"
            store.record_result(
                name=name, scenario=SCENARIO, location=database.parent / name, vsperf_dirs=[],
                status=ResultStatus.PROCESSED,
            )  # fmt: skip
            noise = 1.0 + 0.002 * (number % 3)
            when = now - timedelta(days=HISTORY_BUILDS - number)
            build = BuildInfo(when, f"{name}.x86_64", None, None, ("dut01.example.com",), (name,))
            store.record_samples(name, build, [replace(s, value=s.value * noise) for s in ndr])
            nvrs.append(name)
    return nvrs


def ciflow_config(root: Path, baseline: Path, smtp_port: int) -> Path:
    """Write the collector's process-ci-results configuration; return its path."""
    for name in ("ci_in", "ci_processed", "ci_failed", "reports"):
        (root / name).mkdir(parents=True)
    config = {
        "ci_in": str(root / "ci_in"),
        "ci_processed": str(root / "ci_processed"),
        "ci_failed": str(root / "ci_failed"),
        "reports": str(root / "reports"),
        "database": str(root / "results.sqlite"),
        "quiet_period_s": 0,
        "trend_pages": str(root / "reports" / "_trends"),  # as the test's trend_pages
        "mail": {
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp_port,
            "sender": "ovsperf@ci.example.com",
            "recipients": ["perf-qe@example.com"],
            "report_base_url": "https://perf.example.com/reports",
        },
        "scenarios": {SCENARIO: {"baseline": str(baseline)}},
    }
    path = root / "ciflow.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def junit_cases(path: Path) -> list[tuple[str, str, str]]:
    """Return (classname, name, outcome) of every test case: pass, failure, error or skipped."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next(
            (kind for kind in ("failure", "error", "skipped") if case.find(kind) is not None), "pass"
        )
        cases.append((case.get("classname", ""), case.get("name", ""), outcome))
    return cases


def trend_rows(index: Path) -> list[dict[str, str]]:
    """Return the rows of the trend pages' index table, column header → cell text."""
    table = lxml.html.parse(str(index)).getroot().find(".//table")
    assert table is not None, index
    rows = [[cell.text_content().strip() for cell in tr] for tr in table.iter("tr")]
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def timer_builds(
    job: JenkinsJob, workspace: Path, params: dict[str, str], env: dict[str, str]
) -> tuple[list[BuildResult], dict[str, Any]]:
    """Build the collector job on its timer (every TICK_S) until a build processed a result.

    :returns: the builds that found nothing finished yet, and the files of the one that processed.
    """
    assert job.junit is not None, f"{job.name} publishes no JUnit results"
    idle = []
    deadline = time.monotonic() + COLLECT_WAIT_S
    while time.monotonic() < deadline:
        build = job.build(workspace, params, env)
        out = workspace / "out"
        processed = (out / "processed.txt").read_text().splitlines()
        if processed:
            return idle, {
                "status": build.status,
                "console": build.console,
                "processed": processed,
                "junit": junit_cases(workspace / str(job.junit)),
                "collected": (out / "collected.txt").read_text().splitlines(),
            }
        idle.append(build)
        time.sleep(TICK_S)
    raise AssertionError(f"No collector build processed a result in {COLLECT_WAIT_S} s: {idle[-1].console}")


def test_two_builds_through_the_whole_loop_n_passes_n_plus_1_regresses(
    beaker_lab: tuple[BeakerLab, Lab],
    web: StaticHttpServer,
    koji: FakeKojiHub,  # noqa: F811
    smtp: tuple[Inbox, int],  # noqa: F811
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    beaker, lab = beaker_lab
    inbox, smtp_port = smtp
    baseline = tmp_path / "ci" / "baselines" / "OVS_DPDK1q_reference"
    baseline.parent.mkdir(parents=True)
    reference_baseline(beaker, lab, web, tmp_path, baseline)
    beaker.config = replace(beaker.config, slow_nvrs=(nvr(BUILD_N1),))
    reference_s = time.monotonic() - started

    jobs = render_jobs(tmp_path / "jjb")
    trigger: JenkinsJob = jobs["ovsperf-openvswitch-koji-build"]
    collector: JenkinsJob = jobs["ovsperf-process-results"]
    trigger_ws = make_workspace(tmp_path / "workspace" / trigger.name)
    collector_ws = make_workspace(tmp_path / "workspace" / collector.name)
    config = ciflow_config(tmp_path / "ci", baseline, smtp_port)
    trend_pages = tmp_path / "ci" / "reports" / "_trends"
    history = seed_history(tmp_path / "ci" / "results.sqlite", baseline)
    state = tmp_path / "shared" / "beaker-state.json"
    state.parent.mkdir()
    with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
        attach(hub.state, beaker)
        node_env = {
            "PATH": "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",  # the venv is not on it: OVSPERF_VENV
            "HOME": str(tmp_path / "jenkins-home"),
            "LANG": "C.UTF-8",
            "OVSPERF_VENV": str(REPO / ".venv"),
            # Jenkins' credentials binding: the Beaker client configuration with the bot's password.
            "BEAKER_CLIENT_CONF": str(write_client_conf(tmp_path / "beaker-client.conf", hub.url)),
        }
        site = {
            "KOJI_PROFILE": "",
            "KOJI_HUB": koji.hub_url,
            "KOJI_TOPURL": koji.topurl,
            "KOJI_TAG": TAG,
            "KOJI_TAG_WAIT_S": "10",
            "GENERATOR_HOST": lab.tg.address,
            "DUT_HOST": lab.dut.address,
            "SCENARIOS": SCENARIO,
            "REPO_PUBLISH_DIR": str(web.root),
            "REPO_BASE_URL": web.base_url,
            "INVENTORY": "vsperf_configs/inventory.example.yaml",
            "BEAKER_STATE": str(state),
        }
        collector_site = {
            "CIFLOW_CONFIG": str(config),
            "CI_IN": str(tmp_path / "ci" / "ci_in"),
            "BEAKER_STATE": str(state),
            "COLLECT_DEADLINE_S": "60",
        }
        outcomes = {}
        for build in (BUILD_N, BUILD_N1):
            rpms = build_rpm(tmp_path / "rpms", *build, subpackages=(("python", "noarch"),))
            build_id = koji.add_build(rpms, owner=OWNER, tags=(TAG,))
            triggered = trigger.build(
                trigger_ws, {**site, "CI_MESSAGE": koji_message(build_id, build)}, node_env
            )
            assert triggered.status == "SUCCESS", triggered.console
            ids = json.loads((trigger_ws / "out" / "job-ids.json").read_text())
            [job] = ids["jobs"]
            mailed = len(inbox.messages)
            idle, collected = timer_builds(collector, collector_ws, collector_site, node_env)
            outcomes[nvr(build)] = {
                "job": job["job_id"],
                "trigger_url": f"{JENKINS_URL}job/{trigger.name}/{triggered.number}/",
                "idle": idle,
                "mails": [message for _, _, message in inbox.messages[mailed:]],
                "trend": trend_rows(trend_pages / "index.html"),
                **collected,
            }
            outcomes[nvr(build)]["trigger_console"] = triggered.console
        runs = {f"J:{run.number}": run for run in beaker.runs}
        uploaded = list(hub.state.uploads)
    elapsed = time.monotonic() - started
    print(f"nightly loop: {elapsed:.1f} s (reference run {reference_s:.1f} s)")

    n, n1 = outcomes[nvr(BUILD_N)], outcomes[nvr(BUILD_N1)]
    for outcome in (n, n1):
        assert runs[outcome["job"]].failures == {}, outcome["job"]
        # The timer's builds before the Beaker job finished found nothing to do: not a failure.
        assert all(b.status == "SUCCESS" for b in outcome["idle"]), outcome["idle"][-1].console
        [delivered] = outcome["collected"]
        assert delivered.split("\t")[:4] == [outcome["job"], SCENARIO, "delivered", "Completed"]

    # Pulled, not pushed: the jobs name no COLLECTOR; no secret in a job, console or mail.
    assert len(uploaded) == 2 and not any('name="COLLECTOR"' in xml for xml in uploaded)
    texts = [*uploaded, *(o[k] for o in (n, n1) for k in ("console", "trigger_console"))]
    texts += [m.as_string() for o in (n, n1) for m in o["mails"]]
    assert not any(HUB_PASSWORD in text for text in texts)

    # Build N: PASS (its report names the build and the Jenkins build), no failed case, no mail,
    # NORMAL on the trend page as the newest build of every series.
    assert n["status"] == "SUCCESS", n["console"]
    [line] = n["processed"]
    kind, name_n, overall, index_n = line.split("\t")
    assert (kind, overall) == ("processed", "PASS")
    report = Path(index_n).read_text()
    assert nvr(BUILD_N) in report and n["trigger_url"] in report
    assert ("phy2phy_tput.p2p", "64B NDR", "pass") in n["junit"]
    assert {outcome for *_, outcome in n["junit"]} == {"pass"}
    assert n["mails"] == [], [m.as_string() for m in n["mails"]]
    assert {row["frame [B]"]: (row["verdict"], row["builds"]) for row in n["trend"]} == {
        f"{size} B, 1024 flows": ("NORMAL", str(HISTORY_BUILDS + 1)) for size in FRAME_SIZES
    }
    assert all(row["newest build"].startswith(nvr(BUILD_N)) for row in n["trend"])

    # Build N+1: REGRESSION on its report, the one failed case in JUnit (64 B), in the mail, and
    # on the trend page (64 B only, -10 %), each naming the build.
    assert n1["status"] == "UNSTABLE", n1["console"]
    [line] = n1["processed"]
    kind, name_n1, overall, index_n1 = line.split("\t")
    assert (kind, overall) == ("processed", "REGRESSION")
    report = Path(index_n1).read_text()
    assert "REGRESSION" in report and nvr(BUILD_N1) in report and n1["trigger_url"] in report
    failed = [(cls, case, outcome) for cls, case, outcome in n1["junit"] if outcome != "pass"]
    assert failed == [("phy2phy_tput.p2p", "64B NDR", "failure")], n1["junit"]
    [mail] = n1["mails"]
    assert " ".join(mail["Subject"].split()) == f"[ovsperf] 1 regression(s) in {name_n1}"  # unfolded
    body = mail.get_payload(decode=True).decode()
    assert f"{name_n1}: REGRESSION (scenario {SCENARIO}, build {nvr(BUILD_N1)})" in body
    assert f"report: https://perf.example.com/reports/{name_n1}/index.html" in body
    assert "phy2phy_tput/p2p 64 B" in body and "-10.1" in body
    trend = {row["frame [B]"]: row for row in n1["trend"]}
    assert {frame: row["verdict"] for frame, row in trend.items()} == {
        f"{size} B, 1024 flows": "REGRESSION" if size == 64 else "NORMAL" for size in FRAME_SIZES
    }
    regressed = trend["64 B, 1024 flows"]
    assert regressed["step [%]"] == "-10.17" and regressed["builds"] == str(HISTORY_BUILDS + 2)
    assert regressed["newest build"].startswith(nvr(BUILD_N1)) and regressed["since"].startswith(
        nvr(BUILD_N1)
    )
    series = (trend_pages / "series" / "OVS_DPDK1q__phy2phy_tput__p2p__64__flows1024.html").read_text()
    assert all(name in series for name in (history[0], nvr(BUILD_N), nvr(BUILD_N1)))

    # Nothing left behind: ci_in holds only the pass lock, both results were processed.
    lock = load_config(config).lock_path
    assert [p for p in (tmp_path / "ci" / "ci_in").iterdir() if p != lock] == []
    assert sorted(p.name for p in (tmp_path / "ci" / "ci_processed").iterdir()) == sorted([name_n, name_n1])
    assert list((tmp_path / "ci" / "ci_failed").iterdir()) == []
    assert elapsed < BUDGET_S
