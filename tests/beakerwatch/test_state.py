"""A state file cut short or edited by hand: a clear error naming file and field, and no job id lost."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from beakerwatch.cli import main
from ovsperf_common.exitcodes import ExitCode
from tests.beakerwatch.conftest import ROOT, SCENARIO, TS, Lab, results_tarball
from tests.fifoguard import fifo_watchdog


def _two_tracked(lab: Lab) -> list[str]:
    jobs = [lab.submit(), lab.submit()]
    assert lab.track(*jobs) == ExitCode.OK
    return [job.j_id for job in jobs]


def _edit(lab: Lab, change: object) -> None:
    data = json.loads(lab.state.read_text())
    change(data)  # type: ignore[operator]
    lab.state.write_text(json.dumps(data, indent=2))


EDITS = {
    "bad job id": (lambda d: d["jobs"][1].update(job_id="J:12x"), "field 'jobs[1].job_id'", "'J:12x'"),
    "unknown state": (lambda d: d["jobs"][0].update(state="done"), "field 'jobs[0].state'", "'done'"),
    "typo in a key": (lambda d: d["jobs"][0].update(scenaro="x"), "field 'jobs[0].scenaro'", "unknown field"),
    "duplicate job": (
        lambda d: d["jobs"].append(dict(d["jobs"][0])),
        "field 'jobs[2].job_id'",
        "listed twice",
    ),
    "bad build": (lambda d: d["jobs"][0].update(build={"nvrs": []}), "field 'jobs[0].build'", "non-empty"),
    "other schema": (lambda d: d.update(schema=7), "field 'schema'", "7"),
    "jobs not a list": (lambda d: d.update(jobs={"J:1": SCENARIO}), "field 'jobs'", "list"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_state_edited_by_hand(lab: Lab, capsys: pytest.CaptureFixture[str], case: str) -> None:
    change, where, words = EDITS[case]
    _two_tracked(lab)
    _edit(lab, change)
    before = lab.state.read_bytes()
    capsys.readouterr()
    for argv in (
        ["collect", "--state", str(lab.state), "--ci-in", str(lab.ci_in), "--once"],
        ["status", "--state", str(lab.state)],
        ["track", "--state", str(lab.state), "--ids-file", str(lab.ids_file)],
    ):
        assert main(argv) == ExitCode.ERROR, argv
        out, err = capsys.readouterr()
        assert out == ""
        assert f"'{lab.state}', {where}" in err and words in err, err
        assert "left as it is" in err
    assert lab.state.read_bytes() == before  # nothing rewritten, every id still there
    assert lab.deliveries() == []


def test_half_written_state(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _two_tracked(lab)
    text = lab.state.read_text()
    lab.state.write_text(text[: len(text) // 2])
    before = lab.state.read_bytes()
    capsys.readouterr()
    assert main(["collect", "--state", str(lab.state), "--ci-in", str(lab.ci_in)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert f"State file '{lab.state}' is not valid JSON" in err and "cut short" in err
    assert main(["track", "--state", str(lab.state), "--ids-file", str(lab.ids_file)]) == ExitCode.ERROR
    assert lab.state.read_bytes() == before
    assert ids[0] in before.decode()  # the ids it still holds are kept for a repair


def test_writer_killed_mid_write_leaves_the_old_state(lab: Lab, tmp_path: object) -> None:
    """A collector killed while saving leaves the previous state whole (atomic replace), never half a file."""
    ids = _two_tracked(lab)
    before = lab.state.read_bytes()
    code = (
        "import os, sys\n"
        "from beakerwatch import state\n"
        "jobs = state.load(__import__('pathlib').Path(sys.argv[1]))\n"
        "real = os.replace\n"
        "os.replace = lambda *a: os._exit(9)  # killed between writing the temporary and the rename\n"
        "state.save(__import__('pathlib').Path(sys.argv[1]), jobs[:1])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(lab.state)], cwd=ROOT, check=False)
    assert done.returncode == 9
    assert lab.state.read_bytes() == before
    assert [j["job_id"] for j in json.loads(before)["jobs"]] == ids
    leftovers = [p.name for p in lab.state.parent.iterdir() if p.name.startswith(f".{lab.state.name}.")]
    assert len(leftovers) == 1  # a hidden temporary only; the next save writes a fresh one


def test_state_file_that_is_a_directory(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab.state.mkdir()
    assert main(["status", "--state", str(lab.state)]) == ExitCode.ERROR
    assert f"State file '{lab.state}' is refused: it is a directory" in capsys.readouterr().err


def test_state_file_that_is_a_fifo_does_not_block(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    with fifo_watchdog(lab.state) as freed:
        assert main(["status", "--state", str(lab.state)]) == ExitCode.ERROR
    assert freed == []
    assert "is refused: it is a FIFO" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(lab.state).st_mode)  # never replaced


def test_deliveries_survive_a_lost_state_write(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """The delivery exists but the state still says tracked (the pass died in between): no second copy."""
    job = lab.submit()
    lab.track(job)
    lab.finish(job, results_tarball(lab.tmp))
    before = lab.state.read_bytes()
    assert lab.collect() == ExitCode.OK
    delivery = lab.ci_in / f"J{job.id}-{SCENARIO}-{TS}"
    marker = os.stat(delivery).st_ino
    lab.state.write_bytes(before)  # as if the state save had been lost
    assert lab.collect() == ExitCode.OK
    assert lab.deliveries() == [delivery.name]
    assert os.stat(delivery).st_ino == marker  # the first delivery was kept, not replaced
    assert json.loads(lab.state.read_text())["jobs"][0]["state"] == "delivered"
    assert "already exists" in capsys.readouterr().err
