"""Every command goes through the shared runner: the same -v/-q, and a crash is one line and exit 2.

A crash (an exception that is not an ovsperf error) must never exit 1, which every command
reserves for "regression" (ovsperf_common.runner).
"""

from __future__ import annotations

import importlib
import logging

import pytest

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
]


@pytest.mark.parametrize(("prog", "module", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_crash_exits_2_with_one_line(
    prog: str,
    module: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli = importlib.import_module(module)

    def crash(_args: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_run", crash)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
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
