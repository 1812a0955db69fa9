"""VSperf collector ``OvsperfTelemetry``: VSperf's own pidstat, plus OVS's counters around each test.

VSperf loads its collector by class name (``COLLECTOR``) from the modules in ``COLLECTOR_DIR``
(``core/loader/loader.py``, ``LoaderServant``), makes one per test with ``(results_dir,
test_name)`` and uses it as a context manager around the test's traffic
(``testcases/testcase.py`` ``run()``: ``with self._vnf_ctl, self._collector:`` — after the
guests booted, before the flows and the traffic of every frame size, closed after the last
frame size). ``vsperf-config --telemetry-collector-dir DIR`` points VSperf here.

This class is VSperf's ``Pidstat`` (its log, its "Statistics collected" tables are unchanged) and
adds, over the same window:

* before: the ports' ``statistics`` (``ovs-vsctl --format=json list Interface``), the CPU ticks
  of every thread of ``ovs-vswitchd`` and of each ``qemu-system-x86_64`` (``/proc/<pid>/task/
  */stat``), then ``ovs-appctl dpif-netdev/pmd-stats-clear``;
* after: ``pmd-stats-show``, ``pmd-perf-show``, ``pmd-rxq-show``, the port statistics and the
  thread ticks again.

It only captures: the raw text goes to ``<results>/ovsperf-telemetry-raw/test-<index>.json``;
the task turns it into ``ovsperf-telemetry.json`` (``python3 -m ovsperf_common.vsperf_telemetry``,
which parses it with the lab's parsers). A command that fails or takes longer than
:data:`COMMAND_TIMEOUT_S` is recorded as a note; nothing here ever fails a VSperf test.

Runs inside VSperf's Python (3.6 or later, standard library and VSperf only).
"""

import json
import os
import subprocess
import tempfile
import time

from conf import settings
from tools.collectors.sysmetrics.pidstat import Pidstat

RAW_DIR = "ovsperf-telemetry-raw"
"""Sub-directory of VSperf's results directory holding one raw capture per test."""

COMMAND_TIMEOUT_S = 5
"""Deadline of each ``ovs-appctl`` / ``ovs-vsctl`` call [s]."""


def _tool(name):
    """Return VSperf's path of tool ``name`` (``TOOLS`` setting), else the bare name."""
    try:
        return settings.getValue("TOOLS")[name]
    except (AttributeError, KeyError, TypeError):
        return name


def _pids(proc="/proc"):
    """Return process key → PID of the processes in :data:`PROCESSES` (several QEMUs: one each).

    Matched by ``/proc/<pid>/comm`` prefix (cut at 15 characters; Debian's DPDK build of OVS is
    ``ovs-vswitchd-dpdk``, comm ``ovs-vswitchd-dp``). The key is ``ovs-vswitchd`` for OVS,
    ``qemu-system-x86_64 (PID n)`` for each guest.
    """
    found = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "comm")) as comm:
                name = comm.read().strip()
        except OSError:
            continue
        if name.startswith("ovs-vswitchd"):  # Debian's DPDK build is ovs-vswitchd-dpdk
            found["ovs-vswitchd"] = int(entry)
        elif name.startswith("qemu-system-x86"):
            found["qemu-system-x86_64 (PID %s)" % entry] = int(entry)
    return found


class OvsperfTelemetry(Pidstat):
    """VSperf's pidstat plus ``ovs-appctl`` snapshots of OVS around each test (see the module)."""

    def __init__(self, results_dir, test_name):
        """Prepare the capture of test ``test_name`` into ``results_dir`` (VSperf's arguments)."""
        super().__init__(results_dir, test_name)
        self._results_dir = results_dir
        self._test_name = test_name
        self._raw = None
        self._pids = {}
        self._started = 0.0

    def _command(self, what, argv):
        """Run ``argv`` (with ``sudo -n`` unless root); return stdout, or None with a note."""
        if os.geteuid() != 0:
            argv = ["sudo", "-n", *argv]
        try:
            done = subprocess.run(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=COMMAND_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            self._note("%s: not collected (no answer within %d s)" % (what, COMMAND_TIMEOUT_S))
            return None
        except OSError as err:
            self._note("%s: not collected (%s)" % (what, err.strerror or err))
            return None
        if done.returncode != 0:
            self._note("%s: not collected (exit %d: %s)" % (what, done.returncode, done.stderr.strip()[:200]))
            return None
        return done.stdout

    def _note(self, text):
        self._raw["notes"].append(text)

    def _threads(self):
        """Return process key → {"pid", "stat": {tid: raw stat line}} for every watched process."""
        out = {}
        for key, pid in sorted(self._pids.items()):
            task_dir = os.path.join("/proc", str(pid), "task")
            stats = {}
            try:
                tids = os.listdir(task_dir)
            except OSError as err:
                self._note("CPU of %s: not collected (%s)" % (key, err.strerror or err))
                continue
            for tid in tids:
                try:
                    with open(os.path.join(task_dir, tid, "stat")) as stat:
                        stats[tid] = stat.read()
                except OSError:
                    continue  # the thread ended while being read
            out[key] = {"pid": pid, "stat": stats}
        return out

    def _ports(self):
        return self._command(
            "port statistics",
            [_tool("ovs-vsctl"), "--format=json", "--columns=name,statistics", "list", "Interface"],
        )

    def start(self):
        """Take the first snapshots, clear OVS's PMD counters, then start VSperf's pidstat."""
        self._raw = {
            "schema": 1,
            "test": self._test_name,
            "index": settings.getValue("_TEST_INDEX"),
            "frame_sizes_bytes": [int(size) for size in settings.getValue("TRAFFICGEN_PKT_SIZES")],
            "clock_ticks_per_s": os.sysconf("SC_CLK_TCK"),
            "notes": [],
        }
        try:
            self._pids = _pids()
        except OSError as err:
            self._pids = {}
            self._note("processes: not collected (%s)" % (err.strerror or err))
        if "ovs-vswitchd" not in self._pids:
            self._note("ovs-vswitchd: no such process when the test started")
        self._raw["before"] = {"ports": self._ports(), "threads": self._threads()}
        self._command("pmd-stats-clear", [_tool("ovs-appctl"), "dpif-netdev/pmd-stats-clear"])
        self._started = time.monotonic()
        super().start()

    def stop(self):
        """Take the second snapshots (before pidstat's own 2 s wait), write them, stop pidstat."""
        if self._raw is not None:
            self._raw["wall_s"] = time.monotonic() - self._started
            appctl = _tool("ovs-appctl")
            self._raw["after"] = {
                "pmd_stats_show": self._command("pmd-stats-show", [appctl, "dpif-netdev/pmd-stats-show"]),
                "pmd_perf_show": self._command("pmd-perf-show", [appctl, "dpif-netdev/pmd-perf-show", "-nh"]),
                "pmd_rxq_show": self._command("pmd-rxq-show", [appctl, "dpif-netdev/pmd-rxq-show"]),
                "ports": self._ports(),
                "threads": self._threads(),
            }
            self._write()
        super().stop()

    def _write(self):
        """Write the capture atomically to ``<results>/ovsperf-telemetry-raw/test-<index>.json``."""
        folder = os.path.join(self._results_dir, RAW_DIR)
        try:
            os.makedirs(folder, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".test-", suffix=".tmp", dir=folder)
            with os.fdopen(handle, "w") as out:
                json.dump(self._raw, out, indent=1, sort_keys=True)
            os.replace(temporary, os.path.join(folder, "test-%d.json" % int(self._raw["index"])))
        except (OSError, TypeError, ValueError) as err:
            self._logger.warning("ovsperf telemetry of %s not written: %s", self._test_name, err)
