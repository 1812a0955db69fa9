"""Shared fixtures of the jobcreator tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcreator.jobmodel import JobOptions
from ovsperf_catalog.catalog import Catalog, load_catalog
from tests.jobcreator.fakehub import FakeBeakerHub

TG = "moongen.example.com"
DUT = "dut.example.com"
KICK_REPOS = (
    "http://example.com/repos/dpdk/16.11/4.el7",
    "http://example.com/repos/openvswitch/2.6.1/15.el7",
)
HUB_USER = "ovsperf-bot"
HUB_PASSWORD = "s3cret-Pa55word"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


def make_options(**changes: object) -> JobOptions:
    """Return the options of the design's example command line, with ``changes`` applied."""
    fields: dict[str, object] = {
        "trafficgen_host": TG,
        "dut_host": DUT,
        "distro": "RHEL-7.3",
        "kick_repos": KICK_REPOS,
        "tag": "nightly",
        "reserve_hours": 99.0,
        **changes,
    }
    return JobOptions(**fields)  # type: ignore[arg-type]


@pytest.fixture
def fake_hub() -> Iterator[FakeBeakerHub]:
    with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
        yield hub


def write_client_conf(
    path: Path, hub_url: str, username: str = HUB_USER, password: str = HUB_PASSWORD
) -> Path:
    """Write a bkr client configuration using password authentication."""
    path.write_text(
        f'HUB_URL = "{hub_url}"\nAUTH_METHOD = "password"\n'
        f'USERNAME = "{username}"\nPASSWORD = "{password}"\n',
        encoding="utf-8",
    )
    return path
