"""Two lab hosts for the two-host engine's tests and benchmark: a TG and a DUT network namespace.

Each namespace runs a real OpenSSH ``sshd`` (``tests/remote/sshd_hosts.py``); a link of their own
routes the DUT's SSH client to the TG's address; two veth pairs are the data links, TG end
``t<tag>0``/``t<tag>1`` cabled to DUT end ``d<tag>0``/``d<tag>1`` (IPv6 off, so that the kernel
sends no neighbour discovery into the counts). Both sides open them as DPDK ``net_af_packet``
ports. Everything goes with the namespaces (deleting one removes its veth ends).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.remote.sshd_hosts import SshHost, keygen, link_hosts, ssh_hosts

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / ".venv" / "bin" / "ovsperf-lab"
IP = shutil.which("ip") or "/usr/sbin/ip"
AF_PACKET_ARGS = "framecnt=4096,qdisc_bypass=1"
"""Socket rings of 4096 frames (DPDK's default is 512: 3 ms at 150 kpps, less than one stall of a
busy-polling thread on a shared 2-CPU machine), and TX past the kernel's queueing discipline."""


@dataclass
class TwoHosts:
    """The TG and DUT namespaces, the data links' interface names and the DUT's SSH client files."""

    tg: SshHost
    dut: SshHost
    tg_ifaces: tuple[str, str]
    dut_ifaces: tuple[str, str]
    key: Path
    known_hosts: Path
    home: Path
    """HOME of the DUT-side commands (no ~/.ssh of the machine's own)."""

    def dut_ports(self) -> list[str]:
        """Return ``--dut-port`` options: ``net_af_packet`` on DUT port 0, then 1."""
        out: list[str] = []
        for n, iface in enumerate(self.dut_ifaces):
            out += ["--dut-port", f"net_af_packet{n},iface={iface},{AF_PACKET_ARGS}"]
        return out

    def tg_ports(self, *, crossed: bool = False) -> list[str]:
        """Return ``--tg-port`` options, TG port 0 first (``crossed``: the veths swapped)."""
        ifaces = self.tg_ifaces[::-1] if crossed else self.tg_ifaces
        out: list[str] = []
        for n, iface in enumerate(ifaces):
            out += ["--tg-port", f"net_af_packet{n},iface={iface},{AF_PACKET_ARGS}"]
        return out

    def ssh_options(self) -> list[str]:
        """Return ``--tg-ssh``, ``--tg-ssh-key`` and ``--tg-known-hosts`` for the TG."""
        return [
            "--tg-ssh",
            f"root@{self.tg.address}",
            "--tg-ssh-key",
            str(self.key),
            "--tg-known-hosts",
            str(self.known_hosts),
        ]

    def run_on_dut(self, argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the DUT namespace with :attr:`home` as HOME."""
        env = {**os.environ, "HOME": str(self.home)}
        return subprocess.run(
            [IP, "netns", "exec", self.dut.ns, *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=env,
        )


def _ip(*args: str) -> None:
    subprocess.run([IP, *args], check=True, capture_output=True, timeout=10)


@contextmanager
def two_hosts(root: Path) -> Iterator[TwoHosts]:
    """Yield a TG and a DUT namespace with sshd, a management link and two data links."""
    client = root / "client"
    client.mkdir(parents=True)
    key = client / "id_ed25519"
    home = root / "home"
    home.mkdir()
    public = Path(tempfile.mkdtemp(prefix="ovsperf-rt-keys-", dir="/tmp"))
    try:
        public.chmod(0o755)
        authorized = public / "authorized_keys"
        authorized.write_text(keygen(key) + "\n")
        authorized.chmod(0o644)
        with ssh_hosts(root / "hosts", 2, authorized) as (tg, dut):
            link_hosts(tg, dut)
            tag = uuid.uuid4().hex[:6]
            tg_ifaces = (f"t{tag}0", f"t{tag}1")
            dut_ifaces = (f"d{tag}0", f"d{tag}1")
            for tg_end, dut_end in zip(tg_ifaces, dut_ifaces, strict=True):
                _ip("link", "add", tg_end, "type", "veth", "peer", "name", dut_end)
                _ip("link", "set", tg_end, "netns", tg.ns)
                _ip("link", "set", dut_end, "netns", dut.ns)
                for ns, end in ((tg.ns, tg_end), (dut.ns, dut_end)):
                    _ip("netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
                    _ip("-n", ns, "link", "set", end, "up")
            known = client / "known_hosts"
            known.write_text(tg.known_hosts_line())
            yield TwoHosts(tg, dut, tg_ifaces, dut_ifaces, key, known, home)
    finally:
        shutil.rmtree(public, ignore_errors=True)
