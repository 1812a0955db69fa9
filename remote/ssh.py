"""SSH sessions to the lab hosts with paramiko: who we are, which host keys we trust, bounded commands.

* Target: ``[user@]host[:port]`` (:func:`parse_target`); ``~/.ssh/config`` (paramiko's
  ``SSHConfig``) may rename the host (``HostName``), and give ``User``, ``Port`` and
  ``IdentityFile``; the command line wins over the file.
* Authentication: the SSH agent and key files only (``--identity``, ``IdentityFile``, then
  ``~/.ssh/id_*``). No password is ever asked for, taken or sent.
* Host keys: checked against a known_hosts file (``~/.ssh/known_hosts`` by default, read by
  :mod:`remote.knownhosts`: a key marked ``@revoked`` is always refused; ``@cert-authority``
  lines are kept apart, as paramiko does not verify host certificates, and a host known only
  through one is refused saying so). An unknown host is refused unless ``accept_new``
  (``--accept-new-host-key``), which records its key by appending one line (as OpenSSH's
  ``StrictHostKeyChecking=accept-new``); a changed key is always refused (paramiko's
  ``BadHostKeyException``).
* Every wait has a deadline: the TCP connect, the banner and authentication
  (``connect_timeout_s``), and each command (:meth:`Session.run`), whatever the peer does.
"""

from __future__ import annotations

import getpass
import logging
import select
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

from ovsperf_common.errors import FieldError
from ovsperf_common.fields import LOGIN_NAME_RE, hostname
from ovsperf_common.regularfile import require_regular
from ovsperf_common.runner import one_line
from remote.defaults import BOOT_ID_COMMAND, DEFAULT_KNOWN_HOSTS, DEFAULT_SSH_CONFIG
from remote.errors import AuthError, CancelledError, HostKeyError, RemoteError, UnreachableError
from remote.knownhosts import CERT_SUFFIX, KnownHosts, read_known_hosts

log = logging.getLogger(__name__)

# paramiko logs every failed handshake with a traceback at ERROR, e.g. each attempt while a host
# reboots ("Error reading SSH protocol banner"); :class:`Session` raises a RemoteError naming the
# host instead, and the reboot wait says what it waits for.
logging.getLogger("paramiko.transport").setLevel(logging.CRITICAL)

USER_RE = LOGIN_NAME_RE
"""A login name (POSIX portable characters, at most 32, as useradd accepts)."""
STOP_TIMEOUT_S = 15.0
"""Deadline of stopping a timed-out command's process group (TERM, 2 s, KILL) [s]."""
MAX_OUTPUT_BYTES = 4 * 1024 * 1024
"""Most output kept per stream of one command [B]; the rest is counted, not kept."""


@dataclass(frozen=True)
class Target:
    """Where to connect: a host as the user named it, and optionally user and port."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        """Return ``user@host:port`` with the parts that are set."""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def parse_target(text: str, option: str) -> Target:
    """Parse ``[user@]host[:port]``.

    :raises FieldError: naming ``option`` when a part is not a user name, host name / IPv4
        address, or TCP port 1…65535.
    """
    user, sep, rest = text.rpartition("@")
    host, colon, port = rest.partition(":")
    if sep and not USER_RE.match(user):
        raise FieldError(f"'{one_line(text)}': '{one_line(user)}' is not a user name.", field=option)
    hostname(host, option)
    if colon and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise FieldError(f"'{one_line(text)}': port '{one_line(port)}' is not 1…65535.", field=option)
    return Target(host=host, user=user or None, port=int(port) if colon else None)


@dataclass(frozen=True)
class Settings:
    """How to authenticate and whom to trust (the command line's SSH options)."""

    known_hosts: Path = DEFAULT_KNOWN_HOSTS
    ssh_config: Path | None = DEFAULT_SSH_CONFIG
    identities: tuple[Path, ...] = ()
    accept_new_host_key: bool = False
    connect_timeout_s: float = 20.0
    use_agent: bool = True


@dataclass(frozen=True)
class CommandResult:
    """A finished remote command."""

    exit_status: int
    stdout: str
    stderr: str


def _refuse_revoked(known: KnownHosts, hostname: str, key: paramiko.PKey) -> None:
    """Raise when ``key`` is marked ``@revoked`` in ``known``.

    :raises HostKeyError: naming the host, the key and the file.
    """
    if known.is_revoked(key):
        raise HostKeyError(
            f"The host key of {one_line(hostname)} ({key.get_name()} {key.fingerprint}) is marked "
            f"@revoked in {one_line(known.path)}; refused. The host must get a new key."
        )


def _certificate_note(known: KnownHosts, client: paramiko.SSHClient, hostname: str) -> str:
    """Return what to know when ``known`` vouches for ``hostname`` only through a host CA, or ``""``."""
    transport = client.get_transport()
    presented = transport.host_key_type if transport is not None else None
    if presented is not None and presented.endswith(CERT_SUFFIX):
        return (
            f" It presented a host certificate ({presented}); ovsperf-remote (paramiko) does not "
            "verify host certificates, so no @cert-authority line can vouch for it: record the "
            "host's plain key."
        )
    if known.has_authority_for(hostname):
        return (
            f" {one_line(known.path)} trusts it only through a @cert-authority line; ovsperf-remote "
            "(paramiko) does not verify host certificates: record the host's plain key."
        )
    return ""


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """Trust an unknown host's key and append it to the known_hosts file (never a changed or revoked key)."""

    def __init__(self, known: KnownHosts) -> None:
        self.known = known
        self.known_hosts = known.path

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        _refuse_revoked(self.known, hostname, key)
        line = paramiko.hostkeys.HostKeyEntry([hostname], key).to_line()
        if line is None:
            raise HostKeyError(f"The key of {one_line(hostname)} cannot be written as a known_hosts line.")
        self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.known_hosts.open("a", encoding="ascii") as out:
            out.write(line)
        client.get_host_keys().add(hostname, key.get_name(), key)
        log.warning(
            "Recorded the new host key of %s (%s %s) in %s.",
            one_line(hostname),
            key.get_name(),
            key.fingerprint,
            self.known_hosts,
        )


class _RefuseUnknown(paramiko.MissingHostKeyPolicy):
    def __init__(self, known: KnownHosts) -> None:
        self.known = known

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        _refuse_revoked(self.known, hostname, key)
        raise HostKeyError(
            f"{one_line(hostname)} is not in {one_line(self.known.path)} (its key: {key.get_name()} "
            f"{key.fingerprint}); refused.{_certificate_note(self.known, client, hostname)} Check the "
            "fingerprint on the host and rerun with --accept-new-host-key to record it."
        )


_GROUP_MARK = b"ovsperf-remote-pgid "
_GROUP_WRAPPER = (
    'read -r _ _ _ _ pgid _ < /proc/$$/stat; printf "ovsperf-remote-pgid %s\\n" "$pgid" >&2; exec "$@"'
)
"""Report the command's process group (field 5 of /proc/PID/stat, proc(5)) on stderr, then run it."""


class _Reader:
    """Collect a command's output (bounded), pass complete lines on, take out the group report."""

    def __init__(self, on_line: Callable[[str, str], None] | None) -> None:
        self.on_line = on_line
        self.buffers = {"stdout": bytearray(), "stderr": bytearray()}
        self.partial = {"stdout": b"", "stderr": b""}
        self.pgid: int | None = None
        self._head: bytes | None = b""  # stderr until its first line is complete; then None

    def feed(self, stream: str, chunk: bytes) -> None:
        """Take ``chunk`` of ``stream`` (``stdout`` / ``stderr``)."""
        if stream == "stderr" and self._head is not None:
            self._head += chunk
            if b"\n" not in self._head:
                return
            line, _, rest = self._head.partition(b"\n")
            self._head = None
            number = line[len(_GROUP_MARK) :]
            if line.startswith(_GROUP_MARK) and number.isdigit():
                self.pgid = int(number)
                chunk = rest
            else:
                chunk = line + b"\n" + rest
        self._add(stream, chunk)

    def _add(self, stream: str, chunk: bytes) -> None:
        room = MAX_OUTPUT_BYTES - len(self.buffers[stream])
        if room > 0:
            self.buffers[stream].extend(chunk[:room])
        if self.on_line is not None:
            *lines, self.partial[stream] = (self.partial[stream] + chunk).split(b"\n")
            for line in lines:
                self.on_line(stream, line.decode("utf-8", "replace"))

    def finish(self) -> tuple[str, str]:
        """Pass on the unterminated last lines; return (stdout, stderr)."""
        if self._head:  # the first stderr line never ended: it was the command's own output
            head, self._head = self._head, None
            self._add("stderr", head)
        if self.on_line is not None:
            for stream, rest in self.partial.items():
                if rest:
                    self.on_line(stream, rest.decode("utf-8", "replace"))
        return (
            self.buffers["stdout"].decode("utf-8", "replace"),
            self.buffers["stderr"].decode("utf-8", "replace"),
        )


def _check_key_file(path: Path, source: str) -> None:
    """Refuse a key file that exists and is not a regular file: paramiko would block on a FIFO for ever.

    A missing file is left to paramiko, as before.

    :raises RemoteError: naming the file, where it was given (``source``) and what it is.
    """
    try:
        require_regular(path.expanduser())
    except FileNotFoundError:
        return
    except OSError as err:
        raise RemoteError(
            f"The SSH key file '{one_line(path)}' ({source}) cannot be used: {err.strerror or err}."
        ) from err


class Session:
    """One authenticated SSH connection to a host; use as a context manager.

    :raises UnreachableError: no TCP connection or SSH banner within ``connect_timeout_s``.
    :raises HostKeyError: the host key is unknown (and not accepted) or changed.
    :raises AuthError: every offered key was refused.
    :raises RemoteError: a key file (``--identity``, ``IdentityFile``) exists and is not a regular file.
    """

    def __init__(self, target: Target, settings: Settings) -> None:
        self.target = target
        self.settings = settings
        config = self._config()
        # HostName, Port and User may come from ~/.ssh/config: checked before they reach a socket
        # or a message.
        try:
            self.address = hostname(config.get("hostname", target.host), "HostName (SSH config)")
            self.port = target.port or int(config.get("port", 22))
        except (FieldError, ValueError) as err:
            raise RemoteError(f"The SSH config entry of {target.host}: {one_line(err)}") from err
        if not 1 <= self.port <= 65535:
            raise RemoteError(f"The SSH config gives {target.host} port {self.port}, not 1…65535.")
        self.user = target.user or config.get("user") or getpass.getuser()
        if not USER_RE.match(self.user):
            raise RemoteError(f"The SSH user '{one_line(self.user)}' of {target.host} is not a user name.")
        identities = [*settings.identities, *(Path(p) for p in config.get("identityfile", []))]
        for key_file in identities:
            _check_key_file(key_file, "--identity" if key_file in settings.identities else "IdentityFile")
        self.name = f"{self.user}@{target.host}" + (f":{self.port}" if self.port != 22 else "")
        known_hosts = settings.known_hosts.expanduser()
        self._client = paramiko.SSHClient()
        # Only a regular file is read (a FIFO there would block); anything else trusts nothing.
        known = read_known_hosts(known_hosts) if known_hosts.is_file() else KnownHosts(known_hosts)
        known.install(self._client.get_host_keys())
        policy = _AcceptNew(known) if settings.accept_new_host_key else _RefuseUnknown(known)
        self._client.set_missing_host_key_policy(policy)
        timeout = settings.connect_timeout_s
        try:
            self._client.connect(
                self.address,
                port=self.port,
                username=self.user,
                # paramiko takes a list of files here too (SSHClient.connect docs); its stubs say str.
                key_filename=[str(p.expanduser()) for p in identities] or None,  # type: ignore[arg-type]
                allow_agent=settings.use_agent,
                look_for_keys=True,
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
                channel_timeout=timeout,
            )
        except HostKeyError:
            self._client.close()
            raise
        except paramiko.BadHostKeyException as err:
            self._client.close()
            raise HostKeyError(
                f"The host key of {self.name} CHANGED ({err.key.get_name()} {err.key.fingerprint}, "
                f"{known_hosts} has {err.expected_key.fingerprint}); refused. If the host was "
                f"reinstalled, remove its line from {known_hosts} and connect again."
            ) from err
        except paramiko.AuthenticationException as err:
            self._client.close()
            offered = ", ".join(str(p) for p in identities) or "~/.ssh/id_*"
            raise AuthError(
                f"{self.name} refused our keys (SSH agent: {'used' if settings.use_agent else 'off'}; "
                f"key files: {offered}). Add the public key to ~{self.user}/.ssh/authorized_keys on "
                f"{target.host}; passwords are never used."
            ) from err
        except (OSError, paramiko.SSHException, EOFError) as err:
            self._client.close()
            raise UnreachableError(
                f"Cannot reach {self.name} ({self.address}:{self.port}) within {timeout:g} s: "
                f"{one_line(err) or type(err).__name__}."
            ) from err

    def _config(self) -> paramiko.SSHConfigDict:
        path = self.settings.ssh_config
        if path is None or not path.expanduser().is_file():
            return paramiko.SSHConfigDict()
        try:
            return paramiko.SSHConfig.from_path(str(path.expanduser())).lookup(self.target.host)
        except UnicodeDecodeError as err:
            raise RemoteError(
                f"The SSH config {one_line(path)} is not UTF-8 text (it holds byte "
                f"0x{err.object[err.start]:02x}); fix it or give another with --ssh-config."
            ) from err
        except (OSError, paramiko.ssh_exception.ConfigParseError) as err:
            raise RemoteError(f"Cannot read the SSH config {one_line(path)}: {one_line(err)}.") from err

    def __enter__(self) -> Session:
        """Return the open session."""
        return self

    def __exit__(self, *_: object) -> None:
        """Close the connection."""
        self.close()

    def close(self) -> None:
        """Close the connection; idempotent."""
        self._client.close()

    def run(
        self,
        argv: Sequence[str],
        timeout_s: float,
        on_line: Callable[[str, str], None] | None = None,
        *,
        cancel: threading.Event | None = None,
    ) -> CommandResult:
        """Run ``argv`` (each word shell-quoted) on the host and wait at most ``timeout_s``.

        ``on_line(stream, line)`` receives each complete line of ``stdout`` / ``stderr`` as it
        arrives (live output). Output beyond :data:`MAX_OUTPUT_BYTES` per stream is dropped.
        The command runs through ``sh -c`` that first reports its process group on stderr (not
        passed on), so that a command past its deadline is ended with its children
        (:meth:`_stop_group`: SIGTERM, then SIGKILL); closing an SSH channel without a terminal
        does not end it.

        ``cancel``, when set while the command runs, stops it the same way (within 0.5 s).

        :raises CancelledError: when ``cancel`` was set (the command is stopped).
        :raises RemoteError: when the command does not end within ``timeout_s`` (it is stopped)
            or the connection drops.
        """
        command = shlex.join(argv)
        wrapped = shlex.join(["sh", "-c", _GROUP_WRAPPER, "sh", *argv])
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise RemoteError(f"The connection to {self.name} is closed.")
        channel = transport.open_session(timeout=self.settings.connect_timeout_s)
        reader = _Reader(on_line)
        deadline = time.monotonic() + timeout_s
        try:
            channel.exec_command(wrapped)
            while True:
                left = deadline - time.monotonic()
                if cancel is not None and cancel.is_set():
                    self._stop_group(reader.pgid)
                    raise CancelledError(f"'{one_line(command)}' on {self.name} stopped.")
                if left <= 0:
                    self._stop_group(reader.pgid)
                    raise RemoteError(
                        f"'{one_line(command)}' on {self.name} did not end within {timeout_s:g} s; stopped."
                    )
                select.select([channel], [], [], min(left, 0.5))
                got = False
                for stream, ready, recv in (
                    ("stdout", channel.recv_ready, channel.recv),
                    ("stderr", channel.recv_stderr_ready, channel.recv_stderr),
                ):
                    while ready():
                        got = True
                        reader.feed(stream, recv(65536))
                drained = not got and not channel.recv_ready() and not channel.recv_stderr_ready()
                if drained and channel.exit_status_ready() and (channel.eof_received or channel.closed):
                    break
            status = channel.recv_exit_status()
            if status == -1:  # paramiko: the channel closed without an exit status
                raise RemoteError(f"The connection to {self.name} dropped during '{one_line(command)}'.")
        except (OSError, EOFError, paramiko.SSHException) as err:
            raise RemoteError(
                f"The connection to {self.name} failed during '{one_line(command)}': {one_line(err)}."
            ) from err
        finally:
            channel.close()
        stdout, stderr = reader.finish()
        return CommandResult(status, stdout, stderr)

    def _stop_group(self, pgid: int | None) -> None:
        """End a timed-out command's process group: SIGTERM, 2 s, SIGKILL (as its user, else root)."""
        if pgid is None:
            return
        # pkill -g (procps): the shells' kill builtins differ on negative PIDs; 0/1 = sent/none left.
        script = f"pkill -TERM -g {pgid}; r=$?; sleep 2; pkill -KILL -g {pgid}; [ $r -le 1 ]"
        for prefix in ([], sudo_prefix(self)):
            transport = self._client.get_transport()
            if transport is None or not transport.is_active():
                return
            try:
                channel = transport.open_session(timeout=self.settings.connect_timeout_s)
            except (OSError, EOFError, paramiko.SSHException) as err:
                log.warning("Cannot stop process group %d on %s: %s", pgid, self.name, one_line(err))
                return
            try:
                channel.exec_command(shlex.join([*prefix, "sh", "-c", script]))
                # recv_exit_status() would wait for ever: wait for the status with a deadline.
                if not channel.status_event.wait(STOP_TIMEOUT_S):
                    log.warning(
                        "Stopping process group %d on %s took over %g s.", pgid, self.name, STOP_TIMEOUT_S
                    )
                    return
                if channel.recv_exit_status() == 0:
                    return
            except (OSError, EOFError, paramiko.SSHException) as err:
                log.warning("Cannot stop process group %d on %s: %s", pgid, self.name, one_line(err))
                return
            finally:
                channel.close()

    def sftp(self) -> paramiko.SFTPClient:
        """Open an SFTP session on the connection (the caller closes it).

        :raises RemoteError: when the host offers no SFTP subsystem.
        """
        try:
            client = self._client.open_sftp()
        except (OSError, paramiko.SSHException) as err:
            raise RemoteError(f"{self.name} offers no SFTP: {one_line(err)}.") from err
        channel = client.get_channel()
        if channel is not None:  # every SFTP read and write then has a deadline
            channel.settimeout(self.settings.connect_timeout_s * 3)
        return client

    def host_key_description(self) -> str:
        """Return the host key the server showed: ``<type> <SHA256 fingerprint>``."""
        transport = self._client.get_transport()
        if transport is None:
            return "unknown"
        key = transport.get_remote_server_key()
        return f"{key.get_name()} {key.fingerprint}"

    def boot_id(self, timeout_s: float = 20.0, argv: Sequence[str] = BOOT_ID_COMMAND) -> str:
        """Return the host's boot id (``/proc/sys/kernel/random/boot_id``; changes at every boot).

        :param argv: the command that prints it (:data:`BOOT_ID_COMMAND`).
        :raises RemoteError: when it cannot be read.
        """
        result = self.run(argv, timeout_s)
        value = result.stdout.strip()
        if result.exit_status != 0 or not value:
            raise RemoteError(f"Cannot read the boot id of {self.name}: {one_line(result.stderr.strip())}")
        return value


def is_root(session: Session) -> bool:
    """Return whether the session's user is root (then no ``sudo`` is needed)."""
    return session.user == "root"


def sudo_prefix(session: Session) -> list[str]:
    """Return the words that run a command as root on the host: none for root, else ``sudo -n``."""
    return [] if is_root(session) else ["sudo", "-n", "--"]
