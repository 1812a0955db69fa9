"""Fixtures of the ovsperf-remote tests: a client key, two sshd hosts, a known_hosts file for them."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from remote.ssh import Settings

from .sshd_hosts import SshHost, keygen, ssh_hosts


@dataclass
class Lab:
    """The client's key and files, and the hosts (tg, dut)."""

    key: Path
    known_hosts: Path
    authorized_keys: Path
    tg: SshHost
    dut: SshHost

    def settings(self, **changes: object) -> Settings:
        """Return SSH settings with the client's key and known_hosts (no agent, no SSH config)."""
        values: dict[str, object] = {
            "known_hosts": self.known_hosts,
            "ssh_config": None,
            "identities": (self.key,),
            "use_agent": False,
            "connect_timeout_s": 5.0,
        }
        values.update(changes)
        return Settings(**values)  # type: ignore[arg-type]

    def ssh_args(self) -> list[str]:
        """Return the command-line SSH options of the same settings."""
        return [
            "--identity",
            str(self.key),
            "--known-hosts",
            str(self.known_hosts),
            "--ssh-config",
            "/nonexistent",
            "--connect-timeout",
            "5",
        ]

    def trust(self) -> None:
        """Write both hosts' keys to the known_hosts file."""
        self.known_hosts.write_text(self.tg.known_hosts_line() + self.dut.known_hosts_line())


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    client = tmp_path / "client"
    client.mkdir()
    key = client / "id_ed25519"
    # sshd reads authorized_keys as the user logging in: a non-root user must be able to reach it
    # (pytest's tmp_path is private to root).
    public = Path(tempfile.mkdtemp(prefix="ovsperf-rt-keys-", dir="/tmp"))
    try:
        public.chmod(0o755)
        authorized = public / "authorized_keys"
        authorized.write_text(keygen(key) + "\n")
        authorized.chmod(0o644)
        with ssh_hosts(tmp_path / "hosts", 2, authorized) as (tg, dut):
            yield Lab(key, client / "known_hosts", authorized, tg, dut)
    finally:
        shutil.rmtree(public, ignore_errors=True)


@pytest.fixture
def plain_user(lab: Lab) -> Iterator[str]:
    """A non-root user made for the test (removed after), whose sudo asks for a password."""
    name = f"ovsperf-rt-{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--system", "--no-create-home", "-s", "/bin/sh", name], check=True, timeout=30)
    # "*": no password at all, but not locked ("!"), which sshd would refuse without PAM.
    subprocess.run(["usermod", "-p", "*", name], check=True, timeout=30)
    try:
        yield name
    finally:
        Path(f"/etc/sudoers.d/{name}").unlink(missing_ok=True)
        # Its sshd sessions may still be ending: stop what runs as this user (only our sessions
        # can), then remove it; userdel refuses a user with processes.
        deadline = time.monotonic() + 10
        while subprocess.run(["userdel", name], capture_output=True, timeout=30, check=False).returncode != 0:
            subprocess.run(["pkill", "-KILL", "-u", name], check=False, timeout=10)
            assert time.monotonic() < deadline, f"cannot remove the test user {name}"
            time.sleep(0.2)
        assert subprocess.run(["id", name], capture_output=True, check=False).returncode != 0
