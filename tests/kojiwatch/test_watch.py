"""``ovsperf-koji watch`` against the stand-in hub: each new build tested once, across restarts."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kojiwatch.cli import main
from kojiwatch.model import RetryPolicy
from kojiwatch.state import state_lock
from ovsperf_common.exitcodes import ExitCode
from tests.kojiwatch.cliutil import watch_argv
from tests.kojiwatch.conftest import TAG
from tests.kojiwatch.fakebeaker import RecordingBeaker
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer


@dataclass
class Rig:
    """Everything a watch test touches: Koji hub, web server, Beaker hub, RPMs and the state file."""

    hub: FakeKojiHub
    web: StaticHttpServer
    beaker: RecordingBeaker
    rpms: dict[str, list[Path]]
    state: Path
    capsys: pytest.CaptureFixture[str]

    def run(self, *extra: str) -> tuple[int, str, str]:
        code = main(watch_argv(self.hub, self.web, self.state, *extra))
        out, err = self.capsys.readouterr()
        return code, out, err

    def record(self, build_id: int) -> dict[str, Any]:
        rec: dict[str, Any] = json.loads(self.state.read_text())["builds"][str(build_id)]
        return rec


@pytest.fixture
def rig(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    beaker: RecordingBeaker,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> Rig:
    return Rig(hub, web, beaker, rpms, tmp_path / "watch-state.json", capsys)


def configs(calls: list[list[str]]) -> list[tuple[str, str]]:
    """Return (scenario, kick repo) per job offered to the Beaker hub."""
    return [(c[c.index("--config") + 1], c[c.index("--kickrepo") + 1]) for c in calls]


def test_new_builds_tested_once_across_restarts(rig: Rig) -> None:
    hub, web, rpms = rig.hub, rig.web, rig.rpms
    old = hub.add_build(rpms["ovs31"], tags=(TAG,))
    new = hub.add_build(rpms["ovs32"], tags=(TAG,))

    # First start: only the newest tagged openvswitch is tested; the older one is history.
    jobs_dir = rig.state.parent / "beaker-jobs"
    code, out, err = rig.run("--baseline", "ovs-3.0", "--job-xml-dir", str(jobs_dir))
    assert code == ExitCode.OK, err
    ovs32 = f"{web.base_url}/openvswitch-3.2.0-1.fc39/"
    assert configs(rig.beaker.calls()) == [("OVS_DPDK1q", ovs32), ("OVS_DPDK2q", ovs32)]
    assert out.splitlines() == ["J:4201", "J:4202"]
    assert "Started watching 'openvswitch' in tag 'fdp-el9-candidate' (2 tagged builds" in err
    assert rig.record(old)["status"] == "skipped"
    assert rig.record(new)["status"] == "submitted"
    assert rig.record(new)["jobs"] == {"OVS_DPDK1q": "J:4201", "OVS_DPDK2q": "J:4202"}
    assert rig.record(new)["repo"] == ovs32 and rig.record(new)["baseline"] == "ovs-3.0"
    assert sorted(p.name for p in (jobs_dir / "openvswitch-3.2.0-1.fc39").iterdir()) == [
        "OVS_DPDK1q.xml",
        "OVS_DPDK2q.xml",
    ]
    assert [p.name for p in rig.state.parent.iterdir() if p.name.startswith(".watch-state")] == []

    # Restart with nothing new: nothing submitted again.
    assert rig.run()[:2] == (ExitCode.OK, "")
    assert len(rig.beaker.calls()) == 2

    # A new dpdk build and a build by someone else appear; only the dpdk one is ours.
    dpdk = hub.add_build(rpms["dpdk"], tags=(TAG,))
    foreign = hub.add_build(rpms["ovs31"], owner="someone-else", tags=(TAG,))
    assert rig.run()[0] == ExitCode.OK
    dpdk_url = f"{web.base_url}/dpdk-22.11-1.fc39/"
    assert configs(rig.beaker.calls())[2:] == [("OVS_DPDK1q", dpdk_url), ("OVS_DPDK2q", dpdk_url)]
    assert rig.record(dpdk)["status"] == "submitted"
    assert rig.record(foreign)["status"] == "skipped"
    assert "owner 'someone-else'" in rig.record(foreign)["reason"]

    # And once more: still nothing twice.
    assert rig.run("--max-polls", "2")[0] == ExitCode.OK
    assert len(rig.beaker.calls()) == 4


def test_interrupted_build_resumes_with_only_the_missing_scenarios(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = rig.hub.add_build(rig.rpms["dpdk"], tags=(TAG,))
    rig.beaker.refuse("OVS_DPDK2q")
    code, _, err = rig.run()
    assert code == ExitCode.ERROR
    assert "Attempt 1 for 'dpdk-22.11-1.fc39' failed (retried next poll)" in err
    rec = rig.record(build)
    assert rec["status"] == "pending" and rec["jobs"] == {"OVS_DPDK1q": "J:4201"}

    rig.beaker.refuse()
    assert rig.run()[:2] == (ExitCode.OK, "J:4203\n")
    assert [s for s, _ in configs(rig.beaker.calls())] == ["OVS_DPDK1q", "OVS_DPDK2q", "OVS_DPDK2q"]
    rec = rig.record(build)
    assert rec["status"] == "submitted" and rec["jobs"] == {"OVS_DPDK1q": "J:4201", "OVS_DPDK2q": "J:4203"}


def test_failing_build_given_up_after_three_attempts(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    build = rig.hub.add_build(rig.rpms["dpdk"], tags=(TAG,))
    rig.beaker.refuse("OVS_DPDK1q", "OVS_DPDK2q")
    code, _, err = rig.run("--max-polls", "5")
    assert code == ExitCode.ERROR
    assert "Giving up on 'dpdk-22.11-1.fc39' after 3 attempts" in err
    assert len(rig.beaker.calls()) == 6
    assert rig.record(build)["status"] == "failed"


def test_unfinished_build_in_tag_is_skipped_and_newer_builds_go_in_id_order(rig: Rig) -> None:
    rig.hub.tags[TAG] = []
    assert rig.run()[0] == ExitCode.OK  # start watching an empty tag
    failed = rig.hub.add_build(rig.rpms["ovs31"], state="FAILED", tags=(TAG,))
    first = rig.hub.add_build(rig.rpms["dpdk"], tags=(TAG,))
    second = rig.hub.add_build(rig.rpms["ovs32"], tags=(TAG,))
    code, out, err = rig.run()
    assert code == ExitCode.OK, err
    assert rig.record(failed)["status"] == "skipped"
    assert "is FAILED, not COMPLETE" in rig.record(failed)["reason"]
    assert [rig.record(b)["status"] for b in (first, second)] == ["submitted", "submitted"]
    # openvswitch is listed before dpdk, but within each package builds go oldest first.
    repos = [repo for _, repo in configs(rig.beaker.calls())]
    assert (
        repos
        == [f"{rig.web.base_url}/openvswitch-3.2.0-1.fc39/"] * 2
        + [f"{rig.web.base_url}/dpdk-22.11-1.fc39/"] * 2
    )
    assert out.splitlines() == ["J:4201", "J:4202", "J:4203", "J:4204"]


def test_hub_down_retried_with_backoff_then_recovers(rig: Rig) -> None:
    rig.hub.add_build(rig.rpms["ovs31"], tags=(TAG,))
    rig.hub.fail_next = 2
    code, _, err = rig.run("--max-hub-failures", "4")
    assert code == ExitCode.OK, err
    assert rig.hub.failed_requests == 2
    first, second = err.split("Poll failed (2 of at most 4 consecutive failures)")
    assert "Poll failed (1 of at most 4 consecutive failures)" in first and "retrying in 0.05 s." in first
    assert "retrying in 0.1 s." in second
    assert "503" in err and "unreachable during listTagged" in err
    assert len(rig.beaker.calls()) == 2


def test_hub_down_gives_up_bounded_and_submits_nothing(rig: Rig) -> None:
    rig.hub.add_build(rig.rpms["ovs31"], tags=(TAG,))
    rig.hub.fail_next = 1000
    start = time.monotonic()
    code, _, err = rig.run("--max-hub-failures", "3", "--max-polls", "10")
    elapsed = time.monotonic() - start
    assert code == ExitCode.ERROR
    assert rig.hub.failed_requests == 3
    assert "ovsperf-koji: error: Gave up after 3 consecutive failed polls: Koji hub" in err
    assert elapsed < 10
    assert rig.beaker.calls() == [] and list(rig.web.root.iterdir()) == []


def test_unknown_tag_fails_at_once_without_retrying(rig: Rig) -> None:
    code, _, err = rig.run("--max-hub-failures", "5")
    assert code == ExitCode.ERROR
    assert "ovsperf-koji: error: Koji hub" in err and "refused listTagged: No such entry in table tag" in err
    assert "Poll failed" not in err
    assert rig.hub.methods_called() == ["listTagged"]


def test_a_build_whose_release_would_leave_the_publish_dir_is_skipped(rig: Rig) -> None:
    """Issue 25: a hub's release '1/../../x' became directories outside --publish-dir."""
    hostile = rig.hub.add_build(rig.rpms["ovs31"], tags=(TAG,))
    rig.hub.builds[hostile]["release"] = "1/../../x"
    rig.hub.add_build(rig.rpms["dpdk"], tags=(TAG,))
    code, _, err = rig.run("--max-polls", "1")
    assert code == ExitCode.OK, err
    assert sorted(p.name for p in rig.web.root.iterdir()) == ["dpdk-22.11-1.fc39"]
    assert configs(rig.beaker.calls()) == [
        (scenario, f"{rig.web.base_url}/dpdk-22.11-1.fc39/") for scenario in ("OVS_DPDK1q", "OVS_DPDK2q")
    ]
    assert rig.record(hostile)["status"] == "skipped"
    assert "has release '1/../../x', which is not an RPM release" in rig.record(hostile)["reason"]


def test_second_watcher_on_same_state_is_refused(rig: Rig) -> None:
    with state_lock(rig.state):
        code, _, err = rig.run()
    assert code == ExitCode.ERROR
    assert "Another 'ovsperf-koji watch' holds" in err
    assert rig.hub.calls == []


def test_malformed_state_is_not_overwritten(rig: Rig) -> None:
    rig.state.write_text("{broken")
    code, _, err = rig.run()
    assert code == ExitCode.ERROR
    assert f"Watch state '{rig.state}' is not valid JSON" in err
    assert rig.state.read_text() == "{broken"


def test_state_of_another_tag_is_refused(rig: Rig) -> None:
    rig.state.write_text(json.dumps({"version": 1, "tag": "f40", "packages": {}, "builds": {}}))
    code, _, err = rig.run()
    assert code == ExitCode.ERROR
    assert "belongs to tag 'f40', not 'fdp-el9-candidate'" in err


@pytest.mark.parametrize(
    ("failures", "delay_s"), [(1, 10.0), (2, 20.0), (3, 40.0), (6, 320.0), (7, 600.0), (20, 600.0)]
)
def test_backoff_doubles_up_to_the_cap(failures: int, delay_s: float) -> None:
    assert RetryPolicy(initial_s=10, max_s=600, max_failures=30).delay_s(failures) == delay_s
