"""The install groups of pyproject.toml match what each role imports.

A lab host installs the base package only (the Beaker tasks run vsperf-config and the
results-delivery modules there): every third-party module those import must be in the base
dependencies. Each console script's third-party imports must be in the extras of its role.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

DISTRIBUTION = {
    "yaml": "pyyaml",
    "jinja2": "jinja2",
    "lxml": "lxml",
    "matplotlib": "matplotlib",
    "scipy": "scipy",
    "sqlalchemy": "sqlalchemy",
    "koji": "koji",
    "rich": "rich",
    "bkr": "beaker-client",
    "tenacity": "tenacity",
}
"""Top-level module → the distribution a role must list for it (others come in with those)."""

OURS = {"ovsperf_common", "jobcreator", "vsperf_configs", "reporting", "ciflow", "resultstore"}
OURS |= {"kojiwatch", "ovsperf_lab", "ovsperf_templates", "beakerwatch"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in requirements}


def _closure(*modules: str) -> set[str]:
    """Return the third-party top-level modules that importing ``modules`` loads (fresh interpreter)."""
    code = (
        "import sys, json\nbefore = set(sys.modules)\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(json.dumps(sorted({n.split('.')[0] for n in set(sys.modules) - before})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return {m for m in json.loads(out) if m in DISTRIBUTION}


def _extra(name: str) -> set[str]:
    extras: dict[str, list[str]] = PROJECT["optional-dependencies"]
    found = _names(extras[name])
    for req in extras[name]:
        included = re.match(r"ovsperf\[(.+)\]", req)
        if included:
            for sub in included.group(1).split(","):
                found |= _extra(sub.strip())
    return found


def test_the_base_install_is_what_a_lab_host_needs() -> None:
    needed = _closure("vsperf_configs.cli", "ovsperf_common.metadata", "ovsperf_common.resultdir")
    assert needed == {"yaml"}
    assert _names(PROJECT["dependencies"]) == {"pyyaml"}


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("jobcreator.cli", "beaker"),
        ("resultstore.report_cli", "report"),
        ("ciflow.cli", "report"),
        ("resultstore.cli", "report"),
        ("kojiwatch.cli", "koji"),
        ("beakerwatch.cli", "beaker"),
        ("ovsperf_lab.cli", "lab"),
    ],
)
def test_each_command_imports_only_its_role(module: str, extra: str) -> None:
    provided = _extra(extra) | _names(PROJECT["dependencies"])
    needed = {DISTRIBUTION[m] for m in _closure(module)}
    assert needed <= provided, f"{module} needs {sorted(needed - provided)} beyond ovsperf[{extra}]"


def test_all_is_every_role_and_console_scripts_exist() -> None:
    roles = set(PROJECT["optional-dependencies"]) - {"all", "test"}
    assert _extra("all") == set().union(*(_extra(r) for r in roles))
    assert set(PROJECT["scripts"]) == {
        "jobcreator",
        "generate-report",
        "process-ci-results",
        "ovsperf-results",
        "vsperf-config",
        "ovsperf-lab",
        "ovsperf-koji",
        "ovsperf-remote",
        "ovsperf-beaker",
    }
