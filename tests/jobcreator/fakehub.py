"""A stand-in Beaker hub: a real XML-RPC server on 127.0.0.1 speaking the hub's protocol.

Beaker's server cannot be installed here, so tests run beaker-client's real ``HubProxy``
against this double. It implements what the client calls on the ``/client/`` endpoint:
``auth.login_password`` and ``auth.login_oauth2`` (set a session cookie, like Beaker's),
``auth.who_am_i``,
``auth.logout`` and ``jobs.upload`` (requires the cookie, answers ``'J:<n>'``).
"""

from __future__ import annotations

import secrets
import threading
import xmlrpc.client
from dataclasses import dataclass, field
from typing import Any
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

COOKIE_NAME = "beaker_auth_token"


@dataclass
class HubState:
    """What the fake hub was told, for assertions."""

    username: str
    password: str
    access_token: str = "oauth2-token-for-tests"
    first_job_id: int = 1234
    calls: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)
    """Every job XML given to ``jobs.upload`` by a logged-in client, accepted or refused."""
    sessions: set[str] = field(default_factory=set)
    upload_fault: str | None = None
    refuse_containing: tuple[str, ...] = ()
    """Refuse (with a Fault) every uploaded job whose XML contains one of these strings."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _fault(exception: str, message: str) -> xmlrpc.client.Fault:
    # Beaker's XML-RPC controller reports exceptions as "<class 'module.Exception'>:message".
    return xmlrpc.client.Fault(1, f"<class '{exception}'>:{message}")


class _Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/client/", "/RPC2")
    state: HubState

    def _dispatch(self, method: str, params: tuple[Any, ...]) -> Any:
        state = self.server.state  # type: ignore[attr-defined]
        with state.lock:
            state.calls.append(method)
        cookie = self.headers.get("Cookie", "")
        logged_in = any(f"{COOKIE_NAME}={token}" in cookie for token in state.sessions)
        if method == "auth.login_password":
            username, password = params[0], params[1]
            if (username, password) != (state.username, state.password):
                raise _fault("bkr.server.identity.LoginException", "Invalid username or password")
            token = secrets.token_hex(8)
            state.sessions.add(token)
            self._set_cookie = f"{COOKIE_NAME}={token}; Path=/"
            return username
        if method == "auth.login_oauth2":
            if params[0] != state.access_token:
                raise _fault("bkr.server.identity.LoginException", "Invalid OAuth2 access token")
            token = secrets.token_hex(8)
            state.sessions.add(token)
            self._set_cookie = f"{COOKIE_NAME}={token}; Path=/"
            return state.username
        if method == "auth.who_am_i":
            if not logged_in:
                raise _fault("bkr.server.identity.IdentityFailure", "Not logged in")
            return state.username
        if method == "auth.logout":
            return True
        if method == "jobs.upload":
            if not logged_in:
                raise _fault("cherrypy._cperror.HTTPError", "Anonymous access denied")
            with state.lock:
                state.offered.append(params[0])
            if state.upload_fault is not None:
                raise _fault("bkr.server.bexceptions.BX", state.upload_fault)
            refused = [text for text in state.refuse_containing if text in params[0]]
            if refused:
                raise _fault("bkr.server.bexceptions.BX", f"Beaker refused the job for '{refused[0]}'")
            with state.lock:
                state.uploads.append(params[0])
                # Ids count every job offered, refused ones too (as if the hub had numbered them).
                return f"J:{state.first_job_id + len(state.offered) - 1}"
        raise xmlrpc.client.Fault(1, f"method '{method}' is not supported")

    def end_headers(self) -> None:
        cookie = getattr(self, "_set_cookie", None)
        if cookie:
            self.send_header("Set-Cookie", cookie)
            self._set_cookie = None
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakeBeakerHub:
    """Serve :class:`HubState` on a random port of 127.0.0.1 in a daemon thread."""

    def __init__(self, username: str, password: str) -> None:
        self.state = HubState(username=username, password=password)
        self._server = SimpleXMLRPCServer(
            ("127.0.0.1", 0), requestHandler=_Handler, logRequests=False, allow_none=True
        )
        self._server.state = self.state  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-beaker-hub", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeBeakerHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
