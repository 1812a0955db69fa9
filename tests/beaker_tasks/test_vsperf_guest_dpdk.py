"""vsperf_test's guest "DPDK source tree": installed by setup, run by VSperf's guest commands."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from vsperf_configs.generate import DEFAULT_GUEST_DPDK_DIR

from .shims import REPO, TASKS, Lab
from .test_vsperf_test import _run
from .test_vsperf_test import _setup as setup_dut

INVENTORY = str(REPO / "vsperf_configs" / "inventory.example.yaml")
ADAPTER = TASKS / "vsperf_test" / "guest-dpdk"
MARK = ".ovsperf-vsperf-guest-dpdk"
RTE_VERSION_H = Path("lib/librte_eal/common/include/rte_version.h")
PCIS = "0000:00:04.0 0000:00:05.0"
TESTPMD_PARAMS = "-l 0-2 -n 4 --socket-mem 1024 -- --burst=64 -i --nb-cores=2 --rxq=1 --txq=1"
"""What vsperf-config writes as GUEST_TESTPMD_PARAMS for OVS_DPDK1q_GUEST_DPDK1q (3 vCPUs)."""


def _setup(lab: Lab, **extra: str) -> subprocess.CompletedProcess[str]:
    params = {
        "INVENTORY": INVENTORY,
        "DUT_HOSTNAME": "dut01.example.com",
        "VSPERF_DIR": str(lab.root / "vswitchperf"),
        "VSPERF_VENV": str(lab.root / "venv"),
        "VSPERF_BASE_PYTHON": "vsperf-base-python",
        "VSPERF_ACTION": "setup",
        **extra,
    }
    run = lab.run("vsperf_test", reboot=0, **params)
    logs = "".join(p.read_text() for p in sorted((lab.state / "logs").rglob("*.log")))
    return subprocess.CompletedProcess([], run.returncode, run.stdout + logs, run.stderr)


def _installed(lab: Lab) -> Path:
    return Path(lab.env()["VSPERF_GUEST_DPDK_DIR"])


def _files(root: Path) -> dict[str, int]:
    """Return relative path → permission bits of every file under ``root``."""
    return {
        p.relative_to(root).as_posix(): stat.S_IMODE(p.stat().st_mode)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_task_default_is_the_generators() -> None:
    text = (TASKS / "vsperf_test" / "runtest.sh").read_text()
    assert f': "${{VSPERF_GUEST_DPDK_DIR:={DEFAULT_GUEST_DPDK_DIR}}}"' in text
    assert '--guest-dpdk-dir "${VSPERF_GUEST_DPDK_DIR}"' in text
    makefile = (TASKS / "vsperf_test" / "Makefile").read_text()
    assert "guest-dpdk/usertools/dpdk-devbind.py guest-dpdk/app/test-pmd/Makefile" in makefile
    # exactly one file matches VSperf's ./*tools/dpdk*bind.py in the tree
    matches = [p.relative_to(ADAPTER).as_posix() for p in ADAPTER.glob("*tools/dpdk*bind.py")]
    assert matches == ["usertools/dpdk-devbind.py"]


def test_setup_installs_the_tree_with_the_rpm_version(lab: Lab) -> None:
    run = _setup(lab)
    assert run.returncode == 0, run.stdout + run.stderr
    dest = _installed(lab)
    assert _files(dest) == {
        MARK: 0o644,
        "app/test-pmd/Makefile": 0o644,
        RTE_VERSION_H.as_posix(): 0o644,
        "usertools/dpdk-devbind.py": 0o755,
    }
    assert (dest / RTE_VERSION_H).read_text().splitlines()[2:] == [
        '#define RTE_VER_PREFIX "DPDK"',
        "#define RTE_VER_YEAR 22",
        "#define RTE_VER_MONTH 11",
        "#define RTE_VER_MINOR 0",
        '#define RTE_VER_SUFFIX ""',
        "#define RTE_VER_RELEASE 16",
    ]
    assert "DPDK on dut01.example.com: 22.11 (rte_version.h" in run.stdout
    for name in ("usertools/dpdk-devbind.py", "app/test-pmd/Makefile"):
        assert (dest / name).read_bytes() == (ADAPTER / name).read_bytes()
    assert not list(dest.parent.glob("*.new.*")) and not list(dest.parent.glob("*.old.*"))


@pytest.mark.parametrize(
    ("rpm", "dpkg", "lines"),
    [
        ("", "22.11.11-0+deb12u1", ["22", "11", "11"]),  # Debian: no rpm package, dpkg's version
        ("23.11.2", "", ["23", "11", "2"]),
        ("24.03", "", ["24", "3", "0"]),  # DPDK's own header writes the month without a leading 0
        ("", "", None),  # unknown: no RTE_VER_* line, so VSperf reports the version as None
    ],
)
def test_rte_version_h_from_the_packaged_version(
    lab: Lab, rpm: str, dpkg: str, lines: list[str] | None
) -> None:
    run = _setup(lab, SHIM_DPDK_RPM_VERSION=rpm, SHIM_DPKG_VERSION=dpkg)
    assert run.returncode == 0, run.stdout + run.stderr
    text = (_installed(lab) / RTE_VERSION_H).read_text()
    defines = [line.split(" ", 2)[1:] for line in text.splitlines() if line.startswith("#define RTE_VER_")]
    if lines is None:
        assert defines == []
        assert "packaged DPDK version is unknown" in text
    else:
        year, month, minor = lines
        assert [
            ["RTE_VER_PREFIX", '"DPDK"'],
            ["RTE_VER_YEAR", year],
            ["RTE_VER_MONTH", month],
            ["RTE_VER_MINOR", minor],
            ["RTE_VER_SUFFIX", '""'],
            ["RTE_VER_RELEASE", "16"],
        ] == defines


def test_setup_replaces_its_own_tree(lab: Lab) -> None:
    assert _setup(lab).returncode == 0
    dest = _installed(lab)
    (dest / "app" / "test-pmd" / "testpmd").write_text("left by an earlier build\n")
    run = _setup(lab, SHIM_DPDK_RPM_VERSION="23.11")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not (dest / "app" / "test-pmd" / "testpmd").exists()
    assert "#define RTE_VER_YEAR 23" in (dest / RTE_VERSION_H).read_text()


@pytest.mark.parametrize("foreign", ["dir", "file", "symlink"])
def test_setup_never_replaces_a_foreign_directory(lab: Lab, tmp_path: Path, foreign: str) -> None:
    dest = _installed(lab)
    dest.parent.mkdir(parents=True)
    if foreign == "dir":
        dest.mkdir()
        (dest / "keep").write_text("someone else's\n")
    elif foreign == "file":
        dest.write_text("someone else's\n")
    else:
        (tmp_path / "elsewhere").mkdir()
        dest.symlink_to(tmp_path / "elsewhere")
    run = _setup(lab)
    assert run.returncode == 2
    assert f"Cannot install the guest DPDK adapter at '{dest}'" in run.stderr
    assert "exists and is not ours" in run.stdout
    if foreign == "dir":
        assert _files(dest) == {"keep": 0o644}
    elif foreign == "file":
        assert dest.read_text() == "someone else's\n"
    else:
        assert dest.is_symlink() and list((tmp_path / "elsewhere").iterdir()) == []
    assert sorted(p.name for p in dest.parent.iterdir()) == [dest.name]


STAND_IN = """#!/bin/bash
{ printf '%q' "${0##*/}"; printf ' %q' "$@"; printf '\\n'; } >>"$ARGV_LOG"
"""
TESTPMD_STAND_IN = (
    STAND_IN
    + """echo "Checking link statuses..."
echo "Done"
printf 'testpmd> '
while read -r line; do
    printf '%s\\n' "$line" >>"$ARGV_LOG.console"
    [[ "$line" == quit ]] && exit 0
    printf 'testpmd> '
done
"""
)


def _vsperf_guest_commands(guest_dir: Path) -> str:
    """VSperf 90ef48d4's guest commands for GUEST_LOOPBACK 'testpmd' with driver 'vfio_no_iommu'.

    In order, as ``vnfs/qemu/qemu.py`` sends them to the guest's shell:
    ``_configure_copy_sources('DPDK')`` (``cp -r <share>/DPDK <GUEST_OVS_DPDK_DIR>``; the mounts
    are left out), ``_configure_testpmd`` (``cd .../DPDK``, ``export CC=gcc``, ``export RTE_SDK``,
    ``export RTE_TARGET``, ``./*tools/dpdk*bind.py --status``, ``-u PCI...``),
    ``_bind_dpdk_driver('vfio_no_iommu', ...)`` (``modprobe -r vfio``, ``modprobe -r
    vfio_iommu_type1``, ``modprobe vfio enable_unsafe_noiommu_mode=Y``, ``modprobe vfio-pci``,
    ``./*tools/dpdk*bind.py -b vfio-pci PCI...``), then ``--status``, ``cd .../DPDK/app/test-pmd``,
    ``make clean``, ``make``, ``./testpmd GUEST_TESTPMD_PARAMS`` (waits 60 s for "Done"),
    ``set fwd csum`` (GUEST_TESTPMD_FWD_MODE's default) and ``start`` (each waits for 'testpmd>').
    The testpmd console lines follow on the same stdin, as on VSperf's serial console.
    """
    dpdk = guest_dir / "DPDK"
    return "\n".join(
        [
            f"cp -r {guest_dir.parent / 'share' / 'DPDK'} {guest_dir}",
            f"cd {dpdk}",
            "export CC=gcc",
            f"export RTE_SDK={dpdk}",
            "export RTE_TARGET=x86_64-native-linuxapp-gcc",
            "./*tools/dpdk*bind.py --status",
            f"./*tools/dpdk*bind.py -u {PCIS}",
            "modprobe -r vfio",
            "modprobe -r vfio_iommu_type1",
            "modprobe vfio enable_unsafe_noiommu_mode=Y",
            "modprobe vfio-pci",
            f"./*tools/dpdk*bind.py -b vfio-pci {PCIS}",
            "./*tools/dpdk*bind.py --status",
            f"cd {dpdk}/app/test-pmd",
            "make clean",
            "make",
            f"./testpmd {TESTPMD_PARAMS}",
            "set fwd csum",
            "start",
            "quit",
            "",
        ]
    )


def test_vsperf_guest_commands_run_the_packaged_tools(lab: Lab, tmp_path: Path) -> None:
    assert _setup(lab).returncode == 0
    work = tmp_path / "guest"
    (work / "bin").mkdir(parents=True)
    for name in ("dpdk-devbind.py", "modprobe"):
        (work / "bin" / name).write_text(STAND_IN)
    (work / "bin" / "dpdk-testpmd").write_text(TESTPMD_STAND_IN)
    for path in (work / "bin").iterdir():
        path.chmod(0o755)
    (work / "share").mkdir()  # VSperf makes the guest's share dir first
    # testcases/testcase.py _copy_fwd_tools_for_guest: rsync -a -r -l --exclude=.git/ --exclude=*.o
    subprocess.run(
        [
            "rsync",
            "-a",
            "-r",
            "-l",
            "--exclude=.git/",
            "--exclude=*.o",
            f"{_installed(lab)}/",
            str(work / "share" / "DPDK"),
        ],
        check=True,
    )
    guest = work / "ovs_dpdk"
    guest.mkdir()
    log = work / "argv.log"
    env = {
        # the adapter's own directory first: it must skip itself and run the packaged tool
        "PATH": f"{guest / 'DPDK' / 'usertools'}:{work / 'bin'}:/usr/bin:/bin",
        "ARGV_LOG": str(log),
        "LANG": "C.UTF-8",
    }
    proc = subprocess.run(
        ["bash", "-s"],
        input=_vsperf_guest_commands(guest),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Done" in proc.stdout.splitlines()
    calls = [shlex.split(line) for line in log.read_text().splitlines()]
    assert calls == [
        ["dpdk-devbind.py", "--status"],
        ["dpdk-devbind.py", "-u", *PCIS.split()],
        ["modprobe", "-r", "vfio"],
        ["modprobe", "-r", "vfio_iommu_type1"],
        ["modprobe", "vfio", "enable_unsafe_noiommu_mode=Y"],
        ["modprobe", "vfio-pci"],
        ["dpdk-devbind.py", "-b", "vfio-pci", *PCIS.split()],
        ["dpdk-devbind.py", "--status"],
        ["dpdk-testpmd", *TESTPMD_PARAMS.split()],
    ]
    assert Path(f"{log}.console").read_text().splitlines() == ["set fwd csum", "start", "quit"]
    testpmd = guest / "DPDK" / "app" / "test-pmd" / "testpmd"
    assert os.access(testpmd, os.X_OK)
    assert f"exec {work / 'bin' / 'dpdk-testpmd'} " in testpmd.read_text()
    assert "testpmd: runs " in proc.stdout


def test_make_clean_removes_testpmd_and_make_fails_without_a_packaged_one(tmp_path: Path) -> None:
    tree = tmp_path / "DPDK"
    shutil.copytree(ADAPTER, tree)
    app = tree / "app" / "test-pmd"
    (app / "testpmd").write_text("old\n")
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    empty = tmp_path / "empty"
    empty.mkdir()
    make = shutil.which("make")
    assert make is not None
    clean = subprocess.run([make, "clean"], cwd=app, env=env, capture_output=True, text=True, check=False)
    assert clean.returncode == 0 and not (app / "testpmd").exists()
    made = subprocess.run(
        [make], cwd=app, env={**env, "PATH": str(empty)}, capture_output=True, text=True, check=False
    )
    assert made.returncode != 0
    assert "no packaged testpmd (dpdk-testpmd testpmd) on PATH" in made.stderr
    assert not (app / "testpmd").exists()


def test_devbind_adapter_without_a_packaged_tool_exits_2(tmp_path: Path) -> None:
    tree = tmp_path / "DPDK"
    shutil.copytree(ADAPTER, tree)
    tool = tree / "usertools" / "dpdk-devbind.py"
    proc = subprocess.run(
        [sys.executable, str(tool), "--status"],
        env={"PATH": str(tree / "usertools")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "no packaged 'dpdk-devbind.py' on PATH" in proc.stderr


def test_real_testpmd_through_the_adapter_prints_done_and_forwards(tmp_path: Path) -> None:
    """The distribution's dpdk-testpmd, started by the adapter's ./testpmd, answers VSperf's console.

    Our GUEST_TESTPMD_PARAMS' application options as written (``--burst=64 -i --nb-cores=1 --rxq=1
    --txq=1``); the EAL options differ only where this host is not a guest: no PCI, two null
    vdevs, no hugepages (``-m 1024`` instead of ``--socket-mem 1024``). VSperf waits for "Done"
    (testpmd's "Checking link statuses... Done" after the ports start), then for 'testpmd>'.
    """
    tree = tmp_path / "DPDK"
    shutil.copytree(ADAPTER, tree)
    app = tree / "app" / "test-pmd"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    subprocess.run(["/usr/bin/make"], cwd=app, env=env, check=True, capture_output=True)
    prefix = f"ovsperf-guest-dpdk-{os.getpid()}"
    eal = f"-l 0-1 -n 4 --no-pci --no-huge -m 1024 --file-prefix {prefix} --vdev net_null0 --vdev net_null1"
    app_args = "--burst=64 -i --nb-cores=1 --rxq=1 --txq=1"
    # DPDK's runtime directory (eal_create_runtime_dir): /var/run for root, else XDG_RUNTIME_DIR or /tmp
    base = "/var/run" if os.geteuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    try:
        proc = subprocess.run(
            ["bash", "-s"],
            input=f"./testpmd {eal} -- {app_args}\nset fwd csum\nstart\nstop\nquit\n",
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        shutil.rmtree(Path(base) / "dpdk" / prefix, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "Checking link statuses..." in lines and "Done" in lines
    assert "Set csum packet forwarding mode" in lines
    assert any(line.startswith("csum packet forwarding - ports=2 - cores=1") for line in lines)
    assert "testpmd> " in proc.stdout


def test_run_passes_the_tree_and_its_preflight_needs_it(lab: Lab, tmp_path: Path) -> None:
    setup_dut(lab)
    dest = _installed(lab)
    run = _run(lab, tmp_path / "ci_in")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Run VSperf for OVS_DPDK1q_GUEST_DPDK1q" in run.stdout
    conf = next(lab.state.rglob("vsperf-OVS_DPDK1q_GUEST_DPDK1q.conf")).read_text()
    assert f"PATHS['dpdk']['src']['path'] = '{dest}'" in conf
    shutil.rmtree(dest)
    run = _run(lab, tmp_path / "ci_in")
    assert run.returncode == 2
    assert ("vsperf_test/preflight", "WARN") in run.reported()
    assert (
        f"The guest DPDK adapter VSperf copies into testpmd guests is not installed at '{dest}'" in run.stderr
    )
    assert "Run VSperf for" not in run.stdout
