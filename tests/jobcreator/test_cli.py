"""In-process tests of the ``jobcreator`` command line: outputs, exit codes, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from jobcreator.cli import main
from jobcreator.validate import validate_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_common.exitcodes import ExitCode
from tests.jobcreator.conftest import DUT, TG

BASE = ["--host", TG, "--host", DUT, "--config", "OVS_DPDK1q_GUEST_DPDK1q", "--distro", "RHEL-7.3"]
DESIGN_EXAMPLE = [
    *BASE,
    "--kickrepo", "http://example.com/repos/dpdk/16.11/4.el7",
    "--kickrepo", "http://example.com/repos/openvswitch/2.6.1/15.el7",
    "--tag", "nightly",
    "--reserve", "99",
]  # fmt: skip


def _without(argv: list[str], option: str) -> list[str]:
    i = argv.index(option)
    return argv[:i] + argv[i + 2 :]


def test_prints_the_valid_job_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(DESIGN_EXAMPLE) == ExitCode.OK
    out = capsys.readouterr().out
    job = validate_job(out).getroot()
    assert job.xpath("//reservesys/@duration") == ["356400", "356400"]
    assert job.findtext("whiteboard", "").startswith("[nightly] ovsperf OVS_DPDK1q_GUEST_DPDK1q")


def test_output_file_gets_the_job_and_stdout_stays_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "job.xml"
    target.write_text("old content")
    assert main([*BASE, "--output", str(target)]) == ExitCode.OK
    assert capsys.readouterr().out == ""
    root = etree.fromstring(target.read_bytes())
    assert len(root.findall("recipeSet/recipe")) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["job.xml"]  # no temporary left behind


def test_unwritable_output_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--output", str(tmp_path / "missing-dir" / "job.xml")]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert "Cannot write the job to" in err and "missing-dir" in err


def test_list_configs_prints_the_catalog_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-configs"]) == ExitCode.OK
    assert capsys.readouterr().out.splitlines() == list(load_catalog().names())


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "exit codes: 0 OK" in out and "2 error" in out
    assert "--kickrepo" in out and "--list-configs" in out


def test_help_lists_only_the_exit_codes_jobcreator_returns(capsys: pytest.CaptureFixture[str]) -> None:
    """jobcreator returns 0 or 2; its help must not promise 1 (regression) or 3 (no results)."""
    assert main(["--help"]) == ExitCode.OK
    epilog = capsys.readouterr().out.split("exit codes:", 1)[1]
    assert "1 regression found" not in epilog and "3 no results found" not in epilog
    assert "never returns 1" in epilog


def test_autosubmit_dry_run_validates_without_contacting_any_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BEAKER_CLIENT_CONF", str(tmp_path / "does-not-exist.conf"))
    assert main([*BASE, "--autosubmit", "--dry-run"]) == ExitCode.OK
    validate_job(capsys.readouterr().out)


CATALOG_MISSING = "/nonexistent/ovsperf/scenarios.yaml"

# (argv, fragments the single stderr line must contain)
BAD_INPUT = [
    pytest.param(
        [*_without(BASE, "--config"), "--config", "OVS_DPDK8q"],
        ["Unknown scenario 'OVS_DPDK8q'", "OVS_DPDK1q_GUEST_DPDK1q", "OVS_DPDK4q", "OVS_DPDK2q_GUEST_DPDK2q"],
        id="unknown-config-lists-valid-ones",
    ),
    pytest.param(BASE[2:], ["exactly two --host", "got 1"], id="one-host"),
    pytest.param([*BASE, "--host", "third.example.com"], ["exactly two --host", "got 3"], id="three-hosts"),
    pytest.param(["--host", TG, "--host", TG, *BASE[4:]], ["two different hosts"], id="same-host-twice"),
    pytest.param(
        ["--host", "bad host", *BASE[2:]], ["'bad host' is not a valid host name"], id="bad-hostname"
    ),
    pytest.param(
        [*_without(BASE, "--distro"), "--distro", ""], ["'--distro'", "'' is not a distro"], id="empty-distro"
    ),
    pytest.param(_without(BASE, "--distro"), ["missing --distro"], id="no-distro"),
    pytest.param(_without(BASE, "--config"), ["missing --config"], id="no-config"),
    pytest.param(
        [*BASE, "--kickrepo", "example.com/repos/dpdk"],
        ["'--kickrepo'", "is not a URL"],
        id="kickrepo-not-a-url",
    ),
    pytest.param(
        [*BASE, "--kickrepo", "file:///srv/repo"],
        ["'--kickrepo'", "is not a URL"],
        id="kickrepo-wrong-scheme",
    ),
    pytest.param(
        [*BASE, "--kickrepo", "http://u:pw@example.com/r"], ["credentials"], id="kickrepo-credentials"
    ),
    pytest.param(
        [*BASE, "--kickrepo", "http://example.com/r?access_token=s3cr3t"],
        ["credentials", "'access_token'"],
        id="kickrepo-token",
    ),
    # Issue 25 item 19: tokens in the path, the fragment or by their shape reached the job XML.
    pytest.param(
        [*BASE, "--kickrepo", "http://example.com/repo;token=s3cr3t/x86_64"],
        ["credentials", "path holds the secret parameter 'token'"],
        id="kickrepo-path-parameter-token",
    ),
    pytest.param(
        [*BASE, "--kickrepo", "http://example.com/private_token=s3cr3t/x86_64"],
        ["credentials", "path holds the secret parameter 'private_token'"],
        id="kickrepo-path-segment-token",
    ),
    pytest.param(
        [*BASE, "--kickrepo", "http://example.com/r#access_token=s3cr3t"],
        ["credentials", "fragment holds the secret parameter 'access_token'"],
        id="kickrepo-fragment-token",
    ),
    pytest.param(
        [*BASE, "--kickrepo", "https://example.com/glpat-s3cr3ts3cr3ts3cr3ts3cr3t/r"],
        ["credentials", "token or key"],
        id="kickrepo-token-shape",
    ),
    pytest.param([*BASE, "--reserve", "-1"], ["'--reserve'", "hours >= 0"], id="negative-reserve"),
    pytest.param(
        [*BASE, "--reserve", "100"], ["'--reserve'", "more than Beaker reserves", "99 h"], id="reserve-100h"
    ),
    pytest.param([*BASE, "--reserve", "nan"], ["'--reserve'"], id="nan-reserve"),
    pytest.param(
        [*BASE, "--reserve", "two"], ["--reserve", "invalid float value"], id="reserve-not-a-number"
    ),
    pytest.param(
        [*BASE, "--catalog", CATALOG_MISSING],
        ["cannot read the scenario catalog", CATALOG_MISSING],
        id="unreadable-catalog",
    ),
    pytest.param(
        ["--list-configs", "--catalog", CATALOG_MISSING],
        ["cannot read the scenario catalog"],
        id="list-configs-unreadable-catalog",
    ),
    pytest.param([*BASE, "--tag", "two\nlines"], ["'--tag'", "control characters"], id="multi-line-tag"),
    pytest.param(
        [*BASE, "--collector", "u:pw@host:/x"],
        ["'--collector'", "without a password"],
        id="collector-password",
    ),
    # Issue 25: the path reached the collector's shell (rsync <= 3.2.3) and ran 'touch' there.
    pytest.param(
        [*BASE, "--collector", "root@h:/ci_in;touch${IFS}/tmp/x;"],
        ["'--collector'", "is not an rsync destination", "nothing in it may reach a shell"],
        id="collector-shell-command",
    ),
    pytest.param(
        [*BASE, "--collector", "root@h:/ci_in/$(id)"],
        ["'--collector'", "not an rsync"],
        id="collector-dollar",
    ),
    pytest.param(
        [*BASE, "--collector", "root@h:/srv/../etc/cron.d"], ["'--collector'", "'..'"], id="collector-dotdot"
    ),
    pytest.param(
        [*BASE, "--collector", "root@h;id:/srv"], ["'--collector'", "not an rsync"], id="collector-bad-host"
    ),
    pytest.param(
        [*BASE, "--collector=-oProxyCommand=x@h:/srv"],
        ["'--collector'", "not an rsync"],
        id="collector-option",
    ),
    pytest.param(
        [*BASE, "--collector", "root@h:ci_in"], ["'--collector'", "absolute path"], id="collector-relative"
    ),
    pytest.param(
        [*BASE, "--moongen-commit", "master"],
        ["'--moongen-commit'", "not a git commit"],
        id="unpinned-moongen",
    ),
    pytest.param([*BASE, "--arch", "sparc"], ["'--arch'", "x86_64"], id="unknown-arch"),
    pytest.param(
        [*BASE, "--inventory", "../etc/inventory.yaml"], ["'--inventory'", "no '..'"], id="inventory-dotdot"
    ),
    pytest.param([*BASE, "--bogus"], ["unrecognized arguments: --bogus"], id="unknown-option"),
    pytest.param([*BASE, "--hub-retries", "-1"], ["'--hub-retries'"], id="negative-retries"),
]


@pytest.mark.parametrize(("argv", "fragments"), BAD_INPUT)
def test_bad_input_gives_one_line_and_exit_2(
    argv: list[str], fragments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == ExitCode.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("jobcreator: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    for secret in ("s3cr3t", ":pw@"):  # a refused credential is not echoed either
        assert secret not in captured.err


def test_bad_catalog_entry_names_file_entry_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "catalog.yaml"
    text = load_catalog().path.read_text().replace("queues: 4", "queues: four")
    catalog.write_text(text)
    assert main([*BASE, "--catalog", str(catalog)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    assert str(catalog) in err and "scenario 'OVS_DPDK4q'" in err and "field 'queues'" in err
