"""A stand-in for VSperf's ``./vsperf`` that behaves as VSperf does toward the vsperf_test task.

It loads ``--conf-file`` the way VSperf does (over VSperf's dict defaults, UPPER_CASE names only)
and refuses a config VSperf would choke on, logs ``Creating result directory: <dir>`` in VSperf's
format, writes ``result_<index>_<test>_<deployment>.csv`` per test (one row per frame size, MoonGen
columns), overwrites MoonGen's raw log ``$MOONGEN_LOG_DIR/1/moongen-run.log`` per test and frame size (pausing
``FAKE_VSPERF_TRIAL_S`` after each, as a MoonGen run would) and exits 0 even when a
test fails (``FAKE_VSPERF_FAIL`` names tests to fail; ``FAKE_VSPERF_NO_RESULTS=1`` omits the directory).
With ``COLLECTOR_DIR`` set, it loads the class named ``COLLECTOR`` from the modules there as VSperf's
``LoaderServant`` does (over the VSperf modules in ``FAKE_VSPERF_STUB_DIR``) and runs one per test around
the test's traffic, as ``testcases/testcase.py`` does (``with self._collector:``).

It fails where VSperf 10 (opnfv-10.0.0) fails on a lab host:

* every ``p2p`` test makes a pod of class ``POD`` from ``POD_DIR`` (VSperf's defaults: ``'Papi'``
  from its own ``pods/``, here the stub's, which raises "Invalid kube-config file" as the real one
  does without Kubernetes): a configuration that does not select our no-op pod fails the test;
* every test first looks up the ``PATHS`` tools of the vswitch, DPDK and QEMU as
  ``tools/functions.py`` ``settings_update_paths()`` does, on the files of a RHEL DUT
  (``RHEL_DUT_FILES``): a name must be on ``PATH``, a glob must match one file, a path must exist;
  and ``dpdk.init()`` ``modprobe``s ``PATHS['dpdk']['bin']['modules']``, where ``igb_uio`` is not
  packaged (checked with the real VSperf, docs/beaker_tasks.md "Checked with real VSperf");
* hugepages as ``tools/hugepages.py`` handles them, on the fake mount table ``$TASK_PROC/mounts``:
  before a test hugetlbfs is mounted at ``HUGEPAGE_DIR`` only when none is mounted anywhere, and
  after it ``umount HUGEPAGE_DIR`` takes the topmost mount there whenever any hugetlbfs is mounted.
  A test whose teardown unmounts the host's ``/dev/hugepages`` fails (the real VSperf leaves the host
  without it), and so does a guest test that finds no hugetlbfs at ``HUGEPAGE_DIR`` for QEMU's
  ``mem-path`` (the real QEMU would silently run the guest without hugepages);
* a testpmd guest (``GUEST_LOOPBACK``) gets ``PATHS['dpdk']['src']['path']`` rsynced into its share
  (``testcases/testcase.py`` ``_copy_fwd_tools_for_guest``; VSperf's default is its checkout's
  ``src/dpdk/dpdk/``, which no task builds): a missing directory fails the test with "Unable to copy
  DPDK to shared directory", and one without a single ``*tools/dpdk*bind.py`` and an
  ``app/test-pmd/Makefile`` fails it as the guest's 60 s wait for testpmd's "Done" would
  (``vnfs/qemu/qemu.py`` ``_configure_testpmd``).

Tests are looked up as VSperf's ``vsperf`` does for exact names: among ``INTEGRATION_TESTS`` with
``--integration`` (and then over the defaults of ``conf/integration/``), else among
``PERFORMANCE_TESTS`` (VSperf's built-in ones the loader model does not list, plus what the conf
file defined); names not found are skipped, and none found is "No tests matched", exit 1.
"""

import fnmatch
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.environ["FAKE_VSPERF_LOADER_DIR"])
from vsperf_loader import VSPERF_DEFAULTS, load_like_vsperf

MOONGEN_REPORT = (
    "[REPORT]      total: Tx frames: 889281855 Rx Frames: 84115751 frame loss: 805166104, 90.541160% "
    "Tx Mpps: 29.644006 Rx Mpps: 2.803982\n"
)

DEPLOYMENT = {"phy2phy_tput": "p2p", "pvp_tput": "pvp", "pvvp_tput": "pvvp"}
HOST_HUGEPAGE_DIR = "/dev/hugepages"
"""The host's own hugetlbfs mount, VSperf's default ``HUGEPAGE_DIR`` (conf/02_vswitch.conf)."""
HEADER = (
    "throughput_rx_fps,throughput_rx_mbps,throughput_rx_percent,tx_rate_fps,tx_rate_mbps,tx_rate_percent,"
    "min_latency_ns,max_latency_ns,avg_latency_ns,type,packet_size,id,deployment,vswitch,traffic_type,"
    "test_execution_time,start_time,stop_time,stream_count,match_type,pre-installed_flows"
)


RHEL_DUT_FILES = (
    "/usr/bin/dpdk-devbind.py",
    "/usr/bin/dpdk-testpmd",
    "/usr/libexec/qemu-kvm",
    "/usr/sbin/ovs-vswitchd",
    "/usr/sbin/ovsdb-server",
    "/usr/bin/ovsdb-tool",
    "/usr/bin/ovs-vsctl",
    "/usr/bin/ovs-ofctl",
    "/usr/bin/ovs-dpctl",
    "/usr/bin/ovs-appctl",
    "/usr/share/openvswitch/vswitch.ovsschema",
)
"""What a RHEL 9 DUT with openvswitch, dpdk, dpdk-tools and qemu-kvm has of VSperf's ``PATHS`` tools."""
UNPACKAGED_MODULES = ("igb_uio",)
"""Kernel modules no RHEL package provides (DPDK moved igb_uio to dpdk-kmods in 20.11)."""


def missing_tool(settings: dict[str, Any]) -> str | None:
    """Return what VSperf raises for the first ``PATHS`` tool a RHEL DUT lacks, else None.

    As ``tools/functions.py`` ``settings_update_paths()``: the vswitch's, DPDK's and QEMU's tools
    of their ``type``; a relative name is looked up on ``PATH``, a glob must match one file.
    """
    paths = settings["PATHS"]
    for entry in (paths["vswitch"][settings["VSWITCH"]], paths["dpdk"], paths["qemu"]):
        for tool, value in entry[entry["type"]].items():
            if tool in ("modules", "path"):
                continue
            if any(c in value for c in "*?["):
                if len(fnmatch.filter(RHEL_DUT_FILES, value)) != 1:
                    return f"Path to the {tool} is not valid: {value}."
            elif not value.startswith("/"):
                if not any(f in RHEL_DUT_FILES for f in (f"/usr/bin/{value}", f"/usr/sbin/{value}")):
                    return f"Cannot locate tool {value}"
            elif value not in RHEL_DUT_FILES:
                return f"Path to the {tool} is not valid: {value}"
    return None


RX_SHARE = 0.09421
"""Forwarded rate as a share of the line rate, at every frame size [1]."""
TX_SHARE = 0.99604
"""Offered rate as a share of the line rate [1]."""
LINK_BPS = 2 * 10e9
"""Two 10 GbE ports, both directions summed as VSperf reports them [bit/s]."""


def guest_dpdk_error(settings: dict[str, Any], guests: int) -> str | None:
    """Return why VSperf's testpmd guests cannot start from ``PATHS['dpdk']['src']['path']``, else None."""
    if "testpmd" not in settings.get("GUEST_LOOPBACK", [])[:guests]:
        return None
    source = Path(settings["PATHS"]["dpdk"]["src"].get("path", "/root/vswitchperf/src/dpdk/dpdk/"))
    if not source.is_dir():
        return "Unable to copy DPDK to shared directory"
    if len(list(source.glob("*tools/dpdk*bind.py"))) != 1 or not (source / "app/test-pmd/Makefile").is_file():
        return f"pexpect.exceptions.TIMEOUT: no testpmd 'Done' from a guest's copy of {source}"
    return None


def rates(size: int) -> str:
    """Return the six rate columns of one row, consistent with each other at ``size`` [B] as MoonGen's
    rows are (Mbit/s at L1: frame + 20 B; percent of the line rate), so reports judge them valid."""
    line_pps = LINK_BPS / ((size + 20) * 8)
    rx, tx = line_pps * RX_SHARE, line_pps * TX_SHARE
    mbps = (size + 20) * 8 / 1e6
    return f"{rx:.6f},{rx * mbps:.3f},{100 * RX_SHARE:.3f},{tx:.6f},{tx * mbps:.3f},{100 * TX_SHARE:.3f}"


def log(level: str, message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"[{level:<5}]  {stamp},000 : (root) - {message}", flush=True)


def load_collector(settings: dict[str, Any]) -> Any:
    """Return VSperf's collector class ``COLLECTOR`` from ``COLLECTOR_DIR`` (None: not configured)."""
    if "COLLECTOR_DIR" not in settings:
        return None
    sys.path.insert(0, os.environ["FAKE_VSPERF_STUB_DIR"])
    from conf import settings as vsperf_settings  # the stub, as VSperf's own package

    vsperf_settings.values.update(settings)
    found = {}
    for path in sorted(Path(settings["COLLECTOR_DIR"]).glob("*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found.update({k: v for k, v in vars(module).items() if isinstance(v, type)})
    return found[settings["COLLECTOR"]], vsperf_settings


def load_pod_class(settings: dict[str, Any]) -> Any:
    """Return the class named ``POD`` among the modules of ``POD_DIR``, as VSperf's loader does.

    VSperf imports each module under its bare file name and reuses a module of that name already
    imported; ``None`` when no module defines the class (VSperf then calls ``None()``).
    """
    stub = os.environ["FAKE_VSPERF_STUB_DIR"]
    if stub not in sys.path:
        sys.path.insert(0, stub)
    pod_dir = Path(settings["POD_DIR"])
    if settings["POD_DIR"] == VSPERF_DEFAULTS["POD_DIR"]:  # VSperf's own pods/: here, the stub's
        pod_dir = Path(stub) / "pods"
    found: dict[str, Any] = {}
    from pods.pod.pod import IPod  # the stub, as VSperf's own package

    for path in sorted(pod_dir.rglob("[!.]*.py")):
        module = sys.modules.get(path.stem)
        if module is None:
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        found.update(
            {
                k: v
                for k, v in vars(module).items()
                if isinstance(v, type) and issubclass(v, IPod) and not k.startswith("IPod")
            }
        )
    return found.get(settings["POD"])


class Mounts:
    """The fake mount table ``$TASK_PROC/mounts`` as VSperf's ``tools/hugepages.py`` sees and changes it."""

    def __init__(self) -> None:
        self.path = Path(os.environ["TASK_PROC"]) / "mounts"

    def lines(self) -> list[list[str]]:
        return [line.split() for line in self.path.read_text().splitlines() if line.strip()]

    def hugetlbfs(self, where: str | None = None) -> list[list[str]]:
        return [f for f in self.lines() if f[2] == "hugetlbfs" and (where is None or f[1] == where)]

    def mount(self, where: str) -> None:
        """``mount_hugepages()``: mount only when no hugetlbfs is mounted anywhere."""
        if not self.hugetlbfs():
            with self.path.open("a", encoding="utf-8") as table:
                table.write(f"nodev {where} hugetlbfs rw,relatime,pagesize=1024M 0 0\n")

    def umount(self, where: str) -> str | None:
        """``umount_hugepages()``: ``umount HUGEPAGE_DIR`` when any hugetlbfs is mounted.

        :returns: an error when it unmounted the host's ``/dev/hugepages``, else None.
        """
        if not self.hugetlbfs():
            return None
        lines = self.lines()
        on_dir = [i for i, f in enumerate(lines) if f[1] == where]
        if not on_dir:
            log("ERROR", "Unable to umount hugepages.")
            return None
        del lines[on_dir[-1]]
        self.path.write_text("".join(" ".join(f) + "\n" for f in lines))
        if where == HOST_HUGEPAGE_DIR:
            return (
                f"HUGEPAGE_DIR is the host's {HOST_HUGEPAGE_DIR}: VSperf unmounted the host's hugetlbfs "
                "after the test"
            )
        return None


def main(argv: list[str]) -> int:
    conf, xunit, tests, i = None, None, [], 0
    integration = "--integration" in argv
    while i < len(argv):
        if argv[i] in ("--conf-file", "--xunit-dir"):
            if argv[i] == "--conf-file":
                conf = argv[i + 1]
            else:
                xunit = Path(argv[i + 1])
            i += 2
            continue
        if not argv[i].startswith("-"):
            tests.append(argv[i])
        i += 1
    with open(os.environ["SHIM_LOG"], "a", encoding="utf-8") as calls:
        calls.write("vsperf " + " ".join(argv) + "\n")
    settings = load_like_vsperf(Path(conf), integration=integration)
    # VSperf's TRex driver: ssh USER@HOST ls <BASE_DIR>t-rex-64, then its client from PATHS.
    trex = (
        settings["TRAFFICGEN"] == "Trex"
        and bool(settings.get("TRAFFICGEN_TREX_HOST_IP_ADDR"))
        and str(settings.get("TRAFFICGEN_TREX_BASE_DIR", "")).endswith("/")
        and bool(settings["PATHS"]["trafficgen"]["Trex"]["src"]["path"])
    )
    if (settings["TRAFFICGEN"] != "Moongen" and not trex) or settings["TRAFFIC"]["multistream"] < 1:
        log("ERROR", "bad traffic generator configuration")
        return 1
    known = {} if integration else dict(DEPLOYMENT)
    known.update(
        {
            t["Name"]: t["Deployment"]
            for t in settings["INTEGRATION_TESTS" if integration else "PERFORMANCE_TESTS"]
        }
    )
    deployment = {test: known[test] for test in tests if test in known}
    if not deployment:
        log("ERROR", "No tests matched --tests option or positional args. Done.")
        return 1
    tests = [test for test in tests if test in known]
    if os.environ.get("FAKE_VSPERF_NO_RESULTS"):
        log("ERROR", "Failed to initialise the vswitch")
        return 0
    results = Path(os.environ["FAKE_VSPERF_LOG_DIR"]) / time.strftime("results_%Y-%m-%d_%H-%M-%S")
    log("INFO", f"Creating result directory: {results}")
    results.mkdir(parents=True)
    failing = os.environ.get("FAKE_VSPERF_FAIL", "").split()
    loaded = load_collector(settings)
    mounts = Mounts()
    hugepage_dir = settings["HUGEPAGE_DIR"]  # VSperf's default: HOST_HUGEPAGE_DIR
    for index, test in enumerate(tests):
        if test in failing:
            log("ERROR", f"Failed to run test: {test}")
            log("INFO", "Continuing with next test...")
            continue
        missing = missing_tool(settings)  # PerformanceTestCase.__init__: settings_update_paths()
        modules = settings["PATHS"]["dpdk"]["bin"].get("modules", [])
        unpackaged = [m for m in modules if m in UNPACKAGED_MODULES and settings["VSWITCH"] == "OvsDpdkVhost"]
        if missing or unpackaged:
            log("ERROR", f"Failed to run test: {test}")
            print(
                f"RuntimeError: {missing}" if missing else f"Unable to insert module '{unpackaged[0]}'.",
                flush=True,
            )
            log("INFO", "Continuing with next test...")
            continue
        mounts.mount(hugepage_dir)  # run_initialize(): _mount_hugepages()
        try:
            pod_class = load_pod_class(settings)
            if deployment[test] == "p2p":
                pod_class()  # PodController: one pod per p2p test, made before anything runs
        except Exception as err:  # noqa: BLE001 VSperf's main loop: any error fails the test, the run goes on
            log("ERROR", f"Failed to run test: {test}")
            print(f"{type(err).__module__}.{type(err).__name__}: {err}", flush=True)
            log("INFO", "Continuing with next test...")
            continue
        if deployment[test] in ("pvp", "pvvp") and not mounts.hugetlbfs(hugepage_dir):
            log("ERROR", f"Failed to run test: {test}")
            print(f"RuntimeError: QEMU mem-path {hugepage_dir} is not a hugetlbfs mount", flush=True)
            mounts.umount(hugepage_dir)
            log("INFO", "Continuing with next test...")
            continue
        guest_error = guest_dpdk_error(settings, {"pvp": 1, "pvvp": 2}.get(deployment[test], 0))
        if guest_error is not None:
            log("ERROR", f"Failed to run test: {test}")
            print(guest_error, flush=True)
            mounts.umount(hugepage_dir)
            log("INFO", "Continuing with next test...")
            continue
        collector = None
        if loaded is not None:
            loaded[1].values["_TEST_INDEX"] = index
            collector = loaded[0](str(results), test)
            collector.start()
        rows = [
            f"{rates(int(size))},0.000,0.000,0.000,rfc2544_throughput,"
            f"{size},{test},{deployment[test]},{settings['VSWITCH']},udp,00:05:12,2026-11-22 01:00:00,"
            f"2026-11-22 01:05:12,{settings['TRAFFIC']['multistream']},L4,No"
            for size in settings["TRAFFICGEN_PKT_SIZES"]
        ]
        for size in settings["TRAFFICGEN_PKT_SIZES"]:  # VSperf scp's each run's log over the last one
            moongen = Path(os.environ["MOONGEN_LOG_DIR"]) / "1"
            moongen.mkdir(parents=True, exist_ok=True)
            (moongen / "moongen-run.log").write_text(
                MOONGEN_REPORT + f"# fake MoonGen run: {test} {size} B\n"
            )
            time.sleep(float(os.environ.get("FAKE_VSPERF_TRIAL_S", "0")))
        if collector is not None:
            collector.stop()
        broken = mounts.umount(hugepage_dir)  # run_finalize(): _umount_hugepages()
        if broken is not None:
            log("ERROR", f"Failed to run test: {test}")
            print(f"RuntimeError: {broken}", flush=True)
            log("INFO", "Continuing with next test...")
            continue
        csv = results / f"result_{index}_{test}_{deployment[test]}.csv"
        csv.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
        log("INFO", f"Write results to file: {csv}")
    (results / "vsperf-overall_x.log").write_text("overall\n")
    if xunit is not None:
        xunit.mkdir(parents=True, exist_ok=True)
        (xunit / "TEST-vsperf.xml").write_text(f'<testsuite name="vsperf" tests="{len(tests)}"/>\n')
    log("INFO", f'Overall test report written to "{results}/OvsDpdkVhost_test_report.rst"')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
