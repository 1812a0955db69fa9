"""Read an OpenSSH known_hosts file for paramiko, markers included (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT").

paramiko's own reader takes ``@cert-authority *.example.com ssh-ed25519 AAAA…`` for a host named
``@cert-authority`` with key type ``*.example.com`` and fails on the whole file
(``InvalidHostKey``): a known_hosts file of a site with host certificates made every host fail.
Here each line is one of:

* a plain entry ``NAMES KEYTYPE BASE64 [comment]`` (NAMES may be hashed ``|1|…``): trusted;
* ``@revoked NAMES KEYTYPE BASE64``: that key is refused for every host, as OpenSSH does, even
  where a plain entry lists it;
* ``@cert-authority PATTERNS KEYTYPE BASE64``: a host CA. paramiko does not verify host
  certificates, so such a line vouches for nothing here; it is kept only to say so when a host
  matching PATTERNS is not otherwise known;
* a comment, an empty line, an unknown marker or a line paramiko cannot read (a key type it does
  not know): skipped, as OpenSSH skips what it cannot use (logged at DEBUG).
"""

from __future__ import annotations

import binascii
import fnmatch
import logging
from dataclasses import dataclass
from pathlib import Path

import paramiko
from paramiko.pkey import UnknownKeyType

from ovsperf_common.runner import one_line
from remote.errors import RemoteError

log = logging.getLogger(__name__)

REVOKED = "@revoked"
CERT_AUTHORITY = "@cert-authority"
CERT_SUFFIX = "-cert-v01@openssh.com"
"""Host key algorithms ending so are OpenSSH certificates (PROTOCOL.certkeys)."""


@dataclass(frozen=True)
class KnownHosts:
    """What a known_hosts file says: trusted keys, revoked keys, host CAs' name patterns."""

    path: Path
    entries: tuple[paramiko.hostkeys.HostKeyEntry, ...] = ()
    """Plain entries, without any revoked key."""
    revoked: frozenset[tuple[str, str]] = frozenset()
    """(key type, base64 key) of every ``@revoked`` line."""
    authority_patterns: tuple[str, ...] = ()
    """Host name patterns of the ``@cert-authority`` lines (comma-separated lists split)."""

    def is_revoked(self, key: paramiko.PKey) -> bool:
        """Return whether ``key`` is marked ``@revoked``."""
        return (key.get_name(), key.get_base64()) in self.revoked

    def has_authority_for(self, hostname: str) -> bool:
        """Return whether a ``@cert-authority`` line's patterns match ``hostname``.

        ``hostname`` is ``[host]:port`` for ports other than 22; patterns have OpenSSH's ``*``/``?``
        wildcards and ``!`` negation.
        """
        name = hostname.lower()
        matched = False
        for pattern in self.authority_patterns:
            negated = pattern.startswith("!")
            if fnmatch.fnmatchcase(name, pattern.lstrip("!").lower()):
                if negated:
                    return False
                matched = True
        return matched

    def install(self, host_keys: paramiko.HostKeys) -> None:
        """Add the trusted entries to paramiko's ``host_keys`` (a client's ``get_host_keys()``)."""
        for entry in self.entries:
            for name in entry.hostnames:
                host_keys.add(name, entry.key.get_name(), entry.key)


def _key_id(line: str) -> tuple[str, str] | None:
    """Return (key type, base64) of ``NAMES KEYTYPE BASE64 …`` or None when fields are missing."""
    fields = line.split()
    return (fields[1], fields[2]) if len(fields) >= 3 else None


def read_known_hosts(path: Path) -> KnownHosts:
    """Read the known_hosts file ``path`` (module docstring); a missing file trusts nothing.

    :raises RemoteError: when it cannot be read, or is not UTF-8 text (naming the line).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return KnownHosts(path)
    except OSError as err:
        raise RemoteError(f"Cannot read the known_hosts file {one_line(path)}: {err.strerror}.") from err
    entries: list[paramiko.hostkeys.HostKeyEntry] = []
    revoked: set[tuple[str, str]] = set()
    patterns: list[str] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as err:
            raise RemoteError(
                f"The known_hosts file {one_line(path)}, line {number}, is not UTF-8 text (byte "
                f"0x{raw[err.start]:02x}); fix or remove that line."
            ) from err
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            marker, _, rest = line.partition(" ")
            key = _key_id(rest.strip())
            if marker == REVOKED and key is not None:
                revoked.add(key)
            elif marker == CERT_AUTHORITY and key is not None:
                patterns.extend(p for p in rest.split()[0].split(",") if p)
            else:
                log.debug("%s line %d: unknown marker or missing fields; skipped.", path, number)
            continue
        try:
            entry = paramiko.hostkeys.HostKeyEntry.from_line(line, number)
        except (
            paramiko.hostkeys.InvalidHostKey,
            paramiko.SSHException,
            UnknownKeyType,
            binascii.Error,
            ValueError,
        ) as err:
            log.debug("%s line %d: not a key paramiko can use (%s); skipped.", path, number, one_line(err))
            continue
        if entry is not None:
            entries.append(entry)
    trusted = tuple(e for e in entries if (e.key.get_name(), e.key.get_base64()) not in revoked)
    return KnownHosts(path, trusted, frozenset(revoked), tuple(patterns))
