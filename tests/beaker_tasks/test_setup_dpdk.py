from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .shims import REPO, Lab

NICS = "0000:03:00.0 0000:03:00.1"
PARAMS = {"TEST_NICS": NICS, "ISOLATED_CPUS": "2-11"}


def test_boot0_persistent_part_then_reboot(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("setup_dpdk/environment", "PASS"), ("setup_dpdk/persistent", "PASS")]
    assert run.called("tuned-adm") == [["profile", "cpu-partitioning"]]
    assert run.called("systemctl") == [["restart", "irqbalance"]]
    assert run.calls[-1] == ["rstrnt-reboot"]
    assert run.index("tuned-adm", "profile") < run.index("rstrnt-reboot")
    assert not run.called("dpdk-devbind.py") and not run.called("grubby")
    assert "isolated_cores=2-11" in (lab.etc / "tuned" / "cpu-partitioning-variables.conf").read_text()
    assert "IRQBALANCE_BANNED_CPULIST=2-11\n" in (lab.etc / "sysconfig" / "irqbalance").read_text()
    assert (lab.etc / "modules-load.d" / "ovsperf-vfio-pci.conf").read_text() == "vfio-pci\n"
    assert (lab.state / "persistent.done").exists()
    assert lab.driver("0000:03:00.0") == "ixgbe"
    # Versions were logged and uploaded.
    assert ["-i", "ens1f0"] in run.called("ethtool")
    assert any(c[-1].endswith("versions.log") for c in run.called("rstrnt-report-log"))


def test_boot1_binds_nics_and_verifies(lab: Lab) -> None:
    assert lab.run("setup_dpdk", reboot=0, **PARAMS).returncode == 0
    run = lab.run("setup_dpdk", reboot=1, **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("setup_dpdk/bind", "PASS"), ("setup_dpdk/verify", "PASS")]
    assert run.called("modprobe") == [["vfio-pci"]]
    assert ["-b", "vfio-pci", "0000:03:00.0", "0000:03:00.1"] in run.called("dpdk-devbind.py")
    assert run.index("ip", "link", "set", "dev", "ens1f0", "down") < run.index("dpdk-devbind.py", "-b")
    assert lab.driver("0000:03:00.0") == lab.driver("0000:03:00.1") == "vfio-pci"
    assert not run.called("rstrnt-reboot")
    assert ["profile", "cpu-partitioning"] not in run.called("tuned-adm")
    assert "16 hugepages reserved" in run.stdout


def test_no_hugepages_after_reboot_is_warn_and_abort(lab: Lab) -> None:
    assert lab.run("setup_dpdk", reboot=0, **PARAMS).returncode == 0
    lab.set_hugepages(0)
    run = lab.run("setup_dpdk", reboot=1, **PARAMS)
    assert run.returncode == 2
    assert run.reported()[-1] == ("setup_dpdk/verify", "WARN")
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert "No hugepages are reserved" in run.stderr
    assert ("setup_dpdk/verify", "PASS") not in run.reported()


def test_unexpected_reboot_before_persistent_part_aborts(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=1, **PARAMS)
    assert run.returncode == 2
    assert run.reported() == [("setup_dpdk/abort", "WARN")]
    assert "before the persistent setup finished" in run.stderr
    assert run.called("rstrnt-abort")


def test_missing_nic_is_warn_and_abort(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, TEST_NICS="0000:03:00.0 0000:05:00.0", ISOLATED_CPUS="2-11")
    assert run.returncode == 2
    assert run.reported() == [("setup_dpdk/environment", "WARN")]
    assert "Test NIC 0000:05:00.0 is missing" in run.stderr
    assert not run.called("tuned-adm")


def test_bind_failure_is_warn_and_abort(lab: Lab) -> None:
    assert lab.run("setup_dpdk", reboot=0, **PARAMS).returncode == 0
    run = lab.run("setup_dpdk", reboot=1, SHIM_DEVBIND_RC="1", **PARAMS)
    assert run.returncode == 2
    assert run.reported()[-1] == ("setup_dpdk/bind", "WARN")
    assert "cannot bind 0000:03:00.0 0000:03:00.1 to vfio-pci" in run.stderr


def test_parameters_from_inventory(lab: Lab) -> None:
    lab.add_nic("0000:81:00.0", "ens8f0")
    lab.add_nic("0000:81:00.1", "ens8f1")
    inventory = REPO / "vsperf_configs" / "inventory.example.yaml"
    run = lab.run("setup_dpdk", reboot=0, INVENTORY=str(inventory), SETUP_DPDK_HOST="moongen01.example.com")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "isolated_cores=12-23" in (lab.etc / "tuned" / "cpu-partitioning-variables.conf").read_text()


def test_relative_inventory_resolves_against_repository(lab: Lab) -> None:
    run = lab.run(
        "setup_dpdk", reboot=0, INVENTORY="vsperf_configs/inventory.example.yaml", SETUP_DPDK_HOST="nohost"
    )
    assert run.returncode == 2
    assert "Cannot read the inventory entry of 'nohost'" in run.stderr


def test_missing_parameters_abort(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, TEST_NICS=NICS)
    assert run.returncode == 2
    assert "Parameter ISOLATED_CPUS is required" in run.stderr
    assert run.reported() == [("setup_dpdk/abort", "WARN")]


def test_bad_pci_address_aborts(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, TEST_NICS="eth0", ISOLATED_CPUS="2-11")
    assert run.returncode == 2 and "'eth0' is not a PCI address" in run.stderr


def test_standalone_without_harness_prints_results(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", harness=False)
    run = lab.run("setup_dpdk", reboot=None, **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RESULT setup_dpdk/persistent: PASS" in run.stdout
    assert "Standalone run: reboot the machine, then run again with REBOOTCOUNT=1" in run.stdout
    run = lab.run("setup_dpdk", reboot=None, REBOOTCOUNT="1", **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RESULT setup_dpdk/verify: PASS" in run.stdout
    assert (lab.state / "results.txt").read_text().splitlines()[-1] == "PASS setup_dpdk/verify "


def test_legacy_rhts_commands(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "lab", harness=False)
    generic = Path(__file__).with_name("shims") / "generic.sh"
    for name in ("rhts-report-result", "rhts-submit-log", "rhts-reboot"):
        (lab.bin / name).symlink_to(generic)
    run = lab.run("setup_dpdk", reboot=None, REBOOTCOUNT="0", JOBID="42", **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    reports = run.called("rhts-report-result")
    assert [r[:2] for r in reports] == [["setup_dpdk/environment", "PASS"], ["setup_dpdk/persistent", "PASS"]]
    assert reports[1][2].endswith("02-persistent.log") and reports[1][3] == "0"
    assert run.calls[-1] == ["rhts-reboot"]


def test_make_run_works_without_rhts_include(tmp_path: Path) -> None:
    # Beaker's harness runs `make run` in the task directory (compat mode); /usr/share/rhts is absent here.
    assert not Path("/usr/share/rhts/lib/rhts-make.include").exists()
    copy = tmp_path / "repo"
    shutil.copytree(
        REPO / "beaker_tasks", copy / "beaker_tasks", ignore=shutil.ignore_patterns("testinfo.desc")
    )
    shutil.copytree(REPO / "vsperf_configs", copy / "vsperf_configs")
    lab = Lab(tmp_path / "lab")

    env = lab.env(RSTRNT_REBOOTCOUNT="0", **PARAMS)
    proc = subprocess.run(
        ["make", "run"],
        cwd=copy / "beaker_tasks" / "setup_dpdk",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "RESULT setup_dpdk/persistent: PASS" in proc.stdout
    desc = (copy / "beaker_tasks" / "setup_dpdk" / "testinfo.desc").read_text()
    assert "Name:            /ovsperf/setup_dpdk" in desc
    assert "Path:            /mnt/tests/ovsperf/setup_dpdk" in desc


def test_inventory_found_without_the_parameter(lab: Lab) -> None:
    lab.add_nic("0000:81:00.0", "ens8f0")
    lab.add_nic("0000:81:00.1", "ens8f1")
    inventory = REPO / "vsperf_configs" / "inventory.example.yaml"
    run = lab.run(
        "setup_dpdk", reboot=0, OVSPERF_INVENTORY=str(inventory), SETUP_DPDK_HOST="moongen01.example.com"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Using the host inventory {inventory}" in run.stdout
    assert "isolated_cores=12-23" in (lab.etc / "tuned" / "cpu-partitioning-variables.conf").read_text()


DEBIAN_OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nID=debian\n'
GRUB_DEFAULT = (
    "# If you change this file, run 'update-grub' afterwards.\n"
    "GRUB_DEFAULT=0\n"
    'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n'
    'GRUB_CMDLINE_LINUX="console=ttyS0 hugepages=4"\n'
)


def _debian(lab: Lab, os_release: str = DEBIAN_OS_RELEASE) -> None:
    (lab.etc / "os-release").write_text(os_release)
    (lab.etc / "default").mkdir(exist_ok=True)
    (lab.etc / "default" / "grub").write_text(GRUB_DEFAULT)


def test_debian_kernel_arguments_go_into_etc_default_grub_and_update_grub(lab: Lab) -> None:
    _debian(lab)
    args = "default_hugepagesz=1G hugepages=16 intel_iommu=on iommu=pt"
    run = lab.run("setup_dpdk", reboot=0, KERNEL_ARGS=args, **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Host family: debian" in run.stdout
    assert not run.called("grubby")
    assert run.called("update-grub") == [[]]
    assert run.index("update-grub") < run.index("rstrnt-reboot")
    assert (lab.etc / "default" / "grub").read_text() == GRUB_DEFAULT.replace(
        'GRUB_CMDLINE_LINUX="console=ttyS0 hugepages=4"',
        'GRUB_CMDLINE_LINUX="console=ttyS0 default_hugepagesz=1G hugepages=16 intel_iommu=on iommu=pt"',
    )  # hugepages=4 replaced, the other lines (GRUB_CMDLINE_LINUX_DEFAULT too) kept
    # Debian's irqbalance reads /etc/default/irqbalance; nothing is written under sysconfig.
    assert (lab.etc / "default" / "irqbalance").read_text() == "IRQBALANCE_BANNED_CPULIST=2-11\n"
    assert not (lab.etc / "sysconfig").exists()
    # A second run (a rerun of boot 0) adds nothing twice.
    again = lab.run("setup_dpdk", reboot=0, KERNEL_ARGS=args, **PARAMS)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (lab.etc / "default" / "grub").read_text().count("hugepages=16") == 1


def test_an_ubuntu_host_is_debian_family_by_id_like(lab: Lab) -> None:
    _debian(lab, 'NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n')
    (lab.etc / "default" / "grub").write_text("GRUB_DEFAULT=0\n")  # no GRUB_CMDLINE_LINUX line yet
    run = lab.run("setup_dpdk", reboot=0, KERNEL_ARGS="intel_iommu=on", **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Host family: debian" in run.stdout
    grub = (lab.etc / "default" / "grub").read_text()
    assert grub == 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="intel_iommu=on"\n'
    assert run.called("update-grub") == [[]] and not run.called("grubby")


def test_a_debian_host_without_kernel_args_still_regenerates_grub_for_tuned(lab: Lab) -> None:
    """tuned's CPU isolation reaches the next boot through /etc/grub.d/00_tuned only after update-grub."""
    _debian(lab)
    before = (lab.etc / "default" / "grub").read_text()
    run = lab.run("setup_dpdk", reboot=0, **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.called("update-grub") == [[]] and not run.called("grubby")
    assert run.index("tuned-adm") < run.index("update-grub") < run.index("rstrnt-reboot")
    assert (lab.etc / "default" / "grub").read_text() == before  # no argument of ours was added


def test_a_debian_host_without_etc_default_grub_is_warn_and_abort(lab: Lab) -> None:
    _debian(lab)
    (lab.etc / "default" / "grub").unlink()
    run = lab.run("setup_dpdk", reboot=0, KERNEL_ARGS="intel_iommu=on", **PARAMS)
    assert run.returncode == 2
    assert run.reported()[-1] == ("setup_dpdk/persistent", "WARN")
    assert "Cannot add the kernel arguments 'intel_iommu=on'" in run.stderr
    assert "is grub2-common installed?" in run.stderr
    assert not run.called("update-grub") and not run.called("rstrnt-reboot")


def test_kernel_arguments_that_are_not_plain_words_are_refused_before_anything_changes(lab: Lab) -> None:
    """/etc/default/grub is sourced as shell by update-grub: a quote, $( ), a glob never reach it."""
    _debian(lab)
    for bad in ('intel_iommu=on" ; touch /tmp/pwned ; "', "hugepages=$(reboot)", "iommu=pt *", "a=`id`"):
        run = lab.run("setup_dpdk", reboot=0, KERNEL_ARGS=bad, **PARAMS)
        assert run.returncode == 2, bad
        assert "is not a kernel argument like hugepages=16" in run.stderr, bad
        assert (lab.etc / "default" / "grub").read_text() == GRUB_DEFAULT, bad
        assert not run.called("update-grub") and not run.called("grubby") and not run.called("rstrnt-reboot")


def test_a_red_hat_host_keeps_grubby_and_sysconfig(lab: Lab) -> None:
    (lab.etc / "os-release").write_text('NAME="Red Hat Enterprise Linux"\nID="rhel"\nID_LIKE="fedora"\n')
    run = lab.run("setup_dpdk", reboot=0, KERNEL_ARGS="intel_iommu=on iommu=pt", **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Host family: redhat" in run.stdout
    assert run.called("grubby") == [["--update-kernel=ALL", "--args=intel_iommu=on iommu=pt"]]
    assert not run.called("update-grub")
    assert (lab.etc / "sysconfig" / "irqbalance").read_text() == "IRQBALANCE_BANNED_CPULIST=2-11\n"


def _nothing_changed(lab: Lab, run: object) -> None:
    calls = lab.calls()
    assert not [
        c for c in calls if c[0] in ("tuned-adm", "systemctl", "dpdk-devbind.py", "modprobe", "grubby")
    ]
    assert not [c for c in calls if c[:3] == ["ip", "link", "set"]]
    assert not (lab.etc / "tuned").exists() and not (lab.state / "persistent.done").exists()
    assert lab.driver("0000:03:00.0") == lab.driver("0000:03:00.1") == "ixgbe"


def test_a_nic_with_the_host_s_address_is_refused_before_any_change(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, SHIM_IP_ADDR_DEV="ens1f1", **PARAMS)
    assert run.returncode == 2
    assert run.reported() == [("setup_dpdk/environment", "WARN")]
    assert (
        "Test NIC 0000:03:00.1 is the kernel interface ens1f1, which carries this host's own traffic"
        in run.stderr
    )
    assert "(it has the address 192.0.2.7/24)" in run.stderr
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    _nothing_changed(lab, run)


def test_a_nic_with_the_default_route_is_refused_before_any_change(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, SHIM_IP_ROUTE_DEV="ens1f0", **PARAMS)
    assert run.returncode == 2
    assert "Test NIC 0000:03:00.0 is the kernel interface ens1f0" in run.stderr
    assert "it carries the default route (default via 192.0.2.1 dev ens1f0" in run.stderr
    _nothing_changed(lab, run)


def test_after_the_reboot_a_management_nic_is_refused_before_binding(lab: Lab) -> None:
    assert lab.run("setup_dpdk", reboot=0, **PARAMS).returncode == 0
    run = lab.run("setup_dpdk", reboot=1, SHIM_IP_ADDR_DEV="ens1f0", **PARAMS)
    assert run.returncode == 2
    assert run.reported() == [("setup_dpdk/bind", "WARN")]
    assert "0000:03:00.0 is the kernel interface ens1f0" in run.stderr
    assert not run.called("dpdk-devbind.py") and not run.called("modprobe")
    assert ["link", "set", "dev", "ens1f0", "down"] not in run.called("ip")
    assert lab.driver("0000:03:00.0") == "ixgbe"


def test_a_pci_address_that_does_not_exist_is_refused_naming_it(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, TEST_NICS="0000:03:00.0 0000:09:00.1", ISOLATED_CPUS="2-11")
    assert run.returncode == 2
    assert "Test NIC 0000:09:00.1 is missing on" in run.stderr
    assert "no PCI device 0000:09:00.1" in run.stderr
    _nothing_changed(lab, run)


def test_a_nic_on_another_interface_s_route_passes(lab: Lab) -> None:
    run = lab.run("setup_dpdk", reboot=0, SHIM_IP_ROUTE_DEV="eno1", SHIM_IP_ADDR_DEV="eno1", **PARAMS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert ["-o", "addr", "show", "dev", "ens1f0", "scope", "global"] in run.called("ip")
