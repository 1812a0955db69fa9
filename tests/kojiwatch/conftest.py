"""Fixtures: real RPMs (rpmbuild), a stand-in Koji hub, a repo web server and a stand-in Beaker hub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kojiwatch.fakebeaker import RecordingBeaker
from tests.kojiwatch.fakes import FakeKojiHub, StaticHttpServer
from tests.kojiwatch.rpmtools import build_rpm

TAG = "fdp-el9-candidate"
OWNER = "ovs-team"


@pytest.fixture(scope="session")
def rpms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Real RPM sets per build: ovs31 (x86_64, noarch, debuginfo, aarch64, src), ovs32, dpdk."""
    work = tmp_path_factory.mktemp("rpms")
    ovs31 = build_rpm(
        work, "openvswitch", "3.1.0", "1.fc39", subpackages=(("python", "noarch"), ("debuginfo", "same"))
    )
    ovs31_arm = [
        p for p in build_rpm(work, "openvswitch", "3.1.0", "1.fc39", target="aarch64") if "src" not in p.name
    ]
    return {
        "ovs31": ovs31 + ovs31_arm,
        "ovs32": build_rpm(work, "openvswitch", "3.2.0", "1.fc39", subpackages=(("python", "noarch"),)),
        "dpdk": build_rpm(work, "dpdk", "22.11", "1.fc39", subpackages=(("doc", "noarch"),)),
    }


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[FakeKojiHub]:
    """A running stand-in Koji hub with an empty file tree."""
    fake = FakeKojiHub(tmp_path / "kojiroot").start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def web(tmp_path: Path) -> Iterator[StaticHttpServer]:
    """The lab's repo web server serving an empty publish directory."""
    root = tmp_path / "www"
    root.mkdir()
    server = StaticHttpServer(root).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def beaker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingBeaker]:
    """A stand-in Beaker hub that this process's jobcreator submits to (``BEAKER_CLIENT_CONF``)."""
    with RecordingBeaker(tmp_path / "beaker") as fake:
        monkeypatch.setenv("BEAKER_CLIENT_CONF", str(fake.conf))
        yield fake
