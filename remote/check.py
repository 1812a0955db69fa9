"""``ovsperf-remote check``: can these hosts run the Beaker job's plan? One row per host and check.

Per host, in order (a host that cannot be reached or logged into gets only its ``ssh`` row):

========== =================================================================================
ssh        connected and authenticated with a key; the host key it showed
sudo       root, or ``sudo -n true`` works: the tasks run as root and nobody types a password
tools      the commands the host's tasks need are on root's PATH (:data:`TOOLS`; through sudo)
hugepages  ``HugePages_Total`` in ``/proc/meminfo`` is above 0 (DPDK needs them)
nics       every test NIC the inventory names for the host is in ``/sys/bus/pci/devices``
========== =================================================================================

With ``--trex HOST[:PORT]`` the TRex server there is asked, through its own Python client
(:mod:`ovsperf_common.trexclient`, nothing acquired), for its version (row ``trex``: a major
version other than 2 or 3 fails, both versions named: VSperf pins v2.86, v3.x is what the lab's backend
speaks) and its ports (one ``trex port N`` row each: PCI
address, MAC, speed, link, owner; a link that is down fails).

:func:`trex_preflight` is ``ovsperf-remote run``'s check of a TG that is to install TRex.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ovsperf_common.runner import one_line
from ovsperf_common.trexclient import TrexError, TrexServer, probe
from remote.errors import RemoteError
from remote.ssh import Session, Settings, Target, is_root, sudo_prefix

log = logging.getLogger(__name__)

COMMAND_TIMEOUT_S = 30.0
"""Deadline of each check's command [s]."""

TOOLS = {
    "dut": ("ovs-vswitchd", "ovs-vsctl", "python3", "git", "rsync", "pkill"),
    "tg": ("python3", "git", "make", "gcc", "rsync", "pkill"),
    "trex": ("python3", "curl", "tar", "sha256sum", "systemctl", "journalctl"),
}
"""Commands each role's tasks run (setup_dpdk, vsperf_test on the DUT; build_moongen on the generator;
``trex``: setup_trex on the generator, :func:`trex_preflight`)."""
VSPERF_TREX_MAJORS = (2, 3)
"""TRex server major versions ``check --trex`` accepts: VSperf pins v2.86 (its driver was written for
the v2 client); v3.x with VSperf's driver is untested here (docs/beaker_tasks.md, "TRex")."""
TASK_SH = Path(__file__).resolve().parents[1] / "beaker_tasks" / "lib" / "task.sh"
"""The tasks' shell library: :func:`trex_preflight` runs its own Python finder on the host."""
PYTHON_FINDER = ("task_have", "task_python", "task_python_version")
"""The functions of :data:`TASK_SH` that find the Python the tasks run vsperf-config with."""


class Outcome(enum.Enum):
    """Result of one check."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True)
class Row:
    """One line of the check table."""

    host: str
    role: str
    check: str
    outcome: Outcome
    detail: str


def sudo_check(session: Session) -> tuple[Outcome, str]:
    """Return whether the session may run commands as root unattended, and the row's detail.

    :raises RemoteError: when the connection fails.
    """
    if is_root(session):
        return Outcome.PASS, "logged in as root"
    result = session.run(["sudo", "-n", "true"], COMMAND_TIMEOUT_S)
    if result.exit_status == 0:
        return Outcome.PASS, f"{session.user} may run commands as root without a password"
    return Outcome.FAIL, (
        f"sudo asks {session.user} for a password ({one_line(result.stderr.strip()) or 'no reason given'}); "
        f"the tasks run as root unattended: add '{session.user} ALL=(ALL) NOPASSWD: ALL' to a file in "
        "/etc/sudoers.d/ on the host, or connect as root"
    )


def _tools(session: Session, role: str, as_root: list[str]) -> tuple[Outcome, str]:
    names = TOOLS[role]
    script = 'for t in "$@"; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    result = session.run([*as_root, "sh", "-c", script, "sh", *names], COMMAND_TIMEOUT_S)
    missing = result.stdout.split()
    if result.exit_status != 0:
        return Outcome.FAIL, f"cannot list the tools: {one_line(result.stderr.strip())}"
    if missing:
        return Outcome.FAIL, f"missing on PATH: {', '.join(one_line(m) for m in missing)}"
    return Outcome.PASS, ", ".join(names)


def _hugepages(session: Session) -> tuple[Outcome, str]:
    result = session.run(["cat", "/proc/meminfo"], COMMAND_TIMEOUT_S)
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    total = fields.get("HugePages_Total", "").strip()
    size = fields.get("Hugepagesize", "").strip()
    if not total.isdigit():
        return Outcome.FAIL, "no HugePages_Total in /proc/meminfo"
    if int(total) == 0:
        return Outcome.FAIL, "no hugepages reserved: set hugepages= on the kernel command line"
    return Outcome.PASS, f"{total} × {one_line(size)}"


def _nics(session: Session, nics: Sequence[str] | None) -> tuple[Outcome, str]:
    if nics is None:
        return Outcome.SKIP, "the host is not in the inventory (--inventory): its NICs are unknown"
    if not nics:
        return Outcome.SKIP, "the inventory names no test NICs for the host"
    script = 'for p in "$@"; do [ -e "/sys/bus/pci/devices/$p" ] || echo "$p"; done'
    result = session.run(["sh", "-c", script, "sh", *nics], COMMAND_TIMEOUT_S)
    missing = result.stdout.split()
    if missing:
        return Outcome.FAIL, f"not on the host's PCI bus: {', '.join(one_line(m) for m in missing)}"
    return Outcome.PASS, ", ".join(nics)


def check_host(target: Target, role: str, settings: Settings, nics: Sequence[str] | None) -> list[Row]:
    """Run every check on one host; a host that cannot be logged into gets one failed ``ssh`` row.

    :param role: ``dut`` or ``tg`` (which tools it needs).
    :param nics: the test NICs' PCI addresses from the inventory; None when the host is not in it.
    """
    name = str(target)
    try:
        session = Session(target, settings)
    except RemoteError as err:
        return [Row(name, role, "ssh", Outcome.FAIL, str(err))]
    with session:
        name = session.name  # user and port as ~/.ssh/config completed them
        key = session.host_key_description()
        rows = [Row(name, role, "ssh", Outcome.PASS, f"as {session.user}; host key {key}")]
        try:
            sudo = sudo_check(session)
        except RemoteError as err:
            sudo = (Outcome.FAIL, str(err))
        rows.append(Row(name, role, "sudo", *sudo))
        # The tasks run as root: look for their tools on root's PATH when sudo works.
        as_root = sudo_prefix(session) if sudo[0] is Outcome.PASS else []
        checks: Iterable[tuple[str, Callable[[], tuple[Outcome, str]]]] = (
            ("tools", lambda: _tools(session, role, as_root)),
            ("hugepages", lambda: _hugepages(session)),
            ("nics", lambda: _nics(session, nics)),
        )
        for check, run in checks:
            try:
                outcome, detail = run()
            except RemoteError as err:
                outcome, detail = Outcome.FAIL, str(err)
            rows.append(Row(name, role, check, outcome, detail))
    return rows


def _task_python(session: Session, as_root: list[str]) -> tuple[Outcome, str]:
    """Run the tasks' own Python finder (:data:`PYTHON_FINDER` of ``lib/task.sh``) on the host.

    ``setup_trex`` reads the inventory with vsperf-config, which needs Python 3.9 or later with
    PyYAML (RHEL 8's python3 is 3.6: python3.11 and python3.11-pyyaml).
    """
    text = TASK_SH.read_text(encoding="utf-8")
    functions = []
    for name in PYTHON_FINDER:
        match = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", text, re.MULTILINE | re.DOTALL)
        if match is None:
            raise RemoteError(f"'{TASK_SH}' defines no function '{name}'; the repository is incomplete.")
        functions.append(match.group(0))
    script = "\n".join(
        [*functions, 'p="$(task_python)" || exit 3', 'printf "%s %s\\n" "$p" "$(task_python_version "$p")"']
    )
    result = session.run([*as_root, "bash", "-c", script], COMMAND_TIMEOUT_S)
    if result.exit_status == 3:
        return Outcome.FAIL, (
            "no Python 3.9 or later with PyYAML on root's PATH (the tasks' task_python in lib/task.sh tries "
            "python3.12, python3.11, python3.9, python3); install python3.11 and python3.11-pyyaml "
            "(RHEL 8: dnf install python3.11 python3.11-pyyaml)"
        )
    if result.exit_status != 0:
        return Outcome.FAIL, f"cannot look for Python: {one_line(result.stderr.strip())}"
    return Outcome.PASS, one_line(result.stdout.strip())


def trex_preflight(target: Target, settings: Settings, url: str | None) -> None:
    """Check, before a run starts, that the TG can run ``setup_trex``: reachable, root, tools, Python.

    The Python is the one the tasks' finder takes (``task_python`` of ``lib/task.sh``: 3.9 or later
    with PyYAML).

    ``ovsperf-remote run`` with a TRex plan calls it before either host runs a step, so that a TG
    that cannot install TRex fails the run before the DUT's setup (and its reboot) begins.

    :param url: the tarball URL the inventory gives (logged); None when the inventory is a path on
        the hosts (``setup_trex`` reads it there).
    :raises RemoteError: naming the host when it cannot be reached or logged into, sudo asks for a
        password, a command ``setup_trex`` runs (:data:`TOOLS` ``trex``) is not on root's PATH, or
        no Python there is 3.9 or later with PyYAML.
    """
    with Session(target, settings) as session:
        outcome, detail = sudo_check(session)
        if outcome is not Outcome.PASS:
            raise RemoteError(f"{session.name}: {detail}.")
        outcome, detail = _tools(session, "trex", sudo_prefix(session))
        if outcome is not Outcome.PASS:
            raise RemoteError(f"{session.name} cannot install TRex (setup_trex): {detail}.")
        outcome, python = _task_python(session, sudo_prefix(session))
        if outcome is not Outcome.PASS:
            raise RemoteError(f"{session.name} cannot install TRex (setup_trex): {python}.")
        source = f"from {one_line(url)}" if url else "from the URL of the inventory on the host"
        log.info("%s can install TRex %s (%s; Python %s).", session.name, source, detail, python)


def check_trex(server: TrexServer) -> list[Row]:
    """Ask the TRex server for its version and ports: one ``trex`` row, then one per port.

    A server of a major version in :data:`VSPERF_TREX_MAJORS` passes (VSperf's TRex driver is what
    talks to it on the Beaker path); the lab's own backend keeps to v3.x.
    """
    try:
        found = probe(replace(server, majors=VSPERF_TREX_MAJORS))
    except TrexError as err:
        return [Row(server.address, "tg", "trex", Outcome.FAIL, str(err))]
    rows = [
        Row(
            server.address, "tg", "trex", Outcome.PASS,
            f"TRex {found.get('server_version')} on {found.get('hostname') or '?'} "
            f"(client {found.get('client')})",
        )
    ]  # fmt: skip
    for port in found.get("ports", []):
        up = bool(port.get("link_up"))
        detail = (
            f"{port.get('pci_addr') or '-'} {port.get('mac') or '-'} {port.get('speed_mbps') or '?'} Mb/s, "
            f"link {'up' if up else 'DOWN'}, owner {port.get('owner') or '-'}, {port.get('driver') or '-'}"
        )
        rows.append(
            Row(
                server.address,
                "tg",
                f"trex port {port.get('index')}",
                Outcome.PASS if up else Outcome.FAIL,
                detail,
            )
        )
    return rows


def render_table(rows: Sequence[Row]) -> str:
    """Return the rows as an aligned text table (host, role, check, result, detail), one per line."""
    header = ("host", "role", "check", "result", "detail")
    cells = [
        header,
        *((one_line(r.host), r.role, r.check, r.outcome.value, one_line(r.detail)) for r in rows),
    ]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(4)) + "  " + c[4] for c in cells]
    return "\n".join(line.rstrip() for line in lines) + "\n"
