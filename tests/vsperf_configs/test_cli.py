from __future__ import annotations

from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from vsperf_configs.cli import main

from .vsperf_loader import load_like_vsperf

DUT = "dut01.example.com"


def test_output_file_written_and_path_printed(
    tmp_path: Path, example_inventory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "vsperf.conf"
    rc = main(
        [
            "--scenario",
            "OVS_DPDK2q",
            "--host",
            DUT,
            "--inventory",
            str(example_inventory),
            "--output",
            str(out),
        ]
    )
    assert rc == ExitCode.OK
    assert capsys.readouterr().out.splitlines() == [str(out)]
    assert load_like_vsperf(out)["VSWITCH_DPDK_MULTI_QUEUES"] == 2


def test_stdout_and_env_inventory(
    example_inventory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OVSPERF_INVENTORY", str(example_inventory))
    assert main(["--scenario", "OVS_DPDK1q", "--host", DUT]) == ExitCode.OK
    assert "WHITELIST_NICS = ['0000:03:00.0', '0000:03:00.1']" in capsys.readouterr().out


def test_list_tests(example_inventory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "--scenario",
            "OVS_DPDK1q_GUEST_linuxbridge",
            "--host",
            DUT,
            "--inventory",
            str(example_inventory),
            "--list-tests",
        ]
    )
    assert rc == ExitCode.OK
    assert capsys.readouterr().out == "0 phy2phy_tput p2p\n1 pvp_tput pvp\n"


def test_host_env(example_inventory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--host", DUT, "--inventory", str(example_inventory), "--host-env"]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    assert "ROLE=dut" in lines and "MOONGEN_ADDRESS=192.0.2.10" in lines and "OVS_LCORE_CPUS=0" in lines


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scenario", "OVS_DPDK1q", "--host", "nohost"], "host 'nohost': no inventory entry"),
        (["--scenario", "NOPE", "--host", DUT], "Unknown scenario 'NOPE'"),
        (["--scenario", "OVS_DPDK1q", "--host", DUT, "--output", "/nonexistent/dir/x.conf"], "cannot write"),
    ],
)
def test_errors_are_one_line_exit_2(
    example_inventory: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main([*argv, "-q", "--inventory", str(example_inventory)]) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("vsperf-config: ") and message in line


def test_missing_inventory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--scenario", "OVS_DPDK1q", "--host", DUT, "--inventory", str(tmp_path / "none.yaml")])
    assert rc == ExitCode.ERROR
    assert "cannot read the host inventory" in capsys.readouterr().err


def test_scenario_required_without_host_env(
    example_inventory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--host", DUT, "--inventory", str(example_inventory)]) == 2
    err = capsys.readouterr().err
    assert err == "vsperf-config: error: --scenario is required unless --host-env is given.\n"


def test_telemetry_collector_dir_names_our_collector(
    tmp_path: Path, example_inventory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    collectors = Path(__file__).resolve().parents[2] / "beaker_tasks" / "vsperf_test" / "collectors"
    out = tmp_path / "vsperf.conf"
    args = ["--scenario", "OVS_DPDK1q", "--host", DUT, "--inventory", str(example_inventory)]
    assert main([*args, "--telemetry-collector-dir", str(collectors), "--output", str(out)]) == ExitCode.OK
    settings = load_like_vsperf(out)
    assert settings["COLLECTOR"] == "OvsperfTelemetry" and settings["COLLECTOR_DIR"] == str(collectors)
    assert "# --- task ---" in out.read_text()
    # A directory without the collector (or a relative one) is refused before anything is written.
    for wrong in (tmp_path, Path("beaker_tasks/vsperf_test/collectors")):
        capsys.readouterr()
        other = tmp_path / "other.conf"
        assert main([*args, "--telemetry-collector-dir", str(wrong), "--output", str(other)]) == 2
        assert "is not an absolute directory holding ovsperf_telemetry.py" in capsys.readouterr().err
        assert not other.exists()
