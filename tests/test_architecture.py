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
    "ovsperf_catalog": {"ovsperf_common"},
    "templates": set(),
    "jobcreator": {"ovsperf_common", "ovsperf_catalog", "templates", "vsperf_configs"},
    "vsperf_configs": {"ovsperf_common", "ovsperf_catalog"},
    "kojiwatch": {"ovsperf_common", "ovsperf_catalog", "jobcreator"},
    "ovsperf_lab": {"ovsperf_common", "ovsperf_catalog", "templates", "kojiwatch"},
    "reporting": {"ovsperf_common", "templates"},
    "resultstore": {"ovsperf_common", "templates", "reporting"},
    "ciflow": {"ovsperf_common", "ovsperf_catalog", "reporting", "resultstore"},
    "remote": {"ovsperf_common", "ovsperf_catalog", "jobcreator", "vsperf_configs"},
    "beakerwatch": {"ovsperf_common", "jobcreator"},
    "vlab": {"ovsperf_common"},
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
        if rel.startswith((".venv", "tests/", ".git/", "benchmarks/", "examples/", "build/")):
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
        (
            "lab side-file names",
            r"[\"']ovsperf-(?:trials|latency|telemetry)\.json[\"']",
            "ovsperf_common/labfiles.py",
        ),
        (
            # The columns no other document names; 'throughput_rx_fps', 'packet_size', 'loss_goal_percent'
            # and the like are also keys of ovsperf-metadata.json, report.json and the JSON side files.
            "result CSV columns (VSperf's and the lab's)",
            r"[\"'](?:throughput_rx_(?:mbps|percent)|tx_rate_(?:mbps|percent)|(?:min|max|avg)_latency_ns|"
            r"stream_count|imix_genome|pre-installed_flows|pdr_(?:throughput_rx_\w+|tx_rate_fps)|"
            r"guest_loopback_app)[\"']",
            "ovsperf_common/labfiles.py",
        ),
        ("overall → exit code mapping", r"_EXIT_BY_OVERALL\s*=", "ovsperf_common/verdict.py"),
        ("root exception", r"^class \w+Error\(Exception\)", "ovsperf_common/errors.py"),
        ("scenario catalog loader", r"def load_catalog\(|[\"']scenarios\.yaml", "ovsperf_catalog/catalog.py"),
    ],
)
def test_each_contract_has_one_owner(what: str, pattern: str, owner: str) -> None:
    # perfsync.py runs on bare lab hosts without the project installed: it keeps its own error class.
    others = [p for p in _grep(f"(?m){pattern}", owner=owner) if not p.endswith("perfsync.py")]
    assert others == [], f"{what} is defined outside {owner}"


DOC = ROOT / "docs" / "architecture.md"


def _doc_section(heading: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _doc_floors() -> dict[str, list[list[str]]]:
    """Package → its modules floor by floor, as the picture "Inside the packages" draws them."""
    (block,) = re.findall(r"```\n(.*?)```", _doc_section("Inside the packages"), re.S)
    rows: dict[str, str] = {}
    package = ""
    for line in block.splitlines():
        if not line.startswith(" "):
            package, _, line = line.partition(" ")
        rows[package] = f"{rows.get(package, '')} {line.strip()}"
    floors = {}
    for package, row in rows.items():
        bare = re.sub(r"\([^()]*\)", "", row)
        floors[package] = [[m.strip() for m in floor.split(",")] for floor in bare.split("→")]
    return floors


def _package_imports(package: str) -> dict[str, set[str]]:
    """Module (a subpackage counts as one) → the modules of ``package`` it imports, anywhere in it."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT / package).with_suffix("").parts
        if parts in (("__init__",), ("__main__",)):
            continue
        module = found.setdefault(parts[0], set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                top, _, rest = name.partition(".")
                if top == package and rest and rest.split(".")[0] != parts[0]:
                    module.add(rest.split(".")[0])
    return found


def test_the_module_picture_is_drawn_from_the_imports() -> None:
    floors = _doc_floors()
    assert sorted(floors) == sorted(p for p in ALLOWED if p != "templates")
    wrong: list[str] = []
    for package, rows in floors.items():
        imports = _package_imports(package)
        floor_of = {m: i for i, floor in enumerate(rows) for m in floor}
        drawn = [m for floor in rows for m in floor]
        wrong += [f"{package}.{m} is drawn twice" for m in sorted({m for m in drawn if drawn.count(m) > 1})]
        wrong += [f"{package}.{m} is not drawn" for m in sorted(set(imports) - set(floor_of))]
        wrong += [f"{package}.{m} is drawn but no module" for m in sorted(set(floor_of) - set(imports))]
        for module, used in sorted(imports.items()):
            for other in sorted(used):
                if module in floor_of and other in floor_of and floor_of[other] >= floor_of[module]:
                    wrong.append(f"{package}.{module} imports {other}: draw it on a floor left of {module}")
    assert wrong == [], "docs/architecture.md 'Inside the packages' is not the import graph"


def test_the_package_table_lists_each_package_s_allowed_imports() -> None:
    short = {"common": "ovsperf_common", "catalog": "ovsperf_catalog"}
    table: dict[str, set[str]] = {}
    for line in _doc_section("Packages").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`(\w+)`", cells[0]) if line.startswith("| `") else []
        if names and names[0] in ALLOWED:
            table[names[0]] = {short.get(n, n) for n in re.split(r",\s*", cells[1]) if n not in ("—", "")}
    assert table == ALLOWED
