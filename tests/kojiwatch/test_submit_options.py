"""``ovsperf-koji submit`` / ``watch``: the lab options reach every job; the builds are recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from lxml import etree

from kojiwatch.cli import main
from ovsperf_catalog.catalog import default_catalog_path
from ovsperf_common.exitcodes import ExitCode
from tests.kojiwatch.cliutil import watch_argv
from tests.kojiwatch.conftest import OWNER, TAG
from tests.kojiwatch.fakebeaker import RecordingBeaker
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer

REPO = "http://lab.example.com/repos/openvswitch-3.1.0-1.fc39/"
LAB = ["--host", "gen.example.com", "--host", "dut.example.com", "--distro", "RHEL-9.4.0"]
TASK_REPO = "https://git.example.com/ovsperf/archive/v1.tar.gz"
LAB_OPTIONS = [
    "--task-repo",
    TASK_REPO,
    "--inventory",
    "vsperf_configs/inventory.yaml",
    "--collector",
    "ovsperf@collector.lab:/srv/ovsperf/ci_in",
]


def task_params(xml: str) -> dict[str, list[tuple[str, str | None, dict[str, str]]]]:
    """Return role → [(task name, fetch url, params)] of a submitted job."""
    job = etree.fromstring(xml.encode("utf-8"))
    out: dict[str, list[tuple[str, str | None, dict[str, str]]]] = {}
    for recipe in job.iter("recipe"):
        tasks = out.setdefault(str(recipe.get("role")), [])
        for task in recipe.findall("task"):
            fetch = task.find("fetch")
            params = {str(p.get("name")): str(p.get("value")) for p in task.iterfind("params/param")}
            tasks.append((str(task.get("name")), None if fetch is None else fetch.get("url"), params))
    return out


def assert_lab_options_in(xml: str) -> None:
    """Every ovsperf task is fetched from the task repo; the inventory and collector reach vsperf_test."""
    roles = task_params(xml)
    ours = [t for tasks in roles.values() for t in tasks if t[0].startswith("/ovsperf/")]
    assert ours, roles
    for name, fetch, _ in ours:
        assert fetch == f"{TASK_REPO}#beaker_tasks/{name.removeprefix('/ovsperf/')}", name
    runs = [
        p for name, _, p in roles["DUT"] if name == "/ovsperf/vsperf_test" and p.get("VSPERF_ACTION") == "run"
    ]
    assert len(runs) == 1
    assert runs[0]["COLLECTOR"] == "ovsperf@collector.lab:/srv/ovsperf/ci_in"
    assert runs[0]["INVENTORY"] == "vsperf_configs/inventory.yaml"


def test_task_repo_inventory_and_collector_reach_every_job(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ids = tmp_path / "job-ids.json"
    argv = ["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q,OVS_DPDK2q", *LAB_OPTIONS]
    code = main([*argv, "--ids-file", str(ids)])
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    assert out.splitlines() == ["J:4201", "J:4202"]
    assert len(beaker.hub.state.offered) == 2
    for xml in beaker.hub.state.offered:
        assert_lab_options_in(xml)
    assert json.loads(ids.read_text())["collector"] == "ovsperf@collector.lab:/srv/ovsperf/ci_in"


def test_without_collector_the_results_stay_in_beaker(beaker: RecordingBeaker) -> None:
    assert main(["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q"]) == ExitCode.OK
    (xml,) = beaker.hub.state.offered
    run = [p for name, _, p in task_params(xml)["DUT"] if p.get("VSPERF_ACTION") == "run"]
    assert len(run) == 1 and "COLLECTOR" not in run[0] and "INVENTORY" not in run[0]


def test_a_site_catalog_is_used(beaker: RecordingBeaker, tmp_path: Path) -> None:
    catalog = yaml.safe_load(default_catalog_path().read_text())
    catalog["scenarios"] = {"SITE_ONLY_1q": catalog["scenarios"]["OVS_DPDK1q"]}
    path = tmp_path / "site-scenarios.yaml"
    path.write_text(yaml.safe_dump(catalog))
    argv = ["submit", "--repo", REPO, *LAB, "--scenario", "SITE_ONLY_1q"]
    assert main([*argv, "--catalog", str(path)]) == ExitCode.OK
    assert [c[c.index("--config") + 1] for c in beaker.calls()] == ["SITE_ONLY_1q"]
    # Without --catalog the packaged catalog does not know the name: nothing is submitted.
    assert main(argv) == ExitCode.ERROR
    assert len(beaker.calls()) == 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--collector", "ovsperf:secret@collector.lab:/ci_in", "--collector"),
        ("--task-repo", "file:///srv/ovsperf.tar.gz", "--task-repo"),
        ("--inventory", "../../etc/passwd", "--inventory"),
        # Issue 25: the path reached the collector's shell (rsync <= 3.2.3) and ran 'touch' there.
        ("--collector", "root@h:/ci_in;touch${IFS}/tmp/x;", "is not an rsync destination"),
    ],
    ids=["collector-with-password", "task-repo-not-http", "inventory-escapes", "collector-shell-command"],
)
def test_a_bad_lab_option_submits_nothing(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    code = main(["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q,OVS_DPDK2q", option, value])
    out, err = capsys.readouterr()
    assert code == ExitCode.ERROR and out == ""
    assert "Nothing submitted:" in err and message in err
    assert "secret" not in err
    assert beaker.calls() == []


def test_repo_record_gives_the_repo_and_the_builds(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = tmp_path / "repo.json"
    nvrs = ["dpdk-22.11-1.fc39", "openvswitch-3.1.0-1.fc39"]
    record.write_text(
        json.dumps({"url": REPO, "path": "/srv/x", "builds": nvrs, "rpms": [], "koji_tag": "fdp"})
    )
    ids = tmp_path / "job-ids.json"
    argv = ["submit", "--repo-json", str(record), *LAB, "--scenario", "OVS_DPDK1q", "--ids-file", str(ids)]
    assert main(argv) == ExitCode.OK, capsys.readouterr().err
    assert [c[c.index("--kickrepo") + 1] for c in beaker.calls()] == [REPO]
    written = json.loads(ids.read_text())
    assert written["repos"] == [REPO] and written["builds"] == nvrs and written["koji_tag"] == "fdp"
    assert written["jobs"] == [{"scenario": "OVS_DPDK1q", "job_id": "J:4201"}]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "Cannot read repo record"),
        ("{not json", "is not JSON"),
        ('{"builds": []}', "has no 'url' string"),
        ('{"url": "http://x/", "builds": [1]}', "'builds' is not a list of NVR strings"),
        ('{"url": "http://x/", "koji_tag": 7}', "'koji_tag' is not a string"),
        ("[]", "is not a JSON object"),
    ],
    ids=["missing", "not-json", "no-url", "bad-builds", "bad-tag", "not-object"],
)
def test_a_bad_repo_record_submits_nothing(
    beaker: RecordingBeaker,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: str | None,
    message: str,
) -> None:
    record = tmp_path / "repo.json"
    if content is not None:
        record.write_text(content)
    code = main(["submit", "--repo-json", str(record), *LAB, "--scenario", "OVS_DPDK1q"])
    err = capsys.readouterr().err
    assert code == ExitCode.ERROR
    assert message in err and str(record) in err
    assert beaker.calls() == []


def test_watch_passes_the_lab_options_and_names_the_build(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    hub.add_build(rpms["ovs32"], owner=OWNER, tags=(TAG,))
    ids_dir = tmp_path / "job-ids"
    ids_dir.mkdir()
    code = main(watch_argv(hub, web, tmp_path / "state.json", *LAB_OPTIONS, "--ids-dir", str(ids_dir)))
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    assert out.splitlines() == ["J:4201", "J:4202"]
    assert len(beaker.hub.state.offered) == 2
    for xml in beaker.hub.state.offered:
        assert_lab_options_in(xml)
        assert "openvswitch-3.2.0-1.fc39" in (etree.fromstring(xml.encode()).findtext("whiteboard") or "")
    # One ids file per build, as 'submit --ids-file' writes it: what 'ovsperf-beaker track' reads.
    assert [p.name for p in ids_dir.iterdir()] == ["openvswitch-3.2.0-1.fc39.json"]
    ids = json.loads((ids_dir / "openvswitch-3.2.0-1.fc39.json").read_text())
    assert (ids["builds"], ids["koji_tag"]) == (["openvswitch-3.2.0-1.fc39"], TAG)
    assert ids["repos"] == [f"{web.base_url}/openvswitch-3.2.0-1.fc39/"]
    assert ids["jobs"] == [
        {"scenario": "OVS_DPDK1q", "job_id": "J:4201"},
        {"scenario": "OVS_DPDK2q", "job_id": "J:4202"},
    ]


def test_watch_ids_file_holds_the_jobs_submitted_before_a_failure(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    hub.add_build(rpms["ovs32"], owner=OWNER, tags=(TAG,))
    ids_dir = tmp_path / "job-ids"
    ids_dir.mkdir()
    beaker.refuse("OVS_DPDK2q")
    code = main(watch_argv(hub, web, tmp_path / "state.json", "--ids-dir", str(ids_dir)))
    assert code == ExitCode.ERROR
    (written,) = ids_dir.iterdir()
    assert json.loads(written.read_text())["jobs"] == [{"scenario": "OVS_DPDK1q", "job_id": "J:4201"}]
    # The next poll submits only the missing scenario; the file then lists both jobs.
    beaker.refuse()
    assert main(watch_argv(hub, web, tmp_path / "state.json", "--ids-dir", str(ids_dir))) == ExitCode.OK
    assert [j["job_id"] for j in json.loads(written.read_text())["jobs"]] == ["J:4201", "J:4203"]
    capsys.readouterr()


def test_watch_refuses_a_missing_ids_dir_before_touching_koji(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    beaker: RecordingBeaker,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    code = main(watch_argv(hub, web, tmp_path / "state.json", "--ids-dir", str(tmp_path / "nowhere")))
    assert code == ExitCode.ERROR
    assert f"--ids-dir '{tmp_path / 'nowhere'}' is not a directory." in capsys.readouterr().err
    assert hub.calls == [] and beaker.calls() == []
