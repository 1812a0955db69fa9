"""Network namespaces made by tests and benchmarks: named by owner, stale ones removed, free subnets.

A test or benchmark killed by a timeout cannot delete what it made; the next run on the same machine
(CI runs where the developer ran before) must neither trip over those leftovers nor hurt a run in
progress. So:

* :func:`owned_name` puts the creating process's PID into a namespace's name;
  :func:`remove_stale` deletes the namespaces of a prefix whose owner is gone (killing what still
  runs in them: daemons started there); namespaces of live owners are left alone. Names without a
  PID (made before this rule) count as stale once older than :data:`LEGACY_STALE_S`;
* :func:`free_subnet` picks a network of a range that overlaps no address or route of the calling
  namespace (a stale veth end, a lab network), under :func:`subnet_lock` so that concurrent runs do
  not pick the same one;
* :func:`sigterm_unwinds` makes SIGTERM unwind like Ctrl-C while namespaces exist, so ``finally``
  blocks delete them.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

IP = shutil.which("ip") or "/usr/sbin/ip"
NETNS_DIR = Path("/run/netns")
LOCK_FILE = Path("/run/lock/ovsperf-test-subnets.lock")
LEGACY_STALE_S = 1800.0
"""Age [s] after which a namespace of our prefix without an owner PID is stale (tests time out at 600 s)."""
OWNER = re.compile(r"^p(\d+)-")


def owned_name(prefix: str, rest: str) -> str:
    """Return ``<prefix>p<pid>-<rest>``: a namespace name that names this process as its owner."""
    return f"{prefix}p{os.getpid()}-{rest}"


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def is_stale(name: str, prefix: str, now: float | None = None) -> bool:
    """Return whether namespace ``name`` of ``prefix`` belongs to no running process.

    :param now: the current time [s since the epoch] (default: now), for a legacy name's age.
    """
    if not name.startswith(prefix):
        return False
    owner = OWNER.match(name[len(prefix) :])
    if owner:
        return not _alive(int(owner.group(1)))
    try:
        made = (NETNS_DIR / name).stat().st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - made > LEGACY_STALE_S


def kill_inside(name: str) -> None:
    """SIGKILL every process that runs in namespace ``name`` (deleting a namespace does not stop them)."""
    pids = subprocess.run(
        [IP, "netns", "pids", name], capture_output=True, text=True, timeout=10, check=False
    ).stdout.split()
    for pid in pids:
        with suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def remove_stale(prefix: str) -> list[str]:
    """Delete the stale namespaces of ``prefix`` (processes in them killed first); return their names."""
    removed = []
    names = sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []
    for name in names:
        if not is_stale(name, prefix):
            continue
        kill_inside(name)
        # Deleting the namespace removes its veth pairs, the end in this namespace too.
        if subprocess.run([IP, "netns", "del", name], capture_output=True, timeout=10).returncode == 0:
            removed.append(name)
    return removed


def used_networks(ip_prefix: Iterable[str] = ()) -> list[ipaddress.IPv4Network]:
    """Return the IPv4 networks of every address and route (all tables) of the current namespace.

    :param ip_prefix: arguments put before ``ip``'s own (e.g. ``("-n", ns)``) to ask another namespace.
    """
    nets: list[ipaddress.IPv4Network] = []
    addrs = subprocess.run(
        [IP, *ip_prefix, "-j", "-4", "addr", "show"], capture_output=True, text=True, timeout=10, check=True
    ).stdout
    for link in json.loads(addrs or "[]"):
        for info in link.get("addr_info", []):
            nets.append(ipaddress.IPv4Interface(f"{info['local']}/{info['prefixlen']}").network)
    routes = subprocess.run(
        [IP, *ip_prefix, "-j", "-4", "route", "show", "table", "all"],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout
    for route in json.loads(routes or "[]"):
        dst = route.get("dst", "default")
        if dst != "default":  # a default route covers everything; it is where traffic goes, not an address
            nets.append(ipaddress.IPv4Network(dst, strict=False))
    return nets


def free_subnet(
    within: ipaddress.IPv4Network, prefixlen: int, used: Iterable[ipaddress.IPv4Network], rng: random.Random
) -> ipaddress.IPv4Network:
    """Return a ``/prefixlen`` of ``within`` that overlaps none of ``used``, starting at a random one.

    :raises RuntimeError: every such subnet overlaps a network in use.
    """
    taken = list(used)
    candidates = list(within.subnets(new_prefix=prefixlen))
    start = rng.randrange(len(candidates))
    for candidate in candidates[start:] + candidates[:start]:
        if not any(candidate.overlaps(net) for net in taken):
            return candidate
    raise RuntimeError(
        f"No free /{prefixlen} left in {within}: this namespace's addresses and routes use them all."
    )


@contextmanager
def subnet_lock() -> Iterator[None]:
    """Hold the machine-wide lock under which subnets are chosen and assigned (released on exit or death)."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises ``KeyboardInterrupt`` in the main thread (if SIGTERM had its default)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:  # someone (benchcli, a runner) already handles it
        yield
        return
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
