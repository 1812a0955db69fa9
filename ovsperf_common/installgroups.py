"""Name the install group (pyproject extra) that provides a missing third-party module.

A role installs ``ovsperf[<group>]`` (pyproject.toml ``[project.optional-dependencies]``); when a
command's lazy import fails because that group is missing, :mod:`ovsperf_common.runner` turns the
:class:`ModuleNotFoundError` into one line from :func:`install_hint` and exit 2 (otava's
``_optional.py``). The tables are checked against pyproject.toml by ``tests/test_packaging.py``:
every third-party module the project imports is in :data:`GROUPS_OF_MODULE` with exactly the
groups that install it, and every console script is in :data:`GROUP_OF_COMMAND`.
"""

from __future__ import annotations

from collections.abc import Mapping

BASE = ""
"""The group name of the base install (``pip install ovsperf``: PyYAML only)."""

GROUP_OF_COMMAND: Mapping[str, str] = {
    "vsperf-config": BASE,
    "jobcreator": "beaker",
    "ovsperf-beaker": "beaker",
    "generate-report": "report",
    "process-ci-results": "report",
    "ovsperf-results": "report",
    "ovsperf-lab": "lab",
    "ovsperf-koji": "koji",
    "ovsperf-remote": "remote",
    "ovsperf-vlab": "vlab",
}
"""Console script (its ``prog``) → the install group of its role (:data:`BASE`: the base install)."""

GROUPS_OF_MODULE: Mapping[str, tuple[str, ...]] = {
    "yaml": (BASE,),
    "MLRsearch": ("lab", "labhost"),
    "alembic": ("report",),
    "bkr": ("beaker", "koji"),
    "gssapi": ("beaker", "koji"),
    "hdrh": ("lab", "labhost", "report"),
    "jinja2": ("beaker", "koji", "lab", "labhost", "remote", "report"),
    "jumpavg": ("report",),
    "koji": ("koji", "lab"),
    "lxml": ("beaker", "koji"),
    "matplotlib": ("lab", "labhost", "report"),
    "numpy": ("report",),
    "paramiko": ("remote",),
    "plotly": ("report",),
    "psutil": ("vlab",),
    # Loaded by SQLAlchemy for a postgresql:// store URL, never imported by name.
    "psycopg": ("postgresql",),
    "requests": ("koji", "lab"),
    "rich": ("lab", "labhost"),
    "scipy": ("lab", "labhost", "report"),
    "sqlalchemy": ("report",),
    "tenacity": ("beaker", "koji", "lab"),
}
"""Top-level import name → the install groups that install it (directly or through an included group)."""


def pip_command(group: str) -> str:
    """Return the shell command that installs ``group``: ``pip install 'ovsperf[lab]'``."""
    return "pip install ovsperf" if group == BASE else f"pip install 'ovsperf[{group}]'"


def install_hint(module: str | None, prog: str) -> str | None:
    """Return one sentence naming the install group that provides ``module``, or ``None``.

    :param module: the dotted name a :class:`ModuleNotFoundError` carries (its ``name``).
    :param prog: the command's name; its own group is named when it provides the module.
    :returns: e.g. ``"the Python module 'matplotlib' is not installed: pip install 'ovsperf[lab]'."``;
        ``None`` when ``module`` is no third-party module of :data:`GROUPS_OF_MODULE` (a bug then).
    """
    top = (module or "").split(".")[0]
    groups = GROUPS_OF_MODULE.get(top)
    if groups is None:
        return None
    own = GROUP_OF_COMMAND.get(prog)
    chosen = (own,) if own is not None and own in groups else groups
    commands = " or ".join(pip_command(g) for g in chosen)
    return f"the Python module '{top}' is not installed: {commands}."
