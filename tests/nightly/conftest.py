"""Fixtures of the nightly-in-a-box tests: two namespace hosts with sshd, a Beaker lab over them,
real RPM builds in a repository served over HTTP."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcreator.cli import main as jobcreator_main
from kojiwatch.repo import createrepo
from remote.run import RebootSettings
from tests.kojiwatch.conftest import web  # noqa: F401  (the lab's repository web server)
from tests.kojiwatch.fakes import StaticHttpServer
from tests.kojiwatch.rpmtools import build_rpm
from tests.remote.conftest import Lab, lab  # noqa: F401  (the two sshd hosts, as ovsperf-remote's tests)
from tests.remote.sshd_hosts import link_hosts
from tests.remote.test_run import Reboots

from .beakerlab import BeakerLab, LabConfig


def publish_build(server: StaticHttpServer, work: Path, name: str, version: str, release: str) -> str:
    """Build ``name`` (real RPMs, rpmbuild) into a createrepo_c repository; return its URL."""
    directory = server.root / f"{name}-{version}-{release}"
    directory.mkdir()
    for rpm in build_rpm(work, name, version, release, subpackages=(("python", "noarch"),)):
        if not rpm.name.endswith(".src.rpm"):
            (directory / rpm.name).write_bytes(rpm.read_bytes())
    createrepo(directory)
    return f"{server.base_url}/{directory.name}/"


def render_job(path: Path, tg: str, dut: str, kickrepo: str, *extra: str) -> str:
    """Render OVS_DPDK1q for the two hosts with jobcreator's command line; return the XML."""
    code = jobcreator_main(
        [
            "--host", tg, "--host", dut, "--config", "OVS_DPDK1q", "--distro", "RHEL-9.4",
            "--kickrepo", kickrepo, "--inventory", "vsperf_configs/inventory.example.yaml",
            "--tag", "nightly", "--reserve", "0", "--output", str(path), *extra,
        ]
    )  # fmt: skip
    assert code == 0
    return path.read_text()


@pytest.fixture
def beaker_lab(lab: Lab, tmp_path: Path) -> Iterator[tuple[BeakerLab, Lab]]:  # noqa: F811
    """A lab of the two hosts (linked, trusted, rebootable) whose jobs run under ``tmp_path/lab``."""
    lab.trust()
    link_hosts(lab.tg, lab.dut)
    with Reboots(tmp_path, [lab.tg, lab.dut]) as reboots:
        config = LabConfig(
            work=tmp_path / "lab",
            settings=lab.settings(),
            reboot=RebootSettings(
                command=tuple(shlex.split(reboots.command())),
                boot_id_command=tuple(shlex.split(reboots.boot_id_command())),
                timeout_s=60,
            ),
        )
        host_keys = {lab.tg.address: lab.tg.host_key_line, lab.dut.address: lab.dut.host_key_line}
        beaker = BeakerLab(config, host_keys)
        try:
            yield beaker, lab
        finally:
            beaker.close()
