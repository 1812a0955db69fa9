"""The task layer keeps VSperf 10 off Kubernetes and off the host's hugetlbfs mount, for every scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_common.exitcodes import ExitCode
from vsperf_configs.cli import main
from vsperf_configs.errors import VsperfConfigError
from vsperf_configs.generate import DEFAULT_HUGEPAGE_DIR, DEFAULT_POD_DIR, generate_config
from vsperf_configs.testcases import needs_integration

from .vsperf_loader import VSPERF_DEFAULTS, load_like_vsperf

DUT = "dut01.example.com"
PODS = Path(__file__).resolve().parents[2] / "beaker_tasks" / "vsperf_test" / "pods"


@pytest.mark.parametrize("scenario", load_catalog().names())
def test_every_scenario_selects_our_pod_and_vsperfs_own_hugepage_mount(
    tmp_path: Path, example_inventory: Path, scenario: str
) -> None:
    conf = tmp_path / "vsperf.conf"
    conf.write_text(generate_config(scenario, DUT, example_inventory).text)
    settings = load_like_vsperf(conf, integration=needs_integration(load_catalog().get(scenario)))
    assert (settings["POD"], settings["POD_DIR"]) == ("OvsperfNoPod", str(PODS))
    assert VSPERF_DEFAULTS["POD"] == "Papi"  # what VSperf would make without it
    assert (PODS / "ovsperf_nopod.py").is_file() and DEFAULT_POD_DIR == PODS
    assert settings["HUGEPAGE_DIR"] == DEFAULT_HUGEPAGE_DIR == "/dev/hugepages-vsperf"
    assert settings["HUGEPAGE_DIR"] != VSPERF_DEFAULTS["HUGEPAGE_DIR"]


def test_the_task_passes_its_own_directories(tmp_path: Path, example_inventory: Path) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    (pods / "ovsperf_nopod.py").write_text("")
    text = generate_config("OVS_DPDK1q", DUT, example_inventory, None, None, pods, "/mnt/huge-vsperf").text
    assert f"POD_DIR = '{pods}'" in text and "HUGEPAGE_DIR = '/mnt/huge-vsperf'" in text


@pytest.mark.parametrize(
    ("pod_dir", "hugepage_dir", "message"),
    [
        (Path("pods"), DEFAULT_HUGEPAGE_DIR, "--pod-dir 'pods' is not an absolute directory holding"),
        (Path("/nonexistent"), DEFAULT_HUGEPAGE_DIR, "--pod-dir '/nonexistent' is not an absolute directory"),
        (PODS, "/dev/hugepages", "--hugepage-dir '/dev/hugepages' would make VSperf unmount the host's"),
        (PODS, "/dev", "--hugepage-dir '/dev' would make VSperf unmount the host's /dev/hugepages"),
        (PODS, "/dev/../dev/hugepages", "is not an absolute, normalised directory"),
        (PODS, "/dev/hugepages/", "is not an absolute, normalised directory"),
        (PODS, "hugepages", "is not an absolute, normalised directory"),
    ],
)
def test_bad_task_directories_are_refused(
    example_inventory: Path, pod_dir: Path, hugepage_dir: str, message: str
) -> None:
    with pytest.raises(VsperfConfigError, match=r"^--") as err:
        generate_config("OVS_DPDK1q", DUT, example_inventory, None, None, pod_dir, hugepage_dir)
    assert message in str(err.value)


def test_cli_options(example_inventory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["-q", "--scenario", "OVS_DPDK1q", "--host", DUT, "--inventory", str(example_inventory)]
    assert main([*argv, "--hugepage-dir", "/mnt/huge-vsperf"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "HUGEPAGE_DIR = '/mnt/huge-vsperf'" in out and f"POD_DIR = '{PODS}'" in out
    assert main([*argv, "--hugepage-dir", "/dev/hugepages"]) == ExitCode.ERROR
    assert "would make VSperf unmount the host's /dev/hugepages" in capsys.readouterr().err
