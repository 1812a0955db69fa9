"""Run the traffic generator on the TG host over OpenSSH: the target, the commands, the remote PID.

Two-host mode (docs/lab.md, "Two hosts (NIC ports)") starts ``ovsperf-trafficgen`` on the TG host
as ``ssh -o BatchMode=yes -o StrictHostKeyChecking=yes [-i KEY] [-o UserKnownHostsFile=FILE]
[-p PORT] [USER@]HOST -- 'sh' '-c' 'echo "$$"; exec "$@"' 'sh' BINARY ARGS...``: every word of the
remote command is shell-quoted (:func:`remote_command`), the remote shell prints its PID and
replaces itself with the generator, so the first line on the channel is the generator's PID and
the JSON-lines protocol follows on the same stdin/stdout. :func:`stop_remote` ends exactly that
PID (only while its command line still names the run's DPDK file prefix) over a second SSH call
and removes the prefix's hugepage files and runtime directory on the TG. :func:`probe` checks,
before anything starts, that the TG answers and has the generator binary.

Every call is bounded (``ConnectTimeout``, ``ServerAlive*``, a deadline on the local process).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.command import CommandError, run_command
from ovsperf_common.fields import is_safe_name
from ovsperf_lab.errors import LabError, TrafficGeneratorError

log = logging.getLogger(__name__)

SSH = "ssh"
"""The OpenSSH client (``PATH``)."""

DEFAULT_REMOTE_BINARY = Path("/usr/local/bin/ovsperf-trafficgen")
"""Where ``make -C trafficgen install`` puts the generator on the TG (``PREFIX=/usr/local``)."""

SSH_FAILED = 255
"""ssh's exit status when it could not connect or authenticate (ssh(1))."""

PROBE_MISSING = 3
"""Exit status of :data:`PROBE_SCRIPT` when the binary is not an executable file."""

PROBE_SCRIPT = 'test -f "$1" && test -x "$1" || exit 3'
"""Run on the TG with the binary as ``$1``: exits 0 when it is an executable file."""

START_SCRIPT = 'echo "$$"; exec "$@"'
"""Run on the TG with the generator's argv as ``$@``: prints the shell's PID, which ``exec`` hands
to the generator."""

STOP_SCRIPT = (
    "pid=$1 prefix=$2; "
    "gone() { s=$(sed -n 's/.*) \\(.\\).*/\\1/p' \"/proc/$pid/stat\" 2>/dev/null); "
    '[ -z "$s" ] || [ "$s" = Z ]; }; '
    'wait_gone() { i=0; while [ "$i" -lt 50 ] && ! gone; do sleep 0.1; i=$((i + 1)); done; }; '
    'if [ -r "/proc/$pid/cmdline" ] && tr "\\000" "\\n" < "/proc/$pid/cmdline" | grep -qxF -- "$prefix"; '
    'then kill -TERM "$pid" 2>/dev/null; wait_gone; '
    'gone || { kill -KILL "$pid" 2>/dev/null; wait_gone; }; echo stopped; fi; '
    'rm -f -- "$3/$prefix"map_*; rm -rf -- "${4:?}/$prefix"'
)
"""Run on the TG with ``$1`` PID, ``$2`` DPDK file prefix, ``$3`` hugepage dir, ``$4`` DPDK runtime
root: SIGTERM the PID only while its command line holds the prefix as one word (never a reused
PID), SIGKILL when it has not exited within 5 s, and wait up to 5 s more until it has (gone from
``/proc`` or a zombie: a killed process can spend a moment in state D while the kernel unmaps its
hugepages); then remove the prefix's hugepage files and runtime directory. At most ~10 s."""

_USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,31}\Z")
_HOST_RE = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z"
)
_PATH_RE = re.compile(r"[^\s\"'\\]+\Z")


def remote_command(words: Sequence[str]) -> str:
    """Return ``words`` as one shell command line, every word quoted (``shlex.quote``)."""
    return " ".join(shlex.quote(word) for word in words)


@dataclass(frozen=True)
class SshTarget:
    """Where and how to reach the TG host (``--tg-ssh``, ``--tg-ssh-key``, ``--tg-known-hosts``).

    :raises LabError: naming the option, for a user, host, port or path outside its character set.
    """

    host: str
    """Host name (letters, digits, ``-`` and ``.``), IPv4 or IPv6 address."""
    user: str | None = None
    """Login name; ``None``: ssh's default (the local user)."""
    port: int | None = None
    """TCP port; ``None``: ssh's default (22)."""
    identity: Path | None = None
    """Private key (``-i``, with ``IdentitiesOnly=yes``); ``None``: ssh's defaults."""
    known_hosts: Path | None = None
    """``UserKnownHostsFile``; ``None``: ``~/.ssh/known_hosts``. Host keys are always checked."""
    connect_timeout_s: float = 10.0
    """``ConnectTimeout`` [s]."""

    def __post_init__(self) -> None:
        if not _host_ok(self.host):
            raise LabError(
                f"Option '--tg-ssh': host {self.host[:80]!r} is not a host name (letters, digits, '-', '.'), "
                "an IPv4 or an IPv6 address."
            )
        if self.user is not None and not _USER_RE.match(self.user):
            raise LabError(
                f"Option '--tg-ssh': user {self.user[:40]!r} is not a login name (letters, digits, '.', '_', "
                "'-', not starting with '-' or '.', at most 32 characters)."
            )
        if self.port is not None and (type(self.port) is not int or not 1 <= self.port <= 65535):
            raise LabError(f"Option '--tg-ssh': port {self.port!r} is not in [1, 65535].")
        for option, path in (("--tg-ssh-key", self.identity), ("--tg-known-hosts", self.known_hosts)):
            if path is not None and not _PATH_RE.match(str(path)):
                raise LabError(
                    f"Option '{option}': {str(path)[:80]!r} contains white space, quotes or a backslash, "
                    "which ssh's option syntax would split; use a plain path."
                )
        if not (math.isfinite(self.connect_timeout_s) and self.connect_timeout_s > 0):
            raise LabError(f"Field 'connect_timeout_s' must be positive, got {self.connect_timeout_s!r}.")

    @classmethod
    def parse(cls, text: str, *, identity: Path | None = None, known_hosts: Path | None = None) -> SshTarget:
        """Return the target ``[USER@]HOST[:PORT]`` (IPv6: ``[USER@][ADDR]:PORT`` or a bare address).

        :raises LabError: naming ``--tg-ssh`` and the part that is wrong.
        """
        user: str | None = None
        rest = text
        if "@" in rest:
            user, _, rest = rest.partition("@")
        port: int | None = None
        if rest.startswith("["):
            host, sep, tail = rest[1:].partition("]")
            if not sep or (tail and not tail.startswith(":")):
                raise LabError(f"Option '--tg-ssh': {text[:80]!r} is not [USER@]HOST[:PORT].")
            port_text = tail[1:] if tail else None
        elif rest.count(":") == 1:
            host, _, port_text = rest.partition(":")
        else:
            host, port_text = rest, None
        if port_text is not None:
            if not port_text.isdigit() or not port_text.isascii():
                raise LabError(
                    f"Option '--tg-ssh': port {port_text[:20]!r} of {text[:80]!r} is not a number."
                )
            port = int(port_text)
        return cls(host, user or None, port, identity, known_hosts)

    def __str__(self) -> str:
        """Return ``[USER@]HOST[:PORT]`` for messages."""
        host = f"[{self.host}]" if ":" in self.host and self.port else self.host
        return (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")

    def argv(self, words: Sequence[str]) -> list[str]:
        """Return the ssh command that runs ``words`` on the host (each word shell-quoted)."""
        argv = [
            SSH,
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", f"ConnectTimeout={max(1, math.ceil(self.connect_timeout_s))}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip
        if self.identity is not None:
            argv += ["-i", str(self.identity), "-o", "IdentitiesOnly=yes"]
        if self.known_hosts is not None:
            argv += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.port is not None:
            argv += ["-p", str(self.port)]
        argv += [f"{self.user}@{self.host}" if self.user else self.host, "--", remote_command(words)]
        return argv

    def run(self, words: Sequence[str], *, timeout_s: float, what: str) -> tuple[int, str, str]:
        """Run ``words`` on the host; return (exit status, stdout, stderr).

        :raises TrafficGeneratorError: when ssh cannot connect or authenticate (exit 255), or the
            call does not end within ``timeout_s`` [s]; the message names the host and ``what``.
        """
        try:
            done = run_command(
                self.argv(words), timeout_s=timeout_s, what=f"ssh to TG host '{self}' ({what})"
            )
        except CommandError as err:
            raise TrafficGeneratorError(f"TG host '{self}': {err}") from err
        if done.returncode == SSH_FAILED:
            raise TrafficGeneratorError(
                f"Cannot reach TG host '{self}' over SSH ({what}): {_last_line(done.stderr)}"
            )
        return done.returncode, done.stdout, done.stderr


def _host_ok(host: str) -> bool:
    if _HOST_RE.match(host) and not host.startswith("-"):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no message"


def start_words(argv: Sequence[str]) -> list[str]:
    """Return the remote words that print the remote PID and then run ``argv`` (:data:`START_SCRIPT`)."""
    return ["sh", "-c", START_SCRIPT, "sh", *argv]


def probe(target: SshTarget, binary: Path, *, timeout_s: float = 30.0) -> None:
    """Check that ``target`` answers over SSH and has ``binary`` as an executable file.

    :raises TrafficGeneratorError: naming the host (unreachable, host key unknown, login refused,
        no answer within ``timeout_s`` [s]) or the host and the path (no such executable).
    """
    code, _, err = target.run(
        ["sh", "-c", PROBE_SCRIPT, "sh", str(binary)], timeout_s=timeout_s, what="probe"
    )
    if code == PROBE_MISSING:
        raise TrafficGeneratorError(
            f"TG host '{target}' has no traffic generator '{binary}' (not an executable file); install "
            "it there with 'make -C trafficgen install' or name it with '--tg-binary'."
        )
    if code != 0:
        raise TrafficGeneratorError(
            f"TG host '{target}': the probe of '{binary}' exited with {code}: {_last_line(err)}"
        )
    log.info("TG host '%s' answers over SSH and has '%s'.", target, binary)


def stop_remote(
    target: SshTarget,
    pid: int | None,
    file_prefix: str,
    *,
    hugepage_dir: Path,
    runtime_dir: Path,
    timeout_s: float = 30.0,
) -> bool:
    """End generator ``pid`` on the TG (if it still runs with ``file_prefix``) and remove its DPDK files.

    :param pid: the remote PID the generator printed; ``None``: only the files are removed.
    :returns: whether a process was stopped.
    :raises TrafficGeneratorError: when the TG cannot be reached or the call does not end in time.
    :raises LabError: when ``file_prefix`` or a directory is not a plain name or path.
    """
    if not is_safe_name(file_prefix):
        raise LabError(f"DPDK file prefix {file_prefix!r} is not a safe name; nothing was removed on the TG.")
    for path in (hugepage_dir, runtime_dir):
        if not path.is_absolute() or not _PATH_RE.match(str(path)) or str(path) == "/":
            raise LabError(
                f"Directory {str(path)!r} is not a plain absolute path; nothing was removed on the TG."
            )
    words = ["sh", "-c", STOP_SCRIPT, "sh", str(pid or 0), file_prefix, str(hugepage_dir), str(runtime_dir)]
    code, out, err = target.run(words, timeout_s=timeout_s, what=f"stopping generator PID {pid}")
    if code != 0:
        log.warning("TG host '%s': stopping PID %s exited with %d: %s", target, pid, code, _last_line(err))
    return "stopped" in out.split()
