"""Helpers for the in-process ``ovsperf-koji`` tests."""

from __future__ import annotations

import pytest

from kojiwatch.cli import main
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


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err
