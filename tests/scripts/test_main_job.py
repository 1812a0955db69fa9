"""scripts/main-job.sh decides from generate-report's exit code and stdout, never from file times.

The README's main job runs as root (``make test`` runs pytest through sudo) with PATH shims for
the four commands it calls (jobcreator, ovsperf-lab, generate-report, ovsperf-results): the lab,
the report and the store are tested elsewhere; here only the job's own decisions are (baseline
recording, INVALID report vs error, regression, the machine's store and trend pages).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TS = "results_2026-11-24_10-00-00"

SHIMS = {
    "jobcreator": """#!/bin/bash
while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && { echo '<job/>' > "$2"; shift; }; shift; done
""",
    "ovsperf-lab": f"""#!/bin/bash
[[ $1 == -q ]] && shift
[[ $1 == cleanup ]] && exit 0
echo "$*" > "$LAB_ARGS"
while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && out=$2; shift; done
mkdir -p "$out/{TS}"
printf 'throughput_rx_fps,packet_size\\n1000000,64\\n' > "$out/{TS}/result_0_phy2phy_tput_p2p.csv"
echo "$out/{TS}"
exit "${{LAB_EXIT:-0}}"
""",
    "generate-report": """#!/bin/bash
while [[ $# -gt 0 ]]; do [[ $1 == --output-dir ]] && out=$2; shift; done
if [[ ${REPORT_WRITES:-1} == 1 ]]; then
    mkdir -p "$out" && echo x > "$out/index.html" && echo "$out/index.html"
fi
exit "${REPORT_EXIT:-0}"
""",
    "ovsperf-results": """#!/bin/bash
echo "$*" >> "$RESULTS_ARGS"
while [[ $# -gt 0 ]]; do
    case $1 in
        import) exit "${IMPORT_EXIT:-0}" ;;
        --output-dir) out=$2; shift ;;
    esac
    shift
done
mkdir -p "$out" && echo "$out/index.html"
exit "${TREND_EXIT:-0}"
""",
}


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A VENV whose bin/ holds the shims and this interpreter (for ``python -m ovsperf_common...``)."""
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    for name, text in SHIMS.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    (bindir / "python").symlink_to(sys.executable)
    return bindir.parent


def run_job(venv: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "VENV": str(venv),
        "OUT": str(tmp_path / "out"),
        "LAB_STATE_DIR": str(tmp_path / "state"),
        "PYTHONPATH": str(ROOT),
        "LAB_ARGS": str(tmp_path / "lab-args"),
        "RESULTS_ARGS": str(tmp_path / "results-args"),
        **env,
    }
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "main-job.sh")],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_first_run_records_the_baseline_and_prints_four_paths(venv: Path, tmp_path: Path) -> None:
    job = run_job(venv, tmp_path)
    assert job.returncode == 0, job.stderr
    out = tmp_path / "out"
    assert job.stdout.splitlines() == [
        str(out / "job-OVS_DPDK1q_GUEST_DPDK1q.xml"),
        str(out / "lab" / TS),
        str(out / "lab-report" / "index.html"),
        str(out / "lab-trend" / "index.html"),
    ]
    store = tmp_path / "state" / "results-mlr.sqlite"
    assert (tmp_path / "results-args").read_text().splitlines() == [
        f"-q --db {store} import --scenario OVS_DPDK1q {out / 'lab' / TS}",
        f"-q --db {store} trend --output-dir {out / 'lab-trend'} --scenario OVS_DPDK1q"
        " --title This machine's OVS_DPDK1q runs",
    ]
    assert (tmp_path / "state" / "baseline-mlr" / TS / "result_0_phy2phy_tput_p2p.csv").is_file()
    assert "first run on this machine: recorded" in job.stderr
    assert "--search mlr --latency-time 5" in (tmp_path / "lab-args").read_text()


def test_each_search_method_has_its_own_baseline(venv: Path, tmp_path: Path) -> None:
    job = run_job(venv, tmp_path, SEARCH="binary")
    assert job.returncode == 0, job.stderr
    args = (tmp_path / "lab-args").read_text()
    assert "--search binary --search-time 2 --validation-time 5" in args and "--latency-time" not in args
    assert (tmp_path / "state" / "baseline" / TS).is_dir() and not (
        tmp_path / "state" / "baseline-mlr"
    ).exists()
    bad = run_job(venv, tmp_path, SEARCH="fast;rm")
    assert bad.returncode == 2 and "SEARCH must be mlr or binary, not 'fast?rm'" in bad.stderr


@pytest.mark.parametrize(
    ("env", "code", "last_line", "message"),
    [
        ({"REPORT_EXIT": "2"}, 0, "index.html", "marks frame sizes missing on one side"),
        ({"REPORT_EXIT": "2", "REPORT_WRITES": "0"}, 2, None, "generate-report failed with exit code 2"),
        ({"REPORT_EXIT": "1"}, 0, "index.html", "found a regression against the baseline"),
        ({"REPORT_EXIT": "3", "REPORT_WRITES": "0"}, 2, None, "generate-report failed with exit code 3"),
    ],
    ids=["invalid-cells-report", "error-no-report", "regression", "no-results"],
)
def test_report_outcome_is_read_from_exit_code_and_stdout(
    venv: Path, tmp_path: Path, env: dict[str, str], code: int, last_line: str | None, message: str
) -> None:
    job = run_job(venv, tmp_path, **env)
    assert job.returncode == code, job.stderr
    assert message in job.stderr
    lines = job.stdout.splitlines()
    if last_line is None:
        assert len(lines) == 2  # job file and results directory, no report
    else:
        assert len(lines) == 4 and lines[2].endswith(last_line)
        assert lines[3].endswith("lab-trend/index.html")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"IMPORT_EXIT": "3"}, "could not be recorded in"),
        ({"TREND_EXIT": "3"}, "no trend pages (ovsperf-results trend exit 3)"),
    ],
)
def test_history_trouble_never_fails_the_job(
    venv: Path, tmp_path: Path, env: dict[str, str], message: str
) -> None:
    job = run_job(venv, tmp_path, **env)
    assert job.returncode == 0, job.stderr
    assert message in job.stderr
    assert len(job.stdout.splitlines()) == 3  # no trend index


def test_an_incomplete_run_is_not_recorded_as_the_baseline(venv: Path, tmp_path: Path) -> None:
    job = run_job(venv, tmp_path, LAB_EXIT="2", REPORT_EXIT="2")
    assert job.returncode == 0, job.stderr
    assert not (tmp_path / "state" / "baseline-mlr").exists()
    assert "an incomplete run is not recorded as one" in job.stderr
