"""known_hosts markers, host certificates and non-UTF-8 bytes against real sshd hosts (issue 25 item 16).

A known_hosts file with OpenSSH's ``@cert-authority`` or ``@revoked`` lines (sshd(8), "SSH_KNOWN_HOSTS
FILE FORMAT") made every host fail with an internal error (paramiko's ``InvalidHostKey``); an SSH
config or a file name on a host with non-UTF-8 bytes did the same.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from remote.errors import HostKeyError, RemoteError
from remote.fetch import fetch_results
from remote.ssh import Session, Target

from .conftest import Lab
from .sshd_hosts import IP, SSH_KEYGEN, SSHD, keygen


def _ca(tmp_path: Path) -> str:
    """Return a ``@cert-authority`` line for any host of 198.51.100.0/24 and *.example.com."""
    public = keygen(tmp_path / "host_ca").rsplit(" ", 1)[0]
    return f"@cert-authority *.example.com,198.51.100.* {public}\n"


def test_cert_authority_lines_do_not_break_hosts_known_by_their_plain_key(lab: Lab, tmp_path: Path) -> None:
    lab.known_hosts.write_text("# site CA\n" + _ca(tmp_path) + lab.tg.known_hosts_line())
    with Session(Target(lab.tg.address, "root"), lab.settings()) as session:
        assert session.run(["echo", "connected"], 10).stdout == "connected\n"
    # A host the file knows only through the CA: refused, saying why the CA line does not count.
    with pytest.raises(HostKeyError) as caught:
        Session(Target(lab.dut.address, "root"), lab.settings())
    message = str(caught.value)
    assert message.startswith(f"{lab.dut.address} is not in {lab.known_hosts} (its key: ssh-ed25519 SHA256:")
    assert (
        f"{lab.known_hosts} trusts it only through a @cert-authority line; ovsperf-remote (paramiko) "
        "does not verify host certificates: record the host's plain key."
    ) in message


def test_a_revoked_key_is_refused_even_when_listed_or_accept_new(lab: Lab, tmp_path: Path) -> None:
    dut_key = lab.dut.host_key_line.rsplit(" ", 1)[0]
    lab.known_hosts.write_text(
        lab.tg.known_hosts_line() + lab.dut.known_hosts_line() + f"@revoked * {dut_key}\n"
    )
    before = lab.known_hosts.read_text()
    for accept_new in (False, True):
        with pytest.raises(
            HostKeyError, match=r"is marked @revoked in .*; refused\. The host must get a new key"
        ):
            Session(Target(lab.dut.address, "root"), lab.settings(accept_new_host_key=accept_new))
    assert lab.known_hosts.read_text() == before  # nothing recorded for it
    with Session(Target(lab.tg.address, "root"), lab.settings()) as session:  # others still work
        assert session.run(["true"], 10).exit_status == 0


def test_a_host_presenting_only_a_certificate_is_refused_saying_so(lab: Lab, tmp_path: Path) -> None:
    """sshd offering only ``ssh-ed25519-cert-v01@openssh.com`` (HostKeyAlgorithms), signed by the CA
    known_hosts trusts: paramiko cannot check the certificate, and the message says so."""
    ca_line = _ca(tmp_path)
    host = lab.dut.root
    subprocess.run(
        [SSH_KEYGEN, "-q", "-s", str(tmp_path / "host_ca"), "-I", "dut", "-h", "-n", lab.dut.address,
         str(host / "host_key.pub")],
        check=True, timeout=30,
    )  # fmt: skip
    config = host / "sshd_cert_config"
    config.write_text(
        (host / "sshd_config")
        .read_text()
        .replace(f"{lab.dut.address}:22", f"{lab.dut.address}:2222")
        .replace(str(host / "sshd.pid"), str(host / "sshd-cert.pid"))
        + f"HostCertificate {host / 'host_key-cert.pub'}\n"
        "HostKeyAlgorithms ssh-ed25519-cert-v01@openssh.com\n"
    )
    sshd = subprocess.Popen(
        [IP, "netns", "exec", lab.dut.ns, SSHD, "-D", "-e", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not (host / "sshd-cert.pid").exists():
            assert sshd.poll() is None and time.monotonic() < deadline, (
                "sshd with a certificate did not start"
            )
            time.sleep(0.05)
        lab.known_hosts.write_text(ca_line)
        with pytest.raises(HostKeyError) as caught:
            Session(Target(lab.dut.address, "root", 2222), lab.settings())
        assert (
            "It presented a host certificate (ssh-ed25519-cert-v01@openssh.com); ovsperf-remote (paramiko) "
            "does not verify host certificates, so no @cert-authority line can vouch for it: record the "
            "host's plain key."
        ) in str(caught.value)
    finally:
        os.kill(sshd.pid, signal.SIGTERM)
        sshd.wait(timeout=10)


def test_non_utf8_bytes_in_ssh_config_or_known_hosts_are_named(lab: Lab, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_bytes(b"Host dut01\n  HostName 192.0.2.1\n  User r\xe9mi\n")  # Latin-1 'é'
    with pytest.raises(RemoteError) as caught:
        Session(Target("dut01"), lab.settings(ssh_config=config))
    assert str(caught.value) == (
        f"The SSH config {config} is not UTF-8 text (it holds byte 0xe9); fix it or give another with "
        "--ssh-config."
    )
    lab.known_hosts.write_bytes(lab.tg.known_hosts_line().encode() + b"caf\xe9 ssh-ed25519 AAAA\n")
    with pytest.raises(RemoteError) as caught:
        Session(Target(lab.tg.address, "root"), lab.settings())
    assert str(caught.value) == (
        f"The known_hosts file {lab.known_hosts}, line 2, is not UTF-8 text (byte 0xe9); fix or remove "
        "that line."
    )


def test_a_file_name_that_is_not_utf8_on_the_host_fails_the_fetch_cleanly(lab: Lab, tmp_path: Path) -> None:
    lab.trust()
    results = tmp_path / "dut-results" / "results_2026-11-26_08-00-00"
    results.mkdir(parents=True)
    (results / "result_0_phy2phy_tput_p2p.csv").write_text("packet_size\n64\n")
    Path(os.fsdecode(os.fsencode(results) + b"/moongen-\xff.log")).write_text("x\n")
    collector = tmp_path / "collector"
    with Session(Target(lab.dut.address, "root"), lab.settings()) as session:
        with pytest.raises(RemoteError) as caught:
            fetch_results(session, str(results), collector)
    assert str(caught.value) == (
        f"Cannot fetch root@{lab.dut.address}:{results}: a file name below it is not UTF-8 (it holds byte "
        "0xff); rename it on the host. Nothing was delivered."
    )
    assert list(collector.iterdir()) == []
