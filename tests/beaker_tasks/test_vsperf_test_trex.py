"""vsperf_test run on a DUT whose inventory peer runs TRex: checks TRex (not MoonGen), VSperf gets 'Trex'."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.vsperf_configs.trexinv import TREX_DUT, write_trex_inventory

from .shims import REPO, Lab

TREX_ADDRESS = "127.0.0.2"
"""The TRex host as the DUT reaches it: a loopback address of its own, so port 4501 is free there."""


@contextmanager
def _listening(*ports: int) -> Iterator[list[socket.socket]]:
    """Sockets of the test accepting connections on ``ports`` of :data:`TREX_ADDRESS`."""
    servers = []
    try:
        for port in ports:
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind((TREX_ADDRESS, port))
            server.listen(8)
            servers.append(server)
        yield servers
    finally:
        for server in servers:
            server.close()


@pytest.fixture
def trex_server() -> Iterator[list[socket.socket]]:
    """Something accepting connections on TRex's sync and async ports, 127.0.0.2:4501 and 4500."""
    with _listening(4501, 4500) as servers:
        yield servers


def _params(lab: Lab, inventory: Path, **extra: str) -> dict[str, str]:
    params = {
        "INVENTORY": str(inventory),
        "DUT_HOSTNAME": TREX_DUT,
        "VSPERF_DIR": str(lab.root / "vswitchperf"),
        "VSPERF_VENV": str(lab.root / "venv"),
        "VSPERF_BASE_PYTHON": "vsperf-base-python",
        "MOONGEN_LOG_DIR": str(lab.root / "moongen"),
        "FAKE_VSPERF_LOG_DIR": str(lab.root / "vsperf-out"),
        "FAKE_VSPERF_LOADER_DIR": str(REPO / "tests" / "vsperf_configs"),
        "COLLECTOR_RETRY_DELAY_S": "0",
        "SCENARIO": "OVS_DPDK1q",
        "RSTRNT_JOBID": "4321",
    }
    params.update(extra)
    return params


def _ready(lab: Lab, inventory: Path) -> None:
    for reboot in (0, 1):
        run = lab.run("vsperf_test", reboot=reboot, VSPERF_ACTION="setup", **_params(lab, inventory))
        assert run.returncode == 0, run.stdout + run.stderr


def test_run_checks_trex_and_vsperf_drives_trex(
    lab: Lab, tmp_path: Path, trex_server: list[socket.socket]
) -> None:
    inventory = write_trex_inventory(tmp_path / "inventory.yaml", peer_address=TREX_ADDRESS)
    _ready(lab, inventory)
    run = lab.run(
        "vsperf_test", VSPERF_ACTION="run", **_params(lab, inventory, COLLECTOR=f"u@h:{tmp_path / 'ci_in'}")
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"TRex host {TREX_ADDRESS} reachable over SSH, its server on TCP 4501 and 4500" in run.stdout
    assert "MoonGen host" not in run.stdout
    assert [call for call in run.called("ssh") if f"root@{TREX_ADDRESS}" in call and call[-1] == "true"]
    confs = list(lab.root.rglob("ovsperf-vsperf.conf"))
    assert confs, "the VSperf configuration is kept with the results"
    text = confs[0].read_text()
    assert "TRAFFICGEN = 'Trex'" in text
    assert f"TRAFFICGEN_TREX_HOST_IP_ADDR = '{TREX_ADDRESS}'" in text
    assert "TRAFFICGEN_TREX_BASE_DIR = '/opt/trex/'" in text


def test_run_without_a_trex_server_warns_and_aborts(lab: Lab, tmp_path: Path) -> None:
    inventory = write_trex_inventory(tmp_path / "inventory.yaml", peer_address="127.0.0.3")
    _ready(lab, inventory)
    run = lab.run(
        "vsperf_test", VSPERF_ACTION="run", **_params(lab, inventory, COLLECTOR=f"u@h:{tmp_path / 'ci_in'}")
    )
    assert run.returncode == 2
    assert (
        "Cannot reach TRex at root@127.0.0.3 (SSH, and its server on TCP 4501 and 4500: setup_trex start)."
        in run.stderr
    )
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]


def test_run_with_the_async_port_closed_warns_and_aborts(lab: Lab, tmp_path: Path) -> None:
    """VSperf's TRex client subscribes to the publisher port (4500) as well: RPC alone is not enough."""
    inventory = write_trex_inventory(tmp_path / "inventory.yaml", peer_address=TREX_ADDRESS)
    _ready(lab, inventory)
    with _listening(4501):
        run = lab.run(
            "vsperf_test",
            VSPERF_ACTION="run",
            **_params(lab, inventory, COLLECTOR=f"u@h:{tmp_path / 'ci_in'}"),
        )
    assert run.returncode == 2
    assert f"Cannot reach TRex at root@{TREX_ADDRESS} (SSH, and its server on TCP 4501 and 4500" in run.stderr
    (preflight,) = lab.state.glob("logs/boot*/*-preflight.log")
    assert f"TRex at {TREX_ADDRESS} does not accept connections on TCP 4500" in preflight.read_text()
    assert not list(lab.root.rglob("ovsperf-vsperf.conf"))  # VSperf never ran
