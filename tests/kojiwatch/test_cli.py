"""Exit-code table, ``--help`` and the Koji message shapes ``prepare-repo --ci-message-file`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kojiwatch.cli import main
from kojiwatch.errors import KojiWatchError
from kojiwatch.message import parse_message
from kojiwatch.model import BuildMessage, BuildState
from ovsperf_common.exitcodes import ExitCode
from tests.kojiwatch.conftest import TAG
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer


@pytest.mark.parametrize(
    ("tags", "extra", "expected"),
    [
        ((TAG,), [], ExitCode.OK),
        ((TAG,), ["--owner", "nobody"], ExitCode.ERROR),
        (("elsewhere",), [], ExitCode.NO_RESULTS),
    ],
    ids=["ok", "error", "not-ours"],
)
def test_exit_code_table(
    hub: FakeKojiHub,
    web: StaticHttpServer,
    rpms: dict[str, list[Path]],
    tags: tuple[str, ...],
    extra: list[str],
    expected: ExitCode,
) -> None:
    build_id = hub.add_build(rpms["dpdk"], tags=tags)
    argv = ["-q", "prepare-repo", "--build", str(build_id), "--tag", TAG, *extra, "--hub", hub.hub_url]
    argv += ["--topurl", hub.topurl, "--publish-dir", str(web.root), "--base-url", web.base_url]
    assert main(argv) == expected


@pytest.mark.parametrize("command", ["prepare-repo", "submit", "watch"])
def test_help_documents_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes: 0 OK; 2 error" in " ".join(out.split())
    assert "3 nothing to test" in " ".join(out.split())


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"info": {"id": 7, "name": "openvswitch", "owner_name": "me"}, "old": 0, "new": 1},
            BuildMessage(7, "openvswitch", "me", BuildState.COMPLETE, None),
        ),
        (
            {"msg": {"build_id": 8, "name": "dpdk", "owner": "you", "new": 3}},
            BuildMessage(8, "dpdk", "you", BuildState.FAILED, None),
        ),
        (
            {"build_id": 9, "name": "dpdk", "owner": "you", "tag": "f41-updates-candidate"},
            BuildMessage(9, "dpdk", "you", None, "f41-updates-candidate"),
        ),
        (
            {"tag": {"name": TAG}, "build": {"id": 10, "name": "openvswitch", "owner_name": "me"}},
            BuildMessage(10, "openvswitch", "me", None, TAG),
        ),
        (
            {"info": {"id": 11, "name": "openvswitch"}, "new": "COMPLETE"},
            BuildMessage(11, "openvswitch", None, BuildState.COMPLETE, None),
        ),
    ],
    ids=["umb-state", "fedmsg-envelope", "fedora-tag", "umb-tag", "state-by-name"],
)
def test_message_shapes(body: dict[str, object], expected: BuildMessage) -> None:
    assert parse_message(json.dumps(body)) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "is not a JSON object"),
        ('{"info": {"id": "7"}}', "field 'info.id' is '7', not a Koji build id"),
        ('{"build_id": 0}', "field 'build_id' is 0"),
        ('{"info": {"id": 7}, "new": 9}', "field 'new': Unknown Koji build state 9"),
        ('{"info": {"id": 7}, "new": "DONE"}', "field 'new': 'DONE' is not a valid Koji build state"),
    ],
)
def test_bad_messages(text: str, message: str) -> None:
    with pytest.raises(KojiWatchError) as exc:
        parse_message(text, Path("/ws/out/ci-message.json"))
    assert message in str(exc.value)
    assert str(exc.value).startswith("'/ws/out/ci-message.json'")


def test_a_watch_state_that_is_not_utf8_is_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kojiwatch.errors import KojiWatchError
    from kojiwatch.state import load_state

    state = tmp_path / "watch-state.json"
    state.write_bytes(b'{"version": 1, "tag": "t\xff\xfe"}')
    with pytest.raises(KojiWatchError, match=f"Watch state '{state}' is not UTF-8 text"):
        load_state(state, "t")


def test_a_fifo_as_watch_state_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Issue 25 item 14: '--state-file' naming a FIFO blocked the watcher for ever."""
    from kojiwatch.errors import KojiWatchError
    from kojiwatch.state import load_state
    from tests.fifoguard import fifo_watchdog

    state = tmp_path / "watch-state.json"
    with fifo_watchdog(state, timeout_s=5) as freed:
        with pytest.raises(KojiWatchError, match=f"Cannot read watch state '{state}': it is a FIFO"):
            load_state(state, "t")
    assert freed == []


def test_a_koji_hub_that_trickles_bytes_cannot_hold_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trickling_server: str
) -> None:
    import time

    argv = ["prepare-repo", "--build", "1", "--hub", f"http://{trickling_server}/kojihub"]
    argv += ["--topurl", f"http://{trickling_server}/kojifiles", "--koji-timeout-s", "1"]
    argv += ["--publish-dir", str(tmp_path), "--base-url", "http://127.0.0.1/repos"]
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert "Timed out after 1.0 s waiting for Koji call getBuild" in err
