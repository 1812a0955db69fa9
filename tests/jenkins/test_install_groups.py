"""Each Jenkins job installs exactly what its builders run: checked in clean venvs, per job and builder.

The jobs are rendered with the real ``jenkins-jobs test``. For every job, its first shell step is the
install builder (``install.sh`` rendered with the job's ``extras``): it is run, as Jenkins runs it,
in a checkout of this tree with ``OVSPERF_VENV`` pointing at a venv made fresh for the test WITHOUT
system site-packages (the agent's venv has them, for the distribution's koji; this machine's Python
has many packages that would hide a missing group). Every other shell step is parsed for the ovsperf
commands it runs (``${OVSPERF_VENV}/bin/<command>``, after inlining the files it sources); each
command's ``[project.scripts]`` entry point is imported in that venv together with every module its
code can import (``importcheck.py``), and ``<command> --help`` must exit 0.

Affordable: one venv per distinct install line (the trigger and nightly jobs share one); pip's
cache makes each a matter of seconds once warm.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree

from tests.jenkins.jjb import JENKINS_DIR, ROOT, render, shell_commands
from tests.treecopy import copy_tree_files

pytestmark = pytest.mark.slow

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SCRIPTS: dict[str, str] = PYPROJECT["project"]["scripts"]
"""Console script → ``module:function`` (pyproject.toml ``[project.scripts]``)."""
PACKAGES = sorted({name.split(".")[0] for name in PYPROJECT["tool"]["setuptools"]["packages"]})
IMPORTCHECK = Path(__file__).with_name("importcheck.py")
VENV_COMMAND = re.compile(r"\$\{OVSPERF_VENV\}/bin/([A-Za-z0-9_.-]+)")
SOURCED = re.compile(r'^\s*(?:\.|source)\s+"\$\{WORKSPACE\}/([^"]+)"', re.MULTILINE)
EXTRAS = re.compile(r"^OVSPERF_EXTRAS='([^']*)'$", re.MULTILINE)


def code_lines(script: str) -> str:
    """Return ``script`` without comment lines and trailing comments after two spaces."""
    lines = (line.split("  #", 1)[0] for line in script.splitlines() if not line.lstrip().startswith("#"))
    return "\n".join(lines)


def commands_run(script: str) -> set[str]:
    """Return the ovsperf console scripts a builder runs, sourced files (from the checkout) included.

    Every project command named anywhere in the code must be run from ``${OVSPERF_VENV}/bin``: a
    bare ``process-ci-results`` would run whatever is on the agent's PATH.
    """
    code = code_lines(script)
    for sourced in SOURCED.findall(code):
        code += "\n" + code_lines((ROOT / sourced).read_text(encoding="utf-8"))
    from_venv = set(VENV_COMMAND.findall(code))
    named = {name for name in SCRIPTS if re.search(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", code)}
    assert named <= from_venv, f"commands not run from OVSPERF_VENV: {sorted(named - from_venv)}"
    unknown = from_venv - set(SCRIPTS) - {"python", "python3", "pip"}
    assert not unknown, f"not console scripts of this project: {sorted(unknown)}"
    return from_venv & set(SCRIPTS)


def missing_imports(venv: Path, commands: set[str], cwd: Path) -> dict[str, list[str]]:
    """Return command → problems (import failures, ``--help`` failing) in ``venv``; empty lists if fine."""
    argv = [str(venv / "bin" / "python"), "-I", str(IMPORTCHECK)]
    argv += [f"--package={name}" for name in PACKAGES]
    argv += [SCRIPTS[name] for name in sorted(commands)]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    by_entry_point: dict[str, list[str]] = json.loads(proc.stdout)
    problems = {name: by_entry_point[SCRIPTS[name]] for name in commands}
    for name in sorted(commands):
        script = venv / "bin" / name
        if not script.exists():
            problems[name].append(f"'{script}' is not installed")
            continue
        helped = subprocess.run(
            [str(script), "--help"], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )
        if helped.returncode != 0:
            problems[name].append(
                f"'{name} --help' exited {helped.returncode}: {helped.stderr.strip()[-300:]}"
            )
    return problems


@dataclass(frozen=True)
class Job:
    """A rendered job: its install step and the builders after it."""

    name: str
    install: str
    builders: tuple[str, ...]

    @property
    def extras(self) -> str:
        """The install groups the install step names (``OVSPERF_EXTRAS``)."""
        found = EXTRAS.findall(self.install)
        assert len(found) == 1, self.install
        return found[0]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Job]:
    jobs: dict[str, etree._Element] = render(JENKINS_DIR, tmp_path_factory.mktemp("jjb"))
    out = {}
    for name, job in jobs.items():
        first, *rest = shell_commands(job)
        out[name] = Job(name, first, tuple(rest))
    return out


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Jenkins workspace after the SCM step: the tree's files (tracked or new, not ignored)."""
    return copy_tree_files(tmp_path_factory.mktemp("workspace"))


class Venvs:
    """Clean venvs, one per distinct install step, made by running that step as Jenkins does."""

    def __init__(self, root: Path, workspace: Path) -> None:
        self.root = root
        self.workspace = workspace
        self.made: dict[str, Path] = {}

    def for_install(self, install: str) -> Path:
        """Return the venv ``install`` (a rendered install builder) made in a fresh, empty venv."""
        if install in self.made:
            return self.made[install]
        venv = self.root / f"venv{len(self.made)}"
        # sys._base_executable: the interpreter behind the test venv, so the new venv starts empty.
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300, capture_output=True)
        env = {
            key: value
            for key, value in os.environ.items()
            if key in {"PATH", "HOME", "LANG", "TMPDIR"} or key.startswith("PIP_")
        }
        env.update({"WORKSPACE": str(self.workspace), "OVSPERF_VENV": str(venv)})
        proc = subprocess.run(
            ["bash", "-c", install], env=env, cwd=self.workspace, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        self.made[install] = venv
        return venv


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory, checkout: Path) -> Venvs:
    return Venvs(tmp_path_factory.mktemp("venvs"), checkout)


def test_each_builder_runs_only_commands_its_own_install_provides(
    rendered: dict[str, Job], venvs: Venvs, tmp_path: Path
) -> None:
    assert sorted(rendered) == [
        "ovsperf-dpdk-koji-build",
        "ovsperf-nightly",
        "ovsperf-openvswitch-koji-build",
        "ovsperf-process-results",
    ]
    checked: dict[tuple[str, int], set[str]] = {}
    for job in rendered.values():
        venv = venvs.for_install(job.install)
        for index, builder in enumerate(job.builders, start=1):
            commands = commands_run(builder)
            problems = missing_imports(venv, commands, tmp_path)
            assert problems == {name: [] for name in commands}, (job.name, index, job.extras)
            checked[job.name, index] = commands
    # What was checked, so the parse cannot silently find nothing.
    for name in ("ovsperf-openvswitch-koji-build", "ovsperf-dpdk-koji-build", "ovsperf-nightly"):
        assert rendered[name].extras == "koji,beaker"
        assert checked[name, 1] == {"ovsperf-koji"}
        assert checked[name, 2] == {"ovsperf-koji", "ovsperf-beaker"}
    assert rendered["ovsperf-process-results"].extras == "beaker,report"
    assert checked["ovsperf-process-results", 1] == {"ovsperf-beaker", "process-ci-results"}
    # The three perf jobs share one install line, so one venv; the collector has its own.
    assert len(venvs.made) == 2


def test_a_job_installing_too_little_is_caught(
    rendered: dict[str, Job], venvs: Venvs, tmp_path: Path
) -> None:
    """The collector's builder in the venv of the perf jobs ([koji,beaker]): 'report' is missing."""
    perf_venv = venvs.for_install(rendered["ovsperf-nightly"].install)
    collector = rendered["ovsperf-process-results"].builders[0]
    problems = missing_imports(perf_venv, commands_run(collector), tmp_path)
    assert problems["ovsperf-beaker"] == []
    # The modules its code imports are missing; its --help still works (heavy imports happen inside
    # the runner, per sub-command), so the import walk, not --help, is what catches the job.
    report_modules = ("scipy", "sqlalchemy", "matplotlib", "jumpavg", "hdrh", "alembic", "plotly")
    assert any(module in problem for problem in problems["process-ci-results"] for module in report_modules)
    assert not any("--help' exited" in problem for problem in problems["process-ci-results"])


def test_the_command_parse_reads_sourced_files_and_refuses_path_lookups() -> None:
    builder = (
        '#!/bin/bash\n. "${WORKSPACE}/jenkins/builders/env.sh"\n"${OVSPERF_VENV}/bin/ovsperf-koji" submit\n'
    )
    assert commands_run(builder) == {"ovsperf-koji"}
    # A comment naming a command is not a use of it; a bare command on PATH is refused.
    assert commands_run("# process-ci-results runs later\ntrue\n") == set()
    with pytest.raises(AssertionError, match=r"not run from OVSPERF_VENV: \['process-ci-results'\]"):
        commands_run("process-ci-results --config x\n")
