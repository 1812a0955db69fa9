from __future__ import annotations

import functools
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .shims import PUBKEY, REPO, Lab, Result

INVENTORY = str(REPO / "vsperf_configs" / "inventory.example.yaml")
DUT = "dut01.example.com"
COMMIT = "90ef48d4342a983c7733b8c21bb902d1dab2685a"


@pytest.fixture
def dut(lab: Lab) -> Lab:
    return lab


def _params(lab: Lab, **extra: str) -> dict[str, str]:
    params = {
        "INVENTORY": INVENTORY,
        "DUT_HOSTNAME": DUT,
        "VSPERF_DIR": str(lab.root / "vswitchperf"),
        "VSPERF_VENV": str(lab.root / "venv"),
        "VSPERF_BASE_PYTHON": "vsperf-base-python",
        "MOONGEN_LOG_DIR": str(lab.root / "moongen"),
        "FAKE_VSPERF_LOG_DIR": str(lab.root / "vsperf-out"),
        "FAKE_VSPERF_LOADER_DIR": str(REPO / "tests" / "vsperf_configs"),
        "COLLECTOR_RETRY_DELAY_S": "0",
    }
    params.update(extra)
    return params


def _setup(lab: Lab) -> None:
    assert lab.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **_params(lab)).returncode == 0
    assert lab.run("vsperf_test", reboot=1, VSPERF_ACTION="setup", **_params(lab)).returncode == 0


def test_setup_boot0_persistent_then_reboot(dut: Lab) -> None:
    run = dut.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **_params(dut))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("vsperf_test/environment", "PASS"), ("vsperf_test/persistent", "PASS")]
    order = [
        run.index("tuned-adm", "profile", "cpu-partitioning"),
        run.index("systemctl", "restart", "irqbalance"),
        run.index("nmcli", "device", "set", "ens1f0", "managed", "no"),
        run.index("git", "clone", "https://github.com/opnfv/vswitchperf"),
        run.index("git", "-C", _params(dut)["VSPERF_DIR"], "checkout", "--detach", COMMIT),
        run.index("vsperf-base-python", "-m", "venv"),
        run.index("pip", "install", "-q", "-r"),
        run.index("ssh-keygen"),
        run.index("rstrnt-reboot"),
    ]
    assert order == sorted(order)
    assert run.calls[-1] == ["rstrnt-reboot"]
    tuned = (dut.etc / "tuned" / "cpu-partitioning-variables.conf").read_text()
    assert "isolated_cores=2,4,6,8,10,12,14,16,18" in tuned
    nm = (dut.etc / "NetworkManager" / "conf.d" / "99-ovsperf-unmanaged.conf").read_text()
    assert "unmanaged-devices=interface-name:ens1f0;interface-name:ens1f1" in nm
    assert (dut.home / ".ssh" / "id_ed25519.pub").read_text().startswith(PUBKEY)


def test_setup_boot1_verifies(dut: Lab) -> None:
    assert dut.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **_params(dut)).returncode == 0
    run = dut.run("vsperf_test", reboot=1, VSPERF_ACTION="setup", **_params(dut))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("vsperf_test/verify", "PASS")]
    assert not run.called("git") and not run.called("rstrnt-reboot")


def test_setup_boot1_without_hugepages_warns_and_aborts(dut: Lab) -> None:
    assert dut.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", **_params(dut)).returncode == 0
    dut.set_hugepages(0)
    run = dut.run("vsperf_test", reboot=1, VSPERF_ACTION="setup", **_params(dut))
    assert run.returncode == 2
    assert run.reported() == [("vsperf_test/verify", "WARN")]
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert "No hugepages are reserved on dut01.example.com" in run.stderr


def test_setup_repository_down_warns_and_aborts(dut: Lab) -> None:
    run = dut.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", SHIM_GIT_FAIL="clone", **_params(dut))
    assert run.returncode == 2
    assert run.reported()[-1] == ("vsperf_test/persistent", "WARN")
    assert "Cannot clone 'https://github.com/opnfv/vswitchperf' (repository down?)" in run.stderr
    assert not run.called("rstrnt-reboot")


def test_setup_guest_prepares_vfio_noiommu(dut: Lab) -> None:
    param = dut.sysfs / "module" / "vfio" / "parameters"
    param.mkdir(parents=True)
    (param / "enable_unsafe_noiommu_mode").write_text("Y\n")
    run = dut.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", GUEST="1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("vsperf_test/guest", "PASS")]
    assert run.called("modprobe") == [["vfio", "enable_unsafe_noiommu_mode=1"], ["vfio-pci"]]
    conf = dut.etc / "modprobe.d" / "ovsperf-vfio-noiommu.conf"
    assert conf.read_text() == "options vfio enable_unsafe_noiommu_mode=1\n"
    assert not run.called("rstrnt-reboot")
    (param / "enable_unsafe_noiommu_mode").write_text("N\n")
    run = dut.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", GUEST="1")
    assert run.returncode == 2 and "not in no-IOMMU mode" in run.stderr


def _run(dut: Lab, collector: Path, **extra: str) -> Result:
    return dut.run(
        "vsperf_test",
        reboot=0,
        VSPERF_ACTION="run",
        SCENARIO="OVS_DPDK1q_GUEST_DPDK1q",
        COLLECTOR=f"ovsperf@collector.example.com:{collector}",
        RSTRNT_JOBID="4321",
        **_params(dut, **extra),
    )


def test_run_ships_results_with_metadata_last(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    collector = tmp_path / "ci_in"
    run = _run(dut, collector)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [
        ("vsperf_test/config", "PASS"),
        ("vsperf_test/preflight", "PASS"),
        ("vsperf_test/vsperf", "PASS"),
        ("vsperf_test/collect", "PASS"),
    ]
    # VSperf ran with the generated conf file and the scenario's tests in catalog order.
    (vsperf,) = run.called("vsperf")
    assert vsperf[0] == "--conf-file" and vsperf[1].endswith("vsperf-OVS_DPDK1q_GUEST_DPDK1q.conf")
    assert vsperf[-2:] == ["phy2phy_tput", "pvp_tput"]
    assert "Creating result directory: " in run.stdout  # VSperf's progress is shown live
    assert ["-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "root@192.0.2.10"] == run.called("ssh")[0][:5]
    # Two rsync passes: everything but the metadata, then the metadata alone.
    first, second = run.called("rsync")
    assert "--exclude=ovsperf-metadata.json" in first
    # Issue 25: the collector's shell never splits or expands the path (rsync <= 3.2.3 lets it).
    assert "--protect-args" in first and "--protect-args" in second
    assert second[-2].endswith("/ovsperf-metadata.json")
    assert run.index("vsperf") < run.index("rsync") < run.index("rsync", *second)
    (shipped,) = collector.iterdir()
    assert shipped.name.startswith("results_")
    names = sorted(p.name for p in shipped.iterdir())
    assert "result_0_phy2phy_tput_p2p.csv" in names and "result_1_pvp_tput_pvp.csv" in names
    assert "ovsperf-vsperf.conf" in names and "ovsperf-vsperf-stdout.log" in names
    assert (shipped / "xunit" / "TEST-vsperf.xml").read_text() == '<testsuite name="vsperf" tests="2"/>\n'
    assert (shipped / "moongen" / "1" / "moongen-run.log").read_text().startswith("[REPORT]")
    rows = (shipped / "result_0_phy2phy_tput_p2p.csv").read_text().splitlines()
    assert [r.split(",")[10] for r in rows[1:]] == ["64", "576", "1280", "1500"]
    meta = json.loads((shipped / "ovsperf-metadata.json").read_text())
    assert meta["scenario"] == "OVS_DPDK1q_GUEST_DPDK1q"
    assert meta["status"] == "PASS" and meta["missing_tests"] == []
    assert meta["tests"] == [
        {"index": 0, "test": "phy2phy_tput", "deployment": "p2p"},
        {"index": 1, "test": "pvp_tput", "deployment": "pvp"},
    ]
    assert meta["beaker_job_id"] == "J:4321"
    assert meta["hosts"] == {
        "dut": DUT,
        "trafficgen": "moongen01.example.com",
        "trafficgen_address": "192.0.2.10",
    }
    assert meta["packages"]["openvswitch3.1"] == "3.1.0-60.el9fdp.x86_64"
    assert meta["packages"]["dpdk"] == "22.11-4.el9.x86_64"
    assert meta["vsperf_commit"] == COMMIT
    assert meta["results_dir"] == shipped.name
    # Logs and CSVs uploaded to Beaker.
    uploaded = [Path(c[-1]).name for c in run.called("rstrnt-report-log")]
    assert {"result_0_phy2phy_tput_p2p.csv", "ovsperf-metadata.json", "vsperf-stdout.log"} <= set(uploaded)
    assert any(name.endswith(".tar.gz") for name in uploaded)


def test_run_missing_csv_is_fail_although_vsperf_exits_0(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    collector = tmp_path / "ci_in"
    run = _run(dut, collector, FAKE_VSPERF_FAIL="pvp_tput")
    assert run.returncode == 1
    assert ("vsperf_test/vsperf", "FAIL") in run.reported()
    assert "VSperf wrote no results for test pvp_tput" in run.stdout
    (shipped,) = collector.iterdir()  # the partial results still reach the collector
    meta = json.loads((shipped / "ovsperf-metadata.json").read_text())
    assert meta["status"] == "FAIL" and meta["missing_tests"] == ["pvp_tput"]


def test_run_without_results_directory_is_fail(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    run = _run(dut, tmp_path / "ci_in", FAKE_VSPERF_NO_RESULTS="1")
    assert run.returncode == 1
    assert run.reported()[-1] == ("vsperf_test/vsperf", "FAIL")
    assert "VSperf reported no results directory" in run.stdout
    assert not run.called("rsync")


def test_run_collector_down_is_warn_and_keeps_results(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    run = _run(dut, tmp_path / "ci_in", SHIM_RSYNC_RC="12")
    assert run.returncode == 0
    assert run.reported()[-1] == ("vsperf_test/collect", "WARN")
    assert len(run.called("rsync")) == 3  # bounded retries
    (results,) = (dut.root / "vsperf-out").iterdir()
    assert (results / "ovsperf-metadata.json").exists()
    assert f"they stay in {results}" in run.stdout


def test_run_without_collector_keeps_results_on_the_dut(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    catalog = tmp_path / "catalog.yaml"  # a custom catalog given as CATALOG
    shipped = (REPO / "ovsperf_catalog" / "scenarios.yaml").read_text()
    catalog.write_text(shipped.replace("OVS_DPDK1q:", "MY_P2P:"))
    params = _params(dut, SCENARIO="MY_P2P", CATALOG=str(catalog))
    run = dut.run("vsperf_test", reboot=0, VSPERF_ACTION="run", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported()[-1] == ("vsperf_test/collect", "PASS")
    assert not run.called("rsync")
    assert "No COLLECTOR given" in run.stdout
    (results,) = (dut.root / "vsperf-out").iterdir()
    meta = json.loads((results / "ovsperf-metadata.json").read_text())
    assert meta["scenario"] == "MY_P2P" and meta["tests"][0]["test"] == "phy2phy_tput"
    assert any(Path(c[-1]).name.endswith(".tar.gz") for c in run.called("rstrnt-report-log"))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"DUT_HOSTNAME": "dut99.example.com"}, "Cannot read the inventory entry of 'dut99.example.com'"),
        ({"SCENARIO": "NOPE"}, "vsperf-config failed: vsperf-config: error: '"),
        ({"SHIM_SSH_RC": "255"}, "Cannot reach MoonGen at root@192.0.2.10:/root/lua-trafficgen over SSH"),
        ({"COLLECTOR": "ci_in"}, "COLLECTOR 'ci_in' is not user@host:/absolute/path"),
        # Issue 25: the path reached the collector's shell (rsync <= 3.2.3) and ran 'touch'.
        (
            {"COLLECTOR": "root@h:/ci_in;touch${IFS}/tmp/x;"},
            "COLLECTOR 'root@h:/ci_in;touch${IFS}/tmp/x;' is not user@host:/absolute/path",
        ),
        ({"COLLECTOR": "u@h:/srv/../etc"}, "without '.' or '..'"),
        ({"COLLECTOR": "u@h:/ci in"}, "is not an rsync destination"),
    ],
)
def test_run_lab_problems_warn_and_abort(
    dut: Lab, tmp_path: Path, extra: dict[str, str], message: str
) -> None:
    _setup(dut)
    params = {"SCENARIO": "OVS_DPDK1q_GUEST_DPDK1q", "COLLECTOR": f"u@h:{tmp_path}", **extra}
    run = dut.run("vsperf_test", reboot=0, VSPERF_ACTION="run", **_params(dut, **params))
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr
    assert run.reported()[-1][1] == "WARN"
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert not run.called("vsperf")


def test_run_overlapping_cpus_is_a_clear_error(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(Path(INVENTORY).read_text().replace('pmd: "2,4,6,8"', 'pmd: "0,2"'))
    run = dut.run(
        "vsperf_test",
        reboot=0,
        VSPERF_ACTION="run",
        **_params(dut, INVENTORY=str(inventory), SCENARIO="OVS_DPDK1q", COLLECTOR=f"u@h:{tmp_path}"),
    )
    assert run.returncode == 2
    assert "CPU(s) 0 also appear in the OVS lcore CPU list" in run.stderr


def test_run_without_hugepages_warns_and_aborts(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    dut.set_hugepages(0)
    run = _run(dut, tmp_path / "ci_in")
    assert run.returncode == 2
    assert run.reported()[-1] == ("vsperf_test/preflight", "WARN")
    assert not run.called("vsperf")


# --- the Beaker guest: the DUT waits for its setup, then shuts it off for VSperf ----------------

PERFSYNC = REPO / "beaker_tasks" / "perf_synchronization" / "perfsync.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def guest(tmp_path: Path) -> Iterator[tuple[Lab, dict[str, str]]]:
    """The guest as a second fake machine with its own perfsync state directory and port."""
    sync = {"PERFSYNC_PORT": str(_free_port()), "PERFSYNC_STATE_DIR": str(tmp_path / "guest-sync")}
    lab = Lab(tmp_path / "guest")
    param = lab.sysfs / "module" / "vfio" / "parameters"
    param.mkdir(parents=True)
    (param / "enable_unsafe_noiommu_mode").write_text("Y\n")
    try:
        yield lab, sync
    finally:  # the state server outlives the task, as on a real guest: stop it by its PID file
        subprocess.run(
            [sys.executable, str(PERFSYNC), "--stop"], env={**os.environ, **sync}, check=False, timeout=30
        )


def _guest_setup(lab: Lab, sync: dict[str, str]) -> Result:
    """Run the guest's setup inside Beaker job 4321: it publishes GUEST_READY.J4321."""
    return lab.run("vsperf_test", reboot=0, VSPERF_ACTION="setup", GUEST="1", RSTRNT_JOBID="4321", **sync)


@pytest.fixture
def ready(dut: Lab, guest: tuple[Lab, dict[str, str]]) -> dict[str, str]:
    """A set-up DUT whose guest has published GUEST_READY.J4321; return the guest's perfsync settings."""
    _setup(dut)
    lab, sync = guest
    assert _guest_setup(lab, sync).returncode == 0
    return sync


def _domain(dut: Lab, state: str = "running") -> dict[str, str]:
    state_file = dut.root / "virsh-state"
    state_file.write_text(state + "\n")
    return {"SHIM_VIRSH_STATE": str(state_file), "SHIM_VIRSH_ADDRESS": "127.0.0.1"}


def test_guest_setup_in_a_job_publishes_guest_ready(guest: tuple[Lab, dict[str, str]]) -> None:
    lab, sync = guest
    run = _guest_setup(lab, sync)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("vsperf_test/guest", "PASS")]
    url = f"http://127.0.0.1:{sync['PERFSYNC_PORT']}/v1/states/GUEST_READY.J4321"
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.status == 200


def test_run_waits_for_the_guest_then_shuts_it_off(dut: Lab, ready: dict[str, str], tmp_path: Path) -> None:
    run = _run(dut, tmp_path / "ci_in", **_domain(dut), **ready)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [name for name, _ in run.reported()] == [
        "vsperf_test/config",
        "vsperf_test/guest-ready",
        "vsperf_test/preflight",
        "vsperf_test/vsperf",
        "vsperf_test/collect",
    ]
    assert {result for _, result in run.reported()} == {"PASS"}
    # The address came from libvirt's ARP view (agent and lease knew nothing); lo is skipped.
    assert [c[2:4] for c in run.called("virsh") if c[0] == "domifaddr"] == [
        ["--source", "agent"],
        ["--source", "lease"],
        ["--source", "arp"],
    ]
    assert "for state GUEST_READY.J4321 from guest ovsperf-guest (127.0.0.1)" in run.stdout
    assert run.index("virsh", "shutdown", "ovsperf-guest") < run.index("vsperf")
    assert not [c for c in run.called("virsh") if c[0] == "destroy"]
    assert (dut.root / "virsh-state").read_text() == "shut off\n"


def test_run_guest_never_ready_warns_and_aborts_before_vsperf(
    dut: Lab, guest: tuple[Lab, dict[str, str]], tmp_path: Path
) -> None:
    _setup(dut)
    _, sync = guest  # nothing serves GUEST_READY on the guest's port
    run = _run(dut, tmp_path / "ci_in", GUEST_TIMEOUT_S="3", **_domain(dut), **sync)
    assert run.returncode == 2
    assert run.reported()[-1] == ("vsperf_test/guest-ready", "WARN")
    assert "Guest 'ovsperf-guest' (127.0.0.1) did not set state 'GUEST_READY.J4321' within 3 s" in run.stderr
    assert not run.called("vsperf")
    assert not [c for c in run.called("virsh") if c[0] in ("shutdown", "destroy")]


def test_run_guest_ignoring_shutdown_is_destroyed(dut: Lab, ready: dict[str, str], tmp_path: Path) -> None:
    run = _run(
        dut,
        tmp_path / "ci_in",
        GUEST_ADDRESS="127.0.0.1",
        GUEST_SHUTDOWN_TIMEOUT_S="1",
        SHIM_VIRSH_IGNORE_SHUTDOWN="1",
        **_domain(dut),
        **ready,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert not [c for c in run.called("virsh") if c[0] == "domifaddr"]  # GUEST_ADDRESS given
    assert run.index("virsh", "shutdown") < run.index("virsh", "destroy") < run.index("vsperf")
    assert ("vsperf_test/guest-ready", "PASS") in run.reported()  # the inventory names the guest's disk


def test_run_warns_when_vsperf_would_boot_another_image_than_the_guest_s(
    dut: Lab, ready: dict[str, str], tmp_path: Path
) -> None:
    disk = "/var/lib/libvirt/images/ovsperf-guest.img"
    run = _run(dut, tmp_path / "ci_in", SHIM_VIRSH_DISK=disk, **_domain(dut), **ready)
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("vsperf_test/guest-ready", "WARN") in run.reported()
    image = "/var/lib/libvirt/images/ovsperf-guest.qcow2"  # the example inventory's guest_image
    assert f"VSperf boots {image}, but guest ovsperf-guest was prepared on '{disk}'" in run.stdout
    assert run.called("vsperf")


def test_run_p2p_scenario_ignores_the_guest(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    run = dut.run(
        "vsperf_test",
        reboot=0,
        VSPERF_ACTION="run",
        RSTRNT_JOBID="4321",
        **_params(dut, SCENARIO="OVS_DPDK1q", COLLECTOR=f"u@h:{tmp_path / 'ci_in'}", **_domain(dut)),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert not run.called("virsh")


def test_run_keeps_every_moongen_log_vsperf_overwrites(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    collector = tmp_path / "ci_in"
    run = _run(dut, collector, FAKE_VSPERF_TRIAL_S="0.6", MOONGEN_LOG_POLL_S="0.1")
    assert run.returncode == 0, run.stdout + run.stderr
    (shipped,) = collector.iterdir()
    kept = sorted((shipped / "moongen" / "all").glob("*.log"))
    assert [p.name for p in kept] == [f"{i:03d}-run1-moongen-run.log" for i in range(1, 9)]
    runs = [p.read_text().splitlines()[-1] for p in kept]
    assert runs == [
        f"# fake MoonGen run: {test} {size} B"
        for test in ("phy2phy_tput", "pvp_tput")
        for size in (64, 576, 1280, 1500)
    ]
    # VSperf's own scratch copy (the last run only) is still there as before.
    assert (shipped / "moongen" / "1" / "moongen-run.log").read_text() == kept[-1].read_text()


def test_run_finds_a_bridged_guest_through_the_recipe_xml(
    dut: Lab, ready: dict[str, str], tmp_path: Path
) -> None:
    # libvirt knows no address (bridged guest the host never talked to): Beaker's recipe XML names it.
    www = tmp_path / "lc"
    (www / "recipes" / "77").mkdir(parents=True)
    (www / "recipes" / "77" / "index.html").write_text(
        '<recipe id="77" system="dut01.example.com"><guestrecipe guestname="other" system="10.0.0.9"/>'
        '<guestrecipe guestname="ovsperf-guest" system="127.0.0.1" mac_address="52:54:00:00:00:01"/>'
        "</recipe>\n"
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        domain = {k: v for k, v in _domain(dut).items() if k != "SHIM_VIRSH_ADDRESS"}
        url = f"http://127.0.0.1:{server.server_address[1]}/recipes/77/"
        run = _run(dut, tmp_path / "ci_in", GUEST_RECIPE_URL=url, **domain, **ready)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "for state GUEST_READY.J4321 from guest ovsperf-guest (127.0.0.1)" in run.stdout
    assert len([c for c in run.called("virsh") if c[0] == "domifaddr"]) == 3  # libvirt was asked first
    assert run.index("virsh", "shutdown") < run.index("vsperf")


# --- DUT telemetry through our VSperf collector ---------------------------------------------------


def _shipped(collector: Path) -> Path:
    (shipped,) = collector.iterdir()
    return shipped


def test_run_captures_dut_telemetry_around_each_test_through_vsperf_s_collector(
    dut: Lab, tmp_path: Path
) -> None:
    from reporting.load import load_results_dir

    _setup(dut)
    collector = tmp_path / "ci_in"
    run = _run(dut, collector)
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("vsperf_test/collect", "PASS") in run.reported()
    shipped = _shipped(collector)
    conf = (shipped / "ovsperf-vsperf.conf").read_text()
    assert "COLLECTOR = 'OvsperfTelemetry'" in conf
    assert f"COLLECTOR_DIR = '{REPO / 'beaker_tasks' / 'vsperf_test' / 'collectors'}'" in conf
    # VSperf's own pidstat still runs around each test (our collector is a Pidstat).
    assert (shipped / "pidstat_phy2phy_tput.log").read_text() == "pidstat start\npidstat stop\n"
    # Per test: the ports' statistics and a counter clear before its traffic, the snapshots after.
    appctl = [c[0] for c in run.called("ovs-appctl")]
    assert appctl == 2 * [
        "dpif-netdev/pmd-stats-clear",
        "dpif-netdev/pmd-stats-show",
        "dpif-netdev/pmd-perf-show",
        "dpif-netdev/pmd-rxq-show",
    ]
    assert len(run.called("ovs-vsctl")) == 4
    raw = sorted(p.name for p in (shipped / "ovsperf-telemetry-raw").iterdir())
    assert raw == ["test-0.json", "test-1.json"]
    document = json.loads((shipped / "ovsperf-telemetry.json").read_text())
    assert document["schema"] == 1 and document["producer"] == "vsperf_test"
    first, second = document["trials"]
    assert (first["csv"], second["csv"]) == ("result_0_phy2phy_tput_p2p.csv", "result_1_pvp_tput_pvp.csv")
    assert first["window"] == "test" and first["frame_size_bytes"] is None and first["load_pps"] is None
    assert first["frame_sizes_bytes"] == [64, 576, 1280, 1500]
    # From the OVS 3.1 fixture: 2624851744 processing cycles over 7831812 packets, 60.30 % busy.
    assert first["totals"]["cycles_per_packet"] == pytest.approx(2624851744 / 7831812)
    assert first["totals"]["pmd_busy_percent"] == pytest.approx(60.30, abs=0.01)
    assert first["totals"]["simple_match_hits_percent"] == pytest.approx(100.0)
    assert [(q["port"], q["queue"], q["usage_percent"]) for q in first["rxq"]] == [
        ("tg0", 0, 31.0),
        ("tg1", 0, 29.0),
        ("tg2", 1, None),
    ]
    # The shim's counters grow by 1000 per call: the change over the window, per port.
    assert first["ports"] == {
        "dpdk0": {"rx_dropped": 0.0, "rx_packets": 1000.0, "tx_packets": 1000.0},
        "dpdk1": {"rx_dropped": 0.0, "rx_packets": 1000.0, "tx_packets": 1000.0},
    }
    assert first["pmd_perf_show"].startswith("Time: ")
    uploaded = [Path(c[-1]).name for c in run.called("rstrnt-report-log")]
    assert "ovsperf-telemetry.json" in uploaded
    # The report's reader takes the window as the test's one telemetry point.
    result = load_results_dir(shipped)
    (p2p,) = [r for r in result.runs if r.test == "phy2phy_tput"]
    (point,) = p2p.telemetry
    assert point.frame_size_bytes is None and point.frame_sizes_bytes == (64, 576, 1280, 1500)
    assert point.cycles_per_packet == pytest.approx(335.155, abs=0.01)
    assert [w for w in result.warnings if "telemetry" in w.message.lower()] == []


def test_run_telemetry_an_ovs_cannot_give_is_not_collected_never_zero(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    collector = tmp_path / "ci_in"
    run = _run(dut, collector, FAKE_OVS_APPCTL_FAIL="dpif-netdev/pmd-stats-show")
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("vsperf_test/collect", "PASS") in run.reported()
    first = json.loads((_shipped(collector) / "ovsperf-telemetry.json").read_text())["trials"][0]
    assert first["totals"] == {"packets": None, "cycles_per_packet": None, "pmd_busy_percent": None}
    assert any(n.startswith("pmd-stats-show: not collected (exit 2: ") for n in first["notes"])
    assert first["rxq"]  # what could be read still is


def test_run_without_telemetry_keeps_vsperf_s_pidstat_only(dut: Lab, tmp_path: Path) -> None:
    _setup(dut)
    collector = tmp_path / "ci_in"
    run = _run(dut, collector, VSPERF_TELEMETRY="0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("vsperf_test/collect", "PASS") in run.reported()
    shipped = _shipped(collector)
    assert "COLLECTOR" not in (shipped / "ovsperf-vsperf.conf").read_text()
    assert not (shipped / "ovsperf-telemetry.json").exists()
    assert run.called("ovs-appctl") == []


@pytest.mark.parametrize(
    ("scenario", "integration", "csvs"),
    [
        (
            "OVS_DPDK1q_VXLAN",
            True,
            ["result_0_overlay_p2p_decap_tput_op2p.csv", "result_1_overlay_p2p_tput_op2p.csv"],
        ),
        (
            "OVS_DPDK1q_CT",
            False,
            ["result_0_phy2phy_ct_tput_p2p.csv", "result_1_phy2phy_ct_nat_tput_p2p.csv"],
        ),
        ("OVS_DPDK1q_PVVP", False, ["result_0_pvvp_tput_pvvp.csv"]),
    ],
)
def test_run_gives_vsperf_integration_only_for_the_overlay_tests(
    dut: Lab, tmp_path: Path, scenario: str, integration: bool, csvs: list[str]
) -> None:
    """Issue 28: VSperf finds its overlay tests only with --integration, our conntrack tests only without."""
    _setup(dut)
    collector = tmp_path / "ci_in"
    run = dut.run(
        "vsperf_test",
        reboot=0,
        VSPERF_ACTION="run",
        RSTRNT_JOBID="4321",
        **_params(dut, SCENARIO=scenario, COLLECTOR=f"u@h:{collector}"),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("vsperf_test/collect", "PASS") in run.reported()
    (vsperf,) = run.called("vsperf")
    assert ("--integration" in vsperf) is integration
    assert vsperf[-len(csvs) :] == [name.split("_", 2)[2].rsplit("_", 1)[0] for name in csvs]
    (shipped,) = collector.iterdir()
    assert sorted(p.name for p in shipped.glob("result_*.csv")) == csvs
    # Only the PVVP scenario looks for the Beaker guest (overlay 'op2p' needs none).
    looked = "No libvirt domain 'ovsperf-guest' on dut01.example.com" in run.stdout
    assert looked is (scenario == "OVS_DPDK1q_PVVP")
