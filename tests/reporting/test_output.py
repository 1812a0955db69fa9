"""Check the report directory is written atomically and never replaces a user's files.

The full-disk case mounts a real, tiny tmpfs (the tests run as root here and in CI).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reporting.api import generate_report
from reporting.errors import ReportingError
from tests.reporting.conftest import BASELINE, CANDIDATE


def _snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_rewrite_replaces_previous_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate_report([BASELINE], [CANDIDATE], out, title="first")
    generate_report([BASELINE], [CANDIDATE], out, title="second")
    assert "<title>second</title>" in (out / "index.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporaries left


def test_refuses_to_replace_a_foreign_directory(tmp_path: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "my-results.csv").write_text("keep me\n")
    with pytest.raises(ReportingError, match="not a report written by generate-report"):
        generate_report([BASELINE], [CANDIDATE], out)
    assert (out / "my-results.csv").read_text() == "keep me\n"


def test_refuses_output_inside_results(tmp_path: Path, copy_results) -> None:  # type: ignore[no-untyped-def]
    src = copy_results(CANDIDATE)
    before = _snapshot(src)
    with pytest.raises(ReportingError, match="overlaps the results directory"):
        generate_report([BASELINE], [src], src / "report")
    with pytest.raises(ReportingError, match="overlaps the results directory"):
        generate_report([BASELINE], [src], src)
    assert _snapshot(src) == before


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """Mount a 2 MiB tmpfs for this test only; always unmounted."""
    if os.geteuid() != 0:
        pytest.fail("the full-disk test needs root to mount a tmpfs (CI runs as root)")
    mnt = tmp_path / f"reporting-tmpfs-{uuid.uuid4().hex[:8]}"
    mnt.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mnt)], check=True, timeout=30
    )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False, timeout=30)


def test_full_disk_keeps_previous_report(tiny_tmpfs: Path) -> None:
    out = tiny_tmpfs / "report"
    generate_report([BASELINE], [CANDIDATE], out, title="previous")
    before = _snapshot(out)
    assert "index.html" in before and "report.json" in before
    # Fill the file system, leaving far less than a report needs.
    filler = tiny_tmpfs / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC
    # Leave room for part of a report only, so the write fails half-way through.
    os.truncate(filler, filler.stat().st_size - 96 * 1024)
    with pytest.raises(ReportingError) as info:
        generate_report([BASELINE], [CANDIDATE], out, title="new")
    assert "previous report" in str(info.value) and str(out) in str(info.value)
    assert _snapshot(out) == before
    assert sorted(p.name for p in tiny_tmpfs.iterdir()) == ["filler", "report"]  # temporaries removed
    # Space again: the next run succeeds.
    filler.unlink()
    generate_report([BASELINE], [CANDIDATE], out, title="new")
    assert "<title>new</title>" in (out / "index.html").read_text()


def test_secrets_in_copied_logs_are_redacted(tmp_path: Path, copy_results: Any) -> None:
    """A report may be published: passwords in VSperf's logs never reach it."""
    src = copy_results(BASELINE, "with_secrets")
    run_dir = next(src.glob("results_*"))
    overall = next(run_dir.glob("vsperf-overall_*.log"))
    host_cmds = next(run_dir.glob("host-cmds_*.log"))
    overall.write_bytes(
        overall.read_bytes() + b"2018-03-05 22:26:04 : TRAFFICGEN_STC_PASSWORD = 'hunter2'\r\n"
        b"2018-03-05 22:26:04 : fetched https://qe:pa55word@repo.example.com/x\r\n"
    )
    host_cmds.write_bytes(host_cmds.read_bytes() + b"cmd : sshpass -p s3cr3t-pw ssh root@10.19.17.42\n")
    outcome = generate_report([BASELINE], [src], tmp_path / "out")
    everything = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    for secret in (b"hunter2", b"pa55word", b"s3cr3t-pw"):
        assert secret not in everything
    copied = (tmp_path / "out" / "sources" / "current-0" / (overall.name + ".txt")).read_bytes()
    assert b"TRAFFICGEN_STC_PASSWORD = '<redacted>'" in copied and b"https://qe:<redacted>@repo" in copied
    # Everything else is copied unchanged (the fixture logs hold no secret).
    original = overall.read_bytes()
    assert copied.count(b"\n") == original.count(b"\n") and copied.startswith(original[:4000])
    assert outcome.counts["PASS"] == 14
    report = json.loads(outcome.report_json.read_text())
    assert report["warnings"] == list(outcome.warnings)
    hits = sorted(w for w in outcome.warnings if "redacted" in w)
    assert len(hits) == 2
    assert any(w.startswith(f"'{overall}': 2 secret value(s)") for w in hits)
    assert any(w.startswith(f"'{host_cmds}': 1 secret value(s)") for w in hits)


def test_the_forms_a_hostile_user_found_in_copied_logs_are_redacted(
    tmp_path: Path, copy_results: Any
) -> None:
    """Issue 25 item 19: these reached sources/ verbatim (the AWS values are AWS's documentation examples)."""
    src = copy_results(BASELINE, "with_more_secrets")
    host_cmds = next(next(src.glob("results_*")).glob("host-cmds_*.log"))
    lines = [
        b"cmd : mysqladmin --password pw-space-form status",
        b"cmd : curl -sS -u qe:pw-curl-user https://repo.example.com/x",
        b"cmd : curl -H 'Cookie: session=pw-cookie' https://lab.example.com/",
        b'cmd : curl -H \'Authorization: Digest username="qe", response="pw-digest-response"\' x',
        b"cmd : export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        b"cmd : curl 'https://b.s3.amazonaws.com/o?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524"
        b"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404'",
    ]
    host_cmds.write_bytes(host_cmds.read_bytes() + b"\n".join(lines) + b"\n")
    outcome = generate_report([BASELINE], [src], tmp_path / "out")
    everything = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    for secret in (
        b"pw-space-form",
        b"pw-curl-user",
        b"pw-cookie",
        b"pw-digest-response",
        b"IOSFODNN7EXAMPLE",
        b"aeeed9bbccd4d02ee5c0",
    ):
        assert secret not in everything
    copied = (tmp_path / "out" / "sources" / "current-0" / (host_cmds.name + ".txt")).read_bytes()
    assert b"mysqladmin --password <redacted> status" in copied
    assert b"curl -sS -u qe:<redacted> https://repo.example.com/x" in copied
    assert any(w.startswith(f"'{host_cmds}': 9 secret value(s)") for w in outcome.warnings), outcome.warnings


def test_secrets_in_the_environment_block_never_reach_page_or_json(tmp_path: Path, copy_results: Any) -> None:
    src = copy_results(BASELINE, "env_secrets")
    rst = next(next(src.glob("results_*")).glob("result_0_*.rst"))
    text = rst.read_text()
    text = text.replace(
        "* OS: Red Hat",
        "* Guest password: hunter2\n* Repository: https://qe:pa55word@repo.example.com/x\n* OS: Red Hat",
        1,
    )
    rst.write_text(text)
    outcome = generate_report([BASELINE], [src], tmp_path / "out")
    page = outcome.index_html.read_text()
    report = outcome.report_json.read_text()
    for secret in ("hunter2", "pa55word"):
        assert secret not in page and secret not in report
    assert "https://qe:***@repo.example.com/x" in report and "Guest password" in report


def test_a_testers_notes_in_an_earlier_report_are_never_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate_report([BASELINE], [CANDIDATE], out)
    (out / "notes.txt").write_text("tester: looked at 64 B, fine")
    before = (out / "index.html").read_bytes()
    with pytest.raises(ReportingError, match=r"holds files the report did not write \(notes.txt\)"):
        generate_report([BASELINE], [CANDIDATE], out)
    assert (out / "notes.txt").read_text() == "tester: looked at 64 B, fine"
    assert (out / "index.html").read_bytes() == before
    (out / "notes.txt").unlink()
    generate_report([BASELINE], [CANDIDATE], out)  # the report alone is replaced as before
    assert sorted(p.name for p in out.iterdir()) == sorted(
        (out / ".ovsperf-report").read_text().splitlines()[1:]
    )
