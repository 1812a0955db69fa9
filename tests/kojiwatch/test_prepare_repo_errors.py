"""``ovsperf-koji prepare-repo`` on bad input: a clear one-line error, non-zero exit, nothing published."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kojiwatch.koji_client import KojiClient, resolve_server
from ovsperf_common.exitcodes import ExitCode
from tests.kojiwatch.cliutil import koji_args, run
from tests.kojiwatch.conftest import OWNER, TAG
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer, unused_port


def _add(hub: FakeKojiHub, rpms: dict[str, list[Path]], case: str) -> list[str]:
    """Set up the hub for a bad-input case; return the prepare-repo selection arguments."""
    if case == "unknown-build":
        hub.add_build(rpms["ovs31"], tags=(TAG,))
        return ["--build", "999999"]
    if case == "unknown-nvr":
        return ["--build", "openvswitch-9.9.9-1.fc39"]
    if case == "failed-build":
        return ["--build", str(hub.add_build(rpms["ovs31"], state="FAILED", tags=(TAG,)))]
    if case == "building":
        return ["--build", str(hub.add_build(rpms["ovs31"], state="BUILDING", tags=(TAG,)))]
    if case == "other-package":
        return ["--build", str(hub.add_build(rpms["ovs31"], tags=(TAG,))), "--package", "dpdk"]
    if case == "other-owner":
        return ["--build", str(hub.add_build(rpms["ovs31"], owner="someone", tags=(TAG,))), "--owner", OWNER]
    if case == "unknown-package-latest":
        hub.add_build(rpms["ovs31"], tags=(TAG,))
        return ["--latest-tagged", TAG, "--package", "openvswitch", "--package", "nosuchpackage"]
    if case == "unknown-tag":
        hub.add_build(rpms["ovs31"], tags=(TAG,))
        return ["--latest-tagged", "no-such-tag", "--package", "openvswitch"]
    if case == "task-without-rpms":
        hub.add_scratch_task(61000, [])
        return ["--task", "61000"]
    if case == "task-only-aarch64":
        hub.add_scratch_task(62000, [p for p in rpms["ovs31"] if p.name.endswith(".aarch64.rpm")])
        return ["--task", "62000"]
    if case == "task-not-closed":
        hub.add_scratch_task(63000, rpms["ovs31"], state="FAILED")
        return ["--task", "63000"]
    if case == "task-not-a-build":
        hub.add_task(64000, "createrepo")
        return ["--task", "64000"]
    if case == "scratch-other-package":
        hub.add_scratch_task(66000, rpms["dpdk"])
        return ["--task", "66000", "--package", "openvswitch"]
    if case == "unknown-task":
        return ["--task", "65000"]
    if case == "message-failed-state":
        return ["--ci-message-file", "MSG:" + json.dumps({"info": {"id": 1000}, "new": 3})]
    if case == "message-garbage":
        return ["--ci-message-file", "MSG:{not json"]
    if case == "message-no-id":
        return ["--ci-message-file", "MSG:" + json.dumps({"name": "openvswitch", "new": 1})]
    raise AssertionError(case)


BAD_INPUT = {
    "unknown-build": "Koji has no build '999999'",
    "unknown-nvr": "Koji has no build 'openvswitch-9.9.9-1.fc39'",
    "failed-build": "is FAILED, not COMPLETE",
    "building": "is BUILDING, not COMPLETE",
    "other-package": "is of package 'openvswitch', not of the watched package(s) dpdk",
    "other-owner": "is owned by 'someone', not by 'ovs-team'",
    "unknown-package-latest": "has no build of package 'nosuchpackage'",
    "unknown-tag": "refused listTagged: No such entry in table tag: no-such-tag",
    "task-without-rpms": "Koji task 61000 produced no RPMs for x86_64, noarch",
    "task-only-aarch64": "Koji task 62000 produced no RPMs for x86_64, noarch",
    "task-not-closed": "Koji task 63000 is FAILED, not CLOSED",
    "task-not-a-build": "is a 'createrepo' task, not a build or buildArch task",
    "unknown-task": "Koji has no task 65000",
    "scratch-other-package": "Koji task 66000 built 'dpdk', not the watched package(s) openvswitch",
    "message-failed-state": "announces build 1000 as FAILED, not COMPLETE",
    "message-garbage": "is not JSON",
    "message-no-id": "not a Koji build message",
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_a_clear_error_and_publishes_nothing(
    case: str,
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    selection = _add(hub, rpms, case)
    if selection[0] == "--ci-message-file":
        msg = tmp_path / "ci-message.json"
        msg.write_text(selection[1].removeprefix("MSG:"))
        selection = [selection[0], str(msg)]
    code, out, err = run(["prepare-repo", *selection, *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR
    assert out == ""
    lines = [line for line in err.splitlines() if line.startswith("ovsperf-koji: error: ")]
    assert len(lines) == 1 and BAD_INPUT[case] in lines[0], err
    assert hub.downloads == []
    assert list(web.root.iterdir()) == []


def test_unreachable_hub(web: StaticHttpServer, capsys: pytest.CaptureFixture[str]) -> None:
    port = unused_port()
    code, out, err = run(
        [
            "prepare-repo",
            "--build",
            "1000",
            "--hub",
            f"http://127.0.0.1:{port}/kojihub",
            "--topurl",
            f"http://127.0.0.1:{port}/kojifiles",
            "--publish-dir",
            str(web.root),
            "--base-url",
            web.base_url,
        ],
        capsys,
    )
    assert code == ExitCode.ERROR and out == ""
    assert (
        f"ovsperf-koji: error: Koji hub 'http://127.0.0.1:{port}/kojihub' unreachable during getBuild" in err
    )
    assert list(web.root.iterdir()) == []


def test_build_not_in_tag_is_exit_3(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    build_id = hub.add_build(rpms["ovs31"], tags=("some-other-tag",))
    code, out, err = run(
        ["prepare-repo", "--build", str(build_id), "--tag", TAG, *koji_args(hub, web)], capsys
    )
    assert code == ExitCode.NO_RESULTS and out == ""
    assert "is not tagged into 'fdp-el9-candidate'; it is not a build we test" in err
    assert hub.downloads == [] and list(web.root.iterdir()) == []


def test_damaged_download_is_refused(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    build_id = hub.add_build(rpms["ovs31"])
    # Same size, one payload byte flipped near the end: only the RPM digest check can notice.
    victim = hub.topdir / "packages/openvswitch/3.1.0/1.fc39/x86_64/openvswitch-3.1.0-1.fc39.x86_64.rpm"
    data = bytearray(victim.read_bytes())
    data[-10] ^= 0xFF
    victim.write_bytes(bytes(data))
    code, out, err = run(["prepare-repo", "--build", str(build_id), *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert "openvswitch-3.1.0-1.fc39.x86_64.rpm" in err
    assert "arrived damaged" in err and "DIGESTS NOT OK" in err
    assert list(web.root.iterdir()) == []


def test_file_of_another_build_is_refused(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    build_id = hub.add_build(rpms["ovs31"])
    # An intact RPM, but not the one Koji lists (same name, other content): SIGMD5 differs.
    hub.rpms[build_id][0]["payloadhash"] = "0" * 32
    code, out, err = run(["prepare-repo", "--build", str(build_id), *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert "but Koji lists 00000000000000000000000000000000" in err
    assert list(web.root.iterdir()) == []


def test_missing_publish_dir(hub: FakeKojiHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(
        [
            "prepare-repo",
            "--build",
            "1",
            "--hub",
            hub.hub_url,
            "--topurl",
            hub.topurl,
            "--publish-dir",
            str(tmp_path / "nope"),
            "--base-url",
            "http://lab/repos",
        ],
        capsys,
    )
    assert code == ExitCode.ERROR
    assert f"Publish directory '{tmp_path / 'nope'}' does not exist" in err
    assert not (tmp_path / "nope").exists()


def test_unknown_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(
        [
            "prepare-repo",
            "--build",
            "1",
            "--profile",
            "nosuchprofile",
            "--publish-dir",
            str(tmp_path),
            "--base-url",
            "http://lab/repos",
        ],
        capsys,
    )
    assert code == ExitCode.ERROR
    assert "Koji profile 'nosuchprofile' not found" in err


def test_profile_supplies_hub_and_topurl(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    (home / ".koji").mkdir(parents=True)
    (home / ".koji" / "config").write_text(f"[labkoji]\nserver = {hub.hub_url}\ntopurl = {hub.topurl}/\n")
    monkeypatch.setenv("HOME", str(home))
    build_id = hub.add_build(rpms["dpdk"])
    code, out, err = run(
        [
            "prepare-repo",
            "--build",
            str(build_id),
            "--profile",
            "labkoji",
            "--publish-dir",
            str(web.root),
            "--base-url",
            web.base_url,
        ],
        capsys,
    )
    assert code == ExitCode.OK, err
    assert out == f"{web.base_url}/dpdk-22.11-1.fc39/\n"


def test_profile_ca_bundle_is_used_for_hub_and_downloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = tmp_path / "lab-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / ".koji").mkdir()
    (tmp_path / ".koji" / "config").write_text(
        "[labkoji]\nserver = https://koji.lab/kojihub\n"
        f"topurl = https://koji.lab/kojifiles\nserverca = {ca}\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    server = resolve_server("labkoji", None, None)
    assert (server.hub_url, server.topurl, server.ca_bundle) == (
        "https://koji.lab/kojihub",
        "https://koji.lab/kojifiles",
        str(ca),
    )
    client = KojiClient(server)
    assert client._session.opts["serverca"] == str(ca) and client._http.verify == str(ca)
    client.close()


def test_missing_ca_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        [
            "prepare-repo",
            "--build",
            "1",
            "--hub",
            "https://koji.lab/kojihub",
            "--topurl",
            "https://koji.lab/files",
            "--ca-bundle",
            str(tmp_path / "nope.pem"),
            "--publish-dir",
            str(tmp_path),
            "--base-url",
            "http://lab/r",
        ],
        capsys,
    )
    assert code == ExitCode.ERROR
    assert f"Koji CA bundle '{tmp_path / 'nope.pem'}' is not a file." in err


def test_missing_file_on_the_file_server(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    build_id = hub.add_build(rpms["ovs31"])
    (
        hub.topdir / "packages/openvswitch/3.1.0/1.fc39/noarch/openvswitch-python-3.1.0-1.fc39.noarch.rpm"
    ).unlink()
    code, out, err = run(["prepare-repo", "--build", str(build_id), *koji_args(hub, web)], capsys)
    assert code == ExitCode.ERROR and out == ""
    assert "openvswitch-python-3.1.0-1.fc39.noarch.rpm' failed: HTTP 404." in err
    assert list(web.root.iterdir()) == []


@pytest.mark.parametrize("base_url", ["http://qe:pa55@lab/repos", "http://lab/repos?token=pa55"])
def test_a_base_url_with_credentials_is_refused_and_not_echoed(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    base_url: str,
) -> None:
    hub.add_build(rpms["dpdk"], tags=(TAG,))
    argv = ["prepare-repo", "--build", "1000", *koji_args(hub, web)]
    argv[argv.index("--base-url") + 1] = base_url
    code, out, err = run(argv, capsys)
    assert code == ExitCode.ERROR and out == ""
    assert "carries credentials" in err and "pa55" not in err
    assert list(web.root.iterdir()) == []
