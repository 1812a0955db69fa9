"""ovsperf-lab compare: paired statistics, side checks, the CPU-steal test aid, and real A/A and A/B runs."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import VsperfTest
from ovsperf_lab.cli import main
from ovsperf_lab.compare.abreport import write_outcome
from ovsperf_lab.compare.abstats import AbVerdict, estimate
from ovsperf_lab.compare.abtest import CompareConfig, SideCrashedError, run_compare
from ovsperf_lab.compare.cpusteal import CGROUP_V1_CPU, CpuSteal, pmd_threads
from ovsperf_lab.compare.session import CompareRequest, run_comparison
from ovsperf_lab.compare.sides import SideSpec, known_other_config_keys, parse_other_config, resolve
from ovsperf_lab.errors import LabError, OvsOverloadedError, TrafficGeneratorError
from ovsperf_lab.generators.api import GeneratorRequest, TrafficGenerator
from ovsperf_lab.generators.dpdk import start as _dpdk_generator
from ovsperf_lab.machine import probe_machine
from ovsperf_lab.plan import LabOptions, plan_run
from reporting.load import load_results_dir
from tests.ovsperf_lab.fakes import FakeTrafficGenerator


def test_paired_estimate_numbers() -> None:
    a = [100.0, 200.0, 150.0, 120.0]
    b = [95.0, 190.0, 142.5, 114.0]  # every round exactly -5 %
    e = estimate(a, b)
    assert e.change_percent == pytest.approx(-5.0)
    assert e.ci_low_percent == pytest.approx(-5.0) and e.ci_high_percent == pytest.approx(-5.0)
    assert e.mdc_percent == 0.0 and e.verdict is AbVerdict.REGRESSION and e.p_value == 0.0
    # Noisy rounds: compare with scipy's paired t-test on the log ratios and the t-based MDC.
    a = [100.0, 104.0, 98.0, 101.0, 99.0, 103.0]
    b = [99.0, 105.0, 97.0, 99.0, 100.0, 101.0]
    e = estimate(a, b)
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    n, mean, sd = len(logs), sum(logs) / len(logs), float(scipy_stats.tstd(logs))
    se = sd / math.sqrt(n)
    t_a, t_b = scipy_stats.t.ppf(0.975, n - 1), scipy_stats.t.ppf(0.8, n - 1)
    assert e.change_percent == pytest.approx((math.exp(mean) - 1) * 100)
    assert e.ci_low_percent == pytest.approx((math.exp(mean - t_a * se) - 1) * 100)
    assert e.mdc_percent == pytest.approx((math.exp((t_a + t_b) * se) - 1) * 100)
    assert e.p_value == pytest.approx(scipy_stats.ttest_1samp(logs, 0.0).pvalue)
    assert e.verdict is AbVerdict.NO_CHANGE
    # Significant but below the practical threshold: NO_CHANGE; above it: IMPROVEMENT.
    assert estimate([100.0] * 3, [100.5, 100.4, 100.6]).verdict is AbVerdict.NO_CHANGE
    assert estimate([100.0] * 3, [102.0, 102.5, 101.8]).verdict is AbVerdict.IMPROVEMENT
    one = estimate([100.0], [90.0])
    assert one.ci_low_percent is None and one.mdc_percent is None and one.verdict is AbVerdict.NO_CHANGE
    for bad in (([], []), ([1.0], [1.0, 2.0]), ([0.0], [1.0]), ([1.0], [math.inf])):
        with pytest.raises(ValueError):
            estimate(*bad)


def test_sides_are_checked_before_anything_starts(tmp_path: Path) -> None:
    system = resolve(SideSpec("A", "system"))
    assert "Open vSwitch" in system.version_banner and "DPDK 22.11" in system.version_banner
    assert system.same_as(resolve(SideSpec("B", "system")))
    assert not system.same_as(resolve(SideSpec("B", "system", other_config=(("smc-enable", "true"),))))
    with pytest.raises(LabError, match=r"Side B: '/bin/true' is not a working ovs-vswitchd"):
        resolve(SideSpec("B", "/bin/true"))
    with pytest.raises(LabError, match=r"Option .--b.: ./nonexistent. is neither .system."):
        resolve(SideSpec("B", "/nonexistent"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabError, match=r"Side B: .* holds neither an ovs-vswitchd"):
        resolve(SideSpec("B", str(tmp_path / "empty")))
    with pytest.raises(LabError, match=r"Option .--b-lib-dir.: .* holds no DPDK library"):
        resolve(SideSpec("B", "system", lib_dir=tmp_path / "empty"))
    (tmp_path / "badabi").mkdir()
    (tmp_path / "badabi" / "librte_eal.so.23").write_bytes(b"not an ELF file")
    with pytest.raises(
        LabError, match=r"Side B: .* is not a working ovs-vswitchd with the libraries in .*badabi"
    ):
        resolve(SideSpec("B", "system", lib_dir=tmp_path / "badabi"))
    with pytest.raises(LabError, match="OVS does not know other_config key 'no-such-key'"):
        resolve(SideSpec("B", "system", other_config=(("no-such-key", "1"),)))
    with pytest.raises(LabError, match="'pmd-cpu-mask' is set by the lab"):
        resolve(SideSpec("B", "system", other_config=(("pmd-cpu-mask", "0x2"),)))
    assert {"pmd-rxq-assign", "emc-insert-inv-prob", "smc-enable"} <= (known_other_config_keys() or set())
    assert parse_other_config(["pmd-rxq-assign=roundrobin"], "--b-other-config") == (
        ("pmd-rxq-assign", "roundrobin"),
    )
    for bad in ("noequals", "=x", "KEY=x", "a=b c", "a=$(x)", "a="):
        with pytest.raises(LabError, match="Option '--b-other-config' takes KEY=VALUE"):
            parse_other_config([bad], "--b-other-config")


@pytest.mark.skipif(
    not (CGROUP_V1_CPU / "cpu.cfs_quota_us").exists(), reason="needs the cgroup v1 cpu controller"
)
def test_cpu_steal_caps_only_pmd_threads_and_cleans_up() -> None:
    stop = threading.Event()
    ready = threading.Event()
    tids: list[int] = []

    def spin() -> None:
        tids.append(threading.get_native_id())
        Path(f"/proc/self/task/{tids[0]}/comm").write_text("pmd-test")
        ready.set()
        stop.wait(30)

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        ready.wait(10)
        assert pmd_threads(os.getpid()) == tids
        steal = CpuSteal(25.0, f"ovsperf-lab-test-{os.getpid()}")
        assert steal.apply(os.getpid()) == tids
        assert (steal.path / "cpu.cfs_quota_us").read_text().strip() == "7500"
        assert (steal.path / "cpu.cfs_period_us").read_text().strip() == "10000"
        assert [int(t) for t in (steal.path / "tasks").read_text().split()] == tids
        steal.release()
        assert not steal.path.exists()
        assert str(tids[0]) in (CGROUP_V1_CPU / "tasks").read_text().split()
    finally:
        stop.set()
        thread.join()
    for bad in (0.0, 95.0):
        with pytest.raises(LabError, match="'--b-cpu-steal' must be in"):
            CpuSteal(bad, "x")


def test_bad_compare_options_name_the_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = [
        (["--b", "/bin/true"], "Side B: '/bin/true' is not a working ovs-vswitchd"),
        (
            ["--b", "system", "--b-other-config", "bogus-key=1"],
            "OVS does not know other_config key 'bogus-key'",
        ),
        (["--b", "system", "--rounds", "1"], "Options '--min-rounds' and '--rounds' must satisfy"),
        (["--b", "system", "--frame-sizes", "64,128"], "Option '--frame-sizes' takes one frame size"),
        (["--b", "system", "--b-cpu-steal", "99"], "Option '--b-cpu-steal' must be in (0, 90] %"),
        # Issue 25: the vhost-user sockets (or hugepage files) went outside the run's directory.
        (
            ["--b", "system", "--b-other-config", "vhost-sock-dir=.."],
            "Option '--b-other-config': 'vhost-sock-dir' names a file or directory",
        ),
        (
            ["--a-other-config", "dpdk-hugepage-dir=..", "--b", "system"],
            "Option '--a-other-config': 'dpdk-hugepage-dir' names a file or directory",
        ),
    ]
    for argv, message in cases:
        assert main(["compare", "--config", "OVS_DPDK1q", *argv, "--output", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


CATALOG = load_catalog()


def _cpus():  # type: ignore[no-untyped-def]
    facts = probe_machine()
    options = LabOptions(frame_sizes_bytes=(64,), tests=(VsperfTest.PHY2PHY_TPUT,))
    return plan_run(CATALOG.get("OVS_DPDK1q"), facts, options).cpus


@pytest.mark.dpdk
@pytest.mark.slow
def test_a_a_says_no_change_and_a_big_cpu_steal_says_regression(tmp_path: Path, state_root: Path) -> None:
    system = resolve(SideSpec("A", "system"))
    same = resolve(SideSpec("B", "system"))
    aa = run_compare(
        (system, same),
        _cpus(),
        CompareConfig(trial_s=2.0, min_rounds=3, max_rounds=3, alpha=0.01, threshold_percent=3.0, seed=7),
        state_root=state_root,
        generator_factory=_dpdk_generator,
    )
    assert aa.complete and aa.estimate is not None and aa.estimate.rounds == 3
    assert aa.estimate.verdict is AbVerdict.NO_CHANGE, aa.estimate
    assert [v.side for v in aa.values].count("A") == 3 and all(v.mrr_pps > 0 for v in aa.values)
    assert aa.versions["A"] == aa.versions["B"] and aa.versions["A"][1].startswith("22.11")
    page = write_outcome(aa, tmp_path / "aa")
    data = json.loads((tmp_path / "aa" / "report.json").read_text())
    assert data["estimate"]["verdict"] == "NO_CHANGE" and len(data["rounds"]) == 3
    assert "would have gone unseen" in page.read_text()
    assert list(state_root.iterdir()) == []
    slowed = run_compare(
        (system, same),
        _cpus(),
        CompareConfig(trial_s=2.0, min_rounds=3, max_rounds=4, b_cpu_steal_percent=60.0, seed=3),
        state_root=state_root,
        generator_factory=_dpdk_generator,
    )
    assert slowed.estimate is not None and slowed.estimate.verdict is AbVerdict.REGRESSION, slowed.estimate
    assert slowed.estimate.change_percent < -20
    assert list(state_root.iterdir()) == []
    assert not [p for p in CGROUP_V1_CPU.iterdir() if p.name.startswith("ovsperf-lab-ab-")]


@pytest.mark.dpdk
@pytest.mark.slow
def test_cli_writes_the_page_and_exits_by_the_verdict(tmp_path: Path, state_root: Path) -> None:
    argv = ["--state-dir", str(state_root), "compare", "--config", "OVS_DPDK1q", "--b", "system",
            "--b-cpu-steal", "60", "--rounds", "5", "--min-rounds", "3", "--trial-duration", "2",
            "--seed", "5", "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    started = time.monotonic()
    code = main(argv)
    assert code == 1  # REGRESSION
    [out] = list(tmp_path.iterdir())
    assert out.name.startswith("compare_") and (out / "graphs" / "rounds.png").is_file()
    rounds = (out / "rounds.csv").read_text().splitlines()
    assert rounds[0] == "round,side,position,mrr_pps,tx_pps,started_at" and len(rounds) >= 5
    assert "test aid: 60.0 % of the PMD CPU taken" in (out / "index.html").read_text()
    # Each side's rounds are VSperf results that generate-report pools as repeats.
    from reporting.api import generate_report

    [a_dir], [b_dir] = list((out / "A").iterdir()), list((out / "B").iterdir())
    report = generate_report([a_dir], [b_dir], tmp_path / "report")
    [test] = json.loads(report.report_json.read_text())["tests"]
    [cell] = test["rows"]
    assert (test["test"], cell["current_n"], cell["baseline_n"]) == (
        "phy2phy_cont",
        len(rounds) // 2,
        len(rounds) // 2,
    )
    assert time.monotonic() - started < 300


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.dpdk
@pytest.mark.slow
def test_a_second_dpdk_build_from_the_archive_runs_as_side_b(tmp_path: Path, state_root: Path) -> None:
    import subprocess

    fetched = subprocess.run(
        [str(ROOT / "scripts" / "fetch-dpdk-libs.sh"), str(tmp_path / "dpdk")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert fetched.returncode == 0, fetched.stderr
    libdir = Path(fetched.stdout.strip())
    version = fetched.stderr.split("fetch-dpdk-libs: DPDK ")[1].split("-")[0]  # e.g. 22.11.7
    a = resolve(SideSpec("A", "system"))
    b = resolve(SideSpec("B", str(tmp_path / "dpdk" / "root")))  # a package tree: its libraries
    assert b.library_dir == libdir and b.version_banner.endswith(f"DPDK {version}")
    assert not a.same_as(b) and f"DPDK {version}" not in a.version_banner
    outcome = run_compare(
        (a, b),
        _cpus(),
        CompareConfig(trial_s=1.0, min_rounds=2, max_rounds=2, seed=1),
        state_root=state_root,
        generator_factory=_dpdk_generator,
    )
    assert outcome.versions["B"][1] == version and outcome.versions["A"][1] != version
    assert outcome.estimate is not None and outcome.estimate.rounds == 2
    assert list(state_root.iterdir()) == []


@pytest.mark.dpdk
def test_a_side_whose_ovs_fails_to_start_is_named(tmp_path: Path, state_root: Path) -> None:
    fake = tmp_path / "ovs-vswitchd"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then\n'
        '  echo "ovs-vswitchd (Open vSwitch) 9.9.9"; echo "DPDK 22.11.0"; exit 0\n'
        "fi\n"
        "echo 'simulated start-up failure' >&2; exit 1\n"
    )
    fake.chmod(0o755)
    b = resolve(SideSpec("B", str(fake)))
    with pytest.raises(
        SideCrashedError, match=rf"Side B \({fake}\): ovs-vswitchd \(PID \d+\) died with status 1"
    ) as crashed:
        run_compare(
            (resolve(SideSpec("A", "system")), b),
            _cpus(),
            CompareConfig(trial_s=1.0, min_rounds=2, max_rounds=2, seed=2),  # seed 2: B first
            state_root=state_root,
            generator_factory=_dpdk_generator,
            crash_log_dir=tmp_path,  # its stderr is kept there (the run directory goes at teardown)
        )
    assert crashed.value.side == "B" and crashed.value.log_path is not None
    assert "simulated start-up failure" in crashed.value.log_path.read_text()
    assert f"Kept: '{crashed.value.log_path}'" in str(crashed.value)
    assert list(state_root.iterdir()) == []


@pytest.mark.dpdk
def test_a_wait_that_ran_out_on_an_overloaded_machine_is_not_the_sides_crash(
    tmp_path: Path, state_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the real A/A bisection on a busy machine: side B's bridge wait ran out at load 2.1 on 2 CPUs
    and the step counted build 8 as crashed, i.e. bad. An overload is nobody's build: it stops the run."""
    from ovsperf_lab.ovs import OvsSandbox

    def overloaded(self: OvsSandbox, bridge: str, timeout_s: float = 30.0) -> None:
        raise OvsOverloadedError(
            f"Timed out waiting for bridge '{bridge}'. The machine was overloaded (test)."
        )

    monkeypatch.setattr(OvsSandbox, "wait_bridge", overloaded)
    side = resolve(SideSpec("A", "system"))
    with pytest.raises(OvsOverloadedError, match="overloaded") as caught:
        run_compare(
            (side, resolve(SideSpec("B", "system"))),
            _cpus(),
            CompareConfig(trial_s=1.0, min_rounds=2, max_rounds=2, seed=2),
            state_root=state_root,
            generator_factory=_dpdk_generator,
            crash_log_dir=tmp_path,
        )
    assert not isinstance(caught.value, SideCrashedError)
    assert list(tmp_path.iterdir()) == []  # no crash log kept: nothing crashed
    assert list(state_root.iterdir()) == []


@pytest.mark.dpdk
@pytest.mark.slow
def test_pdr_metric_runs_a_short_mlrsearch_per_side_and_round(tmp_path: Path, state_root: Path) -> None:
    side = resolve(SideSpec("A", "system"))
    outcome = run_compare(
        (side, resolve(SideSpec("B", "system"))),
        _cpus(),
        CompareConfig(
            frame_size_bytes=1518, metric="pdr", pdr_duration_sum_s=2.0, min_rounds=2, max_rounds=2
        ),
        state_root=state_root,
        generator_factory=_dpdk_generator,
    )
    assert outcome.estimate is not None and outcome.estimate.rounds == 2
    line_rate = 2 * 10e9 / ((1518 + 20) * 8)
    assert all(0 < v.mrr_pps <= line_rate * 1.001 for v in outcome.values)
    write_outcome(outcome, tmp_path)
    assert json.loads((tmp_path / "report.json").read_text())["config"]["metric"] == "pdr"
    assert "PDR 0.5 %: MLRsearch conditional throughput" in (tmp_path / "index.html").read_text()
    with pytest.raises(LabError, match="Option '--metric' must be 'mrr' or 'pdr'"):
        CompareConfig(metric="ndr")


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.dpdk
@pytest.mark.slow
def test_ctrl_c_keeps_the_rounds_so_far_and_tears_down(tmp_path: Path, state_root: Path) -> None:
    import signal
    import subprocess
    import sys

    argv = [sys.executable, "-m", "ovsperf_lab", "--state-dir", str(state_root), "compare", "--config",
            "OVS_DPDK1q", "--b", "system", "--rounds", "10", "--trial-duration", "1", "--seed", "4",
            "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not list(tmp_path.glob("compare_*/rounds.csv")):
            time.sleep(0.2)  # the first complete round has been written
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, err
    assert "interrupted" in err
    [result] = list(tmp_path.iterdir())
    assert out.strip() == str(result / "index.html")
    data = json.loads((result / "report.json").read_text())
    assert data["complete"] is False and "interrupted" in data["reason"]
    assert len(data["rounds"]) >= 1 and all(v["mrr_pps"] > 0 for v in data["values"])
    assert list(state_root.iterdir()) == []
    assert not [p for p in CGROUP_V1_CPU.iterdir() if p.name.startswith("ovsperf-lab-ab-")]


def test_the_page_and_vsperf_results_of_an_outcome(tmp_path: Path) -> None:
    from ovsperf_lab.compare.abtest import CompareOutcome, RoundValue
    from ovsperf_lab.compare.sides import Side

    a = Side(
        "A", Path("/usr/sbin/ovs-vswitchd"), None, (), "ovs-vswitchd (Open vSwitch) 3.1.0; DPDK 22.11.11"
    )
    b = Side(
        "B",
        Path("/x/ovs-vswitchd"),
        Path("/x/lib"),
        (("smc-enable", "true"),),
        "ovs-vswitchd (Open vSwitch) 3.2.0; DPDK 22.11.7",
    )
    outcome = CompareOutcome((a, b), CompareConfig(seed=1))
    values = [(1, "B", 9.0e6), (1, "A", 10.0e6), (2, "A", 8.0e6), (2, "B", 7.2e6), (3, "B", 9.45e6)]
    for number, (r, side, pps) in enumerate(values):
        outcome.values.append(RoundValue(r, side, number % 2, pps, 2 * 14.88e6, "2026-11-24T04:00:00+00:00"))
    outcome.versions = {"A": ("3.1.0", "22.11.11"), "B": ("3.2.0", "22.11.7")}
    assert outcome.pairs() == ([10.0e6, 8.0e6], [9.0e6, 7.2e6])  # round 3 is not complete
    outcome.estimate = estimate(*outcome.pairs())
    out = tmp_path / "compare_2026-11-24_04-00-00"
    page = write_outcome(outcome, out).read_text()
    data = json.loads((out / "report.json").read_text())
    assert data["estimate"]["change_percent"] == pytest.approx(-10.0)
    assert data["estimate"]["verdict"] == "REGRESSION"
    assert [(r["round"], r["order"], r["change_percent"]) for r in data["rounds"]] == [
        (1, "BA", pytest.approx(-10.0)),
        (2, "AB", pytest.approx(-10.0)),
        (3, "B", None),
    ]
    assert (
        data["sides"]["B"]["dpdk_version"] == "22.11.7"
        and "smc-enable=true" in data["sides"]["B"]["description"]
    )
    assert "REGRESSION" in page and "-10.00 %" in page and "libraries /x/lib" in page
    assert (out / "rounds.csv").read_text().count("\n") == 6
    csvs = sorted(p.name for p in (out / "B" / "results_2026-11-24_04-00-00").iterdir())
    assert csvs == [f"result_{i}_phy2phy_cont_p2p.csv" for i in range(3)]
    loaded = load_results_dir(out / "A" / "results_2026-11-24_04-00-00")
    assert [r.rows[0].rx_pps for r in loaded.runs] == [10.0e6, 8.0e6]
    assert loaded.runs[0].traffic_kind == "rfc2544_continuous" and loaded.runs[0].test == "phy2phy_cont"


def _request(tmp_path: Path, state_root: Path, config: CompareConfig) -> CompareRequest:
    sides = (SideSpec("A", "system"), SideSpec("B", "system"))
    return CompareRequest("OVS_DPDK1q", sides, config, tmp_path / "out", state_root, progress=False)


@pytest.mark.dpdk
def test_compare_takes_its_testbed_from_the_config_and_writes_the_page(
    tmp_path: Path, state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests: list[GeneratorRequest] = []
    gens: list[FakeTrafficGenerator] = []

    def factory(request: GeneratorRequest) -> TrafficGenerator:
        requests.append(request)
        gens.append(FakeTrafficGenerator(capacity_pps=700_000.0))
        return gens[-1]

    config = CompareConfig(
        trial_s=0.5, warmup_s=0.2, min_rounds=2, max_rounds=2, seed=1, ring_size=4096,
        generator_memory_mb=300, warmup_drain_s=0.1, drain_s=0.3,
    )  # fmt: skip
    assert run_comparison(_request(tmp_path, state_root, config), generator_factory=factory) == 0
    [out] = list((tmp_path / "out").iterdir())
    assert capsys.readouterr().out.splitlines() == [str(out / "index.html")]
    assert [(r.memory_mb, r.ring_size, r.queues) for r in requests] == [(300, 4096, 1)] * 4
    assert [[(s.duration_s, s.drain_s) for s in g.specs] for g in gens] == [[(0.2, 0.1), (0.5, 0.3)]] * 4
    assert [g.closed for g in gens] == [1] * 4
    data = json.loads((out / "report.json").read_text())
    assert data["complete"] is True and data["estimate"]["verdict"] == "NO_CHANGE"
    assert [v["mrr_pps"] for v in data["values"]] == [pytest.approx(1.4e6)] * 4
    assert list(state_root.iterdir()) == []


@pytest.mark.dpdk
def test_a_side_failing_mid_compare_keeps_the_rounds_so_far(
    tmp_path: Path, state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[int] = []

    def factory(request: GeneratorRequest) -> TrafficGenerator:
        started.append(1)  # the third side run (round 2's first) dies in its counted trial
        return FakeTrafficGenerator(capacity_pps=700_000.0, fail_at_trial=2 if len(started) == 3 else None)

    config = CompareConfig(trial_s=0.5, warmup_s=0.2, min_rounds=2, max_rounds=3, seed=1)
    with pytest.raises(TrafficGeneratorError, match="fake generator died in trial 2"):
        run_comparison(_request(tmp_path, state_root, config), generator_factory=factory)
    [out] = list((tmp_path / "out").iterdir())
    assert capsys.readouterr().out.splitlines() == [str(out / "index.html")]
    data = json.loads((out / "report.json").read_text())
    assert data["complete"] is False and "fake generator died in trial 2" in data["reason"]
    assert [(v["round"], v["side"]) for v in data["values"]] in ([(1, "A"), (1, "B")], [(1, "B"), (1, "A")])
    assert list(state_root.iterdir()) == []
