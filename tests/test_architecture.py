"""The structure docs/architecture.md draws: imports flow one way, each contract has one owner."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ALLOWED: dict[str, set[str]] = {
    "ovsperf_common": set(),
    "templates": set(),
    "jobcreator": {"ovsperf_common", "templates"},
    "vsperf_configs": {"ovsperf_common", "jobcreator"},
    "kojiwatch": {"ovsperf_common", "jobcreator"},
    "ovsperf_lab": {"ovsperf_common", "jobcreator", "templates"},
    "reporting": {"ovsperf_common", "templates"},
    "resultstore": {"ovsperf_common", "templates", "reporting"},
    "ciflow": {"ovsperf_common", "jobcreator", "reporting", "resultstore"},
    "remote": {"ovsperf_common", "jobcreator", "vsperf_configs"},
    "beakerwatch": {"ovsperf_common", "jobcreator"},
}
"""Package → the packages it may import (those to its left in docs/architecture.md)."""


def _modules() -> Iterator[tuple[str, Path, ast.Module]]:
    for package in ALLOWED:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield package, path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imports(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_imports_flow_one_way_and_nothing_imports_a_cli() -> None:
    wrong: list[str] = []
    for package, path, tree in _modules():
        for name in _imports(tree):
            top = name.split(".")[0]
            top = "templates" if top == "ovsperf_templates" else top
            if top in ALLOWED and top != package and top not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
            last = name.split(".")[-1]
            if (last == "cli" or last.endswith("_cli") or ".cli." in name) and path.name != "__main__.py":
                wrong.append(f"{path.relative_to(ROOT)} imports a cli module: {name}")
    assert wrong == []


def _grep(pattern: str, *, owner: str, suffixes: tuple[str, ...] = (".py",)) -> list[str]:
    regex = re.compile(pattern)
    found = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.suffix not in suffixes or not path.is_file() or rel == owner:
            continue
        if rel.startswith((".venv/", "tests/", ".git/", "benchmarks/", "examples/", "build/")):
            continue
        if regex.search(path.read_text(encoding="utf-8", errors="replace")):
            found.append(rel)
    return found


@pytest.mark.parametrize(
    ("what", "pattern", "owner"),
    [
        ("verbosity options", r"add_argument\(\s*\"-v\"", "ovsperf_common/runner.py"),
        ("logging setup", r"(?<!def )configure_logging\(", "ovsperf_common/runner.py"),
        ("from_spec rule", r"def from_spec\(", "ovsperf_common/spec.py"),
        ("result CSV name rule", r"result_\(\?:|RESULT_CSV_RE\s*=", "ovsperf_common/resultdir.py"),
        ("results directory name rule", r"RESULTS_DIR_RE\s*=", "ovsperf_common/resultdir.py"),
        ("fingerprint", r"def _?fingerprint\(", "ovsperf_common/resultdir.py"),
        ("metadata file name", r"[\"']ovsperf-metadata\.json[\"']", "ovsperf_common/metadata.py"),
        ("overall → exit code mapping", r"_EXIT_BY_OVERALL\s*=", "ovsperf_common/verdict.py"),
        ("root exception", r"^class \w+Error\(Exception\)", "ovsperf_common/errors.py"),
    ],
)
def test_each_contract_has_one_owner(what: str, pattern: str, owner: str) -> None:
    # perfsync.py runs on bare lab hosts without the project installed: it keeps its own error class.
    others = [p for p in _grep(f"(?m){pattern}", owner=owner) if not p.endswith("perfsync.py")]
    assert others == [], f"{what} is defined outside {owner}"
