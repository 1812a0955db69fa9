"""Check, inside a venv, that console-script entry points and everything they can import are importable.

Run with the venv's own interpreter (standard library only)::

    <venv>/bin/python importcheck.py --package ciflow --package resultstore ... ciflow.cli:main ...

For each ``module:function``: import the module, get the function (it must be callable), then walk
the project's own modules it reaches by import (``--package`` names the project's top-level
packages; imports inside functions count, so a lazy import is not missed) and import every module
they name, project or third-party. Imports guarded by ``if TYPE_CHECKING:`` or by a ``try`` with an
``except ImportError`` handler are optional and skipped. Prints JSON ``{entry point: [problem]}``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import sys
import traceback
import types


def _optional_nodes(tree: ast.AST) -> set[int]:
    """Return ids of import nodes that are optional (TYPE_CHECKING blocks, try/except ImportError)."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        body: list[ast.stmt] = []
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            body = node.body
        elif isinstance(node, ast.Try) and any(
            handler.type is not None
            and ("ImportError" in ast.dump(handler.type) or "ModuleNotFound" in ast.dump(handler.type))
            for handler in node.handlers
        ):
            body = node.body
        for stmt in body:
            optional.update(id(sub) for sub in ast.walk(stmt))
    return optional


def imported_names(module: str) -> list[tuple[str, str | None]]:
    """Return ``(module, attribute or None)`` for every non-optional import in ``module``'s source."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return []
    with open(spec.origin, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=spec.origin)
    optional = _optional_nodes(tree)
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    names: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            if base == "__future__":
                continue
            names.extend((base, alias.name) for alias in node.names if alias.name != "*")
    return names


def check(entry_point: str, packages: set[str]) -> list[str]:
    """Return the problems of one ``module:function`` entry point (empty when all imports work)."""
    module_name, _, function = entry_point.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any failure to import is the finding
        return [f"import {module_name}: {type(err).__name__}: {err}"]
    if not callable(getattr(module, function, None)):
        return [f"{module_name} has no callable '{function}'"]
    problems: list[str] = []
    seen: set[str] = set()
    queue = [module_name]
    while queue:
        current = queue.pop()
        if current in seen:
            continue
        seen.add(current)
        for name, attribute in imported_names(current):
            try:
                imported = importlib.import_module(name)
                if attribute is not None and not hasattr(imported, attribute):
                    importlib.import_module(f"{name}.{attribute}")
            except Exception as err:  # noqa: BLE001 - any failure to import is the finding
                where = f"{name}.{attribute}" if attribute else name
                line = traceback.format_exception_only(type(err), err)[-1].strip()
                problems.append(f"{current}: import {where}: {line}")
                continue
            reached = [imported]
            if attribute is not None and isinstance(getattr(imported, attribute, None), types.ModuleType):
                reached.append(getattr(imported, attribute))
            queue.extend(m.__name__ for m in reached if m.__name__.split(".")[0] in packages)
    return problems


def main() -> int:
    """Check the entry points given on the command line; print the JSON report; exit 0."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", action="append", default=[], help="a top-level package of the project")
    parser.add_argument("entry_points", nargs="+", metavar="MODULE:FUNCTION")
    args = parser.parse_args()
    report = {ep: check(ep, set(args.package)) for ep in args.entry_points}
    json.dump(report, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
