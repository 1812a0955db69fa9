"""The install groups of pyproject.toml declare what the code imports, and the wheel installs where it must.

What is needed is read from the code, not from a list kept by hand: every ``import`` of the
project's modules (inside functions too; ``if TYPE_CHECKING:`` and ``try: … except ImportError``
imports are optional and skipped, as in ``tests/jenkins/importcheck.py``) is followed from each
console script's module through the project's own modules; every third-party module reached is
mapped to the distribution that installs it (``importlib.metadata.packages_distributions``) and
must be a *direct* requirement of the command's role (its extra, the extras it includes, or the
base), not only something another requirement happens to bring in.

A lab host installs the base package only, on its own Python (3.9 on RHEL 8): the code that runs
there is the ``py39`` list of ``[tool.ruff.per-file-target-version]`` (the same as ``make compat``);
its third-party imports must be exactly the base dependencies, and the built wheel must say
``Requires-Python: >=3.9`` with every role requirement marked for Python >= 3.11; pip, asked for
a dry-run install for a CPython 3.9 target, must accept it with PyYAML alone.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ovsperf_common.installgroups import BASE, GROUP_OF_COMMAND, GROUPS_OF_MODULE
from tests.jenkins.importcheck import imported_names
from tests.treecopy import copy_tree_files

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
OURS = {name.split(".")[0] for name in PYPROJECT["tool"]["setuptools"]["packages"]}
LAB_HOST_GLOBS = [g for g, v in PYPROJECT["tool"]["ruff"]["per-file-target-version"].items() if v == "py39"]
TOOL_EXTRAS = {"test", "jenkins", "all"}
"""Extras that are no role of the product: the developer's tools, JJB's own venv, and the union."""

ROLE_OF_SCRIPT = {script: group or None for script, group in GROUP_OF_COMMAND.items()}
"""Console script → the extra of its role (None: the base install), from the runner's own table."""


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements if not r.startswith("ovsperf[")}


def declared(extra: str | None, extras: Mapping[str, list[str]] = EXTRAS) -> set[str]:
    """Return the distributions ``extra`` (with the extras it includes) and the base require directly."""
    found = _names(PROJECT["dependencies"])
    if extra is None:
        return found
    found |= _names(list(extras[extra]))
    for req in extras[extra]:
        included = re.match(r"ovsperf\[(.+)\]", req)
        if included:
            for sub in included.group(1).split(","):
                found |= declared(sub.strip(), extras)
    return found


def _module_file(name: str) -> Path | None:
    """Return the source of project module ``name`` (None if it is no module of ours)."""
    top, *rest = name.split(".")
    path = ROOT.joinpath("templates" if top == "ovsperf_templates" else top, *rest)
    for candidate in (path.with_suffix(".py") if rest else None, path / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def third_party_closure(*modules: str, walk: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Return the third-party top-level modules that ``modules`` reach through the project's imports.

    :param walk: more top-level packages to follow like the project's (e.g. ``tests`` helpers).
    """
    seen: set[str] = set()
    found: set[str] = set()
    queue = list(modules)
    while queue:
        current = queue.pop()
        if current in seen:
            continue
        seen.add(current)
        for name, attribute in imported_names(current):
            top = name.split(".")[0]
            if top in OURS or top in walk:
                queue.append(name)
                if attribute is not None and _module_file(f"{name}.{attribute}") is not None:
                    queue.append(f"{name}.{attribute}")
            elif top not in sys.stdlib_module_names:
                found.add(top)
    return found


DISTRIBUTIONS = importlib.metadata.packages_distributions()


def distributions_of(modules: set[str]) -> dict[str, set[str]]:
    """Return module → the (canonical) names of the installed distributions that provide it."""
    return {m: {canonicalize_name(d) for d in DISTRIBUTIONS.get(m, [])} for m in sorted(modules)}


def undeclared(module: str, extra: str | None, extras: Mapping[str, list[str]] = EXTRAS) -> list[str]:
    """Return the third-party modules ``module`` reaches whose distribution ``extra`` does not list."""
    provided = declared(extra, extras)
    return [
        f"{name} (from {sorted(dists) or 'no installed distribution'})"
        for name, dists in distributions_of(third_party_closure(module)).items()
        if not dists & provided
    ]


def test_every_console_script_has_a_role() -> None:
    assert set(ROLE_OF_SCRIPT) == set(PROJECT["scripts"])
    roles = {r for r in ROLE_OF_SCRIPT.values() if r is not None}
    # postgresql: a store backend; trex: TRex's client for ovsperf-lab and ovsperf-remote; labhost:
    # what a DUT installs for ovsperf-lab's measurement (ovsperf_test); no command of their own
    assert roles == set(EXTRAS) - TOOL_EXTRAS - {"postgresql", "trex", "labhost"}


@pytest.mark.parametrize(("script", "extra"), sorted(ROLE_OF_SCRIPT.items()))
def test_each_command_imports_only_what_its_role_declares(script: str, extra: str | None) -> None:
    module = PROJECT["scripts"][script].split(":")[0]
    reached = third_party_closure(module)
    assert reached, f"{module}: the import walk found no third-party module at all"
    assert undeclared(module, extra) == [], f"{script} needs more than ovsperf[{extra}]"


def test_the_walk_finds_what_the_issue_found_missing() -> None:
    """The imports a hand-kept map missed are found (directly, or through the project's modules)."""
    assert {"gssapi", "bkr", "tenacity", "lxml"} <= third_party_closure("beakerwatch.cli")
    assert {"requests", "koji"} <= third_party_closure("kojiwatch.cli")
    assert {"alembic", "jumpavg", "plotly", "hdrh", "sqlalchemy"} <= third_party_closure("ciflow.cli")
    assert {"MLRsearch", "hdrh", "rich"} <= third_party_closure("ovsperf_lab.cli")
    assert {"paramiko", "jinja2"} <= third_party_closure("remote.cli")


@pytest.mark.parametrize(
    ("extra", "dropped", "script", "module"),
    [
        ("report", "plotly", "process-ci-results", "plotly"),
        ("report", "alembic", "ovsperf-results", "alembic"),
        ("report", "jumpavg", "generate-report", "jumpavg"),
        ("report", "hdrhistogram", "generate-report", "hdrh"),
        ("labhost", "MLRsearch", "ovsperf-lab", "MLRsearch"),
        ("lab", "koji", "ovsperf-lab", "koji"),
        ("remote", "paramiko", "ovsperf-remote", "paramiko"),
        ("beaker", "tenacity", "ovsperf-beaker", "tenacity"),
        ("beaker", "gssapi", "ovsperf-beaker", "gssapi"),
        ("koji", "requests", "ovsperf-koji", "requests"),
    ],
)
def test_a_group_missing_a_requirement_is_caught(extra: str, dropped: str, script: str, module: str) -> None:
    smaller = dict(EXTRAS)
    smaller[extra] = [
        r for r in EXTRAS[extra] if canonicalize_name(Requirement(r).name) != canonicalize_name(dropped)
    ]
    assert len(smaller[extra]) == len(EXTRAS[extra]) - 1
    entry = PROJECT["scripts"][script].split(":")[0]
    problems = undeclared(entry, ROLE_OF_SCRIPT[script], smaller)
    assert [p.split(" ")[0] for p in problems] == [module]


def _project_modules() -> list[str]:
    """Return every module of the project's packages, dotted."""
    return sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).replace("templates", "ovsperf_templates", 1)
        for top in OURS
        for p in (ROOT / ("templates" if top == "ovsperf_templates" else top)).rglob("*.py")
    )


def test_every_third_party_import_of_the_project_is_declared_somewhere() -> None:
    """Modules no console script reaches (library code, lazy paths) count too."""
    roles = set(EXTRAS) - TOOL_EXTRAS
    anywhere = set().union(*(declared(r) for r in roles))
    missing = {
        m: dists
        for m, dists in distributions_of(third_party_closure(*_project_modules())).items()
        if not dists & anywhere
    }
    assert missing == {}


def test_the_runners_install_group_table_is_pyprojects() -> None:
    """``ovsperf_common.installgroups`` (the runner's missing-module line) says what pyproject.toml says.

    Every third-party module the project imports is in it, with exactly the extras that install
    its distribution (directly or through an included extra; the base install alone for PyYAML).
    """
    roles = sorted(set(EXTRAS) - TOOL_EXTRAS)
    modules = third_party_closure(*_project_modules()) | set(GROUPS_OF_MODULE)
    derived = {
        module: (BASE,) if dists & declared(None) else tuple(r for r in roles if dists & declared(r))
        for module, dists in distributions_of(modules).items()
    }
    assert derived == dict(GROUPS_OF_MODULE)
    assert all(groups for groups in derived.values())


def _lab_host_files() -> list[Path]:
    files = sorted({p for g in LAB_HOST_GLOBS for p in ROOT.glob(g)})
    assert len(files) > 10 and ROOT / "ovsperf_common" / "metadata.py" in files
    return files


def test_the_base_install_is_exactly_what_a_lab_host_needs() -> None:
    third_party: set[str] = set()
    lab_host = _lab_host_files()
    for path in lab_host:
        if path.parent.name == "perf_synchronization":  # a script, not a package module
            tree = ast.parse(path.read_text(encoding="utf-8"))
            tops = {
                a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
            }
            tops |= {
                n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
            }
            third_party |= tops - set(sys.stdlib_module_names) - {"__future__"}
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for name, _attribute in imported_names(module):
            top = name.split(".")[0]
            if top in OURS:
                # A lab-host module may import only lab-host modules (they alone are checked for 3.9).
                target = _module_file(name)
                assert target is not None and target in lab_host, f"{module} imports {name}"
            elif top not in sys.stdlib_module_names:
                third_party.add(top)
    assert third_party == {"yaml"}
    assert {canonicalize_name(d) for m in third_party for d in DISTRIBUTIONS[m]} == _names(
        PROJECT["dependencies"]
    )
    assert [Requirement(r).marker for r in PROJECT["dependencies"]] == [None]


def test_all_is_every_role_and_jenkins_job_builder_stays_out_of_it() -> None:
    roles = set(EXTRAS) - TOOL_EXTRAS
    assert declared("all") == set().union(*(declared(r) for r in roles))
    # JJB and its setuptools pin live in their own venv (.venv-jjb), never in a product venv.
    assert not {"jenkins-job-builder", "setuptools"} & declared("all")
    assert {"jenkins-job-builder", "setuptools"} == _names(EXTRAS["jenkins"])


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built (as pip builds it, isolated) from a copy of the tree's files (tracked or new)."""
    src = copy_tree_files(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = out.glob("ovsperf-*.whl")
    return built


def _metadata(wheel: Path) -> tuple[str, list[Requirement]]:
    out = subprocess.run(
        ["unzip", "-p", str(wheel), "*.dist-info/METADATA"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    message = Parser().parsestr(out)
    return str(message["Requires-Python"]), [Requirement(r) for r in message.get_all("Requires-Dist") or []]


def _wanted(requirements: list[Requirement], python: str, extra: str) -> set[str]:
    env = {
        **default_environment(),
        "python_version": python,
        "python_full_version": f"{python}.0",
        "extra": extra,
    }
    return {canonicalize_name(r.name) + "".join(sorted(f"[{e}]" for e in r.extras)) for r in requirements
            if r.marker is None or r.marker.evaluate(env)}  # fmt: skip


def test_the_wheel_installs_on_a_lab_hosts_python_39(wheel: Path) -> None:
    requires_python, requirements = _metadata(wheel)
    assert requires_python == ">=3.9"
    for extra in sorted(set(EXTRAS) - {"test", "jenkins", "all"}):
        # On 3.9 a role's extra adds nothing (its code needs 3.11); on 3.11 it adds what it lists.
        on_39 = _wanted(requirements, "3.9", extra) - {"pyyaml"}
        assert {r for r in on_39 if not r.startswith("ovsperf[")} == set(), extra
        assert _names(EXTRAS[extra]) <= {r.split("[")[0] for r in _wanted(requirements, "3.11", extra)}
    assert _wanted(requirements, "3.9", "none") == {"pyyaml"}


def test_pip_installs_the_base_for_python_39(wheel: Path, tmp_path: Path) -> None:
    """pip, told the target is CPython 3.9, accepts the wheel and resolves PyYAML (a dry run).

    (pip evaluates markers against its own interpreter, so the extras' markers are checked above.)
    """
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-"]
    argv += ["--ignore-installed", "--python-version", "3.9", "--only-binary=:all:"]
    argv += ["--target", str(tmp_path / "t"), str(wheel)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    installs = {canonicalize_name(i["metadata"]["name"]): i for i in json.loads(proc.stdout)["install"]}
    assert sorted(installs) == ["ovsperf", "pyyaml"]
    assert "cp39" in installs["pyyaml"]["download_info"]["url"]


def test_the_base_install_runs_vsperf_config_with_the_packaged_catalog(wheel: Path, tmp_path: Path) -> None:
    """What the Beaker task ``vsperf_test`` runs on a lab host works from the wheel alone (no extras).

    The wheel is installed into a bare directory and run with ``python -S`` from elsewhere, so
    neither the checkout nor the editable install can stand in for a module or ``scenarios.yaml``.
    """
    import yaml

    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(site),
         str(wheel)],
        capture_output=True, check=True, timeout=300,
    )  # fmt: skip
    lab_host = {p.relative_to(ROOT) for p in _lab_host_files() if p.parent.name != "perf_synchronization"}
    assert {p for p in lab_host if not (site / p).is_file()} == set()
    assert (site / "ovsperf_catalog" / "scenarios.yaml").read_bytes() == (
        ROOT / "ovsperf_catalog" / "scenarios.yaml"
    ).read_bytes()
    argv = [sys.executable, "-S", "-m", "vsperf_configs.cli", "-q", "--scenario", "OVS_DPDK1q_GUEST_DPDK1q"]
    inventory = site / "vsperf_configs" / "inventory.example.yaml"
    argv += ["--host", "dut01.example.com", "--inventory", str(inventory), "--list-tests"]
    argv += ["--pod-dir", str(ROOT / "beaker_tasks" / "vsperf_test" / "pods")]  # the task's own, as it passes
    pythonpath = f"{site}:{Path(yaml.__file__).parents[1]}"  # PyYAML, the one base requirement
    proc = subprocess.run(
        argv, cwd=tmp_path, env={"PYTHONPATH": pythonpath, "PYTHONUTF8": "1"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["0 phy2phy_tput p2p", "1 pvp_tput pvp"]


CONSTRAINTS = ROOT / "packaging" / "constraints.txt"


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith((" ", "#")):
            name, _, version = line.partition("==")
            assert version, f"'{CONSTRAINTS}': '{line}' is not a 'name==version' pin"
            pins[canonicalize_name(name)] = version
    return pins


def test_the_constraints_pin_every_requirement_within_its_range() -> None:
    """packaging/constraints.txt (``make constraints``) resolves every group: regenerate it after a change."""
    pins = _pins()
    assert "uv pip compile" in CONSTRAINTS.read_text() or "make constraints" in CONSTRAINTS.read_text()
    requirements = [*PROJECT["dependencies"], *(r for group in EXTRAS.values() for r in group)]
    for text in requirements:
        if text.startswith("ovsperf["):
            continue
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"'{req.name}' is not pinned: run 'make constraints'"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is not in '{req}'"
    # JJB's setuptools pin is in the file for .venv-jjb only: nothing the product installs requires it.
    assert int(pins["setuptools"].split(".")[0]) < 81


def test_the_venv_running_the_tests_has_the_pinned_versions() -> None:
    """``make setup`` installs with ``-c packaging/constraints.txt``: the tests run on the pinned versions."""
    pins = _pins()
    product = declared("all") | declared("test")
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    wrong = {n: (installed.get(n), pins[n]) for n in sorted(product) if installed.get(n) != pins[n]}
    assert wrong == {}


def test_jenkins_jobs_runs_from_its_own_venv_with_the_setuptools_pin() -> None:
    """``make setup`` made ``.venv-jjb``; the product's venv (this one) is not where JJB runs from."""
    from tests.jenkins.jjb import JJB, JJB_VENV

    assert JJB.is_file() and JJB.is_relative_to(JJB_VENV)
    assert JJB_VENV.resolve() != Path(sys.prefix).resolve()
    proc = subprocess.run(
        [str(JJB_VENV / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    there = {canonicalize_name(d["name"]): d["version"] for d in json.loads(proc.stdout)}
    pins = _pins()
    assert there["jenkins-job-builder"] == pins["jenkins-job-builder"]
    assert there["setuptools"] == pins["setuptools"] and int(there["setuptools"].split(".")[0]) < 81
    assert "ovsperf" not in there
