"""A stand-in Beaker hub with a submitted job, results tarballs, and ``ovsperf-beaker`` run in-process.

The hub is ``tests/jobcreator/fakehub.py``: beaker-client's real ``HubProxy`` talks XML-RPC to
it and the collector downloads the task's uploaded files over real HTTP from it. The job is the
one jobcreator renders for ``OVS_DPDK1q_GUEST_DPDK1q`` (``tests/fixtures/jobcreator``), uploaded
through a logged-in ``HubProxy`` as ``ovsperf-koji submit`` would.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from bkr.common.hub import HubProxy

from beakerwatch.cli import main
from ovsperf_common import metadata
from ovsperf_common.metadata import RunMetadata
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub, FakeJob, FakeTask

ROOT = Path(__file__).resolve().parents[2]
JOB_XML = ROOT / "tests" / "fixtures" / "jobcreator" / "OVS_DPDK1q_GUEST_DPDK1q.xml"
SCENARIO = "OVS_DPDK1q_GUEST_DPDK1q"
TS = "results_2026-11-20_01-02-03"
NVRS = ["openvswitch3.1-3.1.0-65.el9fdp", "dpdk-22.11-4.el9"]
KOJI_TAG = "fdp-el9-candidate"
BUILD_URL = "https://jenkins.example.com/job/ovsperf-nightly/7/"
CSV_TEXT = "id,throughput_rx_fps,packet_size\nphy2phy_tput,14880952.0,64\n"
FAST = ["--hub-timeout-s", "2", "--hub-retries", "2", "--retry-backoff-s", "0.05", "--poll-s", "0.05"]
"""collect options that keep a failing test short."""


def results_tarball(tmp: Path, *, ts: str = TS, scenario: str = SCENARIO) -> bytes:
    """Return a results tarball as ``vsperf_test_collect`` packs it (``tar -C parent -czf``)."""
    work = tmp / f"pack-{ts}-{scenario}"
    results = work / ts
    results.mkdir(parents=True)
    (results / "result_0_phy2phy_tput_p2p.csv").write_text(CSV_TEXT)
    (results / "moongen").mkdir()
    (results / "moongen" / "throughput.log").write_text("MoonGen log\n" * 100)
    metadata.write(
        results,
        RunMetadata(
            scenario=scenario,
            producer="vsperf_test",
            results_dir=ts,
            tests=[{"index": 0, "test": "phy2phy_tput", "deployment": "p2p"}],
            hosts={"dut": "dut.example.com", "trafficgen": "moongen.example.com"},
            packages={"openvswitch3.1": "3.1.0-65.el9fdp.x86_64"},
            extra={"beaker_job_id": "J:1234", "kernel": "5.14.0-427.el9.x86_64", "status": "PASS"},
        ),
    )
    out = work / f"{ts}.tar.gz"
    subprocess.run(["tar", "-C", str(work), "-czf", str(out), ts], check=True)
    return out.read_bytes()


def hostile_tarball(members: list[tarfile.TarInfo | tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """Return a gzip tarball holding exactly ``members`` (file members with their bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as archive:
        for member in members:
            if isinstance(member, tuple):
                info, data = member
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                archive.addfile(member)
    return buffer.getvalue()


@dataclass
class Lab:
    """A running stand-in hub, its client configuration, and the collector's paths."""

    hub: FakeBeakerHub
    conf: Path
    state: Path
    ci_in: Path
    ids_file: Path
    tmp: Path

    def submit(self, scenario: str = SCENARIO) -> FakeJob:
        """Upload the job through a logged-in ``HubProxy``; return its record on the hub."""
        proxy = HubProxy(
            None, HUB_URL=self.hub.url, AUTH_METHOD="password", USERNAME=HUB_USER, PASSWORD=HUB_PASSWORD
        )
        job_id = proxy.jobs.upload(JOB_XML.read_text().replace(SCENARIO, scenario), False)
        return self.hub.state.job(job_id)

    def write_ids(self, jobs: list[FakeJob], scenario: str = SCENARIO) -> Path:
        """Write the ids file as ``ovsperf-koji submit --ids-file`` does."""
        record = {
            "repos": ["http://repo.example.com/ovs/"],
            "builds": NVRS,
            "baseline": None,
            "distro": "RHEL-9.4.0",
            "hosts": ["moongen.example.com", "dut.example.com"],
            "tag": "jenkins ovsperf-nightly #7",
            "collector": None,
            "jobs": [{"scenario": scenario, "job_id": job.j_id} for job in jobs],
        }
        self.ids_file.write_text(json.dumps(record))
        return self.ids_file

    def track(self, *jobs: FakeJob, scenario: str = SCENARIO) -> int:
        """Run ``ovsperf-beaker track`` for ``jobs``; return the exit code."""
        self.write_ids(list(jobs), scenario)
        argv = ["track", "--state", str(self.state), "--ids-file", str(self.ids_file)]
        return main([*argv, "--koji-tag", KOJI_TAG, "--build-url", BUILD_URL])

    def collect(self, *extra: str, once: bool = True) -> int:
        """Run ``ovsperf-beaker collect`` (fast retries, ``extra`` last); return its exit code."""
        argv = ["collect", "--state", str(self.state), "--ci-in", str(self.ci_in), "--deadline-s", "30"]
        return main([*argv, *FAST, *(["--once"] if once else []), *extra])

    @staticmethod
    def run_task(job: FakeJob) -> FakeTask:
        """Return the job's measuring task (DUT, ``/ovsperf/vsperf_test``, ``VSPERF_ACTION=run``)."""
        return job.task("DUT", "/ovsperf/vsperf_test", VSPERF_ACTION="run")

    def finish(self, job: FakeJob, tarball: bytes | None, name: str = f"{TS}.tar.gz") -> None:
        """Upload ``tarball`` (plus the task's other logs) to the run task and complete the job."""
        task = self.run_task(job)
        self.hub.state.add_task_file(task.id, "vsperf-stdout.log", b"vsperf said things\n")
        if tarball is not None:
            self.hub.state.add_task_file(task.id, name, tarball)
        self.hub.state.finish_job(job.id)

    def deliveries(self) -> list[str]:
        """Return the entries of ci_in, hidden ones included, sorted."""
        return sorted(p.name for p in self.ci_in.iterdir())


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
        conf = write_client_conf(tmp_path / "client.conf", hub.url)
        monkeypatch.setenv("BEAKER_CLIENT_CONF", str(conf))
        monkeypatch.delenv("BUILD_URL", raising=False)
        ci_in = tmp_path / "ci_in"
        ci_in.mkdir()
        yield Lab(hub, conf, tmp_path / "beaker-state.json", ci_in, tmp_path / "job-ids.json", tmp_path)
