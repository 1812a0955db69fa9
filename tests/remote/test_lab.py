"""``ovsperf-remote lab``: the lab run on a remote host (real sshd in a namespace), results brought back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovsperf_common.exitcodes import ExitCode
from ovsperf_common.metadata import METADATA_FILE
from remote.cli import main
from tests.beaker_tasks.shims import VENV_BIN

from .conftest import Lab

pytestmark = pytest.mark.dpdk  # root: namespaces, sshd

VENV_LAB = VENV_BIN / "ovsperf-lab"

FAKE_LAB = """#!/bin/sh
# A stand-in for ovsperf-lab run: records its arguments, writes a results directory, exits $CODE.
printf '%s\\n' "$@" > {record}
out=""
while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done
dir="$out/results_2026-11-26_09-00-00"
mkdir -p "$dir/moongen"
printf 'packet_size\\n64\\n' > "$dir/result_0_phy2phy_tput_p2p.csv"
printf 'raw\\n' > "$dir/moongen/run.log"
printf '{{"complete": {complete}}}\\n' > "$dir/{metadata}"
echo "progress: 64 B (1/1)" >&2
echo "$dir"
exit {code}
"""


def _fake(tmp_path: Path, code: int) -> Path:
    script = tmp_path / "fake-ovsperf-lab"
    script.write_text(
        FAKE_LAB.format(
            record=tmp_path / "argv.txt",
            complete="true" if code == 0 else "false",
            metadata=METADATA_FILE,
            code=code,
        )
    )
    script.chmod(0o755)
    return script


def _args(lab: Lab, tmp_path: Path, command: str, *lab_args: str) -> list[str]:
    return [
        "lab",
        "--host",
        f"root@{lab.dut.address}",
        "--output",
        str(tmp_path / "here"),
        "--ovsperf-lab",
        command,
        "--remote-dir",
        str(tmp_path / "remote"),
        *lab.ssh_args(),
        "--",
        *lab_args,
    ]


@pytest.mark.parametrize("code", [0, 2], ids=["complete", "incomplete"])
def test_a_lab_run_on_a_remote_host_comes_back_whole(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str], code: int
) -> None:
    lab.trust()
    fake = _fake(tmp_path, code)
    assert (
        main(_args(lab, tmp_path, str(fake), "run", "--config", "OVS_DPDK1q", "--frame-sizes", "64")) == code
    )
    out, err = capsys.readouterr()
    delivered = tmp_path / "here" / "results_2026-11-26_09-00-00"
    assert out.strip() == str(delivered)
    assert (delivered / "moongen" / "run.log").read_text() == "raw\n"
    assert json.loads((delivered / METADATA_FILE).read_text()) == {"complete": code == 0}
    assert [p.name for p in (tmp_path / "here").iterdir()] == [delivered.name]  # no partial copy left
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[:5] == ["run", "--config", "OVS_DPDK1q", "--frame-sizes", "64"]
    assert (
        argv[5] == "--output"
        and argv[6].startswith(str(tmp_path / "remote") + "/")
        and argv[6].endswith("/lab")
    )
    assert f"[root@{lab.dut.address} ovsperf-lab] progress: 64 B (1/1)" in err


def test_the_real_lab_command_runs_remotely(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    assert main(_args(lab, tmp_path, str(VENV_LAB), "list")) == ExitCode.OK
    out = capsys.readouterr().out
    assert "OVS_DPDK1q" in out and "OVS_DPDK1q_GUEST_DPDK1q" in out
    assert not (tmp_path / "here").exists()


def test_output_is_chosen_by_the_runner(lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab.trust()
    code = main(_args(lab, tmp_path, "ovsperf-lab", "run", "--config", "X", "--output", "/tmp"))
    assert code == ExitCode.ERROR
    assert "Do not give --output to the remote ovsperf-lab" in capsys.readouterr().err


def test_what_the_host_prints_cannot_drive_our_terminal(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    hostile = tmp_path / "hostile-lab"
    hostile.write_text(
        "#!/bin/sh\n"
        "printf 'OVS_DPDK1q\\033[2J\\033]0;pwned\\007\\n'\n"
        "printf 'ESC to stderr \\033[31m\\n' >&2\n"
    )
    hostile.chmod(0o755)
    assert main(_args(lab, tmp_path, str(hostile), "list")) == ExitCode.OK
    out, err = capsys.readouterr()
    assert "\x1b" not in out and "\x07" not in out and "\x1b" not in err
    assert out == "OVS_DPDK1q\\x1b[2J\\x1b]0;pwned\\x07\n"


TWO_HOST_INVENTORY = """hosts:
  {dut}:
    role: dut
    nics: ["0000:03:00.0", "0000:03:00.1"]
    dpdk_ports: ["net_af_packet0,iface=dut0", "net_af_packet1,iface=dut1"]
    numa_node: 0
    socket_mem_mb: 512
    cpus: {{ovs_lcore: "0", pmd: "1"}}
    trafficgen: {{host: tg.example.com, address: 198.51.100.9, user: root}}
  tg.example.com:
    role: trafficgen
    nics: ["0000:81:00.0", "0000:81:00.1"]
    dpdk_ports: ["net_af_packet0,iface=tg0", "net_af_packet1,iface=tg1"]
    numa_node: 0
    cpus: {{isolated: "2-3", generator: "2-3"}}
"""
TWO_HOST_OPTIONS = [
    "--dut-port", "net_af_packet0,iface=dut0", "--dut-port", "net_af_packet1,iface=dut1",
    "--tg-port", "net_af_packet0,iface=tg0", "--tg-port", "net_af_packet1,iface=tg1",
    "--tg-ssh", "root@198.51.100.9", "--tg-cpus", "2-3",
    "--pmd-cpus", "1", "--lcore-cpu", "0", "--socket-mem-mb", "512",
]  # fmt: skip


def _two_host_args(lab: Lab, tmp_path: Path, command: str, tg: str, *lab_args: str) -> list[str]:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(TWO_HOST_INVENTORY.format(dut=lab.dut.address))
    args = _args(lab, tmp_path, command, *lab_args)
    args[1:3] = ["--dut", f"root@{lab.dut.address}", "--tg", tg, "--inventory", str(inventory)]
    return args


def test_two_hosts_the_lab_on_the_dut_gets_the_inventory_s_options(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    fake = _fake(tmp_path, 0)
    args = _two_host_args(lab, tmp_path, str(fake), "tg.example.com", "run", "--config", "OVS_DPDK1q")
    assert main(args) == ExitCode.OK
    assert capsys.readouterr().out.strip() == str(tmp_path / "here" / "results_2026-11-26_09-00-00")
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[:3] == ["run", "--config", "OVS_DPDK1q"]
    assert argv[3:-2] == TWO_HOST_OPTIONS
    assert argv[-2] == "--output" and argv[-1].endswith("/lab")


@pytest.mark.parametrize(
    ("tg", "lab_args", "message"),
    [
        (
            "tg.example.com",
            ["run", "--config", "OVS_DPDK1q", "--tg-ssh", "x@y"],
            "Do not give --tg-ssh with --inventory",
        ),
        (
            "tg.example.com",
            ["run", "--pmd-cpus=3", "--config", "C"],
            "Do not give --pmd-cpus with --inventory",
        ),
        (
            "other.example.com",
            ["run", "--config", "OVS_DPDK1q"],
            "--tg 'other.example.com' is not the traffic generator",
        ),
        ("tg.example.com", ["list"], "--tg and --inventory give the options of 'ovsperf-lab run'"),
    ],
)
def test_two_hosts_conflicting_options_are_refused_before_connecting(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str], tg: str, lab_args: list[str], message: str
) -> None:
    fake = _fake(tmp_path, 0)
    assert main(_two_host_args(lab, tmp_path, str(fake), tg, *lab_args)) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    assert not (tmp_path / "argv.txt").exists()


def test_two_hosts_need_dut_tg_and_inventory(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _two_host_args(lab, tmp_path, "ovsperf-lab", "tg.example.com", "run", "--config", "OVS_DPDK1q")
    without_inventory = args[:5] + args[7:]
    assert main(without_inventory) == ExitCode.ERROR
    assert "two hosts need --dut, --tg and --inventory; --inventory missing." in capsys.readouterr().err
    both = ["lab", "--host", "h.example.com", *args[1:]]
    assert main(both) == ExitCode.ERROR
    assert "give the machine once" in capsys.readouterr().err
