"""``ovsperf-koji submit``: a Beaker job per scenario through jobcreator in-process, ids collected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kojiwatch.cli import main
from ovsperf_common.exitcodes import ExitCode
from tests.jobcreator.conftest import write_client_conf
from tests.kojiwatch.fakebeaker import RecordingBeaker

REPO = "http://lab.example.com/repos/openvswitch-3.1.0-1.fc39/"
LAB = ["--host", "gen.example.com", "--host", "dut.example.com", "--distro", "RHEL-9.4.0"]


def expected_argv(scenario: str, tag: str = "jenkins ovsperf-nightly #7") -> list[str]:
    return [
        "--host",
        "gen.example.com",
        "--host",
        "dut.example.com",
        "--config",
        scenario,
        "--distro",
        "RHEL-9.4.0",
        "--kickrepo",
        REPO,
        "--tag",
        tag,
        "--autosubmit",
    ]


def test_each_scenario_submitted_and_ids_collected(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ids = tmp_path / "job-ids.json"
    code = main(
        [
            "submit",
            "--repo",
            REPO,
            *LAB,
            "--scenario",
            "OVS_DPDK1q,OVS_DPDK2q",
            "--scenario",
            "OVS_DPDK1q_GUEST_DPDK1q",
            "--tag",
            "jenkins ovsperf-nightly #7",
            "--baseline",
            "ovs-3.0.0",
            "--ids-file",
            str(ids),
        ]
    )
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    assert out.splitlines() == ["J:4201", "J:4202", "J:4203"]
    assert beaker.calls() == [
        expected_argv("OVS_DPDK1q"),
        expected_argv("OVS_DPDK2q"),
        expected_argv("OVS_DPDK1q_GUEST_DPDK1q"),
    ]
    assert "Submitted job 'J:4202' for scenario 'OVS_DPDK2q'." in err
    assert "Submitted job 'J:4202' for scenario 'OVS_DPDK2q'." in err  # jobcreator's own log is kept
    assert json.loads(ids.read_text()) == {
        "repos": [REPO],
        "builds": [],
        "koji_tag": None,
        "baseline": "ovs-3.0.0",
        "distro": "RHEL-9.4.0",
        "hosts": ["gen.example.com", "dut.example.com"],
        "tag": "jenkins ovsperf-nightly #7",
        "collector": None,
        "jobs": [
            {"scenario": "OVS_DPDK1q", "job_id": "J:4201"},
            {"scenario": "OVS_DPDK2q", "job_id": "J:4202"},
            {"scenario": "OVS_DPDK1q_GUEST_DPDK1q", "job_id": "J:4203"},
        ],
    }


def test_reserve_and_several_repos_are_passed_on(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "http://lab.example.com/repos/dpdk-22.11-1.fc39/"
    code = main(
        ["submit", "--repo", REPO, "--repo", other, *LAB, "--scenario", "OVS_DPDK1q", "--reserve", "4"]
    )
    assert code == ExitCode.OK
    argv = beaker.calls()[0]
    assert argv[argv.index("--kickrepo") + 1] == REPO
    assert argv[argv.index("--kickrepo", argv.index("--kickrepo") + 1) + 1] == other
    assert argv[argv.index("--reserve") + 1] == "4" and argv[-1] == "--autosubmit"
    assert capsys.readouterr().out == "J:4201\n"


def test_fractional_reserve_hours_are_passed_on(beaker: RecordingBeaker) -> None:
    # jobcreator takes fractional hours (--reserve 1.5); Jenkins' RESERVE_HOURS may hold one.
    assert main(["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q", "--reserve", "1.5"]) == 0
    argv = beaker.calls()[0]
    assert argv[argv.index("--reserve") + 1] == "1.5"


def test_one_failed_submission_fails_the_run_but_keeps_the_others(
    beaker: RecordingBeaker,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    beaker.refuse("OVS_DPDK2q")
    ids = tmp_path / "job-ids.json"
    code = main(
        [
            "submit",
            "--repo",
            REPO,
            *LAB,
            "--scenario",
            "OVS_DPDK1q OVS_DPDK2q OVS_DPDK4q",
            "--ids-file",
            str(ids),
        ]
    )
    out, err = capsys.readouterr()
    assert code == ExitCode.ERROR
    assert out.splitlines() == ["J:4201", "J:4203"]
    assert [c[c.index("--config") + 1] for c in beaker.calls()] == [
        "OVS_DPDK1q",
        "OVS_DPDK2q",
        "OVS_DPDK4q",
    ]
    assert (
        "ovsperf-koji: error: 1 of 3 submissions failed: 'OVS_DPDK2q': Beaker hub "
        f"'{beaker.hub.url}' rejected the job: Beaker refused the job for 'ovsperf OVS_DPDK2q on '"
    ) in err
    assert [j["job_id"] for j in json.loads(ids.read_text())["jobs"]] == ["J:4201", "J:4203"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q,NO_SUCH_SCENARIO"], "Nothing submitted:"),
        (
            ["--repo", REPO, *LAB, "--host", "third.example.com", "--scenario", "OVS_DPDK1q"],
            "Give exactly two --host (generator, DUT), got 3",
        ),
        (["--repo", "lab.example.com/repo", *LAB, "--scenario", "OVS_DPDK1q"], "is not an http(s)/ftp URL"),
        (["--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q OVS_DPDK1q"], "Scenario listed twice"),
        (["--repo", REPO, *LAB, "--scenario", ","], "No --scenario given."),
        (["--repo", REPO, *LAB[:4], "--distro", " ", "--scenario", "OVS_DPDK1q"], "Empty distro."),
        (["--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q", "--reserve", "-1"], "is negative"),
    ],
    ids=[
        "unknown-scenario",
        "three-hosts",
        "repo-not-url",
        "twice",
        "empty",
        "empty-distro",
        "reserve",
    ],
)
def test_bad_input_submits_nothing(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code = main(["submit", *argv])
    out, err = capsys.readouterr()
    assert code == ExitCode.ERROR and out == ""
    assert message in err
    assert beaker.calls() == []


def test_unknown_scenario_lists_the_valid_ones(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK3q"]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "OVS_DPDK3q" in err and "OVS_DPDK1q_GUEST_DPDK1q" in err


def test_the_old_jobcreator_option_is_accepted_and_ignored(
    beaker: RecordingBeaker, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q", "--jobcreator", "/opt/x/jobcreator"]
    assert main(argv) == ExitCode.OK
    assert capsys.readouterr().out == "J:4201\n"
    assert beaker.calls() == [expected_argv("OVS_DPDK1q", tag="ovsperf")]


def test_an_unreachable_beaker_hub_is_a_failure_named_per_scenario(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, closed_port_url: str
) -> None:
    conf = write_client_conf(tmp_path / "client.conf", closed_port_url)
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(conf))
    assert main(["submit", "--repo", REPO, *LAB, "--scenario", "OVS_DPDK1q"]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "1 of 1 submissions failed: 'OVS_DPDK1q':" in err and closed_port_url in err
