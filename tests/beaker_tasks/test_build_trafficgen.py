"""The build_trafficgen task (engine ovsperf) with recording stand-ins for make and pkg-config."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .shims import REPO, Lab

PKG_CONFIG = """#!/bin/bash
# Stand-in pkg-config: --exists fails for the libraries in SHIM_PKG_MISSING.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
[[ "$1" == --modversion ]] && { echo 23.11.0; exit 0; }
[[ "$1" == --exists && " ${SHIM_PKG_MISSING:-} " == *" $2 "* ]] && exit 1
exit 0
"""
MAKE = """#!/bin/bash
# Stand-in make: record; 'install PREFIX=P' puts an executable P/bin/ovsperf-trafficgen.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\n"; } >>"${SHIM_LOG:?}"
[[ -n "${SHIM_MAKE_RC:-}" ]] && exit "${SHIM_MAKE_RC}"
for arg in "$@"; do
    case "${arg}" in PREFIX=*) prefix="${arg#PREFIX=}" ;; esac
done
[[ -n "${SHIM_MAKE_NO_BINARY:-}" ]] && exit 0
binary="${prefix}/bin/ovsperf-trafficgen"
mkdir -p "${prefix}/bin" && printf '#!/bin/sh\\n' >"${binary}" && chmod 755 "${binary}"
"""


@pytest.fixture
def tg(lab: Lab) -> Lab:
    for name, text in (("pkg-config", PKG_CONFIG), ("make", MAKE), ("cc", "#!/bin/sh\n")):
        (lab.bin / name).write_text(text)
        (lab.bin / name).chmod(0o755)
    return lab


def _debian(lab: Lab) -> None:
    (lab.etc / "os-release").write_text('PRETTY_NAME="Debian GNU/Linux 12"\nID=debian\n')


def test_builds_and_installs_the_generator(tg: Lab) -> None:
    prefix = tg.root / "usr-local"
    run = tg.run("build_trafficgen", TRAFFICGEN_PREFIX=str(prefix))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("build_trafficgen/prerequisites", "PASS"), ("build_trafficgen/build", "PASS")]
    assert ["--exists", "libdpdk"] in run.called("pkg-config") and ["--exists", "jansson"] in run.called(
        "pkg-config"
    )
    assert run.called("make") == [["-C", str(REPO / "trafficgen"), "install", f"PREFIX={prefix}"]]
    assert (prefix / "bin" / "ovsperf-trafficgen").is_file()
    assert "DPDK 23.11.0" in run.stdout


@pytest.mark.parametrize(
    ("debian", "missing", "named"),
    [
        (False, "libdpdk", "'dpdk-devel' (pkg-config cannot find libdpdk)"),
        (True, "libdpdk", "'libdpdk-dev' (pkg-config cannot find libdpdk)"),
        (True, "libdpdk jansson", "'libdpdk-dev' (pkg-config cannot find libdpdk) 'libjansson-dev'"),
        (False, "jansson", "'jansson-devel' (pkg-config cannot find jansson)"),
    ],
)
def test_a_missing_development_package_aborts_naming_it(
    tg: Lab, debian: bool, missing: str, named: str
) -> None:
    if debian:
        _debian(tg)
    run = tg.run("build_trafficgen", TRAFFICGEN_PREFIX=str(tg.root / "p"), SHIM_PKG_MISSING=missing)
    assert run.returncode == 2
    assert run.reported() == [("build_trafficgen/prerequisites", "WARN")]
    assert named in run.stderr
    assert (
        "apt-get install libdpdk-dev libjansson-dev" if debian else "dnf install dpdk-devel jansson-devel"
    ) in run.stderr
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert not run.called("make")


def test_a_missing_tool_aborts_naming_it(tg: Lab) -> None:
    # The system's commands without make and a C compiler.
    system = tg.root / "system-bin"
    system.mkdir()
    for directory in (Path("/usr/bin"), Path("/bin")):
        for path in directory.iterdir():
            if path.name not in ("make", "cc", "gcc") and not (system / path.name).exists():
                (system / path.name).symlink_to(path)
    for name in ("make", "cc"):
        (tg.bin / name).unlink()
    run = tg.run("build_trafficgen", TRAFFICGEN_PREFIX=str(tg.root / "p"), PATH=f"{tg.bin}:{system}")
    assert run.returncode == 2
    assert "The build tools 'make' 'cc' are missing" in run.stderr
    assert not run.called("make")


@pytest.mark.parametrize("fault", [{"SHIM_MAKE_RC": "2"}, {"SHIM_MAKE_NO_BINARY": "1"}])
def test_a_failed_build_is_fail(tg: Lab, fault: dict[str, str]) -> None:
    run = tg.run("build_trafficgen", TRAFFICGEN_PREFIX=str(tg.root / "p"), **fault)
    assert run.returncode == 1
    assert run.reported()[-1] == ("build_trafficgen/build", "FAIL")


def test_the_default_prefix_is_what_the_lab_starts(tg: Lab) -> None:
    text = (REPO / "beaker_tasks" / "build_trafficgen" / "runtest.sh").read_text()
    assert ': "${TRAFFICGEN_PREFIX:=/usr/local}"' in text
    assert (
        ': "${TRAFFICGEN_BINARY:=/usr/local/bin/ovsperf-trafficgen}"'
        in (REPO / "beaker_tasks" / "ovsperf_test" / "runtest.sh").read_text()
    )
    assert Path(REPO / "trafficgen" / "Makefile").is_file()


def test_the_real_build_installs_a_generator_that_runs(lab: Lab, tmp_path: Path) -> None:
    """The distribution's make, pkg-config, compiler and DPDK on a copy of trafficgen/ (no stand-ins)."""
    source = tmp_path / "trafficgen"
    shutil.copytree(REPO / "trafficgen", source, ignore=shutil.ignore_patterns("build"))
    prefix = tmp_path / "prefix"
    run = lab.run(
        "build_trafficgen", timeout_s=300, TRAFFICGEN_SRC=str(source), TRAFFICGEN_PREFIX=str(prefix)
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("build_trafficgen/prerequisites", "PASS"), ("build_trafficgen/build", "PASS")]
    binary = prefix / "bin" / "ovsperf-trafficgen"
    assert binary.is_file() and os.access(binary, os.X_OK)
    assert b"\x7fELF" == binary.read_bytes()[:4]
