"""The KVM probe's fallback and its per-boot memory, the SSH command line, and the QMP client's protocol."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovsperf_common.deadline import Deadline
from vlab import guest
from vlab.config import LabPaths
from vlab.image import Image
from vlab.qemu import Accel
from vlab.qmp import Qmp, QmpError


def _image(tmp_path: Path) -> Image:
    return Image(disk=tmp_path / "root.qcow2", kernel=tmp_path / "vmlinuz", initrd=tmp_path / "initrd.img",
                 bootloader=tmp_path / "grub.lnx", kernel_version="6.1.0-99-amd64", built_at=1.0)  # fmt: skip


def test_no_usable_dev_kvm_falls_back_to_tcg_with_a_warning_and_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    paths = LabPaths(tmp_path)
    monkeypatch.setattr(guest.os, "access", lambda _path, _mode: False)
    assert guest.choose_accel(paths, _image(tmp_path)) is Accel.TCG
    assert (
        "KVM cannot run the lab here (/dev/kvm is missing or not accessible); falling back to TCG"
        in caplog.text
    )
    kept = json.loads(paths.accel_file.read_text())
    assert kept == {"host_boot_id": guest.host_boot_id(), "kernel": "6.1.0-99-amd64", "accel": "tcg",
                    "reason": "/dev/kvm is missing or not accessible"}  # fmt: skip

    def no_probe(*_args: object, **_kwargs: object) -> tuple[Accel, str]:
        raise AssertionError("probed again on the same boot of the host")

    monkeypatch.setattr(guest, "probe_kvm", no_probe)
    assert guest.choose_accel(paths, _image(tmp_path)) is Accel.TCG
    assert guest.choose_accel(paths, _image(tmp_path), forced=Accel.KVM) is Accel.KVM
    paths.accel_file.write_text(json.dumps({**kept, "host_boot_id": "another boot"}))
    with pytest.raises(AssertionError, match="probed again"):
        guest.choose_accel(paths, _image(tmp_path))


def test_the_ssh_command_uses_the_lab_key_and_known_hosts_on_127_0_0_1(tmp_path: Path) -> None:
    paths = LabPaths(tmp_path)
    argv = guest.ssh_argv(paths, 2223, "uname", "-r")
    assert argv[:5] == ["ssh", "-i", str(tmp_path / "id_ed25519"), "-p", "2223"]
    assert f"UserKnownHostsFile={tmp_path / 'known_hosts'}" in argv and "BatchMode=yes" in argv
    assert argv[-3:] == ["root@127.0.0.1", "uname", "-r"]
    assert "BatchMode=yes" not in guest.ssh_argv(paths, 2223, batch=False)


@pytest.fixture
def qmp_server(tmp_path: Path) -> Iterator[tuple[Path, list[dict[str, object]]]]:
    """A QMP peer on a unix socket: greeting, capabilities, an event, then HMP replies (a double)."""
    path = tmp_path / "qmp.sock"
    seen: list[dict[str, object]] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rwb") as stream:
            stream.write(b'{"QMP": {"version": {}, "capabilities": []}}\n')
            stream.flush()
            for line in stream:
                request = json.loads(line)
                seen.append(request)
                if request["execute"] == "qmp_capabilities":
                    reply: dict[str, object] = {"return": {}}
                elif request["arguments"]["command-line"] == "loadvm missing":  # type: ignore[index]
                    reply = {"return": "Error: Snapshot 'missing' does not exist in one or more devices\r\n"}
                else:
                    stream.write(b'{"event": "STOP", "timestamp": {}}\n')
                    reply = {"return": ""}
                stream.write(json.dumps(reply).encode() + b"\n")
                stream.flush()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, seen
    server.close()
    thread.join(timeout=5)


def test_qmp_runs_hmp_commands_and_reports_their_errors(
    qmp_server: tuple[Path, list[dict[str, object]]],
) -> None:
    path, seen = qmp_server
    with Qmp(path, Deadline(what="qmp", timeout_s=10.0)) as qmp:
        qmp.hmp("savevm vlab-ready")
        with pytest.raises(QmpError) as caught:
            qmp.hmp("loadvm missing")
    assert str(caught.value) == (
        f"QEMU 'loadvm missing' on '{path}' failed: "
        "Error: Snapshot 'missing' does not exist in one or more devices"
    )
    assert [s["execute"] for s in seen] == [
        "qmp_capabilities",
        "human-monitor-command",
        "human-monitor-command",
    ]
    assert seen[1]["arguments"] == {"command-line": "savevm vlab-ready"}


def test_a_silent_qmp_socket_times_out_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "silent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        with pytest.raises(QmpError) as caught:
            Qmp(path, Deadline(what="qmp", timeout_s=0.5))
    assert str(caught.value) == f"QMP socket '{path}' gave no answer within 0.5 s."


FAKE_QEMU = """#!/bin/bash
# Stand-in for qemu-system-x86_64 under -accel kvm: FAKE_KVM=abort exits as QEMU does on this
# machine's paravirtual KVM; FAKE_KVM=boots writes the kernel's init line to the serial file.
for arg in "$@"; do [[ ${arg} == file:* ]] && serial=${arg#file:}; done
if [[ ${FAKE_KVM} == abort ]]; then
    echo "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69" >&2
    exit 134
fi
printf '[    0.9] Run /init as init process\\n' > "${serial}"
exec sleep 60
"""


@pytest.mark.parametrize(
    ("mode", "accel", "reason"),
    [
        (
            "abort",
            Accel.TCG,
            "QEMU exited with status 134 under KVM: qemu-system-x86_64: error: failed to set MSR",
        ),
        ("boots", Accel.KVM, "kernel reached its init in "),
    ],
)
def test_the_kvm_probe_boots_the_kernel_once_and_reads_the_console(
    mode: str, accel: Accel, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "qemu-system-x86_64").write_text(FAKE_QEMU, encoding="utf-8")
    (bin_dir / "qemu-system-x86_64").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{guest.os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KVM", mode)
    monkeypatch.setattr(guest.os, "access", lambda _path, _mode: True)
    found, why = guest.probe_kvm(LabPaths(tmp_path / "state"), _image(tmp_path), timeout_s=20.0)
    assert found is accel and why.startswith(reason), why
