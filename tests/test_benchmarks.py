"""The benchmarks run as their docstrings say, answer ``--help`` without starting anything, and stop cleanly.

Each ``benchmarks/bench_*.py`` is run the way its docstring's ``Usage:`` line shows (as a script:
its directory is ``sys.path[0]``, the working directory is elsewhere). ``--help`` runs under an
audit hook that refuses every process, socket, temporary directory and namespace the benchmark
could start, so a benchmark that begins its work instead of answering fails here. A benchmark
killed by SIGTERM (a timeout) must stop the servers it started: ``bench_remote.py`` is started
for real and terminated once its two sshd hosts are up.
"""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.test_packaging import OURS, _pins, distributions_of, third_party_closure

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((ROOT / "benchmarks").glob("bench_*.py"))
NETNS = Path("/run/netns")

# Runs a benchmark as a script would run, with an audit hook that refuses starting anything.
DRIVER = r"""
import runpy, sys
FORBIDDEN = ("subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.system",
             "os.spawn", "socket.bind", "socket.connect", "tempfile.mkdtemp", "tempfile.mkstemp",
             )
def hook(event, args):
    if event.startswith(FORBIDDEN):
        raise RuntimeError(f"--help started something: {event} {args!r}"[:300])
script = sys.argv[1]
sys.argv = [script, *sys.argv[2:]]
sys.path[0] = script.rsplit("/", 1)[0]
sys.addaudithook(hook)
runpy.run_path(script, run_name="__main__")
"""


def usage_line(path: Path) -> str:
    """Return the ``Usage:`` paragraph of a benchmark's docstring (one line, spaces collapsed)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    found = re.search(r"^Usage: (.+?)(?:\n\n|\Z)", doc, re.MULTILINE | re.DOTALL)
    assert found, f"{path.name}: no 'Usage:' line in its docstring"
    return " ".join(found.group(1).split())


def test_there_are_benchmarks_to_check() -> None:
    names = {p.name for p in BENCHMARKS}
    assert {"bench_trend.py", "bench_remote.py", "bench_ciflow.py", "bench_kojiwatch.py"} <= names
    assert {"bench_trafficgen.py", "bench_beakerwatch.py"} <= names
    assert len(BENCHMARKS) >= 14


def _guarded(path: Path, argument: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run benchmark ``path`` with one ``argument`` under the audit hook that refuses any start."""
    argv = [sys.executable, "-c", DRIVER, str(path), argument]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_help_answers_without_starting_anything(path: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    proc = _guarded(path, "--help", tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: "), proc.stdout[:300]
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 30
    # The help is the docstring, and every option the docstring's usage shows is one the parser knows.
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert doc.splitlines()[0] in proc.stdout
    usage = usage_line(path)
    assert f"benchmarks/{path.name}" in usage
    for option in re.findall(r"\[(--[a-z][a-z-]*)", usage):
        assert re.search(rf"(^|\s){option}\b", proc.stdout, re.MULTILINE), f"{path.name}: {option}"
    # An option it does not know is refused by the parser (exit 2), not taken as a start.
    bad = _guarded(path, "--no-such-option", tmp_path)
    assert bad.returncode == 2, bad.stderr[-2000:]
    assert "unrecognized arguments: --no-such-option" in bad.stderr


CHECK_IMPORTS = r"""
import ast, importlib, importlib.util, json, sys
path = list(sys.path)
problems = {}
for script in sys.argv[1:]:
    # Each as if run alone: the path and modules another benchmark set up do not help it.
    sys.path[:] = [script.rsplit("/", 1)[0], *path[1:]]
    for name in [m for m in sys.modules if m.split(".")[0] == "tests" or m.startswith("bench")]:
        del sys.modules[name]
    name = script.rsplit("/", 1)[1].removesuffix(".py")
    importlib.import_module(name)  # its module level: sys.path set-up and imports (main does not run)
    tree = ast.parse(open(script, encoding="utf-8").read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
            names.add(node.module)
    missing = []
    for module in sorted(names):
        try:
            if importlib.util.find_spec(module) is None:
                missing.append(module)
        except ImportError as err:
            missing.append(f"{module}: {err}")
    problems[name + ".py"] = missing
print(json.dumps(problems))
"""


def test_every_module_a_benchmark_imports_resolves_when_run_as_a_script(tmp_path: Path) -> None:
    """Imports inside functions too: ``bench_trend.py`` imported ``tests.reporting.cdp`` at its end."""
    proc = subprocess.run(
        [sys.executable, "-c", CHECK_IMPORTS, *map(str, BENCHMARKS)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    problems = json.loads(proc.stdout)
    assert problems == {p.name: [] for p in BENCHMARKS}


def _namespaces_of(pid: int) -> list[str]:
    return sorted(p.name for p in NETNS.glob(f"ovsperf-rt-p{pid}-*")) if NETNS.is_dir() else []


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _netns_pids(name: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=10).stdout
    return [int(pid) for pid in out.split()]


@pytest.mark.parametrize("moment", ["hosts starting", "steps running"])
def test_bench_remote_killed_by_sigterm_leaves_no_sshd_nor_namespace(moment: str) -> None:
    """SIGTERM while the sshd hosts start, and while ours/peer run steps over SSH (sessions open)."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "bench_remote.py")],
        cwd="/",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        daemons: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            names = _namespaces_of(proc.pid)
            by_ns = [_netns_pids(name) for name in names]
            daemons = sorted({pid for pids in by_ns for pid in pids} | set(daemons))
            if len(names) == 2 and all(by_ns) and (moment == "hosts starting" or max(map(len, by_ns)) >= 2):
                break
            time.sleep(0.05)
        assert len(daemons) >= 2, f"the benchmark's two sshd hosts never came up: {proc.stderr}"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode != 0
    assert _namespaces_of(proc.pid) == []
    # SIGKILLed leftovers take a moment to go; a zombie waiting for init to reap it is gone too.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(pid) for pid in daemons):
        time.sleep(0.1)
    assert [pid for pid in daemons if not _gone(pid)] == []
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    assert "bench_remote.py: stopped (signal SIGTERM); what it started is stopped." in stderr
    assert "KeyboardInterrupt" not in stderr, stderr  # the interruption is no traceback of its own


def _bump_table() -> dict[str, set[str]]:
    """Return benchmark file → the pinned distributions CONTRIBUTING.md's bump procedure names for it."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("### Dependencies and pinned versions", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for row in re.findall(r"^\s*\| ([^|]+) \| ([^|]+) \| [^|]+ \|$", section, re.MULTILINE):
        pins = {canonicalize_name(p.strip()) for p in row[0].split(",")}
        for bench in re.findall(r"`(bench_\w+\.py)`", row[1]):
            table.setdefault(bench, set()).update(pins)
    return table


def _reached_distributions(path: Path) -> set[str]:
    """Return the installed distributions a benchmark's code reaches (its imports and the project's)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ours, third = set(), set()
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in OURS or top == "tests":
                ours.add(name)
            elif top not in sys.stdlib_module_names and not top.startswith("bench"):
                third.add(top)
    third |= third_party_closure(*sorted(ours), walk={"tests"})
    return {d for dists in distributions_of(third).values() for d in dists} - {"pytest"}


def test_the_bump_procedure_names_every_pin_each_benchmark_rests_on() -> None:
    """CONTRIBUTING.md's table says which benchmarks to re-run for a changed pin; it must not miss one."""
    table = _bump_table()
    pins = set(_pins())
    assert set().union(*table.values()) <= pins
    for path in BENCHMARKS:
        reached = _reached_distributions(path)
        assert reached <= table.get(path.name, set()), (
            f"{path.name}: {sorted(reached - table.get(path.name, set()))}"
        )
    assert table["bench_changepoints.py"] >= {"jumpavg"}
    assert table["bench_remote.py"] >= {"paramiko"}
