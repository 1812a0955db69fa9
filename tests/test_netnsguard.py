"""A killed run's namespaces are removed by the next, SIGTERM removes a run's own, used subnets avoided.

The scenario of issue 25: ``bench_remote.py`` killed by a timeout left two sshd daemons, their
namespaces and their veth addresses in 198.51.100.0/24 behind, and the next run picked a /30 that
collided with one of them. Here real ``ssh_hosts`` (tests/remote/sshd_hosts.py) run in a child
process that is then terminated or killed.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netnsguard import NETNS_DIR, free_subnet, is_stale, owned_name, remove_stale, used_networks

ROOT = Path(__file__).resolve().parents[1]
TEST_NET_2 = ipaddress.IPv4Network("198.51.100.0/24")

CHILD = r"""
import json, sys, time
from pathlib import Path
from tests.remote.sshd_hosts import keygen, ssh_hosts
work = Path(sys.argv[1])
auth = work / "authorized_keys"
auth.write_text(keygen(work / "key") + "\n")
with ssh_hosts(work / "hosts", 1, auth) as hosts:
    print(json.dumps({"ns": hosts[0].ns, "address": hosts[0].address, "sshd": hosts[0].pid}), flush=True)
    time.sleep(120)
"""


def _start_child(work: Path) -> tuple[subprocess.Popen[str], dict[str, object]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(work)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)


def _root_addresses() -> set[str]:
    out = subprocess.run(
        ["ip", "-j", "-4", "addr"], capture_output=True, text=True, timeout=10, check=True
    ).stdout
    return {a["local"] for link in json.loads(out) for a in link.get("addr_info", [])}


@pytest.fixture
def child(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, object]]]:
    tmp_path.chmod(0o755)
    proc, host = _start_child(tmp_path)
    try:
        yield proc, host
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        remove_stale("ovsperf-rt-")


def test_sigterm_removes_the_hosts_namespace_sshd_and_address(
    child: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    proc, host = child
    assert (NETNS_DIR / str(host["ns"])).exists()
    assert str(host["ns"]).startswith(f"ovsperf-rt-p{proc.pid}-")
    assert Path(f"/proc/{host['sshd']}").exists()
    client = str(ipaddress.IPv4Address(str(host["address"])) - 1)
    assert client in _root_addresses()
    proc.terminate()
    proc.wait(timeout=30)
    assert proc.returncode != 0
    assert not (NETNS_DIR / str(host["ns"])).exists()
    assert not Path(f"/proc/{host['sshd']}").exists()
    assert client not in _root_addresses()


def test_a_killed_runs_leftovers_are_avoided_then_removed_and_live_ones_kept(
    child: tuple[subprocess.Popen[str], dict[str, object]],
) -> None:
    proc, host = child
    proc.kill()  # SIGKILL: nothing of the child's cleanup runs
    proc.wait(timeout=30)
    ns, sshd = str(host["ns"]), int(str(host["sshd"]))
    leftover = ipaddress.IPv4Network(f"{host['address']}/30", strict=False)
    assert (NETNS_DIR / ns).exists() and Path(f"/proc/{sshd}").exists()
    assert is_stale(ns, "ovsperf-rt-")

    # The leftover /30 is in use in this namespace: never chosen, even when the search starts at it.
    used = used_networks()
    assert any(leftover.overlaps(net) for net in used)
    candidates = list(TEST_NET_2.subnets(new_prefix=30))
    at_leftover = random.Random()
    at_leftover.randrange = lambda _n: candidates.index(leftover)  # type: ignore[method-assign]
    chosen = free_subnet(TEST_NET_2, 30, used, at_leftover)
    assert chosen != leftover and not any(chosen.overlaps(net) for net in used)

    # A namespace whose owner lives (this test) is kept; the killed run's goes, with its sshd.
    live = owned_name("ovsperf-rt-", "live-0")
    subprocess.run(["ip", "netns", "add", live], check=True, timeout=10)
    try:
        assert not is_stale(live, "ovsperf-rt-")
        assert remove_stale("ovsperf-rt-") == [ns]
        assert (NETNS_DIR / live).exists()
    finally:
        subprocess.run(["ip", "netns", "del", live], check=False, timeout=10)
    assert not (NETNS_DIR / ns).exists()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{sshd}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{sshd}").exists()
    assert str(leftover[1]) not in _root_addresses()


def test_free_subnet_returns_the_only_free_one_and_refuses_when_none_is_left() -> None:
    free = ipaddress.IPv4Network("198.51.100.200/30")
    used = [n for n in TEST_NET_2.subnets(new_prefix=30) if n != free]
    for seed in range(5):
        assert free_subnet(TEST_NET_2, 30, used, random.Random(seed)) == free
    # A wider route covering it (a lab network) makes it unusable too.
    with pytest.raises(RuntimeError, match=r"No free /30 left in 198\.51\.100\.0/24"):
        free_subnet(TEST_NET_2, 30, [*used, ipaddress.IPv4Network("198.51.100.192/26")], random.Random(0))


def test_legacy_names_are_stale_only_when_old(tmp_path: Path) -> None:
    name = f"ovsperf-rt-{os.urandom(3).hex()}-0"  # the naming before owners (no p<pid>)
    subprocess.run(["ip", "netns", "add", name], check=True, timeout=10)
    try:
        made = (NETNS_DIR / name).stat().st_mtime
        assert not is_stale(name, "ovsperf-rt-", now=made + 60)
        assert is_stale(name, "ovsperf-rt-", now=made + 3600)
        assert not is_stale(name, "ovsperf-bt-", now=made + 3600)
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, timeout=10)
