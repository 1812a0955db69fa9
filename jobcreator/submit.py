"""Submit a validated job to a Beaker hub with beaker-client's own hub proxy; return its id.

The only module that talks to Beaker. It uses ``bkr.common.hub.HubProxy`` — the XML-RPC proxy
``bkr`` itself uses, with its cookie-keeping transport and its login methods (``password``,
``krbv``, ``oauth2``, ``none``) — configured the standard way (reference/beaker.md §2.3):
``/etc/beaker/client.conf`` first, then the user file on top: ``$BEAKER_CLIENT_CONF`` if set,
else ``~/.beaker_client/config`` (else the deprecated ``~/.beaker``). Keys: ``HUB_URL``,
``AUTH_METHOD``, ``USERNAME``/``PASSWORD``, ``ACCESS_TOKEN``, ``KRB_*``, ``CA_CERT``,
``SSL_VERIFY``.

Calls: ``auth.login_*`` then ``jobs.upload(job_xml, False)``, which answers ``'J:<id>'``.
Every request has a socket timeout and a bounded number of retries (bkr's own transport would
retry 5 × 30 s); a refused login, an unreachable hub and a hub ``Fault`` become typed errors
with one-line messages. The password is never logged or put in a message.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import ssl
import time
import xml.parsers.expat
import xmlrpc.client
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

import gssapi.raw
from bkr.common.hub import AuthenticationError, HubProxy
from bkr.common.pyconfig import ImproperlyConfigured, PyConfigParser

from jobcreator.errors import SubmitError
from jobcreator.jobmodel import HubSettings, is_job_id
from ovsperf_common.deadline import Deadline, DeadlineExceededError, run_within

log = logging.getLogger(__name__)

T = TypeVar("T")

SYSTEM_CONFIG: Final = Path("/etc/beaker/client.conf")
USER_CONFIG: Final = Path("~/.beaker_client/config")
AUTH_METHODS: Final = ("password", "krbv", "oauth2", "none")
_FAULT_PREFIX_RE: Final = re.compile(r"^<(?:class|type) '[\w.]+'>:\s*")
_NOT_DELIVERED: Final = (ConnectionRefusedError, socket.gaierror)
"""Connection errors after which the request surely never reached the hub (safe to resend)."""


@dataclass(frozen=True)
class ClientConfig:
    """The Beaker client configuration in effect and the files it came from."""

    values: Mapping[str, object]
    """Merged keys (``HUB_URL``, ``AUTH_METHOD``, …), later files overriding earlier ones."""
    files: tuple[Path, ...]
    """Files read, in load order."""

    @property
    def hub_url(self) -> str:
        """Return ``HUB_URL`` without a trailing slash."""
        return str(self.values.get("HUB_URL", "")).rstrip("/")

    @property
    def auth_method(self) -> str:
        """Return ``AUTH_METHOD`` (bkr's default is ``krbv``)."""
        return str(self.values.get("AUTH_METHOD", "krbv"))

    def describe(self) -> str:
        """Return the files for messages, e.g. ``'/home/u/.beaker_client/config'``."""
        return ", ".join(f"'{f}'" for f in self.files) or "no configuration file"


def load_client_config(environ: Mapping[str, str] | None = None) -> ClientConfig:
    """Read the Beaker client configuration the way ``bkr`` does.

    :param environ: environment to read ``BEAKER_CLIENT_CONF`` and ``HOME`` from (default
        ``os.environ``).
    :raises SubmitError: when ``BEAKER_CLIENT_CONF`` names a missing file, a file is not
        valid bkr configuration syntax, no file sets ``HUB_URL``, ``AUTH_METHOD`` is unknown, or
        password authentication lacks ``USERNAME``/``PASSWORD``.
    """
    env = os.environ if environ is None else environ
    files: list[Path] = []
    if SYSTEM_CONFIG.exists():
        files.append(SYSTEM_CONFIG)
    explicit = env.get("BEAKER_CLIENT_CONF")
    if explicit:
        if not Path(explicit).is_file():
            raise SubmitError(f"BEAKER_CLIENT_CONF names '{explicit}', which is not a readable file.")
        files.append(Path(explicit))
    else:
        home = Path(env.get("HOME", "~"))
        for candidate in (home / ".beaker_client" / "config", home / ".beaker"):
            if candidate.is_file():
                files.append(candidate)
                break

    values = PyConfigParser()
    for path in files:
        try:
            values.load_from_file(str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, ImproperlyConfigured) as err:
            raise SubmitError(f"Cannot read the Beaker client configuration '{path}': {err}") from err
    config = ClientConfig(values=dict(values), files=tuple(files))

    if not config.hub_url:
        raise SubmitError(
            f"No HUB_URL in the Beaker client configuration ({config.describe()}); set it in "
            f"$BEAKER_CLIENT_CONF, '{USER_CONFIG}' or '{SYSTEM_CONFIG}', "
            'e.g. HUB_URL = "https://beaker.example.com/bkr".'
        )
    if config.auth_method not in AUTH_METHODS:
        raise SubmitError(
            f"AUTH_METHOD '{config.auth_method}' in {config.describe()} is not one of "
            f"{', '.join(AUTH_METHODS)}."
        )
    if config.auth_method == "password" and not (values.get("USERNAME") and values.get("PASSWORD")):
        raise SubmitError(
            f"AUTH_METHOD is 'password' but USERNAME or PASSWORD is missing in {config.describe()}."
        )
    return config


def fault_text(fault: xmlrpc.client.Fault) -> str:
    """Return a Fault's message without Beaker's ``<class '…'>:`` prefix, for error messages.

    Beaker's hub sends ``faultString`` as ``"<class 'bkr.common.bexceptions.BX'>: <message>"``;
    the class name tells the user nothing.
    """
    return _FAULT_PREFIX_RE.sub("", str(fault.faultString)).strip()


def _call(
    what: str, call: Callable[[], T], settings: HubSettings, deadline: Deadline, *, resend_safe: bool
) -> T:
    """Run one hub call with bounded retries on connection errors.

    :param resend_safe: retry after any socket error (login); otherwise only when the request
        surely never reached the hub (upload: a job must not be submitted twice).
    :raises OSError: the last connection error once the attempts or the deadline run out.
    """
    for attempt in range(settings.retries + 1):
        try:
            # One deadline over the whole call: the hub's socket timeout holds per read only.
            return run_within(deadline.remaining_s(), f"{what} at the Beaker hub", call)
        except OSError as err:
            retriable = resend_safe or isinstance(err, _NOT_DELIVERED)
            if (
                not retriable
                or attempt == settings.retries
                or deadline.remaining_s() <= settings.retry_interval_s
            ):
                raise
            log.warning(
                "%s failed (%s); attempt %d of %d, retrying in %.0f s.",
                what,
                err,
                attempt + 1,
                settings.retries + 1,
                settings.retry_interval_s,
            )
            time.sleep(settings.retry_interval_s)
    raise AssertionError("unreachable")  # pragma: no cover


def submit_job(job_xml: str, settings: HubSettings, config: ClientConfig | None = None) -> str:
    """Log in to the configured hub and submit ``job_xml``; return the job id ``'J:<n>'``.

    Takes at most ``2 × settings.worst_case_s`` (login, then upload).

    :param job_xml: a job that passed :func:`jobcreator.validate.validate_job`.
    :param config: client configuration (default: :func:`load_client_config`).
    :raises SubmitError: when the configuration is unusable (see :func:`load_client_config`, or a
        login method that needs settings it lacks), the hub cannot be reached or times out, refuses
        the credentials, answers ``jobs.upload`` with a Fault, an HTTP error or something that is
        not a job id.
    """
    config = config if config is not None else load_client_config()
    hub_url = config.hub_url
    deadline = Deadline.in_seconds(2 * settings.worst_case_s, f"Beaker hub '{hub_url}'")
    user = config.values.get("USERNAME")
    try:
        hub = HubProxy(dict(config.values), auto_login=False, timeout=settings.timeout_s, HUB_URL=hub_url)
        # bkr's transport retries 5 × 30 s on its own; ours are bounded and logged on one line.
        hub._transport.retry_count = 0
        log.info(
            "Logging in to Beaker hub '%s' (%s%s).",
            hub_url,
            config.auth_method,
            f" as '{user}'" if user and config.auth_method == "password" else "",
        )
        try:
            _call("Login", hub._login, settings, deadline, resend_safe=True)
        except xmlrpc.client.Fault as fault:
            raise SubmitError(
                f"Beaker hub '{hub_url}' refused the {config.auth_method} login"
                f"{f' of {user!r}' if user else ''}: {fault_text(fault)}"
            ) from fault
        except (gssapi.raw.GSSError, AuthenticationError) as err:
            raise SubmitError(f"{config.auth_method} login to Beaker hub '{hub_url}' failed: {err}") from err
        deadline.check()
        try:
            job_id = _call(
                "Job upload", lambda: hub.jobs.upload(job_xml, False), settings, deadline, resend_safe=False
            )
        except xmlrpc.client.Fault as fault:
            raise SubmitError(f"Beaker hub '{hub_url}' rejected the job: {fault_text(fault)}") from fault
    except ImproperlyConfigured as err:
        raise SubmitError(f"Beaker client configuration {config.describe()}: {err}") from err
    except xmlrpc.client.ProtocolError as err:
        raise SubmitError(
            f"Beaker hub '{hub_url}' answered HTTP {err.errcode} {err.errmsg}; is HUB_URL right "
            f"in {config.describe()}?"
        ) from err
    except (xmlrpc.client.ResponseError, xml.parsers.expat.ExpatError) as err:
        raise SubmitError(f"Beaker hub '{hub_url}' sent a reply that is not XML-RPC: {err}") from err
    except ssl.SSLError as err:
        raise SubmitError(
            f"TLS with Beaker hub '{hub_url}' failed: {err}; set CA_CERT (or SSL_VERIFY = False) "
            f"in {config.describe()}."
        ) from err
    except (OSError, DeadlineExceededError) as err:
        raise SubmitError(
            f"Cannot reach Beaker hub '{hub_url}' (from {config.describe()}): {err or type(err).__name__}; "
            f"gave up after {deadline.elapsed_s():.1f} s."
        ) from err
    if not isinstance(job_id, str) or not is_job_id(job_id):
        raise SubmitError(f"Beaker hub '{hub_url}' answered {job_id!r} instead of a job id 'J:<n>'.")
    log.debug("Hub '%s' accepted the job as '%s'.", hub_url, job_id)
    return job_id
