"""Configuration loading: valid files, and one clear message per kind of mistake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ciflow.cli import main
from ciflow.config import DEFAULT_QUIET_PERIOD_S, load_config
from ciflow.errors import ConfigError
from ciflow.model import BaselineSource
from tests.ciflow.helpers import BASELINE, SCENARIO, write_config


def test_valid_config_resolves_relative_paths_and_defaults(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        scenarios={
            SCENARIO: {"baseline": [str(BASELINE), str(BASELINE)], "thresholds": {"regression_percent": 3}},
            "OVS_DPDK2q": "latest-pass",
            "OVS_DPDK4q": {"baseline": "latest-pass", "fallback": str(BASELINE)},
        },
        thresholds={"alpha": 0.01},
    )
    text = path.read_text(encoding="utf-8").replace("quiet_period_s: 0\n", "")
    path.write_text(text, encoding="utf-8")
    config = load_config(path)
    assert config.ci_in == tmp_path / "ci_in"
    assert config.ci_processed == tmp_path / "ci_processed"
    assert config.reports_dir == tmp_path / "reports"
    assert config.database_url == f"sqlite:///{tmp_path / 'results.sqlite'}"
    assert config.quiet_period_s == DEFAULT_QUIET_PERIOD_S
    one = config.scenarios[SCENARIO]
    assert one.source is BaselineSource.DIRS
    assert one.baseline_dirs == (BASELINE, BASELINE)
    assert one.thresholds.regression_percent == 3.0
    assert one.thresholds.alpha == 0.01  # the global value is the default for each scenario
    assert config.scenarios["OVS_DPDK2q"].source is BaselineSource.LATEST_PASS
    assert config.scenarios["OVS_DPDK2q"].baseline_dirs == ()
    assert config.scenarios["OVS_DPDK4q"].baseline_dirs == (BASELINE,)
    assert config.scenarios["OVS_DPDK2q"].thresholds.regression_percent == 5.0


def test_postgresql_url_is_kept(tmp_path: Path) -> None:
    url = "postgresql+psycopg://ovsperf:secret@db.example.com/ovsperf"
    assert load_config(write_config(tmp_path, database=url)).database_url == url


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ci_in": None}, "field 'ci_in': missing"),
        ({"ci_in": "nowhere"}, "field 'ci_in': directory"),
        ({"colour": "blue"}, "field 'colour': unknown field"),
        ({"ci_processed": "ci_in/processed"}, "field 'ci_processed':"),
        ({"reports": "ci_failed"}, "use separate directories"),
        ({"quiet_period_s": -1}, "field 'quiet_period_s'"),
        ({"thresholds": {"regression_percnt": 5}}, "field 'thresholds.regression_percnt': unknown field"),
        ({"thresholds": {"alpha": "low"}}, "field 'thresholds.alpha': 'low' is not a number"),
        ({"thresholds": {"regression_percent": 150}}, "field 'thresholds':"),
        ({"scenarios": {SCENARIO: "/does/not/exist"}}, f"field 'scenarios.{SCENARIO}.baseline'"),
        ({"scenarios": {SCENARIO: {"fallback": str(BASELINE)}}}, "baseline': missing"),
        ({"scenarios": {SCENARIO: {"baseline": str(BASELINE), "fallback": "x"}}}, "only allowed with"),
        ({"scenarios": {"../etc": str(BASELINE)}}, "not a safe name"),
        ({"scenarios": {SCENARIO: {"baseline": []}}}, "empty list"),
        ({"database": 5}, "field 'database'"),
    ],
)
def test_config_errors_name_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    path = write_config(tmp_path, **{k: v for k, v in change.items() if v is not None})
    if None in change.values():
        lines = [
            line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("ci_in:")
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)
    assert main(["--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


@pytest.mark.parametrize("content", [b"ci_in: [unclosed\n", b"- just\n- a list\n", b"\xff\xfe"])
def test_unparsable_config_is_exit_2(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    assert main(["--config", str(path)]) == 2
    assert str(path) in capsys.readouterr().err


def test_missing_config_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read the configuration" in capsys.readouterr().err


def test_scenario_missing_from_catalog_is_warned(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    load_config(write_config(tmp_path, scenarios={SCENARIO: str(BASELINE), "OVS_DPDK2Q_typo": str(BASELINE)}))
    assert "scenario 'OVS_DPDK2Q_typo' is not in the catalog" in caplog.text
    assert f"scenario '{SCENARIO}'" not in caplog.text


def test_catalog_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"field 'catalog'.*cannot read the scenario catalog"):
        load_config(write_config(tmp_path, catalog="missing.yaml"))


def test_a_fifo_as_configuration_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Issue 25 item 14: '--config' naming a FIFO blocked the pass for ever."""
    from tests.fifoguard import fifo_watchdog

    fifo = tmp_path / "ciflow.yaml"
    with fifo_watchdog(fifo, timeout_s=5) as freed:
        with pytest.raises(ConfigError, match=r"cannot read the configuration: .*it is a FIFO"):
            load_config(fifo)
    assert freed == []
