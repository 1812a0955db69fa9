"""Every command goes through the shared runner: the same -v/-q, and a crash is one line and exit 2.

A crash (an exception that is not an ovsperf error) must never exit 1, which every command
reserves for "regression" (ovsperf_common.runner). Nor does a missing install group: with only
the base install (every role's third-party module made unimportable), each console script still
answers ``--help`` and, for a sub-command that needs its group, prints one line naming it
(``pip install 'ovsperf[lab]'``) and exits 2; the ``python3 -m ovsperf_common.*`` tools of the lab
hosts run on the standard library alone.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ovsperf_common.installgroups import BASE, GROUP_OF_COMMAND, GROUPS_OF_MODULE, pip_command

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = [
    ("jobcreator", "jobcreator.cli", ["--list-configs"]),
    ("generate-report", "resultstore.report_cli", ["--baseline", "b", "--output-dir", "o", "r"]),
    ("process-ci-results", "ciflow.cli", ["--config", "c.yaml"]),
    ("ovsperf-results", "resultstore.cli", ["list"]),
    ("vsperf-config", "vsperf_configs.cli", ["--host", "dut01"]),
    ("ovsperf-lab", "ovsperf_lab.cli", ["list"]),
    (
        "ovsperf-koji",
        "kojiwatch.cli",
        ["submit", "--repo", "http://r/", "--host", "g", "--host", "d", "--distro", "D", "--scenario", "S"],
    ),
    ("ovsperf-remote", "remote.cli", ["check", "--tg", "tg01", "--dut", "dut01"]),
    ("ovsperf-beaker", "beakerwatch.cli", ["status", "--state", "beaker-state.json"]),
    ("ovsperf-vlab", "vlab.cli", ["status", "--state-dir", "vlab-state"]),
]


def _failing(
    module: str,
    argv: list[str],
    error: Exception,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> list[str]:
    """Run ``module`` with a ``_run`` raising ``error``; assert exit 2 and no stdout; return stderr lines."""
    cli = importlib.import_module(module)

    def fail(_args: object) -> int:
        raise error

    monkeypatch.setattr(cli, "_run", fail)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.splitlines()


@pytest.mark.parametrize(("prog", "module", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_crash_exits_2_with_one_line(
    prog: str,
    module: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _failing(module, argv, RuntimeError("boom"), monkeypatch, capsys) == [
        f"{prog}: internal error: RuntimeError: boom (a bug; run with -v for the traceback)"
    ]


@pytest.mark.parametrize(("prog", "module", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize(
    ("flags", "level"), [([], logging.INFO), (["-v"], logging.DEBUG), (["-q"], logging.WARNING)]
)
def test_every_command_takes_the_same_verbosity_options(
    prog: str,
    module: str,
    argv: list[str],
    flags: list[str],
    level: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cli = importlib.import_module(module)
    seen: list[int] = []

    def record(_args: object) -> int:
        seen.append(logging.getLogger().level)
        return 0

    monkeypatch.setattr(cli, "_run", record)
    assert cli.main([*flags, *argv]) == 0
    assert seen == [level]


@pytest.mark.parametrize(("prog", "module", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_help_names_the_verbosity_options_and_exits_0(
    prog: str, module: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    cli = importlib.import_module(module)
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert f"usage: {prog}" in out and "-v, --verbose" in out and "-q, --quiet" in out


@pytest.mark.parametrize(("prog", "module", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_missing_module_names_the_commands_install_group(
    prog: str,
    module: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    group = GROUP_OF_COMMAND[prog]
    missing = next(m for m, groups in GROUPS_OF_MODULE.items() if group in groups)
    error = ModuleNotFoundError(f"No module named '{missing}.sub'", name=f"{missing}.sub")
    assert _failing(module, argv, error, monkeypatch, capsys) == [
        f"{prog}: error: the Python module '{missing}' is not installed: {pip_command(group)}."
    ]


def test_a_missing_module_of_the_project_is_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    error = ModuleNotFoundError("No module named 'ovsperf_lab.gone'", name="ovsperf_lab.gone")
    assert _failing("ovsperf_lab.cli", ["list"], error, monkeypatch, capsys) == [
        "ovsperf-lab: internal error: ModuleNotFoundError: No module named 'ovsperf_lab.gone' "
        "(a bug; run with -v for the traceback)"
    ]


BLOCKER = """\
import os, sys

BLOCKED = frozenset(os.environ["OVSPERF_TEST_BLOCKED"].split(","))


class Blocker:
    \"\"\"As if the install groups were not installed: the blocked top-level modules cannot be found.\"\"\"

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in BLOCKED:
            raise ModuleNotFoundError(f"No module named {top!r}", name=top)
        return None


sys.meta_path.insert(0, Blocker())
"""
"""A ``sitecustomize`` module that makes the modules of $OVSPERF_TEST_BLOCKED unimportable."""

ROLE_MODULES = sorted(m for m, groups in GROUPS_OF_MODULE.items() if BASE not in groups)
"""The third-party modules of every role's install group: with them blocked, only the base is installed."""

MISSING_GROUP_ARGV = {
    "jobcreator": ["--config", "OVS_DPDK1q", "--host", "tg", "--host", "dut", "--distro", "RHEL-9"],
    "generate-report": ["--baseline", "b", "--output-dir", "o", "r"],
    "process-ci-results": ["--config", "c.yaml"],
    "ovsperf-results": ["list"],
    "ovsperf-lab": ["run", "--config", "OVS_DPDK1q"],
    "ovsperf-koji": ["submit", "--repo", "http://r/", "--host", "g", "--host", "d", "--distro", "D",
                     "--scenario", "S"],
    "ovsperf-remote": ["check", "--tg", "tg01", "--dut", "dut01"],
    "ovsperf-beaker": ["status", "--state", "beaker-state.json"],
    "ovsperf-vlab": ["status", "--state-dir", "vlab-state"],
}  # fmt: skip
"""A sub-command of each role's script that needs its install group."""


def _run_without(blocked: list[str], argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in ``tmp_path`` with ``blocked`` modules unimportable (a ``sitecustomize``)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site), "OVSPERF_TEST_BLOCKED": ",".join(blocked)}
    env.pop("OVSPERF_RESULTS_DB", None)
    return subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _script(prog: str) -> str:
    path = Path(sys.executable).parent / prog
    assert path.is_file(), f"console script {prog} is not installed in {path.parent}"
    return str(path)


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The harness itself: a blocked module raises ModuleNotFoundError, the others import."""
    code = "import yaml\ntry:\n    import matplotlib\nexcept ModuleNotFoundError as e:\n    print(e.name)"
    done = _run_without(ROLE_MODULES, [sys.executable, "-c", code], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "matplotlib\n", "")


@pytest.mark.parametrize("prog", sorted(MISSING_GROUP_ARGV))
def test_only_the_base_installed_a_role_names_its_group_and_exits_2(prog: str, tmp_path: Path) -> None:
    group = GROUP_OF_COMMAND[prog]
    done = _run_without(ROLE_MODULES, [_script(prog), *MISSING_GROUP_ARGV[prog]], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    found = re.fullmatch(
        rf"{prog}: error: the Python module '(\w+)' is not installed: pip install 'ovsperf\[{group}\]'\.",
        line,
    )
    assert found, line
    assert group in GROUPS_OF_MODULE[found.group(1)]


@pytest.mark.parametrize("prog", sorted(GROUP_OF_COMMAND))
def test_only_the_base_installed_help_exits_0(prog: str, tmp_path: Path) -> None:
    done = _run_without(ROLE_MODULES, [_script(prog), "--help"], tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"usage: {prog}") and "-v, --verbose" in done.stdout


def test_only_the_base_installed_vsperf_config_runs(tmp_path: Path) -> None:
    """vsperf-config is the base install's command (the lab hosts): it needs no group at all."""
    argv = ["--scenario", "OVS_DPDK1q", "--host", "dut01.example.com", "--list-tests"]
    argv += ["--inventory", str(ROOT / "vsperf_configs" / "inventory.example.yaml")]
    done = _run_without(ROLE_MODULES, [_script("vsperf-config"), "-q", *argv], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "0 phy2phy_tput p2p\n", "")


LAB_HOST_TOOLS = [
    "ovsperf_common.fields",
    "ovsperf_common.metadata",
    "ovsperf_common.resultdir",
    "ovsperf_common.vsperf_telemetry",
]
"""The ``python3 -m`` tools the Beaker tasks run on the lab hosts (scripts/main-job.sh too)."""


@pytest.mark.parametrize("tool", LAB_HOST_TOOLS)
def test_a_lab_host_tool_needs_no_third_party_module_and_uses_the_runner(tool: str, tmp_path: Path) -> None:
    everything = sorted(GROUPS_OF_MODULE)  # PyYAML too: the standard library alone
    helped = _run_without(everything, [sys.executable, "-m", tool, "--help"], tmp_path)
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith(f"usage: python3 -m {tool}") and "-q, --quiet" in helped.stdout
    bad = _run_without(everything, [sys.executable, "-m", tool, "-q", "--no-such-option"], tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    last = bad.stderr.splitlines()[-1]  # argparse's usage error: -q is the runner's, known
    assert last.startswith(f"python3 -m {tool}: error: ") and "-q" not in last, last


def test_the_lab_host_tools_keep_their_exit_codes(tmp_path: Path) -> None:
    """scripts/main-job.sh and the vsperf_test task branch on them: 0 found, 3 nothing, 2 error."""
    everything = sorted(GROUPS_OF_MODULE)
    results = tmp_path / "results_2024-01-02_03-04-05"
    results.mkdir()
    run = [sys.executable, "-m", "ovsperf_common.resultdir"]
    assert _run_without(everything, [*run, "csvs", str(results)], tmp_path).returncode == 3
    (results / "result_0_phy2phy_tput_p2p.csv").write_text("x\n", encoding="utf-8")
    found = _run_without(everything, [*run, "csvs", str(results)], tmp_path)
    assert (found.returncode, found.stdout) == (0, f"{results / 'result_0_phy2phy_tput_p2p.csv'}\n")
    missing = _run_without(everything, [*run, "dirs", str(tmp_path / "nowhere")], tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        f"ovsperf_common.resultdir: error: '{tmp_path / 'nowhere'}': no such results directory."
    ]
    metadata = [sys.executable, "-m", "ovsperf_common.metadata", str(results), "--scenario", "S"]
    written = _run_without(
        everything, [*metadata, "--producer", "p", "--test", "0:phy2phy_tput:p2p"], tmp_path
    )
    assert (written.returncode, written.stdout) == (0, f"{results / 'ovsperf-metadata.json'}\n"), (
        written.stderr
    )
    refused = _run_without(everything, [*metadata, "--producer", "p", "--test", "bad"], tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "ovsperf_common.metadata: error: --test 'bad': expected INDEX:TEST:DEPLOYMENT."
    ]


def test_a_postgresql_store_without_its_driver_names_the_postgresql_group(tmp_path: Path) -> None:
    url = "postgresql+psycopg://ovsperf@127.0.0.1:9/ovsperf"
    done = _run_without(["psycopg"], [_script("ovsperf-results"), "--db", url, "list"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    hint = "pip install 'ovsperf[postgresql]'"
    assert done.stderr.splitlines() == [
        f"ovsperf-results: error: the Python module 'psycopg' is not installed: {hint}."
    ]
