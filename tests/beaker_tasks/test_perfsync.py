"""perfsync for real between two hosts simulated by two network namespaces."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .netns import PYTHON, Host, two_hosts
from .shims import PUBKEY


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    with two_hosts(tmp_path) as pair:
        yield pair


def test_set_then_wait_carries_data(hosts: tuple[Host, Host], tmp_path: Path) -> None:
    a, b = hosts
    data = tmp_path / "data.txt"
    data.write_text("line one\nline two ✓\n")
    set_proc = a.perfsync("--set", "MOONGEN_READY", "--data", str(data))
    assert set_proc.returncode == 0, set_proc.stderr
    assert a.server_pid() is not None
    out = tmp_path / "received.txt"
    wait = b.perfsync("--wait", "MOONGEN_READY", "--peer", a.address, "--timeout", "10", "--output", str(out))
    assert wait.returncode == 0, wait.stderr
    assert out.read_text() == "line one\nline two ✓\n"
    assert "Peer '192.0.2.1' has set state 'MOONGEN_READY'" in wait.stderr
    assert a.perfsync("--list").stdout.split() == ["MOONGEN_READY"]


def test_wait_starts_before_the_peer_sets(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    waiter = b.popen("--wait", "LATE", "--peer", a.address, "--timeout", "20", "--interval", "0.2")
    try:
        time.sleep(1.0)
        assert waiter.poll() is None  # still waiting: nothing serves yet
        assert a.perfsync("--set", "LATE").returncode == 0
        _, err = waiter.communicate(timeout=15)
    finally:
        waiter.kill()
    assert waiter.returncode == 0, err
    assert "unreachable" not in err.splitlines()[-1]


def test_peer_restart_keeps_states(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    assert a.perfsync("--set", "DUT_SSH_KEY").returncode == 0
    first_pid = a.server_pid()
    a.kill_server()  # the host reboots or the server dies
    down = b.perfsync("--wait", "DUT_SSH_KEY", "--peer", a.address, "--timeout", "1", "--interval", "0.2")
    assert down.returncode == 2
    assert "unreachable" in down.stderr and "Connection refused" in down.stderr
    waiter = b.popen("--wait", "DUT_SSH_KEY", "--peer", a.address, "--timeout", "20", "--interval", "0.2")
    try:
        time.sleep(0.5)
        # After the reboot the host runs perfsync again (any call restarts the server); the old state
        # comes back from disk without being set again.
        assert a.perfsync("--set", "OTHER_STATE").returncode == 0
        _, err = waiter.communicate(timeout=15)
    finally:
        waiter.kill()
    assert waiter.returncode == 0, err
    assert a.server_pid() not in (None, first_pid)


def test_peer_never_sets_state_bounded_clear_failure(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    assert a.perfsync("--set", "SOMETHING_ELSE").returncode == 0
    started = time.monotonic()
    proc = b.perfsync(
        "--wait",
        "VSPERF_END",
        "--peer",
        a.address,
        "--timeout",
        "2",
        "--interval",
        "0.3",
        "--progress",
        "0.5",
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 2
    assert 2.0 <= elapsed < 6
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("perfsync: ")]
    assert "Timed out after 2." in line
    assert "state 'VSPERF_END' from peer '192.0.2.1' (port 6780)" in line
    assert "last answer: HTTP 404 (state not set yet)" in line
    progress = [x for x in proc.stderr.splitlines() if "Still waiting for state 'VSPERF_END'" in x]
    assert 1 <= len(progress) <= 5 and " s left; last answer: HTTP 404" in progress[0]


def test_peer_host_never_arrives(hosts: tuple[Host, Host]) -> None:
    _, b = hosts
    started = time.monotonic()
    proc = b.perfsync(
        "--wait", "MOONGEN_READY", "--peer", "192.0.2.99", "--timeout", "2", "--interval", "0.5"
    )
    assert proc.returncode == 2
    assert time.monotonic() - started < 10
    assert "waiting for state 'MOONGEN_READY' from peer '192.0.2.99'" in proc.stderr
    assert "unreachable" in proc.stderr


GARBAGE_CLIENT = r"""
import re, socket, sys
addr = (sys.argv[1], 6780)
def ask(payload, read=True):
    s = socket.create_connection(addr, timeout=5)
    s.sendall(payload)
    data = s.recv(65536) if read else b""
    s.close()
    # HTTP/0.9-style garbage gets a bare HTML error page without a status line.
    match = re.match(rb"HTTP/1\.\d (\d{3})", data) or re.search(rb"Error code: (\d{3})", data)
    return match.group(1).decode() if match else "none"
idle = socket.create_connection(addr, timeout=5)  # a client that never sends anything
print("garbage", ask(b"\x00\xff\xfe garbage \r\n\r\n"))
print("long", ask(b"GET /" + b"A" * 70000 + b" HTTP/1.1\r\n\r\n"))
print("traversal", ask(b"GET /v1/states/../../etc/passwd HTTP/1.0\r\n\r\n"))
print("badname", ask(b"GET /v1/states/a%2Fb HTTP/1.0\r\n\r\n"))
print("post", ask(b"POST /v1/states/X HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc"))
print("put", ask(b"PUT /v1/states/X HTTP/1.0\r\n\r\n"))
print("brew", ask(b"BREW /coffee HTTP/1.0\r\n\r\n"))
print("half", ask(b"GET /v1/sta", read=False))
print("ok", ask(b"GET /v1/states/READY HTTP/1.0\r\n\r\n"))
idle.close()
"""


def test_garbage_requests_do_not_break_the_server(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    assert a.perfsync("--set", "READY").returncode == 0
    proc = subprocess.run(
        [*b.prefix, PYTHON, "-c", GARBAGE_CLIENT, a.address],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    answers = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert answers["garbage"] == "400"
    assert answers["long"] == "414"
    assert answers["traversal"] in ("400", "404")
    assert answers["badname"] == "400"
    assert answers["post"] == "405"
    assert answers["put"] == "405"
    assert answers["brew"] == "501"
    assert answers["ok"] == "200"
    assert answers["half"] == "none"
    # Still serving, with the state intact.
    wait = b.perfsync("--wait", "READY", "--peer", a.address, "--timeout", "5")
    assert wait.returncode == 0, wait.stderr


def test_ssh_public_key_installed_once(hosts: tuple[Host, Host], tmp_path: Path) -> None:
    a, b = hosts
    key = tmp_path / "id_ed25519.pub"
    key.write_text(f"{PUBKEY} root@dut\n")
    assert a.perfsync("--set", "DUT_SSH_KEY", "--data", str(key)).returncode == 0
    ssh_dir = tmp_path / "ssh"
    for _ in range(2):
        proc = b.perfsync(
            "--wait",
            "DUT_SSH_KEY",
            "--peer",
            a.address,
            "--timeout",
            "5",
            "--install",
            "authorized_keys",
            "--ssh-dir",
            str(ssh_dir),
        )
        assert proc.returncode == 0, proc.stderr
    assert (ssh_dir / "authorized_keys").read_text() == f"{PUBKEY} root@dut\n"
    assert (ssh_dir / "authorized_keys").stat().st_mode & 0o777 == 0o600


def test_private_key_is_never_published(hosts: tuple[Host, Host], tmp_path: Path) -> None:
    a, _ = hosts
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE" + " KEY-----\nAAAA\n-----END OPENSSH PRIVATE" + " KEY-----\n")
    proc = a.perfsync("--set", "DUT_SSH_KEY", "--data", str(key))
    assert proc.returncode == 2
    assert "contains a private key" in proc.stderr
    assert a.perfsync("--list").stdout.strip() == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--set", "bad/name"), "State name 'bad/name' is invalid"),
        (("--wait", "X", "--peer", "host:99999"), "invalid port"),
        (("--set", "X", "--data", "/nonexistent/file"), "Cannot read data file '/nonexistent/file'"),
    ],
)
def test_bad_arguments(hosts: tuple[Host, Host], args: tuple[str, ...], message: str) -> None:
    a, _ = hosts
    proc = a.perfsync(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_port_taken_by_another_service_is_a_clear_error(hosts: tuple[Host, Host]) -> None:
    a, _ = hosts
    squatter = subprocess.Popen(
        [*a.prefix, PYTHON, "-m", "http.server", "--bind", a.address, "6780"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.8)
        proc = a.perfsync("--set", "READY", "--bind", a.address)
    finally:
        squatter.terminate()
        squatter.wait(timeout=10)
    assert proc.returncode == 2
    assert "The state server did not start on port 6780" in proc.stderr
    assert "Address already in use" in proc.stderr
