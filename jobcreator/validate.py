"""Validate job XML against Beaker's own ``beaker-job.rng`` and our semantic rules; fail hard.

``bkr job-submit`` only *warns* when a job does not validate and submits it anyway, and the hub's
``jobs.upload`` does not run the schema at all (reference/beaker.md §1.3, §2.2). Here an invalid
job is an error, reported with the first specific message, its line and its XPath.

The schema is loaded from the installed ``beaker-common`` package
(``bkr/common/schema/beaker-job.rng``), never from a copy, so it follows the installed Beaker.
After the schema, :func:`check_semantics` enforces what RELAX NG cannot express
(reference/beaker.md §6.2): one recipe set with exactly two host recipes and at most one guest,
roles that are valid environment-variable names, each host pinned to a distinct hostname, the
virt tasks on the host of a guest (install before start, never inside the guest), task names
that are fetched or known to the task library, integer reservation durations, parameter names
that are environment-variable names, no secrets in parameters or URLs, and every
``perf_synchronization`` wait matched by a ``set`` of the same state on the named peer.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import urllib.parse
from typing import Final, cast

from lxml import etree

from jobcreator.errors import JobValidationError

SCHEMA_PACKAGE: Final = "bkr.common"
SCHEMA_RESOURCE: Final = "schema/beaker-job.rng"

LIBRARY_TASKS: Final = frozenset(
    {
        "/distribution/check-install",
        "/distribution/install",
        "/distribution/reservesys",
        "/distribution/utils/dummy",
        "/distribution/command",
        "/distribution/inventory",
        "/distribution/virt/install",
        "/distribution/virt/start",
        "/distribution/virt/stop",
    }
)
"""Standard tasks of beaker-core-tasks we may use without ``<fetch>`` (reference/beaker.md §4.1)."""

OVSPERF_TASKS: Final = frozenset(
    f"/ovsperf/{name}"
    for name in (
        "setup_dpdk",
        "build_moongen",
        "perf_synchronization",
        "vsperf_test",
        "sleeper",
        "build_trafficgen",
        "ovsperf_test",
        "setup_trex",
    )
)
"""Our tasks (``beaker_tasks/<name>``), uploaded to the task library or fetched."""

KNOWN_TASKS: Final = LIBRARY_TASKS | OVSPERF_TASKS

VIRT_INSTALL: Final = "/distribution/virt/install"
VIRT_START: Final = "/distribution/virt/start"
SYNC_TASK: Final = "/ovsperf/perf_synchronization"

_IDENTIFIER_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_NAME_RE: Final = re.compile(
    r"PASSW(OR)?D|PASSWD|SECRET|TOKEN|PRIVATE|CREDENTIAL|API_?KEY|AUTH", re.IGNORECASE
)
_SECRET_VALUE_RE: Final = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----|\bPRIVATE KEY\b")
_SCHEMA_ERROR_RANK: Final = {
    "RELAXNG_ERR_INVALIDATTR": 0,
    "RELAXNG_ERR_INTEREXTRA": 2,
    "RELAXNG_ERR_INTERSEQ": 3,
    "RELAXNG_ERR_CONTENTVALID": 4,
}
"""Preference among libxml2 RELAX NG errors: a bad attribute first, then any specific error (1),
then the interleave cascade messages that only echo a deeper problem."""


@functools.lru_cache(maxsize=1)
def load_schema() -> etree.RelaxNG:
    """Return Beaker's job schema, parsed once per process.

    :raises JobValidationError: when beaker-common is not installed or its schema is unreadable.
    """
    try:
        resource = importlib.resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_RESOURCE)
        with resource.open("rb") as handle:
            return etree.RelaxNG(etree.parse(handle))
    except (ModuleNotFoundError, OSError, etree.LxmlError) as err:
        raise JobValidationError(
            f"cannot load Beaker's schema '{SCHEMA_PACKAGE}/{SCHEMA_RESOURCE}' ({err}); "
            "install the 'beaker-common' package."
        ) from err


def parse_job(xml: str) -> etree._ElementTree:
    """Parse job XML text (entities and network access off).

    :raises JobValidationError: with the line when the text is not well-formed XML.
    """
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=False)
    try:
        root = etree.fromstring(xml.encode("utf-8"), parser)
    except etree.XMLSyntaxError as err:
        raise JobValidationError(f"not well-formed XML: {err.msg}", line=err.lineno) from err
    return etree.ElementTree(root)


def check_schema(doc: etree._ElementTree) -> None:
    """Validate ``doc`` against ``beaker-job.rng``.

    :raises JobValidationError: with the most specific libxml2 message, its line and path.
    """
    schema = load_schema()
    if schema.validate(doc):
        return
    entries = list(schema.error_log)
    # libxml2 reports a cascade (the real error, then "failed to validate content" for every
    # ancestor). Locate the deepest element with a line; among the messages about it (and the
    # unlocated ones) take the most specific.
    located = [e for e in entries if e.line > 0 and e.path]
    deepest = max(located, key=lambda e: e.path.count("/"), default=None)
    candidates = [e for e in entries if deepest is None or e.path in (deepest.path, None) or e.line <= 0]
    chosen = min(candidates or entries, key=lambda e: _SCHEMA_ERROR_RANK.get(e.type_name, 1))
    message = chosen.message
    if deepest is not None and _SCHEMA_ERROR_RANK.get(chosen.type_name, 1) >= 3:
        element = deepest.path.rsplit("/", 1)[-1].split("[")[0]
        message = f"element '{element}' is unknown, misplaced or incomplete here ({message})"
    line: int | None = deepest.line if deepest is not None else None
    raise JobValidationError(f"{message} (beaker-job.rng)", line=line, path=deepest.path if deepest else None)


def _fail(doc: etree._ElementTree, element: etree._Element, message: str) -> JobValidationError:
    line = cast("int | None", element.sourceline)  # lxml-stubs declare it as `...`
    return JobValidationError(message, line=line, path=doc.getpath(element))


def _params(task: etree._Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in task.iterfind("params/param")}


def _check_url_has_no_credentials(doc: etree._ElementTree, element: etree._Element) -> None:
    parsed = urllib.parse.urlsplit(element.get("url", ""))
    if parsed.username is not None or parsed.password is not None:
        raise _fail(doc, element, f"<{element.tag}> URL carries credentials; secrets never go in a job.")


def _check_task(doc: etree._ElementTree, task: etree._Element) -> None:
    name = task.get("name")
    if task.find("fetch") is None and name not in KNOWN_TASKS:
        raise _fail(doc, task, f"task '{name}' is neither fetched nor a known library task.")
    role = task.get("role")
    if role is not None and not _IDENTIFIER_RE.match(role):
        raise _fail(doc, task, f"task role '{role}' is not an environment variable name.")
    seen: set[str] = set()
    for param in task.iterfind("params/param"):
        pname, value = param.get("name", ""), param.get("value", "")
        if not _IDENTIFIER_RE.match(pname):
            raise _fail(doc, param, f"parameter name '{pname}' is not an environment variable name.")
        if pname in seen:
            raise _fail(doc, param, f"parameter '{pname}' is given twice.")
        seen.add(pname)
        if _SECRET_NAME_RE.search(pname) or _SECRET_VALUE_RE.search(value):
            raise _fail(doc, param, f"parameter '{pname}' looks like a secret; secrets never go in a job.")
    for fetch in task.iterfind("fetch"):
        _check_url_has_no_credentials(doc, fetch)


def _task_names(recipe: etree._Element) -> list[str]:
    return [t.get("name", "") for t in recipe.iterfind("task")]


def check_semantics(doc: etree._ElementTree) -> None:
    """Enforce the rules the schema cannot express (see the module docstring).

    :param doc: a job that already passed :func:`check_schema`.
    :raises JobValidationError: naming the first violated rule, its line and path.
    """
    job = doc.getroot()
    recipe_sets = job.findall("recipeSet")
    if len(recipe_sets) != 1:
        raise _fail(doc, job, f"expected exactly one <recipeSet>, found {len(recipe_sets)}.")
    recipes = recipe_sets[0].findall("recipe")
    if len(recipes) != 2:
        raise _fail(doc, recipe_sets[0], f"expected 2 host recipes (TG and DUT), found {len(recipes)}.")
    guests = job.findall(".//guestrecipe")
    if len(guests) > 1:
        raise _fail(doc, guests[1], f"expected at most one <guestrecipe>, found {len(guests)}.")

    roles: dict[str, etree._Element] = {}
    hosts: dict[str, etree._Element] = {}
    for recipe in recipes:
        role = recipe.get("role", "")
        if not _IDENTIFIER_RE.match(role):
            raise _fail(doc, recipe, f"recipe role '{role}' is not an environment variable name.")
        if role in roles:
            raise _fail(doc, recipe, f"two recipes have the role '{role}'.")
        roles[role] = recipe
        pins = recipe.findall("hostRequires//hostname[@op='=']")
        if len(pins) != 1 or recipe.find("hostRequires").get("force") is not None:  # type: ignore[union-attr]
            raise _fail(doc, recipe, "each host recipe must be pinned by exactly one <hostname op='='/>.")
        hostname = pins[0].get("value", "").lower()
        if hostname in hosts:
            raise _fail(doc, pins[0], f"both recipes are pinned to '{hostname}'.")
        hosts[hostname] = recipe

        names = _task_names(recipe)
        if recipe.find("guestrecipe") is not None:
            if VIRT_INSTALL not in names or VIRT_START not in names:
                raise _fail(doc, recipe, f"a recipe with a guest needs '{VIRT_INSTALL}' and '{VIRT_START}'.")
            if names.index(VIRT_INSTALL) > names.index(VIRT_START):
                raise _fail(doc, recipe, f"'{VIRT_INSTALL}' must come before '{VIRT_START}'.")
        elif VIRT_INSTALL in names or VIRT_START in names:
            raise _fail(doc, recipe, "virt tasks in a recipe without a <guestrecipe>.")

    for guest in guests:
        for task in guest.iterfind("task"):
            if task.get("name", "").startswith("/distribution/virt/"):
                raise _fail(doc, task, "virt tasks belong in the host recipe, never in the guest.")

    for task in job.iter("task"):
        _check_task(doc, task)
    for repo in job.iter("repo"):
        _check_url_has_no_credentials(doc, repo)
    for reservesys in job.iter("reservesys"):
        duration = reservesys.get("duration")
        if duration is not None and not (duration.isdigit() and int(duration) > 0):
            raise _fail(doc, reservesys, f"reservation duration '{duration}' is not a positive integer [s].")

    _check_sync(doc, hosts)


def _check_sync(doc: etree._ElementTree, hosts: dict[str, etree._Element]) -> None:
    """Check every sync wait names a peer host that sets the awaited state."""
    sets_by_host = {
        host: {
            _params(t).get("SYNC_STATE")
            for t in recipe.iterfind("task")
            if t.get("name") == SYNC_TASK and _params(t).get("SYNC_ACTION") == "set"
        }
        for host, recipe in hosts.items()
    }
    for host, recipe in hosts.items():
        for task in recipe.iterfind("task"):
            if task.get("name") != SYNC_TASK:
                continue
            params = _params(task)
            action, state = params.get("SYNC_ACTION"), params.get("SYNC_STATE")
            if action not in ("set", "wait") or not state:
                raise _fail(doc, task, "perf_synchronization needs SYNC_ACTION set|wait and SYNC_STATE.")
            if action == "set":
                continue
            peer = params.get("SYNC_PEER", "").lower()
            if peer == host or peer not in hosts:
                raise _fail(doc, task, f"SYNC_PEER '{peer}' is not the other host of the job.")
            if state not in sets_by_host[peer]:
                raise _fail(doc, task, f"'{peer}' never sets '{state}', so this wait cannot end.")
            timeout = params.get("SYNC_TIMEOUT_S", "")
            if not (timeout.isdigit() and int(timeout) > 0):
                raise _fail(doc, task, f"SYNC_TIMEOUT_S '{timeout}' is not a positive integer [s].")


def validate_job(xml: str) -> etree._ElementTree:
    """Check ``xml`` is well-formed, valid against ``beaker-job.rng`` and semantically sound.

    :returns: the parsed job.
    :raises JobValidationError: on the first problem, with its line and XPath.
    """
    doc = parse_job(xml)
    check_schema(doc)
    check_semantics(doc)
    return doc
