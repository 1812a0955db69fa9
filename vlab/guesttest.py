"""Run PVP and PVVP through real QEMU guests with ``ovsperf-lab run``; check what they left (vlab-test).

The guest image is built first (:func:`vlab.guestimage.build_guest_image`, kept when already
built); then each scenario runs as its own ``ovsperf-lab run`` process (``python3 -m ovsperf_lab``,
so this module imports nothing of the lab), with a short MLRsearch at 64 B (TCG forwards a few
thousand frames per second), guests of :data:`GUEST_MEMORY_MB` each and a state root of its own.
Each run must: exit 0; write result rows whose NDR (``throughput_rx_fps``) is positive, with
``guest_loopback_app`` naming the image's loopback, and trials that received frames; leave every
guest's console log with the marker in the results directory and every guest's boot time in
``ovsperf-metadata.json`` (:data:`~ovsperf_common.labfiles.GUEST_BOOT_KEY`); and leave nothing
of its own behind: no process of the run (its descendants carry :data:`RUN_ENV`), an empty state
root (sockets, logs), no hugepage file of its DPDK file prefixes. Other processes and hugepage
files on a shared machine are not looked at.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ovsperf_common.deadline import Deadline
from ovsperf_common.labfiles import (
    COL_RX_FPS,
    GUEST_BOOT_KEY,
    GUEST_COLUMN,
    GUEST_MARKER,
    TRIALS_FILE,
    guest_serial_log_name,
)
from ovsperf_common.metadata import METADATA_FILE
from vlab.config import VlabError
from vlab.guestimage import LOOPBACK_APP, build_guest_image
from vlab.qemu import Accel

log = logging.getLogger(__name__)

RUNS = (("OVS_DPDK1q_GUEST_linuxbridge", "pvp_tput", 1), ("OVS_DPDK1q_PVVP", "pvvp_tput", 2))
"""(scenario, test, guests) of each run, PVP first."""
GUEST_MEMORY_MB = 256
"""Memory of each guest [MiB]: what the bridge image needs. PVVP's hugepages: 2 guests, OVS's
256 (``--socket-mem-mb``) and the generator's 256 (``ovsperf-lab run``'s default): 1152 MiB."""
SHORT_SEARCH = (
    "--frame-sizes", "64", "--min-load", "500", "--final-trial-duration", "1", "--duration-sum", "3",
    "--search-duration-max", "300", "--latency-loads", "", "--socket-mem-mb", "256", "--no-progress",
)  # fmt: skip
"""What each run's search is: one frame size, short trials, no latency trials."""
RUN_TIMEOUT_S = 3600.0
"""Longest one ``ovsperf-lab run`` may take, guests' boot included [s]."""
STOP_GRACE_S = 120.0
"""Time ``ovsperf-lab run`` gets after SIGTERM to tear down its OVS and guests before SIGKILL [s]."""
PROGRESS_INTERVAL_S = 60.0
"""How often a run still going is logged [s]."""
HUGEPAGE_DIR = Path("/dev/hugepages")
"""Where hugepage files would be left."""
RUN_ENV = "OVSPERF_GUEST_TEST_RUN"
"""Environment variable every process of one run inherits (its state root): how its leftovers are
told from other processes on a shared machine."""


@dataclass(frozen=True)
class GuestTestOptions:
    """What ``ovsperf-vlab guest-test`` was asked for."""

    image: Path
    """The guest image (built when missing)."""
    mirror: str
    """Debian mirror for the build."""
    accel: Accel = Accel.TCG
    """``--guest-accel`` of the runs."""
    lab_args: tuple[str, ...] = ()
    """More ``ovsperf-lab run`` options."""
    results_dir: Path | None = None
    """Where the runs write; ``None``: a temporary directory, removed after a pass."""


def run_guest_test(options: GuestTestOptions) -> list[tuple[str, ...]]:
    """Build the image, run PVP then PVVP through guests, check each; return report lines (fields).

    :raises VlabError: naming the run and what it left or lacked (and the state root and output
        directory kept); or when ``--results-dir`` cannot be made, or the image cannot be built.
    :raises UnsafeTargetError: when the image or a sidecar of it is a link, directory or device.
    :raises CommandError: when a tool of the image build is missing or outlives its timeout.
    """
    start = time.monotonic()
    own_output = options.results_dir is None
    if options.results_dir is None:
        output = Path(tempfile.mkdtemp(prefix="ovsperf-guest-test."))
    else:
        output = options.results_dir
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise VlabError(f"'--results-dir' '{output}' cannot be made a directory: {err}.") from err
    image = build_guest_image(options.image, options.mirror)
    report: list[tuple[str, ...]] = [("image", str(image.disk), "reused" if image.reused else "built")]
    for scenario, test, guests in RUNS:
        report += _one_run(options, image.disk, output, scenario, test, guests)
    report.append(("time", "total", f"{time.monotonic() - start:.0f}"))
    if own_output:
        shutil.rmtree(output, ignore_errors=True)
    return report


def _one_run(
    options: GuestTestOptions, image: Path, output: Path, scenario: str, test: str, guests: int
) -> list[tuple[str, ...]]:
    """Run ``scenario``'s ``test`` through ``guests`` guests and check it; return its report lines.

    :raises VlabError: when the run fails or a check does not hold, naming the state root (when the
        run left something there) and the output directory, which are kept.
    """
    state_root = Path(tempfile.mkdtemp(prefix="olab-g", dir="/run"))  # short: vhost-user socket paths
    try:
        return _checked_run(options, image, output, scenario, test, guests, state_root)
    except VlabError as err:
        raise VlabError(f"{err} {_kept(state_root, output)}") from err
    except KeyboardInterrupt:
        log.error("Interrupted while running %s. %s", scenario, _kept(state_root, output))
        raise
    finally:
        with contextlib.suppress(OSError):
            state_root.rmdir()  # only when the run left nothing there (else it is reported, and kept)


def _kept(state_root: Path, output: Path) -> str:
    """Return the sentence naming what a failed run keeps for a look: its output, its state root."""
    kept = f"Kept: the output directory '{output}'"
    if any(True for _ in _entries(state_root)):
        kept += f" and the state root '{state_root}'"
    return kept + "."


def _entries(directory: Path) -> Iterator[Path]:
    """Yield the entries of ``directory``; none when it is gone."""
    with contextlib.suppress(OSError):
        yield from directory.iterdir()


def _checked_run(
    options: GuestTestOptions,
    image: Path,
    output: Path,
    scenario: str,
    test: str,
    guests: int,
    state_root: Path,
) -> list[tuple[str, ...]]:
    """Run and check one scenario with its own ``state_root`` (see :func:`_one_run`).

    :raises VlabError: when the run fails or a check does not hold.
    """
    hugepages_before = set(os.listdir(HUGEPAGE_DIR)) if HUGEPAGE_DIR.is_dir() else set()
    argv = [sys.executable, "-m", "ovsperf_lab", "--state-dir", str(state_root), "run",
            "--config", scenario, "--test", test, "--guest-image", str(image),
            "--guest-accel", options.accel.value, "--guest-memory-mb", str(GUEST_MEMORY_MB),
            "--output", str(output), *SHORT_SEARCH, *options.lab_args]  # fmt: skip
    log.info("Running %s (%s) through %d guest(s): %s", scenario, test, guests, " ".join(argv))
    started = time.monotonic()
    fd, name = tempfile.mkstemp(prefix=f"{scenario}.", suffix=".stderr.log", dir=output)  # never replaces
    log_path = Path(name)
    where = f"'ovsperf-lab run --config {scenario}' (log '{log_path}')"
    token = str(state_root)
    with open(fd, "wb") as err:
        returncode, stdout, peak_kib, leader = _run_sampling(argv, err, image, token, where)
    stderr = log_path.read_text(encoding="utf-8", errors="replace")
    wall_s = time.monotonic() - started
    if returncode != 0:
        tail = " | ".join(stderr.strip().splitlines()[-5:])
        raise VlabError(f"{where} exited with status {returncode}: {tail}")
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines or not Path(lines[-1]).is_dir():
        raise VlabError(f"{where} printed no results directory on stdout: {stdout[:200]!r}.")
    results = Path(lines[-1])
    ndr_fps = _check_rows(results, test, where)
    rx_frames = _check_trials(results, where)
    _check_consoles(results, guests, where)
    boots = _boot_times(results, guests, where)
    leftovers = _leftovers(token, leader, state_root, hugepages_before)
    if leftovers:
        raise VlabError(f"{where} left behind: {'; '.join(leftovers)}.")
    lines_out: list[tuple[str, ...]] = [
        ("run", scenario, test, str(results)),
        ("ndr_mpps", scenario, f"{ndr_fps / 1e6:.6f}"),
        ("rx_frames", scenario, str(rx_frames)),
        ("wall_s", scenario, f"{wall_s:.0f}"),
    ]
    lines_out += [
        ("boot_s", scenario, f"guest {i + 1} of the chain", f"{b:.1f}") for i, b in enumerate(boots)
    ]
    if peak_kib:  # VmHWM: QEMU's own memory and TCG's cache; the guest's hugepages are not in it
        lines_out.append(("qemu_peak_rss_mib", scenario, f"{peak_kib / 1024:.0f}"))
    return lines_out


def _check_rows(results: Path, test: str, where: str) -> float:
    """Return the smallest NDR of ``test``'s rows [fps]; each must be positive and name the loopback.

    :raises VlabError: when there is no row, an NDR is not positive or the loopback is another.
    """
    paths = sorted(results.glob(f"result_*_{test}_*.csv"))
    rows = [row for path in paths for row in csv.DictReader(path.read_text(encoding="utf-8").splitlines())]
    if not rows:
        raise VlabError(f"{where} wrote no result row for '{test}' in '{results}'.")
    bad = [row.get(COL_RX_FPS) for row in rows if not float(row.get(COL_RX_FPS) or 0) > 0]
    if bad:
        raise VlabError(f"{where}: '{COL_RX_FPS}' (the NDR) is not positive in '{results}': {bad}.")
    apps = {row.get(GUEST_COLUMN) for row in rows}
    if apps != {LOOPBACK_APP}:
        raise VlabError(f"{where}: '{GUEST_COLUMN}' is {sorted(map(str, apps))}, not '{LOOPBACK_APP}'.")
    return min(float(row[COL_RX_FPS]) for row in rows)


def _check_trials(results: Path, where: str) -> int:
    """Return the frames the trials received in all [1]; there must be some.

    :raises VlabError: when no trial received a frame.
    """
    trials = json.loads((results / TRIALS_FILE).read_text(encoding="utf-8")).get("trials", [])
    frames = sum(sum(t.get("rx_packets") or []) for t in trials)
    if frames <= 0:
        raise VlabError(f"{where}: no trial of '{results / TRIALS_FILE}' received a frame.")
    return int(frames)


def _check_consoles(results: Path, guests: int, where: str) -> None:
    """Check every guest's console log (copied into ``results``) has the marker.

    :raises VlabError: naming the guest whose log is missing or lacks the marker.
    """
    for index in range(guests):
        stem = guest_serial_log_name(index).removesuffix(".log")  # the results hold <stem>_<timestamp>.log
        logs = sorted(results.glob(f"{stem}_*.log"))
        text = logs[-1].read_text(encoding="utf-8", errors="replace") if logs else ""
        if GUEST_MARKER not in text:
            raise VlabError(f"{where}: the console log '{stem}' of guest {index + 1} lacks {GUEST_MARKER!r}.")


def _boot_times(results: Path, guests: int, where: str) -> list[float]:
    """Return each guest's boot time of the run's first test, in chain order [s].

    Read from ``ovsperf-metadata.json``'s :data:`~ovsperf_common.labfiles.GUEST_BOOT_KEY`
    (``{"result_<index>_<test>": [s, ...]}``, docs/results-format.md).

    :raises VlabError: when the file or the key is missing, or a test does not list ``guests``
        positive numbers.
    """
    path = results / METADATA_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise VlabError(f"{where}: cannot read '{path}': {err}.") from err
    boots = data.get(GUEST_BOOT_KEY) if isinstance(data, dict) else None
    if not isinstance(boots, dict) or not boots:
        raise VlabError(f"{where}: '{path}' has no '{GUEST_BOOT_KEY}'.")
    for key, times in sorted(boots.items()):
        if not (
            isinstance(times, list)
            and len(times) == guests
            and all(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0 for t in times)
        ):
            raise VlabError(
                f"{where}: '{path}' field '{GUEST_BOOT_KEY}.{key}' is {times!r}, not {guests} boot "
                "time(s) [s]."
            )
    first = min(boots, key=_result_order)
    return [float(t) for t in boots[first]]


def _result_order(key: str) -> tuple[int, str]:
    """Return the sort key of ``result_<index>_<test>``: its index first [1]."""
    match = re.match(r"result_(\d+)_", key)
    return (int(match.group(1)) if match else 1 << 30, key)


def _leftovers(token: str, leader: int, state_root: Path, hugepages_before: set[str]) -> list[str]:
    """Return what one run left: its processes, entries in ``state_root``, hugepage files of its own.

    Its processes are those whose environment has :data:`RUN_ENV` ``= token``; its hugepage files
    are new ones whose name starts with a DPDK file prefix of the run, ``ovsperf-lab-<time>-<leader
    pid>-`` (``ovsperf_lab.state.LabRunState.new_file_prefix``; the run id holds the pid of
    ``ovsperf-lab run``, ``leader``).
    """
    found = [f"process {pid} ({cmdline[:80]})" for pid, cmdline in _run_processes(token)]
    found += [f"'{entry}' in the state root" for entry in sorted(_entries(state_root))]
    if HUGEPAGE_DIR.is_dir():
        mine = re.compile(rf"ovsperf-lab-\d+-{leader}-")
        new = sorted(set(os.listdir(HUGEPAGE_DIR)) - hugepages_before)
        found += [f"hugepage file '{name}'" for name in new if mine.match(name)]
    return found


def _run_processes(token: str) -> list[tuple[int, str]]:
    """Return (pid, command line) of the processes whose environment has :data:`RUN_ENV` ``= token``."""
    needle = f"{RUN_ENV}={token}".encode()
    found: list[tuple[int, str]] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if needle not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        found.append((int(proc.name), cmdline.strip()))
    return found


def _run_sampling(
    argv: list[str], err: BinaryIO, image: Path, token: str, where: str
) -> tuple[int, str, int, int]:
    """Run ``argv`` (stderr to ``err``) within :data:`RUN_TIMEOUT_S`, sampling its guests' RSS.

    The child and everything it starts get :data:`RUN_ENV` ``= token``. Progress is logged every
    :data:`PROGRESS_INTERVAL_S`. On a timeout or an interruption it is stopped (:func:`_stop`).

    :returns: (exit status, stdout, the largest peak RSS of one QEMU of the run running ``image``
        [KiB], the child's pid).
    :raises VlabError: when it outlives the deadline.
    """
    peak = _PeakRss(image, token)
    deadline = Deadline(what=where, timeout_s=RUN_TIMEOUT_S)
    env = {**os.environ, RUN_ENV: token}
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True, env=env
        )
        started = last_note = time.monotonic()
        try:
            while proc.poll() is None:
                if deadline.expired():
                    raise VlabError(f"{where} did not finish within {RUN_TIMEOUT_S:g} s and was stopped.")
                now = time.monotonic()
                if now - last_note >= PROGRESS_INTERVAL_S:
                    last_note = now
                    log.info("Still running %s: %.0f s of at most %g s.", where, now - started, RUN_TIMEOUT_S)
                peak.sample()
                time.sleep(2.0)
        finally:
            _stop(proc, where)
        out.seek(0)
        return proc.returncode, out.read().decode("utf-8", "replace"), peak.peak_kib, proc.pid


def _stop(proc: subprocess.Popen[bytes], where: str, grace_s: float = STOP_GRACE_S) -> None:
    """Stop ``proc`` if it still runs: SIGTERM to it alone, then SIGKILL to its group after ``grace_s`` [s].

    ``ovsperf-lab run`` tears down its OVS and guests on SIGTERM itself: signalling them at the
    same time would race its teardown. A group still there after SIGKILL is logged, not raised (the
    error being handled, if any, is the one to report).
    """
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
        return
    except subprocess.TimeoutExpired:
        log.warning("%s is still running %.0f s after SIGTERM; killing its process group.", where, grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        log.error("%s (pid %d) is still there 10 s after SIGKILL.", where, proc.pid)


class _PeakRss:
    """The highest resident set of the run's processes running the image, sampled while the run lasts."""

    def __init__(self, image: Path, token: str) -> None:
        self.needle = f"file={image},"
        self.token = token
        self.peak_kib = 0

    def sample(self) -> None:
        """Add the peak RSS of each of the run's QEMUs of the image; keep the largest single one [KiB]."""
        for pid, cmdline in _run_processes(self.token):
            if self.needle not in cmdline:
                continue
            try:
                status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
            except OSError:
                continue
            match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
            if match:
                self.peak_kib = max(self.peak_kib, int(match.group(1)))
