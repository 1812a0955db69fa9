"""Name the trend pages' files, link report cells to them, and remember where a reports directory's pages are.

A series page holds one (scenario, test, deployment, frame size, traffic) cell over builds:
``<pages>/series/<name>.html`` (:func:`series_page_name`). ``process-ci-results`` with
``trend_pages: DIR`` writes the pages after each pass and records their place in the reports
directory (``<reports>/.ovsperf-trend-pages.json``, :func:`record_pages`), so that whatever
rewrites a page of that directory later (the overview, ``ovsperf-results verdict|render``) links
the same pages. Links are relative (``os.path.relpath``): they work from ``file://`` and from a
web server that serves the reports and the pages under one root.

Kept apart from the page writer (:mod:`resultstore.trendpages`, which loads Plotly): the overview
and the report re-render import this only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ovsperf_common.atomicio import atomic_write_text
from ovsperf_common.fields import is_safe_name

if TYPE_CHECKING:
    from reporting.api import TrendCell, TrendKey

log = logging.getLogger(__name__)

SERIES_DIR = "series"
"""Directory of the series pages inside the pages directory."""

INDEX_NAME = "index.html"
"""The pages' index (every series, open regressions first)."""

POINTER_NAME = ".ovsperf-trend-pages.json"
"""File in a reports directory naming its trend pages: ``{"pages": "<absolute directory>"}``."""


def series_page_name(scenario: str, test: str, deployment: str, frame_size: int, traffic: str) -> str:
    """Return the file name of a cell's series page; safe on every file system.

    Names from outside (test, deployment, mix) are hashed when the plain name would be unsafe or
    longer than 150 characters.
    """
    base = f"{scenario}__{test}__{deployment}__{frame_size}"
    if traffic:
        base += "__" + traffic.replace(" ", "_").replace("=", "").replace(":", "-").replace("/", "_")
    if is_safe_name(base) and len(base) <= 150:
        return f"{base}.html"
    digest = hashlib.sha256(base.encode("utf-8", "replace")).hexdigest()[:16]
    return f"series-{digest}.html"


def relative_href(target: Path, from_dir: Path) -> str:
    """Return the link from a page in ``from_dir`` to ``target`` (relative, POSIX separators)."""
    return Path(os.path.relpath(Path(target).resolve(), Path(from_dir).resolve())).as_posix()


def link_cells(
    trend: Mapping[TrendKey, TrendCell], *, scenario: str | None, pages_dir: Path, from_dir: Path
) -> dict[TrendKey, TrendCell]:
    """Return ``trend`` with each cell's ``trend_page`` set to its series page under ``pages_dir``.

    :param scenario: the series' scenario (None: those recorded without one, ``-``).
    :param from_dir: the directory of the page that shows the cells (the report directory).
    """
    out = {}
    for key, cell in trend.items():
        test, deployment, frame_size, traffic, _goal = key
        page = (
            Path(pages_dir)
            / SERIES_DIR
            / series_page_name(scenario or "-", test, deployment, frame_size, traffic)
        )
        out[key] = dataclasses.replace(cell, trend_page=relative_href(page, from_dir))
    return out


def record_pages(reports_dir: Path, pages_dir: Path) -> None:
    """Record in ``reports_dir`` that its trend pages are ``pages_dir`` (atomically).

    :raises OSError: when the file cannot be written.
    """
    text = json.dumps({"pages": str(Path(pages_dir).absolute())}) + "\n"
    atomic_write_text(Path(reports_dir) / POINTER_NAME, text)


def recorded_pages(reports_dir: Path) -> Path | None:
    """Return the trend pages directory recorded for ``reports_dir`` when its index exists, else None.

    An unreadable or malformed record is ignored (logged at DEBUG): the pages then go unlinked
    until the next pass records them again.
    """
    pointer = Path(reports_dir) / POINTER_NAME
    try:
        data = json.loads(pointer.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        log.debug("Ignoring '%s': %s", pointer, err)
        return None
    pages = data.get("pages") if isinstance(data, dict) else None
    if not isinstance(pages, str) or not Path(pages).is_absolute():
        log.debug("Ignoring '%s': no absolute 'pages' directory in it.", pointer)
        return None
    directory = Path(pages)
    return directory if (directory / INDEX_NAME).is_file() else None
