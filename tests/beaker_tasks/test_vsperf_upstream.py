"""Where the real VSperf 10 fails on a lab host, the task and its stand-ins fail too.

VSperf at the pinned 90ef48d4 (opnfv-10.0.0) makes a Kubernetes pod for every p2p test unless the
configuration selects another pod class, unmounts ``HUGEPAGE_DIR`` after every test, and runs only
on Python 3.6 to 3.9 with its pinned requirements. The fake VSperf (``fake_vsperf.py``) behaves as
VSperf does there, so a configuration or a task that would break a real run breaks these tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .shims import FAKE_VSPERF, HOST_HUGEPAGES, REPO, VENV_BIN, Lab
from .test_vsperf_test import DUT, INVENTORY, _params, _run, _setup

HOST_MOUNT = ("hugetlbfs", "/dev/hugepages", "hugetlbfs")


def _conf(lab: Lab, scenario: str, *drop: str) -> Path:
    """Return the task's VSperf configuration for ``scenario``, without the settings named in ``drop``."""
    out = lab.root / f"{scenario}.conf"
    subprocess.run(
        [
            str(VENV_BIN / "python"),
            "-m",
            "vsperf_configs.cli",
            "-q",
            "--scenario",
            scenario,
            "--host",
            DUT,
            "--inventory",
            INVENTORY,
            "--pod-dir",
            str(REPO / "beaker_tasks" / "vsperf_test" / "pods"),
            "--hugepage-dir",
            str(lab.root / "hugepages-vsperf"),
            "--guest-dpdk-dir",
            str(REPO / "beaker_tasks" / "vsperf_test" / "guest-dpdk"),
            "--output",
            str(out),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    kept = [line for line in out.read_text().splitlines() if line.split(" ")[0] not in drop]
    out.write_text("\n".join(kept) + "\n")
    return out


def _fake_vsperf(lab: Lab, conf: Path, *tests: str) -> subprocess.CompletedProcess[str]:
    """Run the fake VSperf as the task does, with the fake machine's mount table (fresh results)."""
    shutil.rmtree(lab.root / "vsperf-out", ignore_errors=True)
    env = lab.env(
        MOONGEN_LOG_DIR=str(lab.root / "moongen"),
        FAKE_VSPERF_LOG_DIR=str(lab.root / "vsperf-out"),
        FAKE_VSPERF_LOADER_DIR=str(REPO / "tests" / "vsperf_configs"),
    )
    return subprocess.run(
        [sys.executable, str(FAKE_VSPERF), "--conf-file", str(conf), *tests],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _csvs(lab: Lab) -> list[str]:
    return sorted(p.name for p in (lab.root / "vsperf-out").glob("results_*/result_*.csv"))


def _stack(lab: Lab, count: int) -> None:
    """Mount ``count`` hugetlbfs layers of the task's on its VSperf mount point (fake table)."""
    (lab.root / "hugepages-vsperf").mkdir(exist_ok=True)
    line = f"ovsperf-vsperf {lab.root / 'hugepages-vsperf'} hugetlbfs rw,relatime,pagesize=1024M 0 0\n"
    with (lab.proc / "mounts").open("a") as table:
        table.write(line * count)


# --- the stand-in fails where VSperf does ----------------------------------------------------


def test_stand_in_fails_a_p2p_test_without_our_pod_like_vsperf(lab: Lab) -> None:
    """Without POD/POD_DIR VSperf makes its 'Papi' pod, which needs a kube-config: the test fails."""
    _stack(lab, 1)
    ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q", "POD", "POD_DIR"), "phy2phy_tput")
    assert ran.returncode == 0  # as VSperf: a failed test is logged, the run goes on
    assert "Failed to run test: phy2phy_tput" in ran.stdout
    assert "ConfigException: Invalid kube-config file. No configuration found." in ran.stdout
    assert _csvs(lab) == []
    # A POD naming a class that POD_DIR does not define fails too (VSperf calls None()).
    conf = _conf(lab, "OVS_DPDK1q")
    conf.write_text(conf.read_text().replace("POD = 'OvsperfNoPod'", "POD = 'Nope'"))
    ran = _fake_vsperf(lab, conf, "phy2phy_tput")
    assert "Failed to run test: phy2phy_tput" in ran.stdout
    assert "'NoneType' object is not callable" in ran.stdout


def test_stand_in_runs_a_p2p_test_with_our_pod(lab: Lab) -> None:
    _stack(lab, 1)
    ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q"), "phy2phy_tput")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Failed to run test" not in ran.stdout
    assert _csvs(lab) == ["result_0_phy2phy_tput_p2p.csv"]


def test_stand_in_fails_when_vsperf_would_unmount_the_hosts_hugepages(lab: Lab) -> None:
    """VSperf's default HUGEPAGE_DIR is the host's /dev/hugepages, which it unmounts after the test."""
    ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q", "HUGEPAGE_DIR"), "phy2phy_tput")
    assert "Failed to run test: phy2phy_tput" in ran.stdout
    assert "HUGEPAGE_DIR is the host's /dev/hugepages: VSperf unmounted the host's hugetlbfs" in ran.stdout
    assert HOST_MOUNT not in lab.mounts()
    assert _csvs(lab) == []


def test_stand_in_fails_a_guest_test_without_hugetlbfs_for_qemu(lab: Lab) -> None:
    """One mount of VSperf's own for two tests: the p2p test's teardown takes it, and VSperf does not
    mount again while the host's /dev/hugepages is mounted, so QEMU's mem-path has no hugetlbfs."""
    _stack(lab, 1)
    conf = _conf(lab, "OVS_DPDK1q_GUEST_DPDK1q")
    ran = _fake_vsperf(lab, conf, "phy2phy_tput", "pvp_tput")
    assert "Failed to run test: pvp_tput" in ran.stdout
    assert f"QEMU mem-path {lab.root / 'hugepages-vsperf'} is not a hugetlbfs mount" in ran.stdout
    assert _csvs(lab) == ["result_0_phy2phy_tput_p2p.csv"]
    # One mount per test, as the task stacks them: both run, the host's mount stays.
    _stack(lab, 2)
    ran = _fake_vsperf(lab, conf, "phy2phy_tput", "pvp_tput")
    assert "Failed to run test" not in ran.stdout, ran.stdout
    assert HOST_MOUNT in lab.mounts()


def test_stand_in_fails_every_test_on_vsperfs_dpdk_and_qemu_tool_defaults(lab: Lab) -> None:
    """What the real VSperf 90ef48d4 raised on our file before it named the tools (docs/beaker_tasks.md,
    "Checked with real VSperf"): each dropped line brings back VSperf's default, and its error."""
    expected = {
        "PATHS['dpdk']['bin']['bind-tool']": (
            "Path to the bind-tool is not valid: /usr/share/dpdk/tools/dpdk*bind.py."
        ),
        "PATHS['dpdk']['bin']['testpmd']": "Cannot locate tool testpmd",
        "PATHS['qemu']['bin']['qemu-system']": "Cannot locate tool qemu-system-x86_64",
        "PATHS['dpdk']['bin']['modules']": "Unable to insert module 'igb_uio'.",
    }
    _stack(lab, 1)  # a test that fails before run_initialize() neither mounts nor unmounts
    for dropped, error in expected.items():
        ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q_CT", dropped), "phy2phy_ct_tput")
        assert "Failed to run test: phy2phy_ct_tput" in ran.stdout, dropped
        assert error in ran.stdout, ran.stdout
        assert _csvs(lab) == []
    ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q_CT"), "phy2phy_ct_tput")
    assert "Failed to run test" not in ran.stdout, ran.stdout
    assert _csvs(lab) == ["result_0_phy2phy_ct_tput_p2p.csv"]


# --- the task -------------------------------------------------------------------------------------


def test_run_selects_our_pod_and_keeps_the_hosts_hugepages(lab: Lab, tmp_path: Path) -> None:
    _setup(lab)
    before = lab.mounts()
    run = _run(lab, tmp_path / "ci_in")
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("vsperf_test/vsperf", "PASS") in run.reported()
    (shipped,) = (tmp_path / "ci_in").iterdir()
    conf = (shipped / "ovsperf-vsperf.conf").read_text()
    pods = REPO / "beaker_tasks" / "vsperf_test" / "pods"
    assert f"POD_DIR = '{pods}'" in conf and "POD = 'OvsperfNoPod'" in conf
    ours = lab.root / "hugepages-vsperf"
    assert f"HUGEPAGE_DIR = '{ours}'" in conf
    # One hugetlbfs mount per test (2) before VSperf; VSperf took them; the host's is untouched.
    assert run.called("mount") == [["-t", "hugetlbfs", "ovsperf-vsperf", str(ours)]] * 2
    assert run.index("mount") < run.index("vsperf")
    assert not run.called("umount")  # VSperf (fake) took both: nothing left to unmount
    assert lab.mounts() == before
    assert before[-1] == HOST_MOUNT


def test_run_removes_what_vsperf_left_and_what_an_earlier_run_left(lab: Lab, tmp_path: Path) -> None:
    _setup(lab)
    _stack(lab, 3)  # an earlier run, aborted
    run = _run(lab, tmp_path / "ci_in", FAKE_VSPERF_FAIL="pvp_tput")  # a test failing before teardown
    assert run.returncode == 1
    ours = str(lab.root / "hugepages-vsperf")
    assert run.called("umount") == [[ours]] * 4  # 3 old ones, then the failed test's
    assert lab.mounts()[-1] == HOST_MOUNT and not [m for m in lab.mounts() if m[1] == ours]


def test_run_refuses_a_hugepage_dir_the_host_mounted(lab: Lab, tmp_path: Path) -> None:
    _setup(lab)
    hosts = lab.root / "hugepages-vsperf"
    hosts.mkdir()
    (lab.proc / "mounts").write_text(HOST_HUGEPAGES + f"hugetlbfs {hosts} hugetlbfs rw 0 0\n")
    run = _run(lab, tmp_path / "ci_in")
    assert run.returncode == 2
    assert f"'{hosts}' is a hugetlbfs mount of the host's (hugetlbfs); VSperf unmounts" in run.stderr
    assert not run.called("vsperf") and not run.called("umount")


def test_run_refuses_the_hosts_dev_hugepages(lab: Lab, tmp_path: Path) -> None:
    _setup(lab)
    run = _run(lab, tmp_path / "ci_in", VSPERF_HUGEPAGE_DIR="/dev/hugepages")
    assert run.returncode == 2
    assert "would make VSperf unmount the host's /dev/hugepages after each test" in run.stderr
    assert not run.called("vsperf") and not run.called("mount")


def test_run_warns_when_the_hosts_hugepages_went_away(lab: Lab, tmp_path: Path) -> None:
    """A VSperf that unmounts the host's mount anyway (here: a stand-in told to) is a WARN naming it."""
    _setup(lab)
    vsperf = lab.root / "vswitchperf" / "vsperf"
    vsperf.write_text(
        vsperf.read_text().replace(
            "    return 0\n\n\nif __name__",
            "    mounts.path.write_text(''.join(l for l in mounts.path.read_text().splitlines(True)"
            " if ' /dev/hugepages ' not in l))\n    return 0\n\n\nif __name__",
        )
    )
    run = _run(lab, tmp_path / "ci_in")
    assert ("vsperf_test/vsperf", "WARN") in run.reported()
    changed = "The host's hugetlbfs mounts changed while VSperf ran (before: 'hugetlbfs /dev/hugepages';"
    assert changed in run.stdout


# --- VSperf's Python --------------------------------------------------------------------------------


def test_setup_installs_the_requirements_with_pycryptodome(lab: Lab) -> None:
    run = lab.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **_params(lab))
    assert run.returncode == 0, run.stdout + run.stderr
    venv = lab.root / "venv"
    assert (venv / "ovsperf-requirements.txt").read_text() == (
        "netaddr==0.7.18\njinja2==2.7.3\npycryptodome\nkubernetes\n"
    )
    assert (venv / "ovsperf-constraints.txt").read_text() == "MarkupSafe<2.1\n"
    (pip,) = run.called("pip")
    requirements, constraints = f"{venv}/ovsperf-requirements.txt", f"{venv}/ovsperf-constraints.txt"
    assert pip == ["install", "-q", "-r", requirements, "-c", constraints]
    assert "VSperf's Python: vsperf-base-python (3.9)" in run.stdout


def test_setup_refuses_a_python_vsperf_does_not_run_on(lab: Lab) -> None:
    run = lab.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", SHIM_PYTHON_VERSION="3.12", **_params(lab))
    assert run.returncode == 2
    assert run.reported()[-1] == ("vsperf_test/persistent", "WARN")
    refused = "VSPERF_BASE_PYTHON 'vsperf-base-python' is Python 3.12; VSperf 90ef48d4 needs 3.6 to <3.10"
    assert refused in run.stderr
    assert not run.called("pip") and not (lab.root / "venv").exists()
    assert not run.called("rstrnt-reboot")


def test_setup_picks_the_first_python_vsperf_runs_on(lab: Lab) -> None:
    (lab.bin / "python3.9").symlink_to(Path(__file__).with_name("shims") / "vsperf-base-python.sh")
    params = _params(lab, VSPERF_BASE_PYTHON="", VSPERF_PYTHON_CANDIDATES="python3.11 python3.9 python3")
    run = lab.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "VSperf's Python: python3.9 (3.9)" in run.stdout
    assert run.called("python3.9")[-1][:2] == ["-m", "venv"]
    # Only Pythons VSperf cannot run on (the test machine's python3 is 3.10 or later): a clear abort.
    params = _params(lab, VSPERF_BASE_PYTHON="", VSPERF_PYTHON_CANDIDATES="python3 no-such-python")
    run = lab.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **params)
    assert run.returncode == 2
    assert "No Python VSperf runs on (3.6 to <3.10) among python3 no-such-python" in run.stderr
    # A candidate is a name, never a pattern: 'python3.[9]' does not expand to python3.9.
    pattern = f"{lab.bin}/python3.[9]"
    run = lab.run(
        "vsperf_test",
        reboot=0,
        VSPERF_ACTION="setup",
        **_params(lab, VSPERF_BASE_PYTHON="", VSPERF_PYTHON_CANDIDATES=pattern),
    )
    assert run.returncode == 2
    assert f"among {pattern}: install" in run.stderr


def test_run_refuses_a_venv_of_the_wrong_python(lab: Lab, tmp_path: Path) -> None:
    _setup(lab)
    run = _run(lab, tmp_path / "ci_in", SHIM_VENV_PYTHON_VERSION="3.12")
    assert run.returncode == 2
    assert f"'{lab.root / 'venv'}' is a Python 3.12 venv; VSperf needs 3.6 to <3.10" in run.stderr
    assert not run.called("vsperf")


def test_stand_in_fails_a_testpmd_guest_without_the_guest_dpdk_tree(lab: Lab, tmp_path: Path) -> None:
    """VSperf rsyncs PATHS['dpdk']['src']['path'] into a testpmd guest (testcases/testcase.py): its default,
    the checkout's src/dpdk/dpdk/, is not there; an empty directory gives the guest nothing to run."""
    _stack(lab, 1)
    ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q_GUEST_DPDK1q", "PATHS['dpdk']['src']['path']"), "pvp_tput")
    assert "Failed to run test: pvp_tput" in ran.stdout
    assert "Unable to copy DPDK to shared directory" in ran.stdout
    conf = _conf(lab, "OVS_DPDK1q_GUEST_DPDK1q")
    text = conf.read_text().replace(str(REPO / "beaker_tasks" / "vsperf_test" / "guest-dpdk"), str(tmp_path))
    conf.write_text(text)
    _stack(lab, 1)
    ran = _fake_vsperf(lab, conf, "pvp_tput")
    assert "Failed to run test: pvp_tput" in ran.stdout
    assert f"no testpmd 'Done' from a guest's copy of {tmp_path}" in ran.stdout
    assert _csvs(lab) == []
    _stack(lab, 1)
    ran = _fake_vsperf(lab, _conf(lab, "OVS_DPDK1q_GUEST_DPDK1q"), "pvp_tput")  # the task's tree: runs
    assert "Failed to run test" not in ran.stdout, ran.stdout
    assert _csvs(lab) == ["result_0_pvp_tput_pvp.csv"]
