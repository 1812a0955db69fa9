"""The ovsperf_test task (engine ovsperf) run for real against a stand-in ``ovsperf-lab``.

The stand-in records its argv and, for ``run``, writes a VSperf-format results directory (a CSV
and ``ovsperf-metadata.json``) under ``--output`` and prints its path, as the lab does; the task's
delivery (the shared ``lib/results.sh``) sends it through the rsync shim into a local collector.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .shims import REPO, Lab

INVENTORY = str(REPO / "vsperf_configs" / "inventory.example.yaml")
DUT = "dut01.example.com"
RESULTS = "results_2026-11-26_21-00-00"
EXPECTED_LAB_OPTIONS = [
    "--dut-port", "0000:03:00.0", "--dut-port", "0000:03:00.1",
    "--tg-port", "0000:81:00.0", "--tg-port", "0000:81:00.1",
    "--tg-ssh", "root@192.0.2.10", "--tg-cpus", "12-17",
    "--pmd-cpus", "2,4,6,8", "--lcore-cpu", "0", "--socket-mem-mb", "1024",
]  # fmt: skip
STAND_IN = """#!/bin/bash
# Stand-in ovsperf-lab: record argv (one JSON list per line), write a results directory for 'run'.
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >>"${FAKE_LAB_ARGV:?}"
if [[ "$1" == --help ]]; then
    [[ -z "${FAKE_LAB_SILENT:-}" ]] && echo "usage: ovsperf-lab [-h] {run,compare,bisect,doctor} ..."
    exit 0
fi
out=""
while (($#)); do
    [[ "$1" == --output ]] && out="$2"
    shift
done
echo "ovsperf-lab: measuring (stand-in)" >&2
[[ "${FAKE_LAB_MODE:-ok}" == nopath ]] && exit 2
dir="${out}/results_2026-11-26_21-00-00"
mkdir -p "${dir}"
csv="${dir}/result_0_phy2phy_tput_p2p.csv"
printf 'type,packet_size,throughput_rx_fps\\nrfc2544_throughput,64,1000000\\n' >"${csv}"
meta='{"schema": 2, "producer": "ovsperf-lab", "engine": "ovsperf"}'
[[ "${FAKE_LAB_MODE:-ok}" == nometa ]] || echo "${meta}" >"${dir}/ovsperf-metadata.json"
echo "${dir}"
exit "${FAKE_LAB_RC:-0}"
"""


@pytest.fixture
def dut(lab: Lab) -> Lab:
    stand_in = lab.root / "ovsperf-lab"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    return lab


def _params(lab: Lab, **extra: str) -> dict[str, str]:
    params = {
        "INVENTORY": INVENTORY,
        "DUT_HOSTNAME": DUT,
        "OVSPERF_LAB": str(lab.root / "ovsperf-lab"),
        "OVSPERF_VENV": str(lab.root / "venv"),
        "FAKE_LAB_ARGV": str(lab.root / "lab-argv.jsonl"),
        "COLLECTOR_RETRY_DELAY_S": "0",
    }
    params.update(extra)
    return params


def _lab_calls(lab: Lab) -> list[list[str]]:
    path = lab.root / "lab-argv.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_run_gives_the_inventory_s_options_and_ships_the_results_metadata_last(
    dut: Lab, tmp_path: Path
) -> None:
    collector = tmp_path / "ci_in"
    pointer = tmp_path / "results-path"
    run = dut.run(
        "ovsperf_test",
        OVSPERF_ACTION="run",
        **_params(
            dut,
            SCENARIO="OVS_DPDK1q",
            COLLECTOR=f"ovsperf@collector.example.com:{collector}",
            OVSPERF_TIMEOUT_S="600",
            VSPERF_RESULTS_FILE=str(pointer),
        ),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [
        ("ovsperf_test/config", "PASS"),
        ("ovsperf_test/preflight", "PASS"),
        ("ovsperf_test/ovsperf-lab", "PASS"),
        ("ovsperf_test/collect", "PASS"),
    ]
    work = next((dut.state).glob("run-*"))
    assert _lab_calls(dut)[-1] == [
        "run", "--config", "OVS_DPDK1q", *EXPECTED_LAB_OPTIONS, "--output", str(work / "results"),
    ]  # fmt: skip
    # The TG was checked over SSH, as the lab will reach it.
    ssh = run.called("ssh")
    assert ssh and ssh[0][-4:] == ["root@192.0.2.10", "test", "-x", "/usr/local/bin/ovsperf-trafficgen"]
    # Delivered: everything, the metadata in the second rsync pass.
    shipped = collector / RESULTS
    assert (shipped / "result_0_phy2phy_tput_p2p.csv").read_text().splitlines()[
        1
    ] == "rfc2544_throughput,64,1000000"
    assert json.loads((shipped / "ovsperf-metadata.json").read_text())["engine"] == "ovsperf"
    assert "ovsperf-lab: measuring (stand-in)" in (shipped / "ovsperf-lab.log").read_text()
    rsyncs = run.called("rsync")
    assert len(rsyncs) == 2
    assert "--exclude=ovsperf-metadata.json" in rsyncs[0] and "--protect-args" in rsyncs[0]
    assert rsyncs[1][-2:] == [
        str(work / "results" / RESULTS / "ovsperf-metadata.json"),
        f"ovsperf@collector.example.com:{collector}/{RESULTS}/",
    ]
    assert pointer.read_text() == f"{work / 'results' / RESULTS}\n"
    uploaded = [c[-1] for c in run.called("rstrnt-report-log")]
    assert str(work / f"{RESULTS}.tar.gz") in uploaded
    assert str(work / "results" / RESULTS / "result_0_phy2phy_tput_p2p.csv") in uploaded


def test_run_pvp_scenario_passes_the_guest_image(dut: Lab, tmp_path: Path) -> None:
    run = dut.run("ovsperf_test", OVSPERF_ACTION="run", **_params(dut, SCENARIO="OVS_DPDK1q_GUEST_DPDK1q"))
    assert run.returncode == 0, run.stdout + run.stderr
    argv = _lab_calls(dut)[-1]
    assert argv[argv.index("--guest-image") + 1] == "/var/lib/libvirt/images/ovsperf-guest.qcow2"
    assert "No COLLECTOR given" in run.stdout


def test_run_lab_failure_is_fail_and_still_ships(dut: Lab, tmp_path: Path) -> None:
    collector = tmp_path / "ci_in"
    run = dut.run(
        "ovsperf_test",
        OVSPERF_ACTION="run",
        **_params(dut, SCENARIO="OVS_DPDK1q", COLLECTOR=f"u@h:{collector}", FAKE_LAB_RC="2"),
    )
    assert run.returncode == 1
    assert ("ovsperf_test/ovsperf-lab", "FAIL") in run.reported()
    assert (collector / RESULTS / "ovsperf-metadata.json").exists()


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("nopath", "ovsperf-lab named no results directory"),
        ("nometa", "ovsperf-lab wrote no ovsperf-metadata.json"),
    ],
)
def test_run_without_results_or_metadata_is_fail(dut: Lab, tmp_path: Path, mode: str, message: str) -> None:
    run = dut.run(
        "ovsperf_test",
        OVSPERF_ACTION="run",
        **_params(dut, SCENARIO="OVS_DPDK1q", COLLECTOR=f"u@h:{tmp_path}", FAKE_LAB_MODE=mode),
    )
    assert run.returncode == 1
    assert ("ovsperf_test/ovsperf-lab", "FAIL") in run.reported()
    assert message in run.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"COLLECTOR": "root@h:/ci;touch${IFS}x"},
            "COLLECTOR 'root@h:/ci;touch${IFS}x' is not user@host:/absolute/path",
        ),
        ({"DUT_HOSTNAME": "moongen01.example.com"}, "'moongen01.example.com' is not a DUT"),
        ({"SHIM_SSH_RC": "255"}, "Cannot reach root@192.0.2.10 over SSH"),
        ({"OVSPERF_TIMEOUT_S": "1;x"}, "OVSPERF_TIMEOUT_S '1;x' is not a number of seconds"),
    ],
)
def test_run_lab_problems_warn_and_abort_before_the_lab(
    dut: Lab, tmp_path: Path, extra: dict[str, str], message: str
) -> None:
    run = dut.run("ovsperf_test", OVSPERF_ACTION="run", **{**_params(dut, SCENARIO="OVS_DPDK1q"), **extra})
    assert run.returncode == 2
    assert message in run.stderr
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert not [c for c in _lab_calls(dut) if c[:1] == ["run"]]


def test_run_bad_dpdk_ports_in_the_inventory_abort_naming_the_field(dut: Lab, tmp_path: Path) -> None:
    text = (
        Path(INVENTORY)
        .read_text()
        .replace(
            '    nics: ["0000:03:00.0", "0000:03:00.1"]   # test NICs',
            '    dpdk_ports: ["net_af_packet0,iface=veth0;reboot", "0000:03:00.1"]\n'
            '    nics: ["0000:03:00.0", "0000:03:00.1"]   # test NICs',
        )
    )
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(text)
    run = dut.run(
        "ovsperf_test", OVSPERF_ACTION="run", **_params(dut, SCENARIO="OVS_DPDK1q", INVENTORY=str(inventory))
    )
    assert run.returncode == 2
    assert "field 'dpdk_ports'" in run.stderr and "is not DPDK devargs" in run.stderr
    assert not [c for c in _lab_calls(dut) if c[:1] == ["run"]]


def test_setup_installs_the_lab_into_a_venv_and_makes_the_key(dut: Lab) -> None:
    venv = dut.root / "venv"
    run = dut.run(
        "ovsperf_test",
        OVSPERF_ACTION="setup",
        **_params(dut, OVSPERF_LAB_PYTHON="vsperf-base-python", SHIM_PYTHON_VERSION="3.11"),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("ovsperf_test/install", "PASS")]
    assert ["-m", "venv", str(venv)] in run.called("vsperf-base-python")
    requirements = (venv / "ovsperf-lab-requirements.txt").read_text().splitlines()
    assert requirements[0] == "PyYAML>=6.0"
    assert "MLRsearch==1.2.1; python_version >= '3.11'" in requirements
    pip = [line for line in (dut.root / "calls.log").read_text().splitlines() if line.startswith("pip ")]
    assert pip == [
        f"pip install -q -r {venv}/ovsperf-lab-requirements.txt -c {REPO}/packaging/constraints.txt"
    ]
    site = venv / "lib" / "python3.11" / "site-packages"
    assert (site / "ovsperf-repository.pth").read_text() == f"{REPO}\n"
    assert os.readlink(site / "ovsperf_templates") == str(REPO / "templates")
    assert f'exec "{venv}/bin/python" -m ovsperf_lab "$@"' in (venv / "bin" / "ovsperf-lab").read_text()
    assert (dut.home / ".ssh" / "id_ed25519.pub").exists()
    assert [
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        f"ovsperf-lab@{DUT}",
        "-f",
        f"{dut.home}/.ssh/id_ed25519",
    ] in run.called("ssh-keygen")
    assert not run.called("rstrnt-reboot")


def test_setup_without_a_python_3_11_warns_and_aborts(dut: Lab) -> None:
    run = dut.run(
        "ovsperf_test",
        OVSPERF_ACTION="setup",
        **_params(dut, OVSPERF_LAB_PYTHON="vsperf-base-python", SHIM_PYTHON_VERSION="3.9"),
    )
    assert run.returncode == 2
    assert (
        "OVSPERF_LAB_PYTHON 'vsperf-base-python' is Python 3.9; ovsperf-lab needs 3.11 or later" in run.stderr
    )
    assert not (dut.root / "venv").exists()


def test_a_lab_that_exits_0_but_prints_no_usage_is_not_installed(dut: Lab) -> None:
    """A wrapper that runs nothing (``python -m`` of a module without a main) exits 0 on --help."""
    run = dut.run(
        "ovsperf_test",
        OVSPERF_ACTION="setup",
        **_params(
            dut, OVSPERF_LAB_PYTHON="vsperf-base-python", SHIM_PYTHON_VERSION="3.11", FAKE_LAB_SILENT="1"
        ),
    )
    assert run.returncode == 2
    assert "--help' fails: the lab is not installed" in run.stderr
