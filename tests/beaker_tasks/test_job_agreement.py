"""The jobs jobcreator renders and the tasks in beaker_tasks/ agree: names, fetch paths, parameters.

Every scenario of the catalog is rendered with every option that adds a task or a parameter; each
``/ovsperf/<task>`` it names must be beaker_tasks/<task> (restraint ``metadata`` name and Makefile
``TEST`` alike), each ``<fetch url="…#beaker_tasks/<task>">`` must point at that directory, and each
parameter must be one the task reads (``${NAME`` in its runtest.sh or lib/task.sh) and documents
(`` `NAME` `` in its README.md). Enumerated values must be ones the task's runtest.sh handles.
"""

from __future__ import annotations

import configparser
import re

import pytest
from lxml import etree

from jobcreator.jobmodel import JobOptions, ReserveMode
from jobcreator.render import render_job
from ovsperf_catalog.catalog import load_catalog
from ovsperf_catalog.model import Engine, VsperfTrafficgen

from .shims import REPO, TASKS

CATALOG = load_catalog()
LIB = (TASKS / "lib" / "task.sh").read_text() + (TASKS / "lib" / "results.sh").read_text()
TASK_REPO = "https://git.example.com/ovsperf.git"
VALUES = {
    # parameter: the values the task dispatches on (a case label or comparison in runtest.sh)
    "VSPERF_ACTION": ("setup", "run"),
    "OVSPERF_ACTION": ("setup", "run"),
    "SYNC_ACTION": ("set", "wait"),
    "SYNC_DATA": ("ssh-pubkey", "ssh-hostkey"),
    "GUEST": ("1",),
    "SETUP_TREX_ACTION": ("start", "stop"),
}


def _options(**changes: object) -> JobOptions:
    fields: dict[str, object] = {
        "trafficgen_host": "gen.example.com",
        "dut_host": "dut.example.com",
        "distro": "RHEL-9.4.0",
        "kick_repos": ("http://repo.example.com/ovs/",),
        "collector": "ci@collector.example.com:/srv/ci_in",
        "inventory": "lab/inventory.yaml",
        "task_repo": TASK_REPO,
        "reserve_hours": 2.0,
        "reserve_mode": ReserveMode.SLEEPER,
        **changes,
    }
    return JobOptions(**fields)  # type: ignore[arg-type]


def _tasks(xml: str) -> list[tuple[str, str | None, dict[str, str]]]:
    job = etree.fromstring(xml.encode())
    out = []
    for task in job.iter("task"):
        fetch = task.find("fetch")
        params = {p.get("name"): p.get("value") for p in task.findall("params/param")}
        out.append((task.get("name"), None if fetch is None else fetch.get("url"), params))
    return out


def _reads(runtest: str, name: str) -> bool:
    return re.search(r"\$\{" + name + r"\b", runtest + LIB) is not None


@pytest.mark.parametrize(
    ("engine", "generator"),
    [
        (Engine.VSPERF, VsperfTrafficgen.MOONGEN),
        (Engine.OVSPERF, VsperfTrafficgen.MOONGEN),
        (Engine.VSPERF, VsperfTrafficgen.TREX),
    ],
    ids=["vsperf", "ovsperf", "vsperf-trex"],
)
@pytest.mark.parametrize("scenario", list(CATALOG.scenarios))
@pytest.mark.parametrize("task_repo", [TASK_REPO, None], ids=["fetch", "library"])
def test_rendered_job_and_tasks_agree(
    scenario: str, task_repo: str | None, engine: Engine, generator: VsperfTrafficgen
) -> None:
    options = _options(task_repo=task_repo, engine=engine, generator=generator)
    tasks = _tasks(render_job(CATALOG.get(scenario), options))
    ours = [t for t in tasks if t[0].startswith("/ovsperf/")]
    measuring = "/ovsperf/vsperf_test" if engine is Engine.VSPERF else "/ovsperf/ovsperf_test"
    assert {name for name, _, _ in ours} >= {measuring, "/ovsperf/perf_synchronization"}
    for name, fetch, params in ours:
        short = name.removeprefix("/ovsperf/")
        directory = TASKS / short
        assert (directory / "runtest.sh").is_file(), f"{name}: no beaker_tasks/{short}/runtest.sh"
        meta = configparser.ConfigParser()
        meta.read(directory / "metadata")
        assert meta["General"]["name"] == name
        assert f"export TEST = {name}\n" in (directory / "Makefile").read_text()
        if task_repo is None:
            assert fetch is None
        else:
            assert fetch == f"{TASK_REPO}#beaker_tasks/{short}"
            assert (REPO / fetch.split("#", 1)[1]).is_dir()
        runtest = (directory / "runtest.sh").read_text()
        readme = (directory / "README.md").read_text()
        for param, value in params.items():
            assert _reads(runtest, param), f"{name} is given {param} but never reads it"
            assert f"`{param}`" in readme, f"{name}: parameter {param} is not documented in its README.md"
            if param in VALUES:
                assert value in VALUES[param], f"{name}: {param}={value}"
                assert value in runtest, f"{name} does not handle {param}={value}"


def test_every_scenario_is_covered_and_the_guest_runs_vsperf_setup() -> None:
    guests = [s for s in CATALOG.scenarios.values() if s.guest is not None]
    assert guests and len(guests) < len(CATALOG.scenarios)
    job = etree.fromstring(render_job(guests[0], _options()).encode())
    (guest,) = job.iter("guestrecipe")
    params = {p.get("name"): p.get("value") for p in guest.findall("task/params/param")}
    assert params == {"VSPERF_ACTION": "setup", "SCENARIO": guests[0].name, "GUEST": "1"}
    # The DUT's run waits for the guest under this name (vsperf_test's GUEST_NAME default).
    runtest = (TASKS / "vsperf_test" / "runtest.sh").read_text()
    assert f': "${{GUEST_NAME:={guest.get("guestname")}}}"' in runtest


def test_every_task_directory_is_used_by_some_job() -> None:
    named = set()
    for scenario in CATALOG.scenarios.values():
        for engine in Engine:
            named |= {t[0] for t in _tasks(render_job(scenario, _options(engine=engine)))}
        trex = _options(engine=Engine.VSPERF, generator=VsperfTrafficgen.TREX)
        named |= {t[0] for t in _tasks(render_job(scenario, trex))}
    on_disk = {f"/ovsperf/{p.parent.name}" for p in TASKS.glob("*/runtest.sh")}
    assert on_disk == {n for n in named if n.startswith("/ovsperf/")}
