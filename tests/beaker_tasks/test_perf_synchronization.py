"""The perf_synchronization task (runtest.sh) between two namespaces: SSH key exchange and timeouts."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .netns import Host, two_hosts
from .shims import PUBKEY, Lab, Result

Pair = tuple[tuple[Host, Lab], tuple[Host, Lab]]

HOSTKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHostKeyOfTheMoonGenMachineForTestsOnly0000"


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    with two_hosts(tmp_path) as (a, b):
        yield (a, Lab(tmp_path / "a" / "lab")), (b, Lab(tmp_path / "b" / "lab"))


def _sync(host: Host, lab: Lab, **params: str) -> Result:
    return lab.run(
        "perf_synchronization", prefix=host.prefix, PERFSYNC_STATE_DIR=str(host.state_dir), **params
    )


def test_dut_public_key_reaches_authorized_keys(pair: Pair) -> None:
    (a, lab_a), (b, lab_b) = pair
    (lab_a.home / ".ssh").mkdir()
    (lab_a.home / ".ssh" / "id_ed25519.pub").write_text(f"{PUBKEY} root@dut\n")
    (lab_a.home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    run = _sync(
        a, lab_a, SYNC_ACTION="set", SYNC_STATE="DUT_SSH_KEY", SYNC_DATA="ssh-pubkey", RSTRNT_JOBID="4321"
    )
    a.track_server()
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("perf_synchronization/set-DUT_SSH_KEY", "PASS")]
    assert run.called("firewall-cmd") == [["--state"]]  # firewalld not running here: nothing to open
    run = _sync(
        b,
        lab_b,
        SYNC_ACTION="wait",
        SYNC_STATE="DUT_SSH_KEY",
        SYNC_PEER=a.address,
        SYNC_TIMEOUT_S="10",
        SYNC_DATA="ssh-pubkey",
        RSTRNT_JOBID="4321",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("perf_synchronization/wait-DUT_SSH_KEY", "PASS")]
    assert (lab_b.home / ".ssh" / "authorized_keys").read_text() == f"{PUBKEY} root@dut\n"
    # The private key never left host A.
    assert "secret" not in (a.state_dir / "states" / "DUT_SSH_KEY.J4321.json").read_text()


def test_moongen_host_key_reaches_known_hosts(pair: Pair) -> None:
    (a, lab_a), (b, lab_b) = pair
    (lab_a.etc / "ssh").mkdir()
    (lab_a.etc / "ssh" / "ssh_host_ed25519_key.pub").write_text(f"{HOSTKEY} root@moongen\n")
    run = _sync(
        a,
        lab_a,
        SYNC_ACTION="set",
        SYNC_STATE="MOONGEN_READY",
        SYNC_DATA="ssh-hostkey",
        SYNC_HOST_NAMES="moongen01.example.com 192.0.2.1",
    )
    a.track_server()
    assert run.returncode == 0, run.stdout + run.stderr
    run = _sync(
        b,
        lab_b,
        SYNC_ACTION="wait",
        SYNC_STATE="MOONGEN_READY",
        SYNC_PEER=a.address,
        SYNC_TIMEOUT_S="10",
        SYNC_DATA="ssh-hostkey",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    known = (lab_b.home / ".ssh" / "known_hosts").read_text()
    assert known == f"moongen01.example.com,192.0.2.1 {HOSTKEY}\n"


def test_peer_never_arrives_is_warn_and_abort_naming_state_peer_and_time(pair: Pair) -> None:
    (a, lab_a), (b, lab_b) = pair
    # A state an earlier job left on the peer does not count for this job.
    assert _sync(a, lab_a, SYNC_ACTION="set", SYNC_STATE="VSPERF_END", RSTRNT_JOBID="1").returncode == 0
    a.track_server()
    started = time.monotonic()
    run = _sync(
        b,
        lab_b,
        SYNC_ACTION="wait",
        SYNC_STATE="VSPERF_END",
        SYNC_PEER="192.0.2.1",
        SYNC_TIMEOUT_S="2",
        RSTRNT_JOBID="2",
    )
    assert time.monotonic() - started < 15
    assert run.returncode == 2
    assert run.reported() == [("perf_synchronization/wait-VSPERF_END", "WARN")]
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert re.search(
        r"Peer '192\.0\.2\.1' did not set state 'VSPERF_END\.J2' \(waited [2-9] s of 2 s\)", run.stderr
    )
    assert "perfsync: Timed out after 2." in run.stderr
    assert "last answer: HTTP 404 (state not set yet)" in run.stderr


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"SYNC_ACTION": "block", "SYNC_STATE": "X"}, "SYNC_ACTION 'block' is not 'set' or 'wait'"),
        ({"SYNC_ACTION": "wait", "SYNC_STATE": "X"}, "Parameter SYNC_PEER is required"),
        (
            {"SYNC_ACTION": "wait", "SYNC_STATE": "X", "SYNC_PEER": "h", "SYNC_TIMEOUT_S": "soon"},
            "not a positive",
        ),
        ({"SYNC_ACTION": "set", "SYNC_STATE": "a b"}, "SYNC_STATE 'a b' is not"),
        ({"SYNC_ACTION": "set", "SYNC_STATE": "K", "SYNC_DATA": "ssh-pubkey"}, "No SSH public key"),
    ],
)
def test_bad_parameters_abort(lab: Lab, tmp_path: Path, params: dict[str, str], message: str) -> None:
    run = lab.run("perf_synchronization", PERFSYNC_STATE_DIR=str(tmp_path / "ps"), **params)
    assert run.returncode == 2
    assert message in run.stderr
    assert run.reported()[-1][1] == "WARN"
