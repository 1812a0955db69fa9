"""``ovsperf-results import`` contains each delivery as ``process-ci-results`` does (issue 25 item 16).

One delivery with a directory name that is not UTF-8 stopped the whole import with an internal
error; the deliveries after it were never recorded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import reporting.load
import resultstore.importer
from resultstore.cli import main
from resultstore.store import ResultStore
from tests.ciflow.helpers import BASELINE, CANDIDATE, deliver


def _deliveries(root: Path) -> Path:
    """Three deliveries under ``root/in``: good1, the hostile one in the middle, zgood2."""
    deliver(root / "in", "good1", CANDIDATE)
    hostile = deliver(root / "in", "nonutf", CANDIDATE)
    results = next(hostile.glob("results_*"))
    results.rename(os.fsdecode(os.fsencode(results) + b"\xff"))  # Latin-1 'ÿ' in a UTF-8 system
    deliver(root / "in", "zgood2", BASELINE)  # other files: another result
    return root / "in"


def test_a_delivery_with_a_non_utf8_name_fails_alone_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.sqlite"
    code = main(["--db", str(db), "import", str(_deliveries(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 2
    assert out.splitlines() == ["recorded good1", "recorded zgood2"]
    assert "internal error" not in err
    results = next(n for n in os.listdir(tmp_path / "in" / "nonutf") if n.startswith("results_"))
    shown = f"{tmp_path}/in/nonutf/{results[:-1]}\\xff"
    assert (
        f"ERROR resultstore.cli: Cannot import {tmp_path}/in/nonutf: the name '{shown}' is not UTF-8; "
        "rename it (the store keeps paths as UTF-8 text)."
    ) in err
    assert "2 result(s) recorded, 0 already there, 0 skipped, 1 failed" in err
    with ResultStore.open(f"sqlite:///{db}") as store:
        assert store.result("good1") is not None and store.result("zgood2") is not None
        assert store.result("nonutf") is None


def test_an_unexpected_error_in_one_delivery_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any bug met in one delivery (here a stand-in that raises for 'good1') is that delivery's failure."""
    deliver(tmp_path / "in", "good1", CANDIDATE)
    deliver(tmp_path / "in", "zgood2", CANDIDATE)
    real = reporting.load.load_results_dir

    def load(path: Path):  # type: ignore[no-untyped-def]
        if "good1" in str(path):
            raise KeyError("frame_size")
        return real(path)

    monkeypatch.setattr(resultstore.importer, "load_results_dir", load)
    code = main(["--db", str(tmp_path / "s.sqlite"), "import", str(tmp_path / "in")])
    out, err = capsys.readouterr()
    assert code == 2
    assert out.splitlines() == ["recorded zgood2"]
    assert (
        f"Cannot import {tmp_path}/in/good1: unexpected error while importing it (KeyError: 'frame_size')"
    ) in err
