"""Issue 25 item 14: an SSH key file that is a FIFO is refused at once, never waited on (real sshd)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from remote.errors import RemoteError
from remote.ssh import Session, Target
from tests.fifoguard import fifo_watchdog

from .conftest import Lab


def test_a_fifo_as_identity_or_identityfile_is_refused_without_waiting(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    fifo = tmp_path / "id_fifo"
    config = tmp_path / "ssh_config"
    config.write_text(f"Host dut01\n  HostName {lab.dut.address}\n  User root\n  IdentityFile {fifo}\n")
    with fifo_watchdog(fifo, timeout_s=5) as freed:
        started = time.monotonic()
        with pytest.raises(RemoteError, match=rf"'{fifo}' \(--identity\) cannot be used: it is a FIFO"):
            Session(Target(lab.dut.address, "root"), lab.settings(identities=(fifo, lab.key)))
        with pytest.raises(RemoteError, match=rf"'{fifo}' \(IdentityFile\) cannot be used: it is a FIFO"):
            Session(Target("dut01"), lab.settings(ssh_config=config))
        assert time.monotonic() - started < 3
    assert freed == []  # nothing ever blocked on the FIFO
    # The same settings with a real key connect: the check refuses special files only.
    with Session(Target(lab.dut.address, "root"), lab.settings()) as session:
        assert session.run(["echo", "ok"], timeout_s=10).stdout.strip() == "ok"
