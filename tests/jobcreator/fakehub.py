"""A stand-in Beaker hub: a real XML-RPC and HTTP server on 127.0.0.1 speaking the hub's protocol.

Beaker's server cannot be installed here, so tests run beaker-client's real ``HubProxy`` (and its
``task_watcher``) against this double. On the ``/client/`` endpoint it implements:

- ``auth.login_password`` and ``auth.login_oauth2`` (set a session cookie, like Beaker's),
  ``auth.who_am_i``, ``auth.logout``;
- ``jobs.upload`` (requires the cookie, answers ``'J:<n>'``) — the job is parsed: every
  ``<recipeSet>`` gets an id ``RS:<n>``, every ``<recipe>``/``<guestrecipe>`` an id ``R:<n>``,
  every ``<task>`` an id ``T:<n>`` (one counter per kind, like Beaker's tables);
- ``taskactions.task_info(taskspec)`` for ``J:``/``RS:``/``R:``/``T:`` — Beaker's dict
  (``Server/bkr/server/model/scheduler.py`` ``task_info``);
- ``taskactions.to_xml(taskspec, clone, exclude_enclosing_job, include_logs)`` — the results XML;
- ``taskactions.files(taskspec)`` — Beaker's log dicts (``Log.dict``), whose ``url`` this same
  server answers over HTTP GET (``/recipes/<R>/logs/<name>``,
  ``/recipes/<R>/tasks/<T>/logs/<name>``), as a lab controller serves its logs;
- ``taskactions.stop(taskspec, 'cancel', msg)`` (requires the cookie; cancels the whole job).

Statuses and results are Beaker's ``TaskStatus``/``TaskResult`` labels (``'Running'``,
``'Completed'``, ``'Aborted'``, ``'Cancelled'``; ``'Pass'``, ``'Warn'``, ``'Fail'``, …). A recipe's,
recipe set's and job's status is derived from its tasks as Beaker does (the lowest status
severity wins, the highest result severity wins).

Tests drive it through :class:`HubState` (thread-safe): ``state.jobs[number]`` holds
:class:`FakeJob` records; ``set_task``, ``add_task_file``, ``finish_job``, ``abort_job``,
``cancel_job``, ``watchdog_abort`` change them; ``delay_s`` makes every request slow;
``fail_requests(n)`` answers the next ``n`` requests with HTTP 503 (or drops the connection);
``on_upload`` is called (outside the lock) after each accepted upload so a test can execute the job.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
import xmlrpc.client
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

COOKIE_NAME = "beaker_auth_token"

STATUS_SEVERITY = {
    "New": 10,
    "Processed": 20,
    "Queued": 30,
    "Scheduled": 40,
    "Waiting": 7,
    "Installing": 6,
    "Running": 5,
    "Reserved": 45,
    "Completed": 70,
    "Cancelled": 60,
    "Aborted": 50,
}
"""Beaker's ``TaskStatus`` labels and severities (``Server/bkr/server/model/types.py``)."""
FINISHED = frozenset({"Completed", "Cancelled", "Aborted"})
RESULT_SEVERITY = {"New": 10, "None": 15, "Skip": 16, "Pass": 20, "Warn": 30, "Fail": 40, "Panic": 50}
"""Beaker's ``TaskResult`` labels and severities."""
FAILED_RESULTS = frozenset({"Warn", "Fail", "Panic"})
WATCHDOG_MESSAGE = "External Watchdog Expired"
"""What Beaker's beakerd records when the external watchdog kills a recipe."""


@dataclass
class FakeTaskResult:
    """One ``<result>`` of a task (``rstrnt-report-result`` or Beaker's abort/cancel note)."""

    id: int
    path: str
    result: str
    score: str = "0"
    message: str = ""


@dataclass
class FakeTask:
    """A ``<task>`` of a recipe, as uploaded, with its run state."""

    id: int
    name: str
    role: str
    params: dict[str, str]
    fetch_url: str | None
    element: ET.Element
    status: str = "New"
    result: str = "New"
    files: dict[str, bytes] = field(default_factory=dict)
    """Uploaded logs: file name (may contain ``/`` for a subdirectory) -> content."""
    results: list[FakeTaskResult] = field(default_factory=list)

    @property
    def t_id(self) -> str:
        """Return ``'T:<id>'``."""
        return f"T:{self.id}"


@dataclass
class FakeRecipe:
    """A ``<recipe>`` or ``<guestrecipe>``, as uploaded, with its tasks and guests."""

    id: int
    role: str
    system: str | None
    """The host it runs on: ``hostRequires/hostname`` when the job names one."""
    whiteboard: str
    element: ET.Element
    tasks: list[FakeTask] = field(default_factory=list)
    guests: list[FakeRecipe] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    """Recipe-level logs (console.log, …): name -> content."""
    guest: bool = False

    @property
    def status(self) -> str:
        """Return the status Beaker derives from the tasks (lowest severity)."""
        return min((t.status for t in self.tasks), key=STATUS_SEVERITY.__getitem__, default="New")

    @property
    def result(self) -> str:
        """Return the result Beaker derives from the tasks (highest severity)."""
        return max((t.result for t in self.tasks), key=RESULT_SEVERITY.__getitem__, default="New")

    def all_recipes(self) -> Iterator[FakeRecipe]:
        """Yield this recipe then its guest recipes."""
        yield self
        yield from self.guests


@dataclass
class FakeRecipeSet:
    """A ``<recipeSet>``."""

    id: int
    recipes: list[FakeRecipe]

    def all_recipes(self) -> Iterator[FakeRecipe]:
        """Yield every recipe, guests after their host recipe."""
        for recipe in self.recipes:
            yield from recipe.all_recipes()


@dataclass
class FakeJob:
    """An uploaded job: its XML, ids and run state."""

    id: int
    whiteboard: str
    xml: str
    recipesets: list[FakeRecipeSet]
    owner: str

    @property
    def j_id(self) -> str:
        """Return ``'J:<id>'``."""
        return f"J:{self.id}"

    @property
    def recipes(self) -> list[FakeRecipe]:
        """Return every recipe (guest recipes included), in document order."""
        return [r for rs in self.recipesets for r in rs.all_recipes()]

    @property
    def tasks(self) -> list[FakeTask]:
        """Return every task of every recipe."""
        return [t for r in self.recipes for t in r.tasks]

    def recipe(self, role: str) -> FakeRecipe:
        """Return the (host) recipe with ``role`` (``'DUT'``, ``'TRAFFICGEN'``)."""
        return next(r for r in self.recipes if r.role == role and not r.guest)

    def task(self, role: str, name: str, **params: str) -> FakeTask:
        """Return the task ``name`` of the recipe ``role`` whose params include ``params``."""
        return next(
            t
            for t in self.recipe(role).tasks
            if t.name == name and all(t.params.get(k) == v for k, v in params.items())
        )


def _status_of(statuses: list[str]) -> str:
    return min(statuses, key=STATUS_SEVERITY.__getitem__, default="New")


def _result_of(results: list[str]) -> str:
    return max(results, key=RESULT_SEVERITY.__getitem__, default="New")


@dataclass
class HubState:
    """What the fake hub was told and what its jobs are doing, for tests to drive and assert."""

    username: str
    password: str
    access_token: str = "oauth2-token-for-tests"
    first_job_id: int = 1234
    calls: list[str] = field(default_factory=list)
    uploads: list[str] = field(default_factory=list)
    offered: list[str] = field(default_factory=list)
    """Every job XML given to ``jobs.upload`` by a logged-in client, accepted or refused."""
    sessions: set[str] = field(default_factory=set)
    upload_fault: str | None = None
    refuse_containing: tuple[str, ...] = ()
    """Refuse (with a Fault) every uploaded job whose XML contains one of these strings."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    jobs: dict[int, FakeJob] = field(default_factory=dict)
    """Accepted jobs by number (the ``<n>`` of ``'J:<n>'``)."""
    on_upload: Callable[[FakeJob], None] | None = None
    """Called (outside the lock, in the request's thread) after each accepted upload."""
    delay_s: float = 0.0
    """Every request (XML-RPC and HTTP) waits this long before being answered [s]."""
    failures_left: int = 0
    failure_mode: str = "503"
    """``'503'``: answer HTTP 503; ``'drop'``: close the connection without an answer."""
    http_gets: list[str] = field(default_factory=list)
    """Every HTTP GET path served (or refused), in order."""
    base_url: str = ""
    """``http://127.0.0.1:<port>``, set when the server starts (file URLs are built on it)."""
    _ids: dict[str, Iterator[int]] = field(default_factory=dict)

    # --- test API -------------------------------------------------------------------------
    def job(self, job_id: int | str) -> FakeJob:
        """Return the job ``job_id`` (``4201`` or ``'J:4201'``)."""
        with self.lock:
            return self.jobs[int(str(job_id).removeprefix("J:"))]

    def find_task(self, task_id: int | str) -> FakeTask:
        """Return the task ``task_id`` (``7`` or ``'T:7'``) of any job."""
        number = int(str(task_id).removeprefix("T:"))
        with self.lock:
            return next(t for j in self.jobs.values() for t in j.tasks if t.id == number)

    def set_task(self, task_id: int | str, status: str | None = None, result: str | None = None) -> None:
        """Set a task's status and/or result (Beaker labels)."""
        with self.lock:
            task = self.find_task(task_id)
            if status is not None:
                assert status in STATUS_SEVERITY, status
                task.status = status
            if result is not None:
                assert result in RESULT_SEVERITY, result
                task.result = result

    def add_task_file(self, task_id: int | str, name: str, data: bytes) -> None:
        """Attach an uploaded log ``name`` to a task (as ``rstrnt-report-log -l`` does)."""
        with self.lock:
            self.find_task(task_id).files[name] = data

    def add_task_result(self, task_id: int | str, path: str, result: str, message: str = "") -> None:
        """Record a task result (as ``rstrnt-report-result`` does) and raise the task's result."""
        with self.lock:
            task = self.find_task(task_id)
            task.results.append(FakeTaskResult(next(self._counter("TR")), path, result, "0", message))
            task.result = _result_of([task.result, result])

    def run_job(self, job_id: int | str) -> None:
        """Mark every task of a job Running (the job is then Running)."""
        with self.lock:
            for task in self.job(job_id).tasks:
                task.status = "Running"

    def finish_job(self, job_id: int | str, result: str = "Pass") -> None:
        """Mark every unfinished task Completed with ``result`` (the job is then Completed)."""
        with self.lock:
            for task in self.job(job_id).tasks:
                if task.status not in FINISHED:
                    task.status = "Completed"
                    task.result = _result_of([task.result, result])

    def abort_job(self, job_id: int | str, reason: str) -> None:
        """Abort every unfinished task, as Beaker's ``Job.abort(msg)`` does (result Warn + note)."""
        self._stop(self.job(job_id).tasks, "Aborted", reason)

    def cancel_job(self, job_id: int | str, reason: str) -> None:
        """Cancel every unfinished task, as ``taskactions.stop(J, 'cancel', msg)`` does."""
        self._stop(self.job(job_id).tasks, "Cancelled", reason)

    def watchdog_abort(self, recipe_id: int | str, reason: str = WATCHDOG_MESSAGE) -> None:
        """Abort a recipe's unfinished tasks as beakerd does when its external watchdog expires.

        Beaker then aborts the other recipes of the recipe set too (they cannot go on alone).
        """
        number = int(str(recipe_id).removeprefix("R:"))
        with self.lock:
            for job in self.jobs.values():
                for rs in job.recipesets:
                    recipes = list(rs.all_recipes())
                    if any(r.id == number for r in recipes):
                        self._stop([t for r in recipes for t in r.tasks], "Aborted", reason)
                        return
        raise KeyError(f"R:{number}")

    def fail_requests(self, count: int, mode: str = "503") -> None:
        """Fail the next ``count`` requests (XML-RPC and HTTP): HTTP 503, a dropped connection, or
        (``gzip-bomb``, XML-RPC only) HTTP 200 with a gzip body of 128 KiB that inflates to 128 MiB
        of one XML-RPC string."""
        assert mode in ("503", "drop", "gzip-bomb"), mode
        with self.lock:
            self.failures_left = count
            self.failure_mode = mode

    # --- internals ------------------------------------------------------------------------
    def _counter(self, kind: str) -> Iterator[int]:
        with self.lock:
            return self._ids.setdefault(kind, itertools.count(1))

    def _stop(self, tasks: list[FakeTask], status: str, reason: str) -> None:
        with self.lock:
            for task in tasks:
                if task.status not in FINISHED:
                    task.status = status
                    task.results.append(FakeTaskResult(next(self._counter("TR")), "/", "Warn", "0", reason))
                    task.result = _result_of([task.result, "Warn"])

    def _take_failure(self) -> str | None:
        with self.lock:
            if self.failures_left <= 0:
                return None
            self.failures_left -= 1
            return self.failure_mode

    def _parse_job(self, xml: str, number: int) -> FakeJob:
        root = ET.fromstring(xml)
        recipesets = []
        for rs_el in root.iter("recipeSet"):
            recipes = [self._parse_recipe(r, guest=False) for r in rs_el.findall("recipe")]
            recipesets.append(FakeRecipeSet(next(self._counter("RS")), recipes))
        return FakeJob(number, root.findtext("whiteboard") or "", xml, recipesets, self.username)

    def _parse_recipe(self, element: ET.Element, *, guest: bool) -> FakeRecipe:
        hostname = element.find("hostRequires/and/hostname")
        if hostname is None:
            hostname = element.find("hostRequires/hostname")
        recipe = FakeRecipe(
            id=next(self._counter("R")),
            role=element.get("role", "STANDALONE"),
            system=hostname.get("value") if hostname is not None else None,
            whiteboard=element.get("whiteboard", ""),
            element=element,
            guest=guest,
        )
        for task_el in element.findall("task"):
            fetch = task_el.find("fetch")
            params = {p.get("name", ""): p.get("value", "") for p in task_el.findall("params/param")}
            recipe.tasks.append(
                FakeTask(
                    id=next(self._counter("T")),
                    name=task_el.get("name", fetch.get("url", "") if fetch is not None else ""),
                    role=task_el.get("role", "STANDALONE"),
                    params=params,
                    fetch_url=fetch.get("url") if fetch is not None else None,
                    element=task_el,
                )
            )
        recipe.guests = [self._parse_recipe(g, guest=True) for g in element.findall("guestrecipe")]
        return recipe

    def _lookup(self, taskspec: str) -> tuple[str, Any]:
        kind, _, number = str(taskspec).partition(":")
        kind = kind.upper()
        try:
            wanted = int(number)
        except ValueError:
            raise _fault("bkr.server.bexceptions.BX", f"Invalid {kind} {number}") from None
        with self.lock:
            for job in self.jobs.values():
                if kind == "J" and job.id == wanted:
                    return kind, job
                for rs in job.recipesets:
                    if kind == "RS" and rs.id == wanted:
                        return kind, rs
                    for recipe in rs.all_recipes():
                        if kind == "R" and recipe.id == wanted:
                            return kind, recipe
                        for task in recipe.tasks:
                            if kind == "T" and task.id == wanted:
                                return kind, task
        raise _fault("bkr.server.bexceptions.BX", f"Invalid {kind} {number}")

    def _job_of(self, item: Any) -> FakeJob:
        for job in self.jobs.values():
            if item is job or item in job.recipesets or item in job.recipes or item in job.tasks:
                return job
        raise AssertionError(item)

    def _recipe_of(self, task: FakeTask) -> FakeRecipe:
        return next(r for j in self.jobs.values() for r in j.recipes if task in r.tasks)

    def task_info(self, taskspec: str) -> dict[str, Any]:
        """Return Beaker's ``task_info`` dict for a ``J:``/``RS:``/``R:``/``T:`` spec."""
        kind, item = self._lookup(taskspec)
        with self.lock:
            job = self._job_of(item)
            if kind == "J":
                statuses = [r.status for r in item.recipes]
                results = [r.result for r in item.recipes]
                worker, method = None, item.whiteboard
            elif kind == "RS":
                statuses = [r.status for r in item.all_recipes()]
                results = [r.result for r in item.all_recipes()]
                worker, method = None, None
            elif kind == "R":
                statuses, results = [item.status], [item.result]
                worker = {"name": item.system} if item.system else None
                method = item.whiteboard
            else:
                recipe = self._recipe_of(item)
                statuses, results = [item.status], [item.result]
                worker = {"name": recipe.system} if recipe.system else None
                method = item.name
            status, result = _status_of(statuses), _result_of(results)
            return {
                "id": f"{kind}:{item.id}",
                "worker": worker,
                "state_label": status,
                "state": status,
                "method": method,
                "result": result,
                "is_finished": status in FINISHED,
                "is_failed": result in FAILED_RESULTS,
                "owner": job.owner,
                "submitter": job.owner,
                "group": "None",
            }

    def _log_url(self, recipe: FakeRecipe, task: FakeTask | None, name: str) -> str:
        quoted = urllib.parse.quote(name)
        if task is None:
            return f"{self.base_url}/recipes/{recipe.id}/logs/{quoted}"
        return f"{self.base_url}/recipes/{recipe.id}/tasks/{task.id}/logs/{quoted}"

    def _log_dict(self, job: FakeJob, recipe: FakeRecipe, task: FakeTask | None, name: str) -> dict[str, Any]:
        subdir, _, filename = name.rpartition("/")
        filepath = f"2026/01/{job.id // 100}/{job.id}/{recipe.id}" + (f"/{task.id}" if task else "")
        url = self._log_url(recipe, task, name)
        return {
            "server": url[: -len(urllib.parse.quote(name))],
            "path": subdir or "/",
            "filename": filename,
            "tid": f"{'T' if task else 'R'}:{zlib.crc32(url.encode()) % 10**6}",
            "filepath": filepath,
            "basepath": "/var/www/beaker/logs",
            "url": url,
        }

    def files(self, taskspec: str) -> list[dict[str, Any]]:
        """Return Beaker's log dicts of a component and its descendants (``all_logs``)."""
        kind, item = self._lookup(taskspec)
        with self.lock:
            job = self._job_of(item)
            if kind == "T":
                recipes: list[FakeRecipe] = []
                pairs = [(self._recipe_of(item), item)]
            else:
                recipes = (
                    item.recipes if kind == "J" else list(item.all_recipes()) if kind == "RS" else [item]
                )
                pairs = [(r, t) for r in recipes for t in r.tasks]
            out = [self._log_dict(job, r, None, n) for r in recipes for n in r.files]
            out += [self._log_dict(job, r, t, n) for r, t in pairs for n in t.files]
            return out

    def to_xml(self, taskspec: str, clone: bool, exclude_enclosing_job: bool, include_logs: bool) -> str:
        """Return Beaker's XML of a component with ids, statuses, results and log links."""
        kind, item = self._lookup(taskspec)
        with self.lock:
            job = self._job_of(item)
            job_el = ET.Element("job")
            if not clone:
                job_el.set("id", str(job.id))
                info = self.task_info(job.j_id)
                job_el.set("status", info["state_label"])
                job_el.set("result", info["result"])
                job_el.set("owner", job.owner)
            ET.SubElement(job_el, "whiteboard").text = job.whiteboard
            for rs in job.recipesets:
                rs_el = ET.SubElement(job_el, "recipeSet")
                if not clone:
                    rs_info = self.task_info(f"RS:{rs.id}")
                    rs_el.set("id", str(rs.id))
                    rs_el.set("status", rs_info["state_label"])
                    rs_el.set("result", rs_info["result"])
                for recipe in rs.recipes:
                    rs_el.append(self._recipe_xml(recipe, clone=clone, include_logs=include_logs))
            if kind == "J" or not exclude_enclosing_job:
                return ET.tostring(job_el, encoding="unicode")
            wanted = {"RS": "recipeSet", "R": "recipe", "T": "task"}[kind]
            for el in job_el.iter():
                if el.tag in (wanted, "guestrecipe") and el.get("id") == str(item.id):
                    if kind == "R" or el.tag == wanted:
                        return ET.tostring(el, encoding="unicode")
            raise AssertionError(taskspec)

    def _recipe_xml(self, recipe: FakeRecipe, *, clone: bool, include_logs: bool) -> ET.Element:
        element = ET.Element(recipe.element.tag, dict(recipe.element.attrib))
        if not clone:
            element.set("id", str(recipe.id))
            element.set("status", recipe.status)
            element.set("result", recipe.result)
            if recipe.system:
                element.set("system", recipe.system)
        for child in recipe.element:
            if child.tag == "task":
                continue
            if child.tag == "guestrecipe":
                guest = next(g for g in recipe.guests if g.element is child)
                element.append(self._recipe_xml(guest, clone=clone, include_logs=include_logs))
            else:
                element.append(child)
        if include_logs and not clone:
            logs = ET.SubElement(element, "logs")
            for name in recipe.files:
                ET.SubElement(logs, "log", href=self._log_url(recipe, None, name), name=name)
        for task in recipe.tasks:
            task_el = ET.SubElement(element, "task", dict(task.element.attrib))
            if not clone:
                task_el.set("id", str(task.id))
                task_el.set("status", task.status)
                task_el.set("result", task.result)
            for child in task.element:
                task_el.append(child)
            if include_logs and not clone:
                logs = ET.SubElement(task_el, "logs")
                for name in task.files:
                    ET.SubElement(logs, "log", href=self._log_url(recipe, task, name), name=name)
            if task.results and not clone:
                results = ET.SubElement(task_el, "results")
                for res in task.results:
                    res_el = ET.SubElement(
                        results, "result", id=str(res.id), path=res.path, result=res.result, score=res.score
                    )
                    res_el.text = res.message
        return element

    def serve_file(self, path: str) -> bytes | None:
        """Return the log at an HTTP path of :meth:`files` URLs, or ``None``."""
        parts = [urllib.parse.unquote(p) for p in path.split("?")[0].split("/")]
        # '', 'recipes', R, 'logs', name...  or  '', 'recipes', R, 'tasks', T, 'logs', name...
        with self.lock:
            if len(parts) >= 5 and parts[1] == "recipes" and parts[3] == "logs":
                for job in self.jobs.values():
                    for recipe in job.recipes:
                        if str(recipe.id) == parts[2]:
                            return recipe.files.get("/".join(parts[4:]))
            if len(parts) >= 7 and parts[1] == "recipes" and parts[3] == "tasks" and parts[5] == "logs":
                for job in self.jobs.values():
                    for task in job.tasks:
                        if str(task.id) == parts[4]:
                            return task.files.get("/".join(parts[6:]))
        return None


def _fault(exception: str, message: str) -> xmlrpc.client.Fault:
    # Beaker's XML-RPC controller reports exceptions as "<class 'module.Exception'>:message".
    return xmlrpc.client.Fault(1, f"<class '{exception}'>:{message}")


class _Handler(SimpleXMLRPCRequestHandler):
    rpc_paths = ("/client/", "/RPC2")
    state: HubState

    def _dispatch(self, method: str, params: tuple[Any, ...]) -> Any:
        state: HubState = self.server.state  # type: ignore[attr-defined]
        with state.lock:
            state.calls.append(method)
        cookie = self.headers.get("Cookie", "")
        logged_in = any(f"{COOKIE_NAME}={token}" in cookie for token in state.sessions)
        if method == "auth.login_password":
            username, password = params[0], params[1]
            if (username, password) != (state.username, state.password):
                raise _fault("bkr.server.identity.LoginException", "Invalid username or password")
            token = secrets.token_hex(8)
            state.sessions.add(token)
            self._set_cookie = f"{COOKIE_NAME}={token}; Path=/"
            return username
        if method == "auth.login_oauth2":
            if params[0] != state.access_token:
                raise _fault("bkr.server.identity.LoginException", "Invalid OAuth2 access token")
            token = secrets.token_hex(8)
            state.sessions.add(token)
            self._set_cookie = f"{COOKIE_NAME}={token}; Path=/"
            return state.username
        if method == "auth.who_am_i":
            if not logged_in:
                raise _fault("bkr.server.identity.IdentityFailure", "Not logged in")
            return state.username
        if method == "auth.logout":
            return True
        if method == "jobs.upload":
            return self._upload(state, params[0], logged_in=logged_in)
        if method == "taskactions.task_info":
            return state.task_info(params[0])
        if method == "taskactions.to_xml":
            clone, exclude, logs = (list(params[1:]) + [False, True, True][len(params) - 1 :])[:3]
            return state.to_xml(params[0], bool(clone), bool(exclude), bool(logs))
        if method == "taskactions.files":
            return state.files(params[0])
        if method == "taskactions.stop":
            if not logged_in:
                raise _fault("cherrypy._cperror.HTTPError", "Anonymous access denied")
            taskspec, stop_type, msg = params
            if stop_type != "cancel":
                raise _fault(
                    "bkr.server.bexceptions.BX", f"Invalid stop_type: {stop_type}, must be one of ['cancel']"
                )
            kind, item = state._lookup(taskspec)
            if kind not in ("J", "RS", "T"):
                raise _fault("bkr.server.bexceptions.BX", f"Task type {kind} is not stoppable")
            with state.lock:
                state.cancel_job(state._job_of(item).id, msg)
            return None
        raise xmlrpc.client.Fault(1, f"method '{method}' is not supported")

    def _upload(self, state: HubState, xml: str, *, logged_in: bool) -> str:
        if not logged_in:
            raise _fault("cherrypy._cperror.HTTPError", "Anonymous access denied")
        with state.lock:
            state.offered.append(xml)
        if state.upload_fault is not None:
            raise _fault("bkr.server.bexceptions.BX", state.upload_fault)
        refused = [text for text in state.refuse_containing if text in xml]
        if refused:
            raise _fault("bkr.server.bexceptions.BX", f"Beaker refused the job for '{refused[0]}'")
        with state.lock:
            state.uploads.append(xml)
            # Ids count every job offered, refused ones too (as if the hub had numbered them).
            number = state.first_job_id + len(state.offered) - 1
            try:
                job = state._parse_job(xml, number)
            except ET.ParseError as err:
                raise _fault("bkr.server.bexceptions.BX", f"Failed to import job because of: {err}") from err
            state.jobs[number] = job
        if state.on_upload is not None:
            state.on_upload(job)
        return job.j_id

    def _fail_or_delay(self) -> bool:
        """Apply ``delay_s`` and a pending failure; return whether the request was failed."""
        state: HubState = self.server.state  # type: ignore[attr-defined]
        if state.delay_s > 0:
            time.sleep(state.delay_s)
        mode = state._take_failure()
        if mode is None:
            return False
        if mode == "drop":
            self.close_connection = True
            self.connection.close()
            return True
        self.send_response(503, "Service Unavailable")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def do_POST(self) -> None:
        state: HubState = self.server.state  # type: ignore[attr-defined]
        if state.failure_mode == "gzip-bomb" and state._take_failure() is not None:
            self._send_gzip_bomb()
            return
        if self._fail_or_delay():
            return
        super().do_POST()

    def _send_gzip_bomb(self) -> None:
        """Answer 200 with a gzip reply inflating to 128 MiB (``fail_requests(…, 'gzip-bomb')``)."""
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
        head = b"<?xml version='1.0'?><methodResponse><params><param><value><string>"
        body = [packer.compress(head)]
        chunk = b"A" * (1024 * 1024)
        body += [packer.compress(chunk) for _ in range(128)]
        body.append(packer.compress(b"</string></value></param></params></methodResponse>"))
        body.append(packer.flush())
        data = b"".join(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        state: HubState = self.server.state  # type: ignore[attr-defined]
        with state.lock:
            state.http_gets.append(self.path)
        if self._fail_or_delay():
            return
        data = state.serve_file(self.path)
        if data is None:
            self.send_response(404, "Not Found")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def end_headers(self) -> None:
        cookie = getattr(self, "_set_cookie", None)
        if cookie:
            self.send_header("Set-Cookie", cookie)
            self._set_cookie = None
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ThreadingServer(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True


class FakeBeakerHub:
    """Serve :class:`HubState` on a random port of 127.0.0.1 in a daemon thread (one thread per request)."""

    def __init__(self, username: str, password: str) -> None:
        self.state = HubState(username=username, password=password)
        self._server = _ThreadingServer(
            ("127.0.0.1", 0), requestHandler=_Handler, logRequests=False, allow_none=True
        )
        self._server.state = self.state  # type: ignore[attr-defined]
        self.state.base_url = self.url
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-beaker-hub", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeBeakerHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
