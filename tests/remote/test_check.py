"""``ovsperf-remote check`` against real sshd hosts in network namespaces: a readable table, and every
way a host can be unusable named with what to do."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from remote.cli import main
from remote.errors import AuthError, RemoteError, UnreachableError
from remote.ssh import Session, Target

from .conftest import Lab
from .sshd_hosts import keygen

REPO = Path(__file__).resolve().parents[2]


def check(lab: Lab, *extra: str, tg: str | None = None, dut: str | None = None) -> list[str]:
    return [
        "check",
        "--tg", tg or f"root@{lab.tg.address}",
        "--dut", dut or f"root@{lab.dut.address}",
        "--identity", str(lab.key),
        "--known-hosts", str(lab.known_hosts),
        "--ssh-config", str(lab.key.parent / "no-ssh-config"),
        "--connect-timeout", "5",
        *extra,
    ]  # fmt: skip


def rows(out: str) -> dict[tuple[str, str], tuple[str, str]]:
    """Parse the table: (host, check) → (result, detail)."""
    table: dict[tuple[str, str], tuple[str, str]] = {}
    for line in out.splitlines()[1:]:
        host, _role, name, result, *detail = line.split(maxsplit=4)
        table[(host, name)] = (result, detail[0] if detail else "")
    return table


def test_prepared_hosts_pass_every_check(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab.trust()
    assert main(check(lab)) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["host", "role", "check", "result", "detail"]
    table = rows(out)
    for host in (f"root@{lab.tg.address}", f"root@{lab.dut.address}"):
        assert [table[(host, c)][0] for c in ("ssh", "sudo", "tools", "hugepages", "nics")] == [
            "PASS", "PASS", "PASS", "PASS", "SKIP",
        ]  # fmt: skip
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(lab.dut.root / "host_key.pub")],
        capture_output=True, text=True, check=True,
    ).stdout.split()[1]  # fmt: skip
    assert table[(f"root@{lab.dut.address}", "ssh")][1] == f"as root; host key ssh-ed25519 {fingerprint}"
    assert "HugePages" not in out and " × " in table[(f"root@{lab.dut.address}", "hugepages")][1]


def test_ssh_config_and_inventory_name_the_hosts_and_missing_nics_fail(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host dut01.example.com\n  HostName {lab.dut.address}\n  User root\n  IdentityFile {lab.key}\n"
        f"Host moongen01.example.com\n  HostName {lab.tg.address}\n  User root\n"
    )
    args = [
        "check", "--tg", "moongen01.example.com", "--dut", "dut01.example.com",
        "--identity", str(lab.key), "--known-hosts", str(lab.known_hosts), "--ssh-config", str(config),
        "--inventory", str(REPO / "vsperf_configs" / "inventory.example.yaml"),
    ]  # fmt: skip
    assert main(args) == 2
    captured = capsys.readouterr()
    table = rows(captured.out)
    assert table[("root@dut01.example.com", "ssh")][0] == "PASS"
    # The example inventory's NICs are not on this machine's PCI bus.
    assert table[("root@dut01.example.com", "nics")] == (
        "FAIL",
        "not on the host's PCI bus: 0000:03:00.0, 0000:03:00.1",
    )
    assert "check(s) failed; the table says what to fix" in captured.err


def test_unknown_host_key_is_refused_then_recorded_on_request(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check(lab)) == 2
    table = rows(capsys.readouterr().out)
    result, detail = table[(f"root@{lab.dut.address}", "ssh")]
    assert result == "FAIL" and f"{lab.dut.address} is not in {lab.known_hosts}" in detail
    assert "--accept-new-host-key" in detail and not lab.known_hosts.exists()
    assert main(check(lab, "--accept-new-host-key")) == 0
    recorded = lab.known_hosts.read_text()
    assert lab.dut.host_key_line.split()[1] in recorded and lab.tg.host_key_line.split()[1] in recorded
    capsys.readouterr()
    assert main(check(lab)) == 0  # now known: no flag needed


def test_a_changed_host_key_is_refused_and_known_hosts_left_alone(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = keygen(tmp_path / "impostor").rsplit(" ", 1)[0]
    lab.known_hosts.write_text(lab.tg.known_hosts_line() + f"{lab.dut.address} {other}\n")
    before = lab.known_hosts.read_text()
    assert main(check(lab, "--accept-new-host-key")) == 2
    result, detail = rows(capsys.readouterr().out)[(f"root@{lab.dut.address}", "ssh")]
    assert result == "FAIL" and "CHANGED" in detail and "remove its line" in detail
    assert lab.known_hosts.read_text() == before


def test_a_key_the_host_does_not_know_is_an_auth_failure(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    stranger = tmp_path / "stranger"
    keygen(stranger)
    with pytest.raises(AuthError, match=r"refused our keys .* passwords are never used"):
        Session(Target(lab.dut.address, "root"), lab.settings(identities=(stranger,)))


def test_an_unreachable_host_fails_within_the_deadline(lab: Lab) -> None:
    lab.trust()
    started = time.monotonic()
    with pytest.raises(UnreachableError, match=f"Cannot reach root@{lab.dut.address}:2222"):
        Session(Target(lab.dut.address, "root", 2222), lab.settings())  # nothing listens there
    lab.dut.stop_sshd()
    with pytest.raises(UnreachableError, match="within 1 s"):
        Session(Target(lab.dut.address, "root"), lab.settings(connect_timeout_s=1.0))
    assert time.monotonic() - started < 10


def test_commands_stream_lines_and_keep_their_deadline(lab: Lab) -> None:
    lab.trust()
    with Session(Target(lab.dut.address, "root"), lab.settings()) as session:
        seen: list[tuple[str, str]] = []
        result = session.run(
            ["sh", "-c", "echo one; echo two >&2; printf 'no newline'; exit 3"],
            10,
            lambda s, line: seen.append((s, line)),
        )
        assert result.exit_status == 3 and result.stdout == "one\nno newline" and result.stderr == "two\n"
        assert sorted(seen) == [("stderr", "two"), ("stdout", "no newline"), ("stdout", "one")]
        started = time.monotonic()
        with pytest.raises(RemoteError, match="did not end within 1 s; stopped"):
            session.run(["sh", "-c", "sleep 31.5 & sleep 31.5"], 1)
        assert time.monotonic() - started < 8
        # Stopped with its children, not left running on the host.
        left = subprocess.run(["pgrep", "-f", "sleep 31.5"], capture_output=True, text=True, check=False)
        assert left.stdout == ""
        assert len(session.boot_id()) == 36  # the kernel's UUID


def test_the_connection_dropping_mid_command_is_a_clear_failure(lab: Lab) -> None:
    lab.trust()
    with Session(Target(lab.dut.address, "root"), lab.settings()) as session:

        def drop(stream: str, line: str) -> None:
            if line == "started":
                lab.dut.drop_sessions()

        started = time.monotonic()
        with pytest.raises(RemoteError, match=r"dropped|failed during"):
            session.run(["sh", "-c", "echo started; sleep 30"], 20, drop)
        assert time.monotonic() - started < 10


def test_sudo_asking_for_a_password_is_explained(
    lab: Lab, plain_user: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.trust()
    assert main(check(lab, dut=f"{plain_user}@{lab.dut.address}")) == 2
    result, detail = rows(capsys.readouterr().out)[(f"{plain_user}@{lab.dut.address}", "sudo")]
    assert result == "FAIL" and f"sudo asks {plain_user} for a password" in detail
    assert f"'{plain_user} ALL=(ALL) NOPASSWD: ALL'" in detail
    sudoers = Path(f"/etc/sudoers.d/{plain_user}")
    sudoers.write_text(f"{plain_user} ALL=(ALL) NOPASSWD: ALL\n")
    sudoers.chmod(0o440)
    assert main(check(lab, dut=f"{plain_user}@{lab.dut.address}")) == 0
    assert rows(capsys.readouterr().out)[(f"{plain_user}@{lab.dut.address}", "sudo")][0] == "PASS"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--dut", "root@bad host", "is not a host name"),
        ("--dut", "root@dut01:99999", "port '99999' is not 1…65535"),
        ("--tg", "r;m@tg01", "is not a user name"),
    ],
)
def test_bad_targets_are_named(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--tg", "tg01", "--dut", "dut01", option, value]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert option in err and message in err


def test_a_hostile_ssh_config_or_a_broken_inventory_is_named_before_connecting(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host dut01\n  HostName evil\\nhost\n  User root\n")
    with pytest.raises(RemoteError, match=r"The SSH config entry of dut01: .*HostName \(SSH config\)"):
        Session(Target("dut01"), lab.settings(ssh_config=config))
    config.write_text("Host dut01\n  HostName 192.0.2.1\n  User ro;ot\n")
    with pytest.raises(RemoteError, match="The SSH user 'ro;ot' of dut01 is not a user name"):
        Session(Target("dut01"), lab.settings(ssh_config=config))
    broken = tmp_path / "inventory.yaml"
    broken.write_text("hosts: [unclosed\n")
    assert main(check(lab, "--inventory", str(broken))) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and str(broken) in captured.err
