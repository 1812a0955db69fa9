"""Errors of ``ovsperf-remote``: one base, and the connection failures a user must tell apart."""

from __future__ import annotations

from ovsperf_common.errors import OvsperfError


class RemoteError(OvsperfError):
    """A remote host cannot be used (the message names the host and what to do)."""


class HostKeyError(RemoteError):
    """The host's SSH key is unknown (without ``--accept-new-host-key``) or changed: refused."""


class UnreachableError(RemoteError):
    """No SSH connection to the host within the deadline (address, route, firewall, sshd)."""


class AuthError(RemoteError):
    """The host refused every key we offered (agent and key files); no password is ever tried."""


class CancelledError(RemoteError):
    """A remote command was stopped on request (the other host of the run failed)."""
