"""``ovsperf-koji prepare-repo``: real koji client, stand-in hub, real RPMs, real createrepo_c."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from tests.kojiwatch.cliutil import koji_args, run
from tests.kojiwatch.conftest import OWNER, TAG
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer
from tests.kojiwatch.repocheck import fetch, repo_packages

OVS31_WANTED = {
    ("openvswitch", "x86_64", "3.1.0", "1.fc39"),
    ("openvswitch-python", "noarch", "3.1.0", "1.fc39"),
}


def test_build_by_id_makes_repo_of_x86_64_and_noarch(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    build_id = hub.add_build(rpms["ovs31"], tags=(TAG,))
    record = tmp_path / "repo.json"
    code, out, err = run(
        [
            "prepare-repo",
            "--build",
            str(build_id),
            "--package",
            "openvswitch",
            "--owner",
            OWNER,
            "--tag",
            TAG,
            "--output-json",
            str(record),
            *koji_args(hub, web),
        ],
        capsys,
    )
    assert code == ExitCode.OK, err
    url = f"{web.base_url}/openvswitch-3.1.0-1.fc39/"
    assert out == url + "\n"
    # Served over HTTP and parseable the way dnf reads it; debuginfo, aarch64 and src left out.
    assert repo_packages(url) == OVS31_WANTED
    assert sorted(p.name for p in (web.root / "openvswitch-3.1.0-1.fc39").glob("*.rpm")) == [
        "openvswitch-3.1.0-1.fc39.x86_64.rpm",
        "openvswitch-python-3.1.0-1.fc39.noarch.rpm",
    ]
    repo_file = fetch(url + "ovsperf-under-test.repo").decode()
    assert f"baseurl={url}\n" in repo_file and "gpgcheck=0" in repo_file
    assert sorted(hub.downloads) == [
        "packages/openvswitch/3.1.0/1.fc39/noarch/openvswitch-python-3.1.0-1.fc39.noarch.rpm",
        "packages/openvswitch/3.1.0/1.fc39/x86_64/openvswitch-3.1.0-1.fc39.x86_64.rpm",
    ]
    listrpms = [c for c in hub.calls if c[0] == "listRPMs"]
    assert listrpms == [("listRPMs", (), {"buildID": build_id, "arches": ["x86_64", "noarch"]})]
    assert json.loads(record.read_text()) == {
        "url": url,
        "path": str(web.root / "openvswitch-3.1.0-1.fc39"),
        "builds": ["openvswitch-3.1.0-1.fc39"],
        "rpms": ["openvswitch-3.1.0-1.fc39.x86_64.rpm", "openvswitch-python-3.1.0-1.fc39.noarch.rpm"],
        "koji_tag": TAG,
    }
    # Nothing but the published repo in the publish directory (no temporaries left).
    assert sorted(p.name for p in web.root.iterdir()) == ["openvswitch-3.1.0-1.fc39"]


def test_build_by_nvr_and_republish_replaces_atomically(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_build(rpms["ovs31"])
    argv = ["prepare-repo", "--build", "openvswitch-3.1.0-1.fc39", *koji_args(hub, web)]
    assert run(argv, capsys)[0] == ExitCode.OK
    assert run(argv, capsys)[0] == ExitCode.OK
    assert repo_packages(f"{web.base_url}/openvswitch-3.1.0-1.fc39/") == OVS31_WANTED
    assert sorted(p.name for p in web.root.iterdir()) == ["openvswitch-3.1.0-1.fc39"]


def test_latest_tagged_builds_of_each_package_in_one_repo(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_build(rpms["ovs31"], tags=(TAG,))
    hub.add_build(rpms["dpdk"], tags=(TAG,))
    hub.add_build(rpms["ovs32"], tags=(TAG,))
    hub.add_build(rpms["ovs31"][:0] + rpms["dpdk"], tags=("other-tag",))
    code, out, err = run(
        ["prepare-repo", "--latest-tagged", TAG, "--package", "openvswitch dpdk", *koji_args(hub, web)],
        capsys,
    )
    assert code == ExitCode.OK, err
    url = f"{web.base_url}/dpdk-22.11-1.fc39+openvswitch-3.2.0-1.fc39/"
    assert out == url + "\n"
    assert repo_packages(url) == {
        ("dpdk", "x86_64", "22.11", "1.fc39"),
        ("dpdk-doc", "noarch", "22.11", "1.fc39"),
        ("openvswitch", "x86_64", "3.2.0", "1.fc39"),
        ("openvswitch-python", "noarch", "3.2.0", "1.fc39"),
    }
    tagged_calls = [c for c in hub.calls if c[0] == "listTagged"]
    assert [(c[1], c[2]["package"], c[2]["latest"]) for c in tagged_calls] == [
        ((TAG,), "openvswitch", True),
        ((TAG,), "dpdk", True),
    ]


def test_scratch_task_uses_task_output(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_scratch_task(77000, rpms["ovs31"])
    code, out, err = run(
        ["prepare-repo", "--task", "77000", "--package", "openvswitch", *koji_args(hub, web)], capsys
    )
    assert code == ExitCode.OK, err
    url = f"{web.base_url}/task-77000/"
    assert out == url + "\n"
    assert repo_packages(url) == OVS31_WANTED
    assert all(d.startswith("work/tasks/7001/77001/") for d in hub.downloads), hub.downloads
    assert "listTaskOutput" in hub.methods_called()


def test_task_of_a_real_build_uses_the_build(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_build(rpms["dpdk"], task_id=88000)
    code, out, err = run(
        ["prepare-repo", "--task", "88000", "--package", "dpdk", *koji_args(hub, web)], capsys
    )
    assert code == ExitCode.OK, err
    assert out == f"{web.base_url}/dpdk-22.11-1.fc39/\n"
    assert all(d.startswith("packages/dpdk/22.11/1.fc39/") for d in hub.downloads)


@pytest.mark.parametrize(
    "message",
    [
        # Red Hat UMB (koji protonmsg) build state change: ids nested under 'info'.
        lambda bid: {
            "info": {"id": bid, "name": "openvswitch", "owner_name": OWNER},
            "attribute": "state",
            "old": 0,
            "new": 1,
        },
        # Fedora fedora-messaging buildsys.build.state.change: flat body.
        lambda bid: {
            "build_id": bid,
            "name": "openvswitch",
            "owner": OWNER,
            "new": 1,
            "old": 0,
            "instance": "primary",
        },
        # UMB tag message.
        lambda bid: {
            "tag": {"name": TAG},
            "build": {"id": bid, "name": "openvswitch", "owner_name": OWNER},
            "user": {"name": OWNER},
        },
    ],
    ids=["umb-state", "fedora-flat", "umb-tag"],
)
def test_ci_message_names_the_build(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    message: object,
) -> None:
    build_id = hub.add_build(rpms["ovs31"], tags=(TAG,))
    msg = tmp_path / "ci-message.json"
    msg.write_text(json.dumps(message(build_id)))  # type: ignore[operator]
    code, out, err = run(
        [
            "prepare-repo",
            "--ci-message-file",
            str(msg),
            "--package",
            "openvswitch",
            "--owner",
            OWNER,
            "--tag",
            TAG,
            *koji_args(hub, web),
        ],
        capsys,
    )
    assert code == ExitCode.OK, err
    assert out == f"{web.base_url}/openvswitch-3.1.0-1.fc39/\n"
    assert ("getBuild", (build_id,), {}) in hub.calls


def test_tag_wait_sees_build_tagged_later(
    hub: FakeKojiHub, web: StaticHttpServer, rpms: dict[str, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    import threading

    build_id = hub.add_build(rpms["ovs31"])
    timer = threading.Timer(0.5, hub.tag_build, args=(TAG, build_id))
    timer.start()
    try:
        code, _out, err = run(
            [
                "prepare-repo",
                "--build",
                str(build_id),
                "--tag",
                TAG,
                "--tag-wait-s",
                "20",
                *koji_args(hub, web),
            ],
            capsys,
        )
    finally:
        timer.cancel()
    assert code == ExitCode.OK, err
    assert "not in tag 'fdp-el9-candidate' yet; waiting up to 20 s" in err
    assert hub.methods_called().count("listTags") >= 2
