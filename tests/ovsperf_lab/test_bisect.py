"""ovsperf-lab bisect: the bisection over a fake comparison (deterministic steps), state and resume, page,
options; and one real row of eight builds of the installed OVS-DPDK, builds 5–8 slowed."""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import pytest

from ovsperf_lab.bisect.model import Build, BuildKind, Conclusion, Result, Step, StepKind, StepOutcome
from ovsperf_lab.bisect.options import BisectRequest, local_builds
from ovsperf_lab.bisect.search import Measured, NextStep, classify, max_steps, next_step, sought_percent
from ovsperf_lab.bisect.session import Bisection, run_bisection, start
from ovsperf_lab.bisect.state import BisectState, read_state
from ovsperf_lab.cli import main
from ovsperf_lab.compare.config import CompareConfig
from ovsperf_lab.errors import LabError
from tests.ovsperf_lab.bisectfakes import FakeComparison, out_dir, slower_from

CONFIG = CompareConfig()


def _state(builds: int, *, steal_from: int | None = None) -> BisectState:
    items = ["system"] * builds
    request = BisectRequest(
        "OVS_DPDK1q",
        CONFIG,
        builds=local_builds(items, 60.0 if steal_from else None, steal_from),
    )
    return BisectState(request, request.builds)


def _bisect(tmp_path: Path, builds: int, fake: FakeComparison) -> tuple[Result, Bisection]:
    state = _state(builds)
    bisection = Bisection(start(state, out_dir(tmp_path)), state, fake)
    return bisection.run(), bisection


def _replay(builds: int, fake: FakeComparison) -> tuple[Result, list[Step]]:
    """Drive next_step with the fake's classification only (no files): fast, for every position."""
    steps: list[Step] = []
    while True:
        planned = next_step(builds, steps, target_mdc_percent=CONFIG.target_mdc_percent)
        if isinstance(planned, Result):
            return planned, steps
        mdc = fake.mdc_of.get(planned.build, fake.mdc_percent) / math.sqrt(planned.rounds_factor)
        change = fake.changes.get(planned.build, 0.0)
        verdict = "REGRESSION" if change < -max(mdc, 1.0) else "NO_CHANGE"
        sought = sought_percent(steps, CONFIG.target_mdc_percent, builds - 1)
        measured = Measured(verdict, change, change - 0.7 * mdc, change + 0.7 * mdc, mdc)
        outcome, reason = classify(measured, planned.kind, sought, CONFIG.target_mdc_percent)
        steps.append(Step(len(steps) + 1, planned.kind, planned.build, outcome, reason, verdict, change,
                          mdc_percent=mdc))  # fmt: skip


@pytest.mark.parametrize("builds", [2, 3, 5, 8, 9, 16, 32, 33])
def test_every_culprit_position_is_found_within_log2_n_plus_2_steps(builds: int) -> None:
    for first_bad in range(1, builds):
        result, steps = _replay(builds, FakeComparison(slower_from(first_bad, builds)))
        assert (result.conclusion, result.first_bad) == (Conclusion.FOUND, first_bad), (builds, first_bad)
        assert result.last_good == first_bad - 1 and result.candidates == (first_bad,)
        assert len(steps) <= math.ceil(math.log2(builds)) + 2 == max_steps(builds)
        assert len(steps) <= 1 + math.ceil(math.log2(builds - 1)) if builds > 2 else len(steps) == 1


def test_eight_builds_culprit_5_is_named_with_the_evidence_on_page_and_json(tmp_path: Path) -> None:
    fake = FakeComparison(slower_from(4, 8, -10.0))
    result, bisection = _bisect(tmp_path, 8, fake)
    assert (result.conclusion, result.first_bad, result.last_good) == (Conclusion.FOUND, 4, 3)
    assert "'#5 system'" in result.message and "'#4 system'" in result.message
    # The bracket first (bad against good), then midpoints; every run has the good build as side A.
    assert [r.candidate.index for r in fake.runs] == [7, 3, 5, 4]
    assert all(r.good.index == 0 and r.good_source == "system" for r in fake.runs)
    data = json.loads((bisection.directory / "bisect.json").read_text())
    assert (data["conclusion"], data["first_bad_label"], data["measured_steps"]) == ("FOUND", "#5 system", 4)
    assert data["max_steps"] == 5 and data["sought_percent"] == pytest.approx(10.0)
    assert [(s["build"], s["outcome"], s["verdict"]) for s in data["steps"]] == [
        (7, "bad", "REGRESSION"),
        (3, "good", "NO_CHANGE"),
        (5, "bad", "REGRESSION"),
        (4, "bad", "REGRESSION"),
    ]
    assert data["steps"][0]["change_percent"] == -10.0 and data["steps"][1]["mdc_percent"] == 2.0
    assert all((bisection.directory / s["page"]).is_file() for s in data["steps"])
    assert [b["status"] for b in data["builds"]] == ["GOOD", None, None, "GOOD", "BAD", "BAD", None, "BAD"]
    page = (bisection.directory / "index.html").read_text()
    assert "The first bad build is &#39;#5 system&#39;" in page and 'class="culprit"' in page
    assert page.count('<a href="step0') == 4 and "v-regression" in page


def test_a_a_row_ends_with_no_regression_found_in_the_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeComparison({}, mdc_percent=5.0)  # every build alike; MDC above the 3 % target
    state = _state(8)
    bisection = Bisection(start(state, out_dir(tmp_path)), state, fake)
    assert run_bisection(bisection) == 2
    out, err = capsys.readouterr()
    assert out.strip() == str(bisection.directory / "index.html")
    assert "NO_REGRESSION: No regression found in the range" in err and "does not bracket a regression" in err
    # Inside its MDC: repeated once with twice the rounds, then concluded, never more.
    assert [(r.candidate.index, r.config.max_rounds) for r in fake.runs] == [(7, 20), (7, 40)]
    data = json.loads((bisection.directory / "bisect.json").read_text())
    assert data["conclusion"] == "NO_REGRESSION" and data["first_bad"] is None
    assert [s["kind"] for s in data["steps"]] == ["bracket", "repeat"]


def test_good_and_bad_swapped_says_the_range_does_not_bracket_a_regression(tmp_path: Path) -> None:
    # Builds in reverse: the "bad" build is 10 % faster than the "good" one.
    result, bisection = _bisect(tmp_path, 8, FakeComparison({7: 10.0}))
    assert result.conclusion is Conclusion.NO_REGRESSION
    assert "does not bracket a regression" in result.message and "swapped" in result.message
    assert len(bisection.state.steps) == 1  # IMPROVEMENT is decided: no repeat


def test_a_step_inside_its_mdc_is_repeated_once_then_undecidable_never_guessed(tmp_path: Path) -> None:
    # Build 3 is noisy: MDC 30 % (21 % on the repeat) against a 10 % regression sought.
    fake = FakeComparison(slower_from(4, 8), mdc_of={3: 30.0})
    result, bisection = _bisect(tmp_path, 8, fake)
    steps = bisection.state.steps
    assert [(s.build, s.kind, s.outcome) for s in steps[:3]] == [
        (7, StepKind.BRACKET, StepOutcome.BAD),
        (3, StepKind.MIDPOINT, StepOutcome.UNDECIDABLE),
        (3, StepKind.REPEAT, StepOutcome.UNDECIDABLE),
    ]
    assert fake.runs[2].config.min_rounds == 2 * CONFIG.min_rounds
    # Stopped there: the first bad build is anywhere after the good build up to the bad one; not guessed.
    assert len(steps) == 3 and result.conclusion is Conclusion.UNDECIDABLE
    assert result.candidates == tuple(range(1, 8)) and (result.last_good, result.first_bad) == (0, 7)
    assert (
        "'#4 system' stayed inside its MDC" in result.message
        and "from '#2 system' to '#8 system'" in result.message
    )
    data = json.loads((bisection.directory / "bisect.json").read_text())
    assert (
        data["conclusion"] == "UNDECIDABLE"
        and len(data["candidates"]) == 7
        and data["first_bad_label"] == "#8 system"
    )


def test_a_step_decided_by_its_repeat_goes_on(tmp_path: Path) -> None:
    # MDC 10 %, interval ±7 % reaching past −5 % (half the 10 % sought); the repeat's ±4.95 % decides it.
    result, bisection = _bisect(tmp_path, 8, FakeComparison(slower_from(4, 8), mdc_of={3: 10.0}))
    assert (result.conclusion, result.first_bad) == (Conclusion.FOUND, 4)
    assert [s.outcome for s in bisection.state.steps][1:3] == [StepOutcome.UNDECIDABLE, StepOutcome.GOOD]
    assert len(bisection.state.steps) <= max_steps(8)


def test_skipped_builds_narrow_the_range_around_them(tmp_path: Path) -> None:
    fake = FakeComparison(slower_from(5, 8), unavailable=frozenset({3}))
    result, bisection = _bisect(tmp_path, 8, fake)
    assert (result.conclusion, result.first_bad) == (Conclusion.FOUND, 5)
    skipped = [s for s in bisection.state.steps if s.outcome is StepOutcome.SKIPPED]
    assert [(s.build, s.verdict, s.page) for s in skipped] == [(3, None, None)]
    assert "has no RPMs (fake)" in skipped[0].reason
    # The skipped build just before the culprit: the answer is both, the reason given.
    fake = FakeComparison(slower_from(4, 8), unavailable=frozenset({3}))
    result, _ = _bisect(tmp_path / "second", 8, fake)
    assert result.conclusion is Conclusion.CANDIDATES and result.candidates == (3, 4)
    assert "could not be tested (skipped)" in result.message


def test_a_build_whose_ovs_crashes_counts_as_bad_with_its_log_named(tmp_path: Path) -> None:
    fake = FakeComparison(slower_from(6, 8), crash=frozenset({5}))
    result, bisection = _bisect(tmp_path, 8, fake)
    assert (result.conclusion, result.first_bad) == (Conclusion.FOUND, 5)
    [crashed] = [s for s in bisection.state.steps if s.outcome is StepOutcome.CRASHED]
    assert crashed.log is not None and (bisection.directory / crashed.log).read_text() == "fake crash\n"
    assert "counted as bad" in crashed.reason and "ovs-vswitchd died" in crashed.reason
    assert f'href="{crashed.log}"' in (bisection.directory / "index.html").read_text()


def test_an_interrupted_bisection_resumes_from_its_state_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changes = slower_from(4, 8)
    state = _state(8)
    directory = start(state, out_dir(tmp_path))
    first = FakeComparison(changes, interrupt_at_call=3)  # Ctrl-C during the third comparison
    assert run_bisection(Bisection(directory, state, first)) == 2
    out, err = capsys.readouterr()
    assert out.strip() == str(directory / "index.html") and f"--resume {directory}" in err
    kept = read_state(directory)
    assert [s.build for s in kept.steps] == [7, 3]  # the interrupted step is not recorded
    assert json.loads((directory / "bisect.json").read_text())["reason"] == "interrupted (Ctrl-C or SIGTERM)"
    second = FakeComparison(changes)
    assert run_bisection(Bisection(directory, kept, second)) == 1
    assert [r.candidate.index for r in second.runs] == [5, 4]  # continues where it stopped
    final = read_state(directory)
    assert [s.number for s in final.steps] == [1, 2, 3, 4]
    assert json.loads((directory / "bisect.json").read_text())["first_bad_label"] == "#5 system"


def test_resume_through_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A finished bisection resumed: nothing left to run, the same answer and exit code.
    state = _state(4)
    directory = start(state, out_dir(tmp_path))
    assert run_bisection(Bisection(directory, state, FakeComparison(slower_from(2, 4)))) == 1
    capsys.readouterr()
    assert main(["bisect", "--resume", str(directory), "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert out.strip() == str(directory / "index.html") and "FOUND: The first bad build is '#3 system'" in err


def test_the_state_file_round_trips_and_bad_ones_are_refused(tmp_path: Path) -> None:
    state = _state(3, steal_from=2)
    directory = start(state, out_dir(tmp_path))
    step = Step(1, StepKind.BRACKET, 2, StepOutcome.BAD, "slower", "REGRESSION", -9.5, -12.0, -7.0, 2.1, 6)
    state.with_step(step).write(directory)
    again = read_state(directory)
    assert again.steps == (step,) and again.builds == state.builds and again.request == state.request
    assert [b.cpu_steal_percent for b in again.builds] == [None, 60.0, 60.0]
    assert not [p.name for p in directory.iterdir() if p.name.startswith(".")]  # no temporary left
    (directory / "state.json").write_text("{")
    with pytest.raises(LabError, match="is not JSON"):
        read_state(directory)
    with pytest.raises(LabError, match="holds no bisection"):
        read_state(tmp_path)


def test_next_step_refuses_a_step_that_was_not_planned() -> None:
    step = Step(1, StepKind.MIDPOINT, 3, StepOutcome.GOOD, "x")
    with pytest.raises(ValueError, match="not the next one"):
        next_step(8, [step], target_mdc_percent=3.0)
    assert next_step(8, [], target_mdc_percent=3.0) == NextStep(7, StepKind.BRACKET, 1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--builds", "system", "system"], "Option '--config' is required"),
        (["--config", "OVS_DPDK1q", "--builds", "system"], "needs at least 2 builds"),
        (["--config", "OVS_DPDK1q", "--builds", "system", "system", "--cpu-steal", "50"], "go together"),
        (
            [
                "--config",
                "OVS_DPDK1q",
                "--builds",
                "system",
                "system",
                "--cpu-steal",
                "50",
                "--cpu-steal-from",
                "1",
            ],
            "'--cpu-steal-from' must be in [2, 2]",
        ),
        (["--config", "OVS_DPDK1q", "--koji-package", "openvswitch"], "needs '--koji-package', '--koji-tag'"),
        (["--config", "OVS_DPDK1q", "--builds", "system", "lib:"], "names no library directory"),
        (["--config", "OVS_DPDK1q", "--frame-sizes", "imix", "--builds", "a", "b"], "one frame size"),
        (["--resume", "/nonexistent-bisect"], "holds no bisection"),
    ],
)
def test_bad_options_name_the_option(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bisect", "--output", str(tmp_path), *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err
    assert list(tmp_path.iterdir()) == []


def test_builds_from_the_command_line() -> None:
    builds = local_builds(["system", "lib:/opt/dpdk/lib", "/opt/ovs/root"], 40.0, 3)
    assert builds == (
        Build(0, "#1 system", BuildKind.LOCAL, "system"),
        Build(1, "#2 lib:/opt/dpdk/lib", BuildKind.LOCAL, "system", "/opt/dpdk/lib"),
        Build(2, "#3 /opt/ovs/root", BuildKind.LOCAL, "/opt/ovs/root", None, 40.0),
    )


@pytest.mark.dpdk
@pytest.mark.slow
@pytest.mark.timeout(900)  # four or five comparisons of four or five rounds: about 5 min here
def test_eight_builds_of_the_installed_ovs_slowed_from_build_5_name_build_5(
    tmp_path: Path, state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real thing: eight "builds" of the system OVS-DPDK, 80 % of the PMD CPU taken from build 5 on."""
    from ovsperf_lab.compare.cpusteal import CGROUP_V1_CPU

    argv = ["--state-dir", str(state_root), "bisect", "--config", "OVS_DPDK1q", "--builds", *["system"] * 8,
            "--cpu-steal", "80", "--cpu-steal-from", "5", "--min-rounds", "4", "--rounds", "5",
            "--target-mdc", "10", "--threshold", "5", "--trial-duration", "1", "--seed", "11",
            "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    started = time.monotonic()
    assert main(argv) == 1
    out, err = capsys.readouterr()
    [directory] = list(tmp_path.iterdir())
    assert out.strip() == str(directory / "index.html") and "FOUND" in err
    data = json.loads((directory / "bisect.json").read_text())
    steps = data["steps"]
    assert (data["conclusion"], data["first_bad_label"]) == ("FOUND", "#5 system"), steps
    assert data["measured_steps"] <= math.ceil(math.log2(8)) + 2
    assert steps[0]["verdict"] == "REGRESSION" and steps[0]["change_percent"] < -20
    for step in steps:  # each step's comparison page, with every round, is kept and linked
        assert (directory / step["page"]).is_file() and step["rounds"] >= 4
        assert (step["verdict"] == "REGRESSION") == (step["build"] >= 4), step
    assert list(state_root.iterdir()) == []
    assert not [p for p in CGROUP_V1_CPU.iterdir() if p.name.startswith("ovsperf-lab-ab-")]
    print(f"bisect of 8 builds: {len(steps)} steps, {time.monotonic() - started:.0f} s", file=sys.stderr)


@pytest.mark.dpdk
@pytest.mark.slow
@pytest.mark.timeout(900)  # the bracket, and at most its repeat with twice the rounds: 1–3 min here
def test_a_a_row_of_eight_identical_builds_of_the_installed_ovs_ends_with_no_regression_found(
    tmp_path: Path, state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real A/A row: eight "builds" of the same system OVS-DPDK, nothing slowed, same options as the row
    above. The bracket (the bad build against the good one) finds no regression, so the bisection ends there
    — exit 2, "no regression found in the range", no midpoint ever measured."""
    from ovsperf_lab.compare.cpusteal import CGROUP_V1_CPU

    argv = ["--state-dir", str(state_root), "bisect", "--config", "OVS_DPDK1q", "--builds", *["system"] * 8,
            "--min-rounds", "4", "--rounds", "5", "--target-mdc", "10", "--threshold", "5",
            "--trial-duration", "1", "--seed", "11", "--output", str(tmp_path), "--no-progress"]  # fmt: skip
    started = time.monotonic()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    [directory] = list(tmp_path.iterdir())
    assert out.strip() == str(directory / "index.html")
    assert "NO_REGRESSION: No regression found in the range" in err, err[-2000:]
    data = json.loads((directory / "bisect.json").read_text())
    steps = data["steps"]
    assert (data["conclusion"], data["first_bad"]) == ("NO_REGRESSION", None), steps
    # Only the bracket (and its one repeat when its MDC was above the target): build 8 against build 1.
    assert [s["kind"] for s in steps] in (["bracket"], ["bracket", "repeat"]), steps
    assert {s["build"] for s in steps} == {7}
    last = steps[-1]
    assert last["verdict"] in ("NO_CHANGE", "IMPROVEMENT"), last
    if last["kind"] == "bracket" and last["verdict"] == "NO_CHANGE":  # decided at once: inside the MDC target
        assert last["mdc_percent"] is not None and last["mdc_percent"] <= 10, last
    for step in steps:  # every comparison's page is kept and linked, with its rounds
        assert (directory / step["page"]).is_file() and step["rounds"] >= 4
    assert list(state_root.iterdir()) == []
    assert not [p for p in CGROUP_V1_CPU.iterdir() if p.name.startswith("ovsperf-lab-ab-")]
    print(f"A/A bisect of 8 builds: {len(steps)} steps, {time.monotonic() - started:.0f} s", file=sys.stderr)
