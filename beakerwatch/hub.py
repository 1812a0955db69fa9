"""Ask the Beaker hub about jobs through beaker-client's own ``HubProxy``, with bounded retries.

The hub is configured the way ``bkr`` and ``jobcreator`` configure it
(:func:`jobcreator.submit.load_client_config`: ``/etc/beaker/client.conf``, then
``$BEAKER_CLIENT_CONF`` or ``~/.beaker_client/config``). The calls used here —
``taskactions.task_info``, ``taskactions.to_xml`` and ``taskactions.files`` — need no login, so
no credential is read or sent; ``CA_CERT``/``SSL_VERIFY`` also govern the log downloads
(:meth:`BeakerHub.ssl_context`).

Every call is bounded: a socket timeout per read, :func:`ovsperf_common.deadline.run_within` over
the whole call (a hub trickling bytes cannot hold it), and tenacity's retries with exponential
backoff on errors that may pass (refused or dropped connections, timeouts, HTTP 5xx), stopped by
the attempt count and by the pass's :class:`~ovsperf_common.deadline.Deadline`. bkr's own
transport retries (5 × 30 s, unlogged) are switched off. A ``Fault`` (the hub answered: unknown
job, …) is not retried. A reply is parsed while it arrives, and no more than
:data:`MAX_REPLY_BYTES` of it (after gzip inflation) are fed to the parser: a hub that sends a
gzip bomb or an endless document fails that call instead of filling this process's memory.
"""

from __future__ import annotations

import http.client
import logging
import math
import ssl
import xml.parsers.expat
import xmlrpc.client
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import tenacity
from bkr.common.hub import HubProxy

from beakerwatch.errors import BeakerWatchError, HubError
from jobcreator.submit import ClientConfig, fault_text
from ovsperf_common.deadline import Deadline, run_within
from ovsperf_common.secrets import url_credentials

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_REPLY_BYTES = 16 * 1024 * 1024
"""Largest XML-RPC reply a hub call takes, as sent and after gzip inflation [B]. A job's results
XML (``taskactions.to_xml`` with every task result) stays far below it; it is also below the
30 MB that defusedxml's ``monkey_patch`` (koji imports it) puts on a gzip reply, so this limit is
the one that speaks."""


class _CappedParser:
    """Feed an XML-RPC reply to the standard library's parser, refusing more than ``limit`` bytes."""

    def __init__(self, parser: Any, limit: int) -> None:
        self.parser = parser
        self.limit = limit
        self.fed = 0

    def feed(self, data: bytes) -> None:
        """Feed ``data``.

        :raises xmlrpc.client.ResponseError: once the reply passes the limit.
        """
        self.fed += len(data)
        if self.fed > self.limit:
            raise xmlrpc.client.ResponseError(f"the reply is larger than {self.limit} bytes (inflated)")
        self.parser.feed(data)

    def close(self) -> None:
        """Finish parsing."""
        self.parser.close()


class _CappedBody:
    """An HTTP response whose body is read no further than ``limit`` bytes (as sent, before inflation)."""

    def __init__(self, response: Any, limit: int) -> None:
        self.response = response
        self.limit = limit
        self.received = 0

    def getheader(self, name: str, default: str | None = None) -> str | None:
        """Return the response's header ``name``."""
        value: str | None = self.response.getheader(name, default)
        return value

    def read(self, amount: int | None = None) -> bytes:
        """Read up to ``amount`` bytes (all: up to the limit).

        :raises xmlrpc.client.ResponseError: once the body passes the limit.
        """
        room = self.limit + 1 - self.received
        data: bytes = self.response.read(room if amount is None or amount < 0 else min(amount, room))
        self.received += len(data)
        if self.received > self.limit:
            raise xmlrpc.client.ResponseError(f"the reply is larger than {self.limit} bytes (as sent)")
        return data

    def close(self) -> None:
        """Close the response."""
        self.response.close()


_CAPPED_CLASSES: dict[tuple[type, int], type] = {}


def cap_replies(transport: Any, limit: int = MAX_REPLY_BYTES) -> None:
    """Make ``transport`` (beaker-client's own, as ``HubProxy`` built it) refuse replies over ``limit`` [B].

    The transport keeps its class's behaviour (cookies, TLS context, ``CA_CERT``): only
    ``parse_response`` and ``getparser`` are wrapped, in a subclass made once per class and limit.
    The body is read no further than ``limit`` bytes as sent (the standard library reads a gzip
    body whole before inflating it), and no more than ``limit`` bytes after inflation reach the
    parser (the standard library inflates 1 KiB at a time). It does not ask for gzip
    (``accept_gzip_encoding``), so a hub that follows HTTP sends the reply plain.
    """
    base = type(transport)
    capped = _CAPPED_CLASSES.get((base, limit))
    if capped is None:

        def getparser(self: Any) -> tuple[Any, Any]:
            parser, unmarshaller = base.getparser(self)
            return _CappedParser(parser, limit), unmarshaller

        def parse_response(self: Any, response: Any) -> Any:
            return base.parse_response(self, _CappedBody(response, limit))

        capped = type(
            f"Capped{base.__name__}",
            (base,),
            {"getparser": getparser, "parse_response": parse_response, "accept_gzip_encoding": False},
        )
        _CAPPED_CLASSES[(base, limit)] = capped
    transport.__class__ = capped


@dataclass(frozen=True)
class HubRetryPolicy:
    """How long one request may take and how often it is tried again."""

    timeout_s: float = 60.0
    """Limit of one attempt (socket reads and the whole call) [s]."""
    retries: int = 4
    """Extra attempts after a transient failure [1]."""
    backoff_s: float = 5.0
    """Pause before the first retry; doubled after each one [s]."""
    backoff_max_s: float = 120.0
    """Longest pause between attempts [s]."""

    def __post_init__(self) -> None:
        """Check the numbers.

        :raises BeakerWatchError: naming the option when one is out of range.
        """
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise BeakerWatchError(f"--hub-timeout-s {self.timeout_s!r} is not a positive number of seconds.")
        if isinstance(self.retries, bool) or self.retries < 0:
            raise BeakerWatchError(f"--hub-retries {self.retries!r} is not a count >= 0.")
        if not (math.isfinite(self.backoff_s) and 0 <= self.backoff_s <= self.backoff_max_s):
            raise BeakerWatchError(
                f"--retry-backoff-s {self.backoff_s!r} is not a pause between 0 and {self.backoff_max_s} s."
            )


def is_transient(err: BaseException) -> bool:
    """Return whether a failed request may succeed when tried again.

    Connection errors and timeouts (``OSError``, including
    :class:`~ovsperf_common.deadline.DeadlineExceededError`), a connection closed mid-answer
    (``http.client.HTTPException``) and HTTP 5xx answers are; a ``Fault`` and HTTP 4xx are not.
    """
    if isinstance(err, xmlrpc.client.ProtocolError):
        return err.errcode >= 500
    return isinstance(err, (OSError, http.client.HTTPException)) and not isinstance(
        err, ssl.SSLCertVerificationError
    )


class _StopAtDeadline(tenacity.stop.stop_base):
    """Stop retrying when the next pause would pass the deadline."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.deadline.remaining_s() <= (retry_state.upcoming_sleep or 0.0) + 0.01


def with_retries(what: str, call: Callable[[], T], policy: HubRetryPolicy, deadline: Deadline) -> T:
    """Return ``call()``, trying again on transient errors (:func:`is_transient`) with backoff.

    Each attempt is bounded by ``policy.timeout_s`` (and what is left of ``deadline``); retries stop
    after ``policy.retries`` or when the next pause would pass ``deadline``.

    :param what: the request for messages, e.g. ``"taskactions.task_info('J:1')" at 'http://hub'``.
    :raises HubError: when the last attempt failed transiently, naming ``what``, the attempts and
        the last error.
    :raises BaseException: a non-transient error of ``call`` as it is.
    """

    def attempt() -> T:
        remaining_s = deadline.remaining_s()
        if remaining_s <= 0:
            deadline.check()
        return run_within(min(policy.timeout_s, remaining_s), what, call)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        log.warning(
            "%s failed (%s); attempt %d of %d, retrying in %.1f s.",
            what,
            error or "no answer",
            state.attempt_number,
            policy.retries + 1,
            state.upcoming_sleep,
        )

    retrying = tenacity.Retrying(
        stop=tenacity.stop_any(tenacity.stop_after_attempt(policy.retries + 1), _StopAtDeadline(deadline)),
        wait=tenacity.wait_exponential(
            multiplier=policy.backoff_s, min=policy.backoff_s, max=policy.backoff_max_s
        ),
        retry=tenacity.retry_if_exception(is_transient),
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except BaseException as err:
        if not is_transient(err):
            raise
        attempts = retrying.statistics.get("attempt_number", 1)
        if deadline.expired():
            raise HubError(
                f"{what} was not done when the pass's deadline of {deadline.timeout_s:g} s ran out "
                f"({attempts} attempt(s)): {err or type(err).__name__}."
            ) from err
        raise HubError(
            f"{what} failed {attempts} time(s) in {deadline.elapsed_s():.1f} s: "
            f"{err or type(err).__name__}; giving up for this pass."
        ) from err


class BeakerHub:
    """The read-only part of a Beaker hub's ``taskactions`` API, each call retried and bounded."""

    def __init__(
        self,
        config: ClientConfig,
        policy: HubRetryPolicy,
        deadline: Deadline,
        *,
        max_reply_bytes: int = MAX_REPLY_BYTES,
    ) -> None:
        """Remember the configuration; nothing is sent until a method is called.

        :param max_reply_bytes: largest reply a call takes, inflated [B].

        :raises BeakerWatchError: when ``HUB_URL`` carries credentials (they would reach messages).
        """
        why = url_credentials(config.hub_url)
        if why is not None:
            raise BeakerWatchError(
                f"The Beaker client configuration's HUB_URL is refused: {why}; "
                "put the credentials in USERNAME/PASSWORD or a keytab, not in the URL."
            )
        self.config = config
        self.policy = policy
        self.deadline = deadline
        self.max_reply_bytes = max_reply_bytes

    @property
    def url(self) -> str:
        """Return ``HUB_URL``."""
        return self.config.hub_url

    def _proxy(self) -> Any:
        # One proxy per attempt: an attempt abandoned by run_within may still hold the old socket.
        proxy = HubProxy(
            dict(self.config.values), auto_login=False, timeout=self.policy.timeout_s, HUB_URL=self.url
        )
        proxy._transport.retry_count = 0  # bkr would retry 5 × 30 s on its own
        cap_replies(proxy._transport, self.max_reply_bytes)
        return proxy

    def _call(self, method: str, *args: object) -> Any:
        what = f"'{method}({', '.join(repr(a) for a in args[:1])})' at Beaker hub '{self.url}'"

        def call() -> Any:
            target: Any = self._proxy()
            for part in method.split("."):
                target = getattr(target, part)
            return target(*args)

        try:
            return with_retries(what, call, self.policy, self.deadline)
        except xmlrpc.client.Fault as fault:
            raise BeakerWatchError(f"Beaker hub '{self.url}' refused {what}: {fault_text(fault)}") from fault
        except xmlrpc.client.ProtocolError as err:
            raise HubError(
                f"Beaker hub '{self.url}' answered HTTP {err.errcode} {err.errmsg} to {what}; "
                f"is HUB_URL right in {self.config.describe()}?"
            ) from err
        except (xmlrpc.client.ResponseError, xml.parsers.expat.ExpatError, ValueError) as err:
            # ValueError: the standard library's or defusedxml's gzip limit (a patched xmlrpc.client).
            raise HubError(
                f"Beaker hub '{self.url}' sent a reply that is not XML-RPC to {what}: {err}"
            ) from err

    def task_info(self, taskspec: str) -> dict[str, Any]:
        """Return ``taskactions.task_info(taskspec)``: ``id``, ``state_label``, ``is_finished``, ….

        :raises HubError: when the hub stays unreachable or slow.
        :raises BeakerWatchError: when the hub answers with a Fault (e.g. an unknown job).
        """
        info = self._call("taskactions.task_info", taskspec, False)
        if not isinstance(info, dict) or "state_label" not in info:
            raise BeakerWatchError(
                f"Beaker hub '{self.url}' answered {info!r} for {taskspec!r}; expected a task dict."
            )
        return info

    def results_xml(self, taskspec: str) -> str:
        """Return the results XML: ``taskactions.to_xml(taskspec, False, True, False)``.

        (``clone=False``: with statuses and results; ``exclude_enclosing_job=True``; no log links.)

        :raises HubError: when the hub stays unreachable or slow.
        :raises BeakerWatchError: when the hub answers with a Fault.
        """
        text = self._call("taskactions.to_xml", taskspec, False, True, False)
        if isinstance(text, xmlrpc.client.Binary):
            text = text.data.decode("utf-8", errors="replace")
        if not isinstance(text, str):
            raise BeakerWatchError(
                f"Beaker hub '{self.url}' answered {type(text).__name__} for the XML of {taskspec!r}."
            )
        return text

    def files(self, taskspec: str) -> list[dict[str, Any]]:
        """Return ``taskactions.files(taskspec)``: one dict per log (``filename``, ``path``, ``url``, …).

        :raises HubError: when the hub stays unreachable or slow.
        :raises BeakerWatchError: when the hub answers with a Fault or something that is not a list.
        """
        files = self._call("taskactions.files", taskspec)
        if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
            raise BeakerWatchError(
                f"Beaker hub '{self.url}' answered {files!r} for the files of {taskspec!r}."
            )
        return files

    def ssl_context(self) -> ssl.SSLContext | None:
        """Return the TLS context for log downloads: ``CA_CERT``, or unverified when ``SSL_VERIFY`` is false.

        ``None`` means Python's default (system CAs).

        :raises BeakerWatchError: when ``CA_CERT`` cannot be loaded.
        """
        ca_cert = self.config.values.get("CA_CERT")
        if ca_cert:
            try:
                return ssl.create_default_context(cafile=str(ca_cert))
            except (OSError, ssl.SSLError) as err:
                raise BeakerWatchError(
                    f"CA_CERT '{ca_cert}' in {self.config.describe()} cannot be loaded: {err}."
                ) from err
        if self.config.values.get("SSL_VERIFY", True) is False:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        return None
