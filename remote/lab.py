"""``ovsperf-remote lab``: run ``ovsperf-lab`` on a remote machine and bring its results back.

A laptop user gets numbers from a quiet, isolated server: the command runs there as root (``sudo
-n`` when the login user is not root) with its output shown live, prefixed with the host; for
``run`` the runner chooses ``--output`` (a new directory under the remote base) and, when the run
wrote results — complete or not: the lab keeps partial results and says so in its metadata —
fetches them whole over SFTP (:func:`remote.fetch.fetch_results`) into the local ``--output``.
``ovsperf-lab`` must be installed on the host (``make setup`` there); ``--ovsperf-lab`` names it
when it is not on root's ``PATH``.

Ctrl-C ends the remote command with its children (the lab then tears its sandbox down itself).

Two hosts (the engine ``ovsperf``, docs/engines.md): with ``--tg TG --dut DUT --inventory FILE`` the
lab runs on the DUT and :func:`two_host_args` appends the DUT's options from the inventory
(:func:`vsperf_configs.labargs.lab_options`: its NIC ports, the generator's ports, ``--tg-ssh``, the
CPUs), the same words the Beaker task ``ovsperf_test`` gives it; one given by the user too is refused.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ovsperf_common.resultdir import RESULTS_DIR_RE
from ovsperf_common.runner import one_line
from remote.check import Outcome, sudo_check
from remote.errors import RemoteError
from remote.executor import LineSink
from remote.fetch import fetch_results
from remote.ssh import CommandResult, Session, sudo_prefix
from vsperf_configs.inventory import Inventory
from vsperf_configs.labargs import LAB_OPTIONS, lab_options

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabOutcome:
    """How the remote ``ovsperf-lab`` ended and where its results are."""

    exit_status: int
    results: Path | None
    """The fetched results directory; None when the command writes none or wrote none."""


def lab_argv(
    session: Session, ovsperf_lab: Sequence[str], args: Sequence[str], remote_output: str | None
) -> list[str]:
    """Return the command line run on the host: as root, ``--output`` added for ``run``.

    :raises RemoteError: when ``args`` is empty or already names ``--output`` (the runner does).
    """
    if not args:
        raise RemoteError("Give the ovsperf-lab command after '--', e.g. '-- run --config OVS_DPDK1q'.")
    if any(a == "--output" or a.startswith("--output=") for a in args):
        raise RemoteError(
            "Do not give --output to the remote ovsperf-lab: the results come back to --output here."
        )
    output = ["--output", remote_output] if remote_output is not None else []
    return [*sudo_prefix(session), *ovsperf_lab, *args, *output]


def two_host_args(args: Sequence[str], inventory: Inventory, dut_host: str, tg_host: str) -> list[str]:
    """Return ``args`` (an ``ovsperf-lab run`` command line) with the DUT's options from ``inventory``.

    :param tg_host: ``--tg``: must be the DUT's generator peer in the inventory (its name or address).
    :raises RemoteError: when ``args`` is not a ``run``, gives an option the inventory gives (naming
        it), or ``--tg`` is not the DUT's generator.
    :raises InventoryError: naming the file, host and field when the inventory has no lab options for
        the DUT.
    """
    if args[:1] != ["run"]:
        raise RemoteError(
            "--tg and --inventory give the options of 'ovsperf-lab run'; give '-- run --config NAME ...'."
        )
    given = sorted({a.split("=", 1)[0] for a in args if a.split("=", 1)[0] in LAB_OPTIONS})
    if given:
        raise RemoteError(
            f"Do not give {', '.join(given)} with --inventory: the inventory gives "
            f"{', '.join(LAB_OPTIONS)} for the DUT '{one_line(dut_host)}'."
        )
    words = lab_options(inventory, dut_host)
    peer = inventory.get(dut_host).moongen
    if peer is None or tg_host.lower() not in (peer.host.lower(), peer.address.lower()):
        known = f"'{peer.host}' ({peer.address})" if peer is not None else "none"
        raise RemoteError(
            f"--tg '{one_line(tg_host)}' is not the traffic generator the inventory gives the DUT "
            f"'{one_line(dut_host)}': {known}."
        )
    return [*args, *words]


def run_lab(
    session: Session,
    ovsperf_lab: Sequence[str],
    args: Sequence[str],
    *,
    remote_base: str,
    run_id: str,
    local_output: Path,
    timeout_s: float,
    console: LineSink | None = None,
) -> LabOutcome:
    """Run ``ovsperf-lab ARGS`` on the host and fetch what a ``run`` wrote (module docstring).

    :raises RemoteError: when the command cannot start, passes ``timeout_s`` (stopped with its
        children), the connection drops, or its results cannot be fetched.
    """
    out = console if console is not None else sys.stderr
    allowed, detail = sudo_check(session)
    if allowed is not Outcome.PASS:
        raise RemoteError(f"{session.name}: {detail}.")
    remote_output = str(PurePosixPath(remote_base) / run_id / "lab") if args[:1] == ["run"] else None
    argv = lab_argv(session, ovsperf_lab, args, remote_output)
    if remote_output is not None:
        mkdir = session.run([*sudo_prefix(session), "mkdir", "-p", "--", remote_output], 60)
        if mkdir.exit_status != 0:
            raise RemoteError(
                f"Cannot make {session.name}:{remote_output}: {one_line(mkdir.stderr.strip())}."
            )
    prefix = f"[{session.name} ovsperf-lab]"

    def line(stream: str, text: str) -> None:
        if stream == "stderr":  # the lab's log and progress; its data (stdout) is read after
            out.write(f"{prefix} {one_line(text)}\n")
            out.flush()

    cancel = threading.Event()
    finished: list[CommandResult] = []
    errors: list[RemoteError] = []

    def work() -> None:
        try:
            finished.append(session.run(argv, timeout_s, line, cancel=cancel))
        except RemoteError as err:  # handed to the caller's thread
            errors.append(err)

    worker = threading.Thread(target=work, name="ovsperf-remote-lab")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
    except KeyboardInterrupt:
        log.warning("Interrupted: stopping ovsperf-lab on %s.", session.name)
        cancel.set()
        worker.join(30)
        raise
    if errors:
        raise errors[0]
    if not finished:
        raise RemoteError(f"ovsperf-lab on {session.name} ended without an exit status.")
    result = finished[0]
    if remote_output is None:  # the host's data, one printable line at a time (no control bytes)
        for text in result.stdout.splitlines():
            sys.stdout.write(one_line(text) + "\n")
    results = None
    if remote_output is not None:
        path = _results_path(result.stdout, remote_output)
        if path is not None:
            results = fetch_results(session, path, local_output)
        elif result.exit_status == 0:
            raise RemoteError(f"ovsperf-lab on {session.name} ended without naming its results directory.")
    return LabOutcome(result.exit_status, results)


def _results_path(stdout: str, remote_output: str) -> str | None:
    """Return the results directory ``ovsperf-lab run`` printed (its last line of output).

    None unless it is directly under ``remote_output`` and named like one.
    """
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    path = PurePosixPath(lines[-1])
    if path.parent != PurePosixPath(remote_output) or not RESULTS_DIR_RE.match(path.name):
        return None
    return str(path)
