"""PVP and PVVP through QEMU guests: command lines, placement, memory refusals and boot failures.

The guests themselves boot in ``make vlab-test`` (``ovsperf-vlab guest-test``: minutes of TCG); here
a stand-in QEMU (a shell script) plays them: one that prints the console marker, one that never
does, one that exits. The boot-failure tests run the real testbed with a sandboxed OVS-DPDK.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import time
from pathlib import Path

import pytest

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import GuestLoopback, Topology, VsperfTest
from ovsperf_common.labfiles import GUEST_BOOT_KEY, GUEST_ERROR_PREFIX, GUEST_MARKER
from ovsperf_lab import testbed, topology
from ovsperf_lab.errors import LabError, RefusedScenarioError, VnfError
from ovsperf_lab.generators.dpdk import start as dpdk_generator
from ovsperf_lab.machine import MachineFacts, probe_machine
from ovsperf_lab.plan import LabOptions, VnfKind, plan_run
from ovsperf_lab.run import _guest
from ovsperf_lab.state import HUGEPAGE_DIR, LabRunState, release
from ovsperf_lab.vnf import (
    GuestAccel,
    GuestImageInfo,
    guest_mac,
    guest_serial_log,
    make_testpmd_argv,
    qemu_argv,
    read_guest_image,
    wait_guests_ready,
)
from tests.ovsperf_lab.conftest import assert_released
from vlab import guestimage

CATALOG = load_catalog()
FACTS = probe_machine()
PVVP = CATALOG.get("OVS_DPDK1q_PVVP")
PVP_BRIDGE = CATALOG.get("OVS_DPDK1q_GUEST_linuxbridge")
SOCKS = (Path("/run/x/vm0.sock"), Path("/run/x/vm1.sock"))


def machine(**kw: object) -> MachineFacts:
    base: dict[str, object] = dict(
        cpus=(0, 1),
        is_root=True,
        hugetlbfs_mounted=True,
        hugepages_2m_free=8192,
        testpmd="/usr/bin/dpdk-testpmd",
        qemu="/usr/bin/qemu-system-x86_64",
        kvm=False,
    )
    base.update(kw)
    return dataclasses.replace(FACTS, **base)  # type: ignore[arg-type]


@pytest.fixture
def image(tmp_path: Path) -> Path:
    """A guest image as ``ovsperf-vlab guest-image`` leaves it: disk, ``.kernel`` and ``.json``."""
    disk = tmp_path / "guest.qcow2"
    disk.write_bytes(b"QFI\xfb")
    guestimage.kernel_path(disk).write_bytes(b"grub")
    guestimage.manifest_path(disk).write_text(
        json.dumps({"builder": guestimage.BUILDER, "loopback": "linux_bridge", "marker": GUEST_MARKER})
    )
    return disk


def test_argv_per_accelerator_and_kernel() -> None:
    common = dict(
        binary="qemu", image=Path("/i.qcow2"), cpu=1, vcpus=2, memory_mb=512, sockets=SOCKS, queues=1
    )
    kvm = qemu_argv(**common, serial_log=Path("/s.log"))  # type: ignore[arg-type]
    assert (
        kvm[3:7] == ["qemu", "-enable-kvm", "-cpu", "host"] and "-kernel" not in kvm and "-accel" not in kvm
    )
    tcg = qemu_argv(**common, serial_log=Path("/s.log"), accel=GuestAccel.TCG, kernel=Path("/i.qcow2.kernel"))  # type: ignore[arg-type]
    assert tcg[3:8] == ["qemu", "-accel", "tcg,tb-size=64", "-cpu", "max"] and "-enable-kvm" not in tcg
    assert tcg[tcg.index("-kernel") + 1] == "/i.qcow2.kernel" and "-no-reboot" in tcg
    assert tcg[tcg.index("-serial") + 1] == "file:/s.log"
    # No MSI-X under TCG: QEMU 7.2 crashes in vhost_net_start's vector notifiers without irqfd.
    assert [a for a in tcg if a.startswith("virtio-net-pci")] == [
        "virtio-net-pci,netdev=net0,mac=52:54:00:00:01:01,mq=off,vectors=0",
        "virtio-net-pci,netdev=net1,mac=52:54:00:00:01:02,mq=off,vectors=0",
    ]
    assert not any("vectors=" in a for a in kvm)


def test_each_guest_has_its_own_macs_and_console_log(tmp_path: Path) -> None:
    macs = [guest_mac(g, n) for g in range(2) for n in range(2)]
    assert macs == ["52:54:00:00:01:01", "52:54:00:00:01:02", "52:54:00:00:02:01", "52:54:00:00:02:02"]
    second = " ".join(qemu_argv(binary="q", image=Path("/i"), cpu=0, vcpus=1, memory_mb=256, sockets=SOCKS,
                                queues=1, serial_log=Path("/s"), index=1))  # fmt: skip
    assert "mac=52:54:00:00:02:01" in second and "mac=52:54:00:00:02:02" in second
    assert [guest_serial_log(tmp_path, i).name for i in range(3)] == [
        "guest-serial.log",
        "guest-2-serial.log",
        "guest-3-serial.log",
    ]


def test_the_lab_reads_what_the_image_builder_writes(image: Path) -> None:
    assert read_guest_image(image) == GuestImageInfo(
        guestimage.kernel_path(image), "linux_bridge", GUEST_MARKER
    )
    bare = image.with_name("bare.qcow2")
    bare.write_bytes(b"QFI\xfb")
    assert read_guest_image(bare) == GuestImageInfo(None, None, None)
    # A manifest without the fields: no marker, the scenario's loopback.
    quiet = image.with_name("quiet.qcow2")
    quiet.with_name("quiet.qcow2.json").write_text(json.dumps({"builder": "someone"}))
    assert read_guest_image(quiet) == GuestImageInfo(None, None, None)
    plan = plan_run(PVP_BRIDGE, machine(), LabOptions(guest_image=bare))
    assert plan.guest is not None and plan.guest.marker is None
    assert testbed.TestbedConfig.for_plan(plan, machine()).forwarder.marker is None  # type: ignore[union-attr]


def test_pvvp_with_a_guest_image_plans_two_guests_on_their_own_cpus(image: Path) -> None:
    facts = machine(cpus=(0, 1, 2, 3))
    plan = plan_run(PVVP, facts, LabOptions(guest_image=image, guest_memory_mb=512))
    assert plan.vnf is VnfKind.QEMU and plan.guest is not None
    assert plan.guest.count == 2 and plan.guest.accel is GuestAccel.TCG  # /dev/kvm not usable
    assert plan.guest.boot_timeout_s == 600.0 and plan.guest.memory_mb == 512
    assert plan.guest.kernel == guestimage.kernel_path(image)
    # The scenario asks for testpmd in the guests; the image runs a bridge, and the results say so.
    assert plan.guest.loopback is GuestLoopback.LINUX_BRIDGE
    assert _guest(plan, VsperfTest.PVVP_TPUT) is GuestLoopback.LINUX_BRIDGE
    assert any("asks for the 'testpmd' loopback" in w and "record 'linux_bridge'" in w for w in plan.warnings)
    config = testbed.TestbedConfig.for_plan(plan, facts)
    spec = config.forwarder
    assert spec is not None and spec.kind is VnfKind.QEMU and spec.accel is GuestAccel.TCG
    assert (spec.cpu_of(0), spec.cpu_of(1)) == (2, 3) and spec.kernel == guestimage.kernel_path(image)


def test_kvm_asked_for_where_dev_kvm_is_unusable_is_refused(image: Path) -> None:
    with pytest.raises(RefusedScenarioError, match=r"'/dev/kvm' is not usable.*'--guest-accel tcg'"):
        plan_run(PVP_BRIDGE, machine(), LabOptions(guest_image=image, guest_accel=GuestAccel.KVM))
    plan = plan_run(PVP_BRIDGE, machine(kvm=True), LabOptions(guest_image=image, guest_boot_timeout_s=30.0))
    assert plan.guest is not None and plan.guest.accel is GuestAccel.KVM and plan.guest.boot_timeout_s == 30.0


def test_more_guest_memory_than_free_hugepages_is_refused_before_anything_starts(image: Path) -> None:
    # OVS 512 + generator 256 + 2 guests x 2048 (the scenario's 4096, capped) = 4864 MiB: 2432 + 64 pages.
    with pytest.raises(RefusedScenarioError) as refused:
        plan_run(PVVP, machine(hugepages_2m_free=1000), LabOptions(guest_image=image))
    message = str(refused.value)
    assert "2496 free 2 MB hugepages are needed (4864 MiB, of which 2 QEMU guest(s) x 2048 MiB" in message
    assert "1000 are free (2000 MiB)" in message
    fits = 512 + 256 + 2 * 256
    plan = plan_run(
        PVVP, machine(hugepages_2m_free=fits // 2 + 64), LabOptions(guest_image=image, guest_memory_mb=256)
    )
    assert plan.guest is not None and plan.guest.memory_mb == 256


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ('{"marker": "ovsperf', "is unreadable"),
        ('["marker"]', "is not a JSON object"),
        (json.dumps({"marker": "up\nnow"}), "field 'marker' must be a string of 1 to 200 printable"),
        (json.dumps({"marker": "x" * 201}), "field 'marker' must be a string of 1 to 200 printable"),
        (json.dumps({"marker": ""}), "field 'marker' must be a string of 1 to 200 printable"),
        (json.dumps({"loopback": 3}), "field 'loopback' must be a string of 1 to 200 printable"),
        (json.dumps({"complete": False}), "field 'complete' is false"),
    ],
    ids=["bad-json", "not-object", "newline", "too-long", "empty", "not-string", "incomplete"],
)
def test_an_invalid_manifest_is_refused_naming_the_file_and_field(
    image: Path, manifest: str, field: str
) -> None:
    path = guestimage.manifest_path(image)
    path.write_text(manifest)
    with pytest.raises(LabError) as refused:
        plan_run(PVP_BRIDGE, machine(), LabOptions(guest_image=image))
    assert f"Guest image manifest '{path}'" in str(refused.value) and field in str(refused.value)


def test_a_huge_manifest_is_not_read_whole(image: Path) -> None:
    guestimage.manifest_path(image).write_text(json.dumps({"marker": "m", "pad": "x" * 70000}))
    with pytest.raises(LabError, match="is unreadable"):
        read_guest_image(image)


@pytest.mark.parametrize("bad", ["/v/guest.qcow2,snapshot=off", "/v/guest\n.qcow2"])
def test_a_guest_image_path_qemu_would_split_is_refused(bad: str) -> None:
    with pytest.raises(LabError, match=r"Option '--guest-image'.*comma or a control character"):
        LabOptions(guest_image=Path(bad))


@pytest.mark.parametrize("bad", [64, 255, 0])
def test_guest_memory_option_is_checked(bad: int) -> None:
    with pytest.raises(LabError, match="Option '--guest-memory-mb' must be an even number"):
        LabOptions(guest_image=Path("/g.qcow2"), guest_memory_mb=bad)


@pytest.mark.parametrize(
    ("field", "value", "option"),
    [
        ("guest_accel", GuestAccel.TCG, "--guest-accel"),
        ("guest_memory_mb", 256, "--guest-memory-mb"),
        ("guest_boot_timeout_s", 30.0, "--guest-boot-timeout-s"),
    ],
)
def test_guest_options_without_a_guest_image_are_refused(
    field: str, value: object, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(LabError, match=f"Option '{option}' needs '--guest-image'"):
        LabOptions(**{field: value})  # type: ignore[arg-type]
    from ovsperf_lab.cli import main

    cli_value = value.value if isinstance(value, GuestAccel) else str(value)
    assert main(["run", "--config", "OVS_DPDK1q_PVVP", option, cli_value]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"Option '{option}' needs '--guest-image'" in captured.err


def test_a_run_records_what_the_image_runs_even_when_the_scenario_names_no_guest(image: Path) -> None:
    no_guest = dataclasses.replace(PVP_BRIDGE, guest=None)
    plan = plan_run(no_guest, machine(), LabOptions(guest_image=image))
    assert plan.guest is not None and plan.guest.loopback is GuestLoopback.LINUX_BRIDGE
    assert _guest(plan, VsperfTest.PVP_TPUT) is GuestLoopback.LINUX_BRIDGE


def stand_in_qemu(tmp_path: Path, body: str) -> Path:
    """Write a stand-in QEMU: it finds its console (``-serial file:PATH``) and guest, then runs ``body``."""
    script = tmp_path / "qemu-standin"
    script.write_text(
        "#!/bin/bash\n"
        'serial=""; mac=""\n'
        'while [ "$#" -gt 0 ]; do\n'
        '  case "$1" in -serial) serial="${2#file:}"; shift;;\n'
        '    -device) mac="${2##*mac=}"; mac="${mac%%,*}";; esac\n'
        "  shift\n"
        "done\n"
        'guest="${mac:12:2}"\n'
        f"{body}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_guests_start_on_their_cpus_with_their_logs_and_report_their_boot_time(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    body = (
        'echo "booting guest $guest on $(grep Cpus_allowed_list /proc/self/status | cut -f2)" >> "$serial"\n'
        f'sleep 0.3; echo "{GUEST_MARKER} eth0 eth1" >> "$serial"\n'
        "exec sleep 60"
    )
    qemu = str(stand_in_qemu(tmp_path, body))
    spec = testbed.ForwarderSpec(VnfKind.QEMU, qemu, cpus[0], 256, guest_image=tmp_path / "g.qcow2",
                                 next_cpus=(cpus[-1],), accel=GuestAccel.TCG)  # fmt: skip
    config = testbed.TestbedConfig(
        testbed.CpuPlan(0, 0, (0,), cpus[0]), 1, 256, 0, 512, 256, "trafficgen", forwarder=spec
    )
    state = LabRunState.create(tmp_path / "state", "ovsperf-lab-gt")
    try:
        guests = [testbed._start_forwarder(spec, config, state, SOCKS, i) for i in range(2)]
        times = wait_guests_ready([(g, guest_serial_log(state.run_dir, i)) for i, g in enumerate(guests)],
                                  timeout_s=20.0, accel=GuestAccel.TCG)  # fmt: skip
        assert [g.name for g in guests] == ["qemu", "qemu-2"]
        assert all(0.2 < t < 20.0 for t in times), times
        first = (state.run_dir / "guest-serial.log").read_text()
        second = (state.run_dir / "guest-2-serial.log").read_text()
        assert f"booting guest 01 on {cpus[0]}\n" in first and f"booting guest 02 on {cpus[-1]}\n" in second
        assert guests[0].argv[:3] == ["taskset", "-c", str(cpus[0])]
        assert guests[1].argv[:3] == ["taskset", "-c", str(cpus[-1])]
        start = time.monotonic()
        for g in guests:
            g.stop()
        assert time.monotonic() - start < 5.0  # SIGTERM at once: QEMU does not read Enter on stdin
        assert [p.name for p in state.processes if p.alive()] == []
    finally:
        release(state)


def stand_in_testbed(
    tmp_path: Path, body: str, accel: GuestAccel, run_id: str
) -> tuple[testbed.ForwarderSpec, testbed.TestbedConfig, LabRunState]:
    """Return a QEMU forwarder of a stand-in running ``body`` on CPU 0, its testbed config, a run state."""
    spec = testbed.ForwarderSpec(VnfKind.QEMU, str(stand_in_qemu(tmp_path, body)), 0, 256,
                                 guest_image=tmp_path / "g.qcow2", accel=accel)  # fmt: skip
    config = testbed.TestbedConfig(
        testbed.CpuPlan(0, 0, (0,), 0), 1, 256, 0, 512, 256, "trafficgen", forwarder=spec
    )
    return spec, config, LabRunState.create(tmp_path / "state", run_id)


def test_a_guest_that_never_prints_the_marker_is_named_with_its_console(tmp_path: Path) -> None:
    body = (
        'for i in $(seq 1 30); do echo "console line $i of guest $guest" >> "$serial"; done\n'
        f'[ "$guest" = 01 ] && echo "{GUEST_MARKER}" >> "$serial"\n'
        "exec sleep 60"
    )
    spec, config, state = stand_in_testbed(tmp_path, body, GuestAccel.KVM, "ovsperf-lab-gn")
    try:
        guests = [testbed._start_forwarder(spec, config, state, SOCKS, i) for i in range(2)]
        start = time.monotonic()
        with pytest.raises(VnfError) as raised:
            wait_guests_ready([(g, guest_serial_log(state.run_dir, i)) for i, g in enumerate(guests)],
                              timeout_s=2.0, accel=GuestAccel.KVM, interval_s=0.1)  # fmt: skip
        assert 2.0 <= time.monotonic() - start < 10.0
        message = str(raised.value)
        assert message.startswith("The guest 2 of the chain (qemu-2) did not come up within 2 s")
        assert "(QEMU still running; '--guest-boot-timeout-s' sets the limit" in message
        assert "try '--guest-accel tcg'" in message
        assert f"'{state.run_dir / 'guest-2-serial.log'}' ends with:" in message
        lines = message.splitlines()[1:]
        assert [line.strip() for line in lines] == [f"console line {i} of guest 02" for i in range(11, 31)]
    finally:
        release(state)
    assert [p.name for p in state.processes if p.alive()] == []


def test_a_guest_that_says_it_cannot_forward_fails_at_once_quoting_the_line(tmp_path: Path) -> None:
    body = (
        'echo "[    1.0] Linux booting" >> "$serial"\n'
        f'echo "{GUEST_ERROR_PREFIX}: found NICs \' enp0s3\', need 2" >> "$serial"\n'
        "exec sleep 60"
    )
    spec, config, state = stand_in_testbed(tmp_path, body, GuestAccel.TCG, "ovsperf-lab-ge")
    try:
        guest = testbed._start_forwarder(spec, config, state, SOCKS, 0)
        start = time.monotonic()
        with pytest.raises(VnfError) as raised:
            wait_guests_ready([(guest, guest_serial_log(state.run_dir, 0))], timeout_s=60.0,
                              accel=GuestAccel.TCG, interval_s=0.1)  # fmt: skip
        assert time.monotonic() - start < 10.0  # not the 60 s deadline
        assert str(raised.value).startswith(
            "The guest 1 of the chain (qemu) cannot forward: its console says "
            f"\"{GUEST_ERROR_PREFIX}: found NICs ' enp0s3', need 2\"."
        )
    finally:
        release(state)


def test_a_guest_whose_qemu_exits_is_named_with_its_status(tmp_path: Path) -> None:
    body = 'echo "qemu-system-x86_64: failed to set MSR (test)" >> "$serial"; exit 7'
    spec, config, state = stand_in_testbed(tmp_path, body, GuestAccel.TCG, "ovsperf-lab-gx")
    try:
        guest = testbed._start_forwarder(spec, config, state, SOCKS, 0)
        with pytest.raises(VnfError) as raised:
            wait_guests_ready(
                [(guest, guest_serial_log(state.run_dir, 0))], timeout_s=20.0, accel=GuestAccel.TCG
            )
        message = str(raised.value)
        assert message.startswith(
            f"The guest 1 of the chain (qemu) did not come up: its QEMU exited with status 7 before showing "
            f"'{GUEST_MARKER}'. Its console log '{state.run_dir / 'guest-serial.log'}' ends with:\n"
        )
        assert message.endswith("    qemu-system-x86_64: failed to set MSR (test)")
    finally:
        release(state)


@pytest.fixture
def state(run_state: LabRunState) -> LabRunState:
    """The shared run state (tests/ovsperf_lab/conftest.py: released and checked at the end)."""
    return run_state


@pytest.mark.dpdk
@pytest.mark.parametrize(
    ("second", "expected"),
    [
        ("exec sleep 120", "The guest 2 of the chain (qemu-2) did not come up within 3 s"),
        ("exit 7", "The guest 2 of the chain (qemu-2) did not come up: its QEMU exited with status 7"),
    ],
    ids=["hangs", "exits"],
)
def test_a_pvvp_guest_that_does_not_come_up_tears_the_testbed_down(
    state: LabRunState, tmp_path: Path, image: Path, second: str, expected: str
) -> None:
    """The second guest never forwards (or its QEMU exits): the testbed names it, stops both, removes all.

    An exit must be named as the guest's (with its console), not as a bare death of the process.
    """
    before = set(os.listdir(HUGEPAGE_DIR))
    body = (
        'echo "Linux version 6.1 (stand-in guest $guest)" >> "$serial"\n'
        f'if [ "$guest" = 01 ]; then echo "{GUEST_MARKER} enp0s3 enp0s4" >> "$serial"; exec sleep 120; fi\n'
        f"{second}"
    )
    qemu = stand_in_qemu(tmp_path, body)
    facts = machine(hugepages_2m_free=FACTS.hugepages_2m_free, cpus=FACTS.cpus, qemu=str(qemu))
    plan = plan_run(PVVP, facts, LabOptions(frame_sizes_bytes=(64,), guest_image=image, guest_memory_mb=256,
                                            guest_boot_timeout_s=3.0))  # fmt: skip
    config = testbed.TestbedConfig.for_plan(plan, facts)
    switch = testbed.Switch(state, config, testbed.SwitchBuild())
    lay = topology.layout(Topology.PVVP, state.run_dir / "sock")
    with (
        pytest.raises(VnfError) as raised,
        switch,
        testbed.open_testbed(switch, Topology.PVVP, dpdk_generator),
    ):
        pytest.fail("the testbed came up without its second guest")
    message = str(raised.value)
    assert message.startswith(expected)
    assert message.endswith("    Linux version 6.1 (stand-in guest 02)")
    assert f"'{state.run_dir / 'guest-2-serial.log'}' ends with:" in message
    assert [p.name for p in state.processes if p.alive()] == []
    assert {p.name for p in state.processes} >= {"qemu", "qemu-2"}
    assert [str(p.socket) for p in lay.ports if p.socket is not None and p.socket.exists()] == []
    release(state)
    assert_released(state)
    assert set(os.listdir(HUGEPAGE_DIR)) - before == set()


@pytest.mark.dpdk
def test_a_guest_of_an_image_without_a_marker_is_up_when_ovs_sees_its_ports(
    state: LabRunState, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An image that prints no marker (VSperf's, a user's): up when its virtio NICs come up in OVS.

    The stand-in QEMU prints nothing and execs a real ``dpdk-testpmd`` serving the guest's two
    vhost-user sockets, as the guest's virtio driver would: OVS sees both ports up, the testbed
    comes up without a console marker, and the wait names how it decided.
    """
    before = set(os.listdir(HUGEPAGE_DIR))
    bare = tmp_path / "vsperf-like.qcow2"
    bare.write_bytes(b"QFI\xfb")
    lay = topology.layout(Topology.PVP, state.run_dir / "sock")
    (sockets,) = lay.forwarder_sockets
    assert FACTS.testpmd is not None
    prefix = f"{state.run_dir.name}-g"
    testpmd = make_testpmd_argv(binary=FACTS.testpmd, cpu=FACTS.cpus[-1], file_prefix=prefix,
                                memory_mb=256, sockets=sockets, queues=1)  # fmt: skip
    qemu = stand_in_qemu(tmp_path, "exec " + " ".join(f"'{a}'" for a in testpmd))
    facts = machine(hugepages_2m_free=FACTS.hugepages_2m_free, cpus=FACTS.cpus, qemu=str(qemu))
    options = LabOptions(
        frame_sizes_bytes=(64,), guest_image=bare, guest_memory_mb=256, guest_boot_timeout_s=60.0
    )
    plan = plan_run(PVP_BRIDGE, facts, options)
    assert plan.guest is not None and plan.guest.marker is None and plan.guest.kernel is None
    config = testbed.TestbedConfig.for_plan(plan, facts)
    switch = testbed.Switch(state, config, testbed.SwitchBuild())
    caplog.set_level("INFO", logger="ovsperf_lab.vnf")
    with switch, testbed.open_testbed(switch, Topology.PVP, dpdk_generator) as bed:
        assert bed.vnf is not None and bed.vnf.name == "qemu" and bed.vnf.exit_status() is None
        states = topology.port_link_states(switch.ovs, lay)
        assert [states[p.name] for p in lay.vnf_ports] == ["up", "up"]
        assert len(bed.guest_boot_s) == 1 and 0.0 < bed.guest_boot_s[0] < 60.0
        assert (state.run_dir / "guest-serial.log").exists() is False  # it printed nothing at all
    assert "Guest 1 of the chain is up (its two vhost-user ports up in OVS)" in caplog.text
    assert [p.name for p in state.processes if p.alive()] == []
    release(state)
    assert_released(state)
    assert set(os.listdir(HUGEPAGE_DIR)) - before == set()


def test_the_command_line_refuses_guests_that_do_not_fit(
    image: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ovsperf_lab.cli import main

    argv = ["run", "--config", "OVS_DPDK1q_PVVP", "--guest-image", str(image), "--guest-accel", "tcg"]
    assert main([*argv, "--guest-memory-mb", "65536"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "of which 2 QEMU guest(s) x 65536 MiB ('--guest-memory-mb')" in captured.err
    assert main([*argv, "--guest-memory-mb", "100"]) == 2
    assert (
        "Option '--guest-memory-mb' must be an even number of MiB in [128, 65536]" in capsys.readouterr().err
    )


@pytest.mark.dpdk
def test_a_run_through_a_guest_writes_its_boot_time_into_the_metadata(
    tmp_path: Path, state_root: Path
) -> None:
    """A PVP run through one guest (a stand-in QEMU running testpmd) records the guest's boot time."""
    from ovsperf_lab.run import run_lab

    before = set(os.listdir(HUGEPAGE_DIR))
    bare = tmp_path / "vsperf-like.qcow2"
    bare.write_bytes(b"QFI\xfb")
    assert FACTS.testpmd is not None
    # The stand-in execs a real testpmd on the two sockets QEMU is given (-chardev socket,...,path=P).
    testpmd = make_testpmd_argv(binary=FACTS.testpmd, cpu=FACTS.cpus[-1], memory_mb=256, queues=1,
                                file_prefix="ovsperf-lab-standin-$$",
                                sockets=(Path("S0"), Path("S1")))  # fmt: skip
    quoted = " ".join(f'"{a}"' for a in testpmd).replace("path=S0", "path=${socks[0]}")
    script = tmp_path / "qemu-standin"
    script.write_text(
        "#!/bin/bash\n"
        "socks=()\n"
        'for a in "$@"; do case "$a" in socket,*) p="${a#*path=}"; socks+=("${p%%,*}");; esac; done\n'
        f"exec {quoted.replace('path=S1', 'path=${socks[1]}')}\n"
    )
    script.chmod(0o755)
    facts = machine(hugepages_2m_free=FACTS.hugepages_2m_free, cpus=FACTS.cpus, qemu=str(script))
    options = LabOptions(frame_sizes_bytes=(64,), final_trial_s=0.5, duration_sum_s=2.0,
                         search_duration_max_s=60.0, latency_levels_percent=(), ovs_socket_mem_mb=256,
                         guest_image=bare, guest_memory_mb=256, guest_boot_timeout_s=60.0,
                         tests=(VsperfTest.PVP_TPUT,))  # fmt: skip
    outcome = run_lab(
        plan_run(PVP_BRIDGE, facts, options), facts, output_root=tmp_path, state_root=state_root
    )
    assert outcome.complete, outcome.reason
    meta = json.loads((outcome.results_dir / "ovsperf-metadata.json").read_text())
    [(key, boots)] = meta[GUEST_BOOT_KEY].items()
    assert key == "result_0_pvp_tput" and len(boots) == 1 and 0.0 < boots[0] < 60.0
    assert set(os.listdir(HUGEPAGE_DIR)) - before == set()
