"""Helpers for the in-process ``ovsperf-koji`` tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kojiwatch.cli import main
from tests.kojiwatch.conftest import OWNER, TAG
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer


def koji_args(hub: FakeKojiHub, web: StaticHttpServer) -> list[str]:
    return [
        "--hub",
        hub.hub_url,
        "--topurl",
        hub.topurl,
        "--koji-timeout-s",
        "10",
        "--publish-dir",
        str(web.root),
        "--base-url",
        web.base_url,
    ]


def watch_argv(hub: FakeKojiHub, web: StaticHttpServer, state: Path, *extra: str) -> list[str]:
    """``watch`` of openvswitch and dpdk in TAG by OWNER, two scenarios, fast retries, plus ``extra``."""
    return [
        "watch",
        "--tag",
        TAG,
        "--package",
        "openvswitch",
        "--package",
        "dpdk",
        "--owner",
        OWNER,
        "--state-file",
        str(state),
        *koji_args(hub, web),
        "--host",
        "gen.example.com",
        "--host",
        "dut.example.com",
        "--distro",
        "RHEL-9.4.0",
        "--scenario",
        "OVS_DPDK1q,OVS_DPDK2q",
        "--interval-s",
        "0",
        "--retry-initial-s",
        "0.05",
        "--retry-max-s",
        "0.2",
        *extra,
    ]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err
