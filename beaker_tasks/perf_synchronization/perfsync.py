#!/usr/bin/env python3
# ruff: noqa: UP006, UP035
"""Synchronise lab hosts without Beaker's sync: each host serves the states it has set.

Runs on RHEL/Fedora lab machines before the ovsperf package is installed, so it uses the Python
standard library only and stays compatible with Python 3.6 (RHEL 8's platform Python).

* ``--set STATE [--data FILE]`` records STATE (and up to 64 KiB of text data) in the state
  directory, atomically, and makes sure this host's HTTP server runs (it is started in its own
  session and outlives the task). States are files, so a reboot or a server restart loses nothing;
  any later ``--set`` restarts the server, and so does ``--wait`` on the address an earlier
  ``--set`` recorded (``--wait`` never opens a listening socket of its own choosing).
* ``--serve`` is that server: ``GET /v1/states/<STATE>`` answers 200 with the state as JSON or 404;
  ``GET /v1/health`` identifies it. Nothing can be set remotely (no POST/PUT).
* ``--wait STATE --peer HOST[:PORT] [--timeout S]`` polls the peer until it serves STATE, with one
  monotonic deadline over every connect and read (a peer that trickles bytes cannot stretch it);
  on timeout it fails naming the state, the peer, the time waited and the last answer.
  ``--output FILE`` saves the data; ``--install authorized_keys|known_hosts`` installs SSH
  public keys or host keys the peer published, so no private key or password ever passes through
  Beaker (published data containing a private key is refused on both sides). Host keys are
  recorded only under the peer's own name and addresses: a peer cannot plant a key for another
  host. An answer that is not usable JSON (e.g. nested thousands deep) fails at once, one line.

Exit codes: 0 OK; 2 error (bad arguments, unreadable data, timeout, server cannot start).
Why not Beaker/restraint sync: it has no usable timeout, and froze during DUT network
configuration in the original system (reference/beaker.md §5).
"""

import argparse
import errno
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from typing import Any, Dict, List, Optional, Tuple

DEFAULT_PORT = 6780
"""TCP port of the state server (restraint's own sync uses 6776)."""
DEFAULT_STATE_DIR = "/var/lib/ovsperf-perfsync"
"""Where states, the server's PID file and its log live."""
DEFAULT_TIMEOUT_S = 3600.0
"""How long ``--wait`` waits when no ``--timeout`` is given [s]."""
MAX_DATA_BYTES = 65536
"""Largest data a state may carry [B]."""
EXIT_OK = 0
EXIT_ERROR = 2

_STATE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PUBKEY_RE = re.compile(
    r"^(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|sk-[a-z0-9@.-]+)"
    r" [A-Za-z0-9+/]+={0,3}(?: [^\n]*)?$"
)
_HOSTNAMES_RE = re.compile(r"^[A-Za-z0-9.:\[\]_-]+(?:,[A-Za-z0-9.:\[\]_-]+)*$")

log = logging.getLogger("perfsync")


class PerfsyncError(Exception):
    """A problem reported to the user as one line and exit code 2."""


class BadAnswerError(ValueError):
    """The peer answered with a body that cannot be a state (JSON nested too deeply)."""


# --- states on disk -------------------------------------------------------------------------


def check_state_name(state: str) -> str:
    """Return ``state`` if it is a valid state name (letters, digits, ``_.-``, at most 64).

    :raises PerfsyncError: naming the state otherwise.
    """
    if not _STATE_RE.match(state):
        raise PerfsyncError(
            f"State name '{state}' is invalid; use 1-64 letters, digits, '_', '.', '-' "
            "(starting with a letter or digit)."
        )
    return state


def check_data(text: str, origin: str) -> str:
    """Return ``text`` if it may be published: small and never a private key.

    :raises PerfsyncError: when it is larger than 64 KiB or holds a private key.
    """
    if len(text.encode("utf-8")) > MAX_DATA_BYTES:
        raise PerfsyncError(f"Data from {origin} exceeds {MAX_DATA_BYTES} bytes.")
    if "PRIVATE KEY" in text:
        raise PerfsyncError(f"Data from {origin} contains a private key; only public keys may be published.")
    return text


def _atomic_write(path: str, text: str, mode: int = 0o644) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".perfsync.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _states_dir(state_dir: str) -> str:
    return os.path.join(state_dir, "states")


def set_state(state_dir: str, state: str, data: Optional[str]) -> Dict[str, Any]:
    """Record ``state`` with optional ``data`` in ``state_dir`` atomically; return the record."""
    check_state_name(state)
    if data is not None:
        check_data(data, f"state '{state}'")
    os.makedirs(_states_dir(state_dir), mode=0o755, exist_ok=True)
    record = {"state": state, "host": socket.getfqdn(), "set_at": time.time(), "data": data}
    _atomic_write(
        os.path.join(_states_dir(state_dir), state + ".json"), json.dumps(record, sort_keys=True) + "\n"
    )
    return record


def read_state(state_dir: str, state: str) -> Optional[Dict[str, Any]]:
    """Return the record of ``state`` or None when it is not set (or its file is unreadable)."""
    path = os.path.join(_states_dir(state_dir), check_state_name(state) + ".json")
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and record.get("state") == state else None


def list_states(state_dir: str) -> List[str]:
    """Return the names of the states set here, sorted."""
    try:
        names = os.listdir(_states_dir(state_dir))
    except OSError:
        return []
    return sorted(
        n[: -len(".json")] for n in names if n.endswith(".json") and _STATE_RE.match(n[: -len(".json")])
    )


# --- server ---------------------------------------------------------------------------------


class _Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: Tuple[str, int], state_dir: str) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.state_dir = state_dir
        HTTPServer.__init__(self, address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server_version = "perfsync/1"
    timeout = 10  # a client that sends nothing cannot hold a thread for long [s]

    def _reply(self, code: int, body: Dict[str, Any]) -> None:
        payload = (json.dumps(body, sort_keys=True) + "\n").encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def do_GET(self) -> None:
        state_dir = self.server.state_dir  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        if path == "/v1/health":
            self._reply(200, {"service": "perfsync", "state_dir": os.path.abspath(state_dir)})
        elif path == "/v1/states":
            self._reply(200, {"states": list_states(state_dir)})
        elif path.startswith("/v1/states/"):
            name = path[len("/v1/states/") :]
            if not _STATE_RE.match(name):
                self._reply(400, {"error": "invalid state name"})
                return
            record = read_state(state_dir, name)
            if record is None:
                self._reply(404, {"error": "state not set", "state": name})
            else:
                self._reply(200, record)
        else:
            self._reply(404, {"error": "no such resource"})

    def do_HEAD(self) -> None:
        self.do_GET()

    def _refuse(self) -> None:
        self._reply(405, {"error": "states are read-only over HTTP"})

    def do_POST(self) -> None:
        self._refuse()

    def do_PUT(self) -> None:
        self._refuse()

    def do_DELETE(self) -> None:
        self._refuse()

    def log_message(self, format: str, *args: Any) -> None:
        # The request line is the peer's: escape what could drive the reader's terminal (ESC, CR).
        log.info("%s %s", self.address_string(), _printable(format % args))


def _printable(text: str) -> str:
    r"""Return ``text`` with every non-printable character as its Python escape (``\x1b``), bounded."""
    text = text[:2000]
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii") for c in text
    )


def _pid_file(state_dir: str) -> str:
    return os.path.join(state_dir, "server.pid")


def _bind_file(state_dir: str) -> str:
    """Return the file holding the address and port ``--set`` asked the server to listen on."""
    return os.path.join(state_dir, "server.bind")


def _recorded_bind(state_dir: str) -> Optional[Tuple[str, int]]:
    """Return the (address, port) a ``--set`` recorded, or None when none did."""
    try:
        with open(_bind_file(state_dir), encoding="utf-8") as handle:
            record = json.load(handle)
        return str(record["bind"]), int(record["port"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def serve(state_dir: str, port: int, bind: str) -> int:
    """Serve the states of ``state_dir`` on ``bind``:``port`` until SIGTERM/SIGINT; return 0.

    :raises PerfsyncError: when the port cannot be bound.
    """
    os.makedirs(_states_dir(state_dir), mode=0o755, exist_ok=True)
    try:
        server = _Server((bind, port), state_dir)
    except OSError as err:
        raise PerfsyncError(
            "Cannot listen on {}:{}: {}.".format(bind or "*", port, err.strerror or err)
        ) from err

    def _stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    _atomic_write(_pid_file(state_dir), f"{os.getpid()}\n")
    log.info("Serving %d state(s) from '%s' on port %d.", len(list_states(state_dir)), state_dir, port)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        log.info("Stopping.")
    finally:
        server.server_close()
        try:
            with open(_pid_file(state_dir), encoding="utf-8") as handle:
                if handle.read().strip() == str(os.getpid()):
                    os.unlink(_pid_file(state_dir))
        except OSError:
            pass
    return EXIT_OK


def _get(url: str, timeout_s: float) -> Tuple[int, Optional[Dict[str, Any]]]:
    """GET ``url`` (``http://host:port/path``); return (HTTP status, JSON body or None).

    The whole exchange — connect, send, every read — ends by one monotonic deadline ``timeout_s``
    from now, whatever the peer does: a peer that sends one byte every half second cannot hold the
    wait past it (a per-read socket timeout would let it). At most ``2 * MAX_DATA_BYTES`` of body
    are read.

    :raises OSError: when the peer is unreachable, closes early or the deadline passes
        (``socket.timeout``).
    :raises BadAnswerError: when the body is JSON nested too deeply for the parser.
    """
    deadline = time.monotonic() + timeout_s
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "", parts.port or 80

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout(f"no complete answer within {timeout_s:g} s")
        return left

    limit = MAX_DATA_BYTES * 2 + 16384
    chunks: List[bytes] = []
    size = 0
    with socket.create_connection((host, port), timeout=remaining()) as sock:
        sock.settimeout(remaining())
        sock.sendall(f"GET {parts.path or '/'} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode("ascii"))
        while size < limit:
            sock.settimeout(remaining())
            chunk = sock.recv(min(65536, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    raw = b"".join(chunks)
    head, _, body_bytes = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise ConnectionError(f"not an HTTP answer: {head[:60]!r}")
    try:
        body = json.loads(body_bytes.decode("utf-8"))
    except ValueError:
        body = None
    except RecursionError as err:
        raise BadAnswerError(f"JSON nested too deeply ({len(body_bytes)} B)") from err
    return int(status_line[1]), body if isinstance(body, dict) else None


def _server_running(state_dir: str, port: int) -> bool:
    try:
        status, body = _get(f"http://127.0.0.1:{port}/v1/health", 2.0)
    except (OSError, ValueError):
        return False
    return status == 200 and body is not None and body.get("state_dir") == os.path.abspath(state_dir)


def ensure_server(state_dir: str, port: int, bind: str, start_timeout_s: float = 10.0) -> None:
    """Start this host's server in its own session unless it already answers.

    :raises PerfsyncError: when it does not answer within ``start_timeout_s``, quoting its log.
    """
    if _server_running(state_dir, port):
        return
    os.makedirs(state_dir, mode=0o755, exist_ok=True)
    log_path = os.path.join(state_dir, "server.log")
    with open(log_path, "ab") as log_file:
        child = subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--serve",
                "--state-dir",
                state_dir,
                "--port",
                str(port),
                "--bind",
                bind,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,
        )
    deadline = time.monotonic() + start_timeout_s
    while time.monotonic() < deadline:
        if _server_running(state_dir, port):
            log.info("Started the state server (PID %d) on port %d.", child.pid, port)
            return
        if child.poll() is not None:
            break
        time.sleep(0.1)
    with open(log_path, encoding="utf-8", errors="replace") as handle:
        tail = " | ".join(handle.read().splitlines()[-3:])
    raise PerfsyncError(f"The state server did not start on port {port}; its log '{log_path}' ends: {tail}")


def stop_server(state_dir: str) -> bool:
    """Stop this host's server by the PID in its PID file; return whether one was stopped."""
    try:
        with open(_pid_file(state_dir), encoding="utf-8") as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError as err:
        if err.errno == errno.ESRCH:
            return False
        raise
    return True


# --- waiting --------------------------------------------------------------------------------


def parse_peer(peer: str, default_port: int) -> Tuple[str, int]:
    """Split ``HOST``, ``HOST:PORT`` or ``[V6ADDR]:PORT`` into (host for a URL, port).

    :raises PerfsyncError: on an empty host or a bad port.
    """
    match = re.match(r"^\[([0-9A-Fa-f:.]+)\](?::(\d+))?$", peer) or re.match(
        r"^([A-Za-z0-9._-]+)(?::(\d+))?$", peer
    )
    if match is None:
        raise PerfsyncError(f"Peer '{peer}' is not HOST, HOST:PORT or [IPV6]:PORT.")
    host = match.group(1)
    port = int(match.group(2)) if match.group(2) else default_port
    if not 0 < port < 65536:
        raise PerfsyncError(f"Peer '{peer}' has an invalid port.")
    return (f"[{host}]" if ":" in host else host), port


def wait_state(
    state: str,
    peer: str,
    port: int,
    timeout_s: float,
    interval_s: float = 2.0,
    progress_s: float = 60.0,
) -> Dict[str, Any]:
    """Poll ``peer`` until it serves ``state``; return the state record.

    :raises PerfsyncError: when the deadline passes, naming the state, the peer, the time waited and
        the peer's last answer; or when the peer publishes a private key or answers with a body
        that cannot be a state (JSON nested too deeply).
    """
    check_state_name(state)
    host, peer_port = parse_peer(peer, port)
    url = f"http://{host}:{peer_port}/v1/states/{state}"
    start = time.monotonic()
    deadline = start + timeout_s
    next_progress = start + progress_s
    last = "no answer yet"
    log.info("Waiting up to %.0f s for state '%s' from peer '%s' (%s).", timeout_s, state, peer, url)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            status, body = _get(url, max(0.2, min(5.0, remaining)))
            if status == 200 and body is not None and body.get("state") == state:
                data = body.get("data")
                if data is not None and not isinstance(data, str):
                    raise PerfsyncError(f"Peer '{peer}' sent non-text data for state '{state}'.")
                if isinstance(data, str):
                    check_data(data, f"peer '{peer}' state '{state}'")
                log.info(
                    "Peer '%s' has set state '%s' (after %.1f s).", peer, state, time.monotonic() - start
                )
                return body
            last = "HTTP {}{}".format(status, " (state not set yet)" if status == 404 else "")
        except BadAnswerError as err:
            raise PerfsyncError(
                f"Peer '{peer}' answered for state '{state}' with something that is not a state: {err}."
            ) from err
        except (OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            last = f"unreachable: {reason}"
        now = time.monotonic()
        if now >= next_progress:
            log.info(
                "Still waiting for state '%s' from peer '%s': %.0f s elapsed, %.0f s left; last answer: %s.",
                state,
                peer,
                now - start,
                max(0.0, deadline - now),
                last,
            )
            next_progress += progress_s
        time.sleep(max(0.0, min(interval_s, deadline - time.monotonic())))
    raise PerfsyncError(
        f"Timed out after {time.monotonic() - start:.1f} s waiting for state '{state}' from peer '{peer}' "
        f"(port {peer_port}); last answer: {last}."
    )


# --- installing keys ------------------------------------------------------------------------


def _key_lines(data: str) -> List[str]:
    return [line.strip() for line in data.splitlines() if line.strip() and not line.strip().startswith("#")]


def install_authorized_keys(data: str, ssh_dir: str) -> int:
    """Append the SSH public keys in ``data`` to ``ssh_dir/authorized_keys`` unless present.

    :returns: the number of keys added.
    :raises PerfsyncError: when a line is not an OpenSSH public key, or there is none.
    """
    keys = _key_lines(data)
    if not keys:
        raise PerfsyncError("The peer's data holds no SSH public key.")
    for key in keys:
        if not _PUBKEY_RE.match(key):
            raise PerfsyncError(f"Not an OpenSSH public key: '{key[:60]}'.")
    return _append_unique(os.path.join(ssh_dir, "authorized_keys"), keys, ssh_dir)


def _peer_names(peer: str) -> Tuple[str, List[str]]:
    """Return the peer's host as ``--peer`` names it (no brackets) and the names that are its own.

    Its own names are that host and the addresses it resolves to, in lower case.
    """
    host = parse_peer(peer, DEFAULT_PORT)[0].strip("[]")
    names = [host.lower()]
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        infos = []
    for info in infos:
        address = str(info[4][0]).lower()
        if address not in names:
            names.append(address)
    return host, names


def install_known_hosts(data: str, peer: str, ssh_dir: str) -> int:
    """Add the host keys in ``data`` to ``ssh_dir/known_hosts``, under the peer's own names only.

    Each line is ``NAMES KEYTYPE BASE64`` (NAMES comma-separated, as the peer published them) or
    ``KEYTYPE BASE64 [comment]``. Every key is recorded under the peer's name as ``--peer`` gives
    it, plus those published names that are the peer's own: that name again or an address it
    resolves to. Any other published name (another host's, a wildcard) is dropped with a warning:
    a peer can vouch for its own key, never plant one for a host we would later trust.

    :returns: the number of lines added.
    :raises PerfsyncError: when a line is neither form, or there is none.
    """
    entries = []
    host, own = _peer_names(peer)
    dropped: List[str] = []
    for line in _key_lines(data):
        if _PUBKEY_RE.match(line):
            keytype, key = line.split()[:2]
            entries.append(f"{host} {keytype} {key}")
            continue
        parts = line.split(None, 1)
        if len(parts) == 2 and _HOSTNAMES_RE.match(parts[0]) and _PUBKEY_RE.match(parts[1]):
            keytype, key = parts[1].split()[:2]
            names = [host]
            for name in parts[0].split(","):
                if name.lower() not in own:
                    dropped.append(name)
                elif name.lower() not in (n.lower() for n in names):
                    names.append(name)
            entries.append(f"{','.join(names)} {keytype} {key}")
            continue
        raise PerfsyncError(f"Not a host key line: '{line[:60]}'.")
    if dropped:
        log.warning(
            "Peer '%s' published host keys for names that are not its own (%s): ignored; its keys are "
            "recorded under %s only.",
            peer,
            ", ".join(sorted(set(dropped))),
            ", ".join(own),
        )
    if not entries:
        raise PerfsyncError("The peer's data holds no host key.")
    return _append_unique(os.path.join(ssh_dir, "known_hosts"), entries, ssh_dir)


def _append_unique(path: str, lines: List[str], ssh_dir: str) -> int:
    os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
    try:
        with open(path, encoding="utf-8") as handle:
            existing = handle.read()
    except FileNotFoundError:
        existing = ""
    present = set(existing.splitlines())
    new = [line for line in lines if line not in present]
    if new:
        text = existing + ("" if not existing or existing.endswith("\n") else "\n") + "\n".join(new) + "\n"
        _atomic_write(path, text, 0o600)
    log.info("Added %d of %d line(s) to '%s'.", len(new), len(lines), path)
    return len(new)


# --- command line ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfsync",
        description="Set, serve and wait for synchronisation states between lab hosts.",
        epilog="exit codes: 0 OK; 2 error (bad arguments, unreadable data, timeout, server cannot start)",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--set", metavar="STATE", help="record STATE here and serve it")
    action.add_argument("--wait", metavar="STATE", help="wait until --peer serves STATE")
    action.add_argument("--serve", action="store_true", help="run the state server in the foreground")
    action.add_argument("--stop", action="store_true", help="stop this host's state server")
    action.add_argument("--list", action="store_true", help="print the states set here")
    parser.add_argument("--data", metavar="FILE", help="with --set: publish this text file (<= 64 KiB)")
    parser.add_argument("--peer", metavar="HOST[:PORT]", help="with --wait: the host that sets STATE")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="with --wait: give up after S seconds (default %(default)s)",
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, metavar="S", help="with --wait: poll every S seconds"
    )
    parser.add_argument(
        "--progress", type=float, default=60.0, metavar="S", help="log progress every S seconds"
    )
    parser.add_argument("--output", metavar="FILE", help="with --wait: write the peer's data here")
    parser.add_argument(
        "--install",
        choices=("authorized_keys", "known_hosts"),
        help="with --wait: install the peer's SSH public key or host key",
    )
    parser.add_argument(
        "--ssh-dir", default=os.path.expanduser("~/.ssh"), help="for --install (default ~/.ssh)"
    )
    parser.add_argument(
        "--state-dir",
        default=os.environ.get("PERFSYNC_STATE_DIR", DEFAULT_STATE_DIR),
        help="states, PID file and server log (default $PERFSYNC_STATE_DIR or %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("PERFSYNC_PORT", DEFAULT_PORT)),
        help="server port (default $PERFSYNC_PORT or %(default)s)",
    )
    parser.add_argument(
        "--bind",
        default="0.0.0.0",
        help="with --set: server address ('::' for IPv6; default %(default)s). --wait starts no server "
        "of its own: after a reboot it restarts only the one an earlier --set started, on that address",
    )
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s perfsync: %(message)s")
    try:
        if args.serve:
            return serve(args.state_dir, args.port, args.bind)
        if args.stop:
            print("stopped" if stop_server(args.state_dir) else "not running")
            return EXIT_OK
        if args.list:
            print("\n".join(list_states(args.state_dir)))
            return EXIT_OK
        if args.set is not None:
            data = None
            if args.data is not None:
                try:
                    with open(args.data, encoding="utf-8") as handle:
                        data = handle.read(MAX_DATA_BYTES + 1)
                except (OSError, UnicodeDecodeError) as err:
                    raise PerfsyncError(f"Cannot read data file '{args.data}': {err}.") from err
            set_state(args.state_dir, args.set, data)
            ensure_server(args.state_dir, args.port, args.bind)
            _atomic_write(_bind_file(args.state_dir), json.dumps({"bind": args.bind, "port": args.port}))
            log.info("Set state '%s'%s.", args.set, f" with {len(data)} B of data" if data else "")
            return EXIT_OK
        if not args.peer:
            parser.error("--wait needs --peer HOST")
        if not 0 < args.timeout <= 7 * 86400:
            parser.error("--timeout must be in (0, 604800] seconds")
        recorded = _recorded_bind(args.state_dir)
        if recorded is not None and list_states(args.state_dir):
            # Keep serving our own states after a reboot, where --set asked for: --wait never
            # opens a listening socket of its own choosing.
            ensure_server(args.state_dir, recorded[1], recorded[0])
        record = wait_state(
            args.wait, args.peer, args.port, args.timeout, max(0.05, args.interval), args.progress
        )
        data = record.get("data")
        if args.output is not None:
            _atomic_write(args.output, data or "")
        if args.install is not None:
            if not data:
                raise PerfsyncError(f"Peer '{args.peer}' set state '{args.wait}' without data to install.")
            if args.install == "authorized_keys":
                install_authorized_keys(data, args.ssh_dir)
            else:
                install_known_hosts(data, args.peer, args.ssh_dir)
        return EXIT_OK
    except PerfsyncError as err:
        print(f"perfsync: {err}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # the command's boundary: a bug is one line and exit 2, never 1
        log.debug("Unexpected error.", exc_info=True)
        detail = " ".join(str(err).split())[:500]
        print(f"perfsync: internal error: {type(err).__name__}: {detail} (a bug).", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
