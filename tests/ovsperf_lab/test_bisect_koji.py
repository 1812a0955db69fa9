"""ovsperf-lab bisect over a Koji range: the real koji client against the stand-in hub, real RPMs
(rpmbuild), listing from the tag's history, download, verification and unpacking (rpm2cpio + the
newc reader), skipped builds and an unreachable hub."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_lab.bisect.kojibuilds import KojiBuilds
from ovsperf_lab.bisect.model import BuildKind, BuildUnavailableError, Conclusion, StepOutcome
from ovsperf_lab.bisect.options import BisectRequest, KojiRange
from ovsperf_lab.bisect.rpmunpack import UnpackError, extract_newc, unpack_rpm
from ovsperf_lab.bisect.session import Bisection, StepMeasurement, StepRun, run_bisection, start
from ovsperf_lab.bisect.state import BisectState, read_state
from ovsperf_lab.cli import main
from ovsperf_lab.compare.config import CompareConfig
from ovsperf_lab.errors import LabError
from tests.kojiwatch.conftest import TAG
from tests.kojiwatch.fakes import FakeKojiHub, unused_port
from tests.kojiwatch.rpmtools import build_rpm
from tests.ovsperf_lab.bisectfakes import FakeComparison

VERSIONS = ("3.1.1", "3.1.2", "3.1.3", "3.1.4", "3.1.5")


@pytest.fixture(scope="module")
def ovs_rpms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Five real builds of a fake openvswitch (x86_64 + a noarch sub-package + the SRPM)."""
    work = tmp_path_factory.mktemp("ovs-rpms")
    return {
        v: build_rpm(work, "openvswitch", v, "1.fc39", subpackages=(("python", "noarch"),)) for v in VERSIONS
    }


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[FakeKojiHub]:
    fake = FakeKojiHub(tmp_path / "kojiroot").start()
    try:
        yield fake
    finally:
        fake.stop()


def _nvr(version: str) -> str:
    return f"openvswitch-{version}-1.fc39"


def _tagged(hub: FakeKojiHub, ovs_rpms: dict[str, list[Path]]) -> dict[str, int]:
    """Tag the builds in version order, with another package's build and a re-tag in between."""
    ids = {}
    for version in VERSIONS:
        ids[version] = hub.add_build(ovs_rpms[version], tags=(TAG,))
    hub.tag_build(TAG, ids["3.1.2"])  # re-tagged later: keeps its first place
    return ids


def _range(hub: FakeKojiHub, good: str = "3.1.1", bad: str = "3.1.5") -> KojiRange:
    return KojiRange(hub.hub_url, hub.topurl, TAG, "openvswitch", _nvr(good), _nvr(bad), timeout_s=10.0)


def test_the_range_is_listed_from_the_tag_history_in_tagging_order(
    hub: FakeKojiHub, ovs_rpms: dict[str, list[Path]]
) -> None:
    _tagged(hub, ovs_rpms)
    builds = KojiBuilds(_range(hub, "3.1.2", "3.1.4")).list_range()
    assert [(b.index, b.label, b.kind) for b in builds] == [
        (0, _nvr("3.1.2"), BuildKind.KOJI),
        (1, _nvr("3.1.3"), BuildKind.KOJI),
        (2, _nvr("3.1.4"), BuildKind.KOJI),
    ]
    assert hub.methods_called() == ["queryHistory"]
    with pytest.raises(LabError, match="the good build must come first \\(swapped\\?\\)"):
        KojiBuilds(_range(hub, "3.1.4", "3.1.2")).list_range()
    with pytest.raises(LabError, match=r"Option '--bad': build 'openvswitch-9-1\.fc39' was never tagged"):
        KojiBuilds(
            KojiRange(hub.hub_url, hub.topurl, TAG, "openvswitch", _nvr("3.1.1"), "openvswitch-9-1.fc39")
        ).list_range()


def test_a_build_is_downloaded_verified_and_unpacked_once(
    hub: FakeKojiHub, ovs_rpms: dict[str, list[Path]], tmp_path: Path
) -> None:
    _tagged(hub, ovs_rpms)
    koji = KojiBuilds(_range(hub))
    build = koji.list_range()[2]
    root = koji.prepare(build, tmp_path / "builds")
    assert root == tmp_path / "builds" / _nvr("3.1.3") / "root"
    fake = root / "usr" / "share" / "ovsperf-fake"
    assert (fake / "openvswitch.txt").read_text() == "openvswitch 3.1.3\n"
    assert (fake / "openvswitch-python.txt").read_text() == "python\n"
    assert sorted(p.name for p in (tmp_path / "builds" / _nvr("3.1.3")).iterdir()) == ["root"]  # RPMs gone
    assert sorted(d.rsplit("/", 1)[1] for d in hub.downloads) == [
        "openvswitch-3.1.3-1.fc39.x86_64.rpm", "openvswitch-python-3.1.3-1.fc39.noarch.rpm",
    ]  # fmt: skip
    assert koji.prepare(build, tmp_path / "builds") == root and len(hub.downloads) == 2  # reused


def test_a_damaged_rpm_makes_its_build_unavailable(
    hub: FakeKojiHub, ovs_rpms: dict[str, list[Path]], tmp_path: Path
) -> None:
    _tagged(hub, ovs_rpms)
    served = hub.topdir / "packages/openvswitch/3.1.3/1.fc39/x86_64/openvswitch-3.1.3-1.fc39.x86_64.rpm"
    data = bytearray(served.read_bytes())
    data[-100] ^= 0xFF  # same size, damaged payload
    served.write_bytes(bytes(data))
    koji = KojiBuilds(_range(hub), attempts=2, first_wait_s=0.01)
    with pytest.raises(
        BuildUnavailableError, match=r"openvswitch-3\.1\.3-1\.fc39' cannot be made ready: .*damaged"
    ):
        koji.prepare(koji.list_range()[2], tmp_path / "builds")
    assert not (tmp_path / "builds" / _nvr("3.1.3")).exists()  # nothing half-unpacked left


def test_bisection_over_koji_skips_the_broken_build_and_names_the_culprit(
    hub: FakeKojiHub, ovs_rpms: dict[str, list[Path]], tmp_path: Path
) -> None:
    ids = _tagged(hub, ovs_rpms)
    hub.rpms[ids["3.1.3"]] = []  # listed in the tag, but no RPMs for x86_64/noarch
    koji = KojiBuilds(_range(hub), attempts=2, first_wait_s=0.01)
    builds = koji.list_range()
    state = BisectState(BisectRequest("OVS_DPDK1q", CompareConfig(), koji=koji.koji), builds)
    directory = start(state, tmp_path / "out")
    fake = FakeComparison({4: -10.0})  # 3.1.5 is slower
    result = Bisection(directory, state, fake, koji).run()
    assert (result.conclusion, result.first_bad, result.last_good) == (Conclusion.FOUND, 4, 3)
    # Each side is the build's unpacked tree; the build without RPMs is skipped with the reason.
    assert {Path(r.candidate_source).parent.name for r in fake.runs} == {
        _nvr(v) for v in ("3.1.2", "3.1.4", "3.1.5")
    }
    assert all(r.good_source == str(directory / "builds" / _nvr("3.1.1") / "root") for r in fake.runs)
    [skipped] = [s for s in read_state(directory).steps if s.outcome is StepOutcome.SKIPPED]
    assert skipped.build == 2 and "has no RPMs for x86_64, noarch" in skipped.reason
    assert json.loads((directory / "bisect.json").read_text())["first_bad_label"] == _nvr("3.1.5")


def test_an_unreachable_hub_stops_after_bounded_retries_with_the_state_kept(
    hub: FakeKojiHub, ovs_rpms: dict[str, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tagged(hub, ovs_rpms)
    koji = KojiBuilds(_range(hub), attempts=3, first_wait_s=0.01)
    state = BisectState(BisectRequest("OVS_DPDK1q", CompareConfig(), koji=koji.koji), koji.list_range())
    directory = start(state, tmp_path / "out")
    inner = FakeComparison({4: -10.0})

    def comparator(run: StepRun) -> StepMeasurement:
        hub.fail_next = 1000  # the hub goes away after the first comparison
        return inner(run)

    with pytest.raises(LabError, match=r"still failing after 3 tries.*--resume"):
        run_bisection(Bisection(directory, state, comparator, koji))
    assert hub.failed_requests == 3
    assert capsys.readouterr().out.strip() == str(directory / "index.html")
    assert [s.build for s in read_state(directory).steps] == [4]  # the bracket is kept
    hub.fail_next = 0
    assert run_bisection(Bisection(directory, read_state(directory), inner, koji)) == 1


def test_an_unreachable_hub_at_the_start_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{unused_port()}"
    argv = ["bisect", "--config", "OVS_DPDK1q", "--koji-package", "openvswitch", "--koji-tag", TAG,
            "--good", _nvr("3.1.1"), "--bad", _nvr("3.1.5"), "--hub", f"{dead}/kojihub", "--topurl",
            f"{dead}/kojifiles", "--output", str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "still failing after 4 tries" in err and "unreachable" in err


def test_rpm_payloads_unpack_safely(ovs_rpms: dict[str, list[Path]], tmp_path: Path) -> None:
    assert unpack_rpm(ovs_rpms["3.1.1"][0], tmp_path / "root") == 1
    with pytest.raises(UnpackError, match="failed"):
        unpack_rpm(tmp_path / "root" / "usr" / "share" / "ovsperf-fake" / "openvswitch.txt", tmp_path / "x")

    def entry(name: str, mode: int, data: bytes = b"") -> bytes:
        raw = name.encode() + b"\0"
        fields = [0, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(raw), 0]
        head = b"070701" + b"".join(f"{f:08X}".encode() for f in fields) + raw
        return head + b"\0" * (-len(head) % 4) + data + b"\0" * (-len(data) % 4)

    trailer = entry("TRAILER!!!", 0)
    with pytest.raises(UnpackError, match="would leave the target directory"):
        extract_newc(io.BytesIO(entry("./../evil", 0o100644, b"x") + trailer), tmp_path / "y")
    with pytest.raises(UnpackError, match="through the symbolic link"):
        extract_newc(io.BytesIO(entry("./d", 0o120777, b"/etc") + entry("./d/x", 0o100644, b"x") + trailer),
                     tmp_path / "z")  # fmt: skip
    with pytest.raises(UnpackError, match="ends inside"):
        extract_newc(io.BytesIO(entry("./a", 0o100644, b"abc")[:-6]), tmp_path / "w")
    assert not (tmp_path / "evil").exists() and not Path("/etc/x").exists()
