"""Say what a VSperf results directory is: its name, its result CSVs, how to find and fingerprint it.

VSperf (``vsperf`` ``main()``, ``testcases/testcase.py``) writes one ``results_<%Y-%m-%d_%H-%M-%S>``
directory per run holding ``result_<i>_<test>_<deployment>.csv`` per test (no ``<i>_`` before
Fraser, opnfv-6.0.0), with ``.md``/``.rst`` reports and logs beside them. ``ovsperf-lab`` writes
the same layout. A delivery (what reaches the collector) holds one or more such directories, or
the CSVs directly, plus ``ovsperf-metadata.json`` (:mod:`ovsperf_common.metadata`).

Standard library only, Python ≥ 3.9 (runs on the lab hosts):
``python3 -m ovsperf_common.resultdir csvs DIR`` prints the result CSVs of one results directory,
``python3 -m ovsperf_common.resultdir dirs ROOT`` the results directories below ``ROOT``,
``python3 -m ovsperf_common.resultdir name INDEX TEST DEPLOYMENT`` the CSV name VSperf gives a test.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ovsperf_common.metadata import METADATA_FILE
from ovsperf_common.runner import run_command

RESULTS_DIR_RE = re.compile(r"\Aresults_\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}\Z")
"""VSperf ``results_<%Y-%m-%d_%H-%M-%S>`` directory name (``vsperf`` ``main()``)."""

RESULT_CSV_RE = re.compile(r"^result_(?:(\d+)_)?(.+)_([a-z0-9]+)\.csv$")
"""``result_[<idx>_]<test>_<deployment>.csv``; the index is absent before Fraser (opnfv-6.0.0)."""

MAX_SEARCH_DEPTH = 3
"""How deep below a delivery results directories are looked for [levels]."""

MAX_DELIVERY_ENTRIES = 200_000
"""Most entries (files, directories) a delivery may hold [1]: ``process-ci-results`` rejects a
larger one rather than scan it for ever, ``ovsperf-beaker`` refuses a larger results tarball."""


@dataclass(frozen=True)
class ResultCsvName:
    """The parts of a VSperf result CSV's file name."""

    index: int | None
    """VSperf's test index ``<i>`` [1]; ``None`` in pre-Fraser names."""
    test: str
    """Test name, e.g. ``'phy2phy_tput'``."""
    deployment: str
    """Deployment, e.g. ``'p2p'``, ``'pvp'``."""


def result_csv_name(test: str, deployment: str, index: int | None = 0) -> str:
    """Return VSperf's result CSV name for a test (``testcases/testcase.py`` ``_output_file``).

    :raises ValueError: when ``test`` or ``deployment`` would not parse back (empty, a ``/``, or a
        deployment that is not lower-case letters and digits), or ``index`` is negative.
    """
    name = f"result_{test}_{deployment}.csv" if index is None else f"result_{index}_{test}_{deployment}.csv"
    parsed = parse_result_csv_name(name)
    if parsed is None or "/" in test or (index is not None and index < 0) or parsed.test != test:
        raise ValueError(
            f"Test {test!r} / deployment {deployment!r} / index {index!r} give no valid CSV name."
        )
    return name


def parse_result_csv_name(name: str) -> ResultCsvName | None:
    """Return the parts of a result CSV's file name, or ``None`` when ``name`` is not one."""
    match = RESULT_CSV_RE.match(name)
    if match is None:
        return None
    index = int(match.group(1)) if match.group(1) is not None else None
    return ResultCsvName(index=index, test=match.group(2), deployment=match.group(3))


def is_result_csv(name: str) -> bool:
    """Return whether a file name is a VSperf result CSV's."""
    return RESULT_CSV_RE.match(name) is not None


def result_csvs(results_dir: Path) -> tuple[Path, ...]:
    """Return the result CSVs directly in ``results_dir`` (regular files, no symlinks), sorted.

    :raises OSError: when the directory cannot be listed.
    """
    return tuple(
        sorted(
            entry
            for entry in Path(results_dir).iterdir()
            if is_result_csv(entry.name) and entry.is_file() and not entry.is_symlink()
        )
    )


def is_results_dir(path: Path) -> bool:
    """Return whether ``path`` is a results directory: named ``results_<timestamp>`` or holding a result CSV.

    :raises OSError: when it cannot be listed.
    """
    path = Path(path)
    return bool(RESULTS_DIR_RE.match(path.name)) or any(is_result_csv(n) for n in os.listdir(path))


@dataclass(frozen=True)
class Discovery:
    """What :func:`find_results_dirs` found below a root."""

    dirs: tuple[Path, ...]
    """Results directories, sorted by path; empty when there is none."""
    skipped_links: tuple[Path, ...]
    """Symbolic links named like a results directory or a CSV, not followed."""


def find_results_dirs(root: Path, *, max_depth: int = MAX_SEARCH_DEPTH) -> Discovery:
    """Return the results directories at ``root``: itself when it is one, else the ones below it.

    ``root`` is one when :func:`is_results_dir` says so (a symlink given as ``root`` is followed).
    Otherwise results directories (named ``results_<timestamp>``, or holding a result CSV — a
    ``results_<timestamp>`` directory without CSV is a run whose tests all failed, and is kept so
    that its logs can say why) are looked for at most ``max_depth`` levels deep, skipping hidden
    directories and not following symbolic links (those named like a results directory are
    reported in ``skipped_links``); a results directory is not searched further.

    :raises FileNotFoundError: when ``root`` does not exist.
    :raises NotADirectoryError: when ``root`` is not a directory.
    :raises OSError: when ``root`` cannot be listed.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"'{root}': no such results directory.")
    if not root.is_dir():
        raise NotADirectoryError(
            f"'{root}': not a directory; expected a VSperf 'results_<timestamp>' directory."
        )
    if is_results_dir(root):
        return Discovery(dirs=(root,), skipped_links=())
    found: list[Path] = []
    links: list[Path] = []
    root_depth = len(root.parts)
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(current)
        names = sorted(d for d in dirnames if not d.startswith("."))
        links += [here / d for d in names if (here / d).is_symlink() and RESULTS_DIR_RE.match(d)]
        if here != root and (RESULTS_DIR_RE.match(here.name) or any(is_result_csv(f) for f in filenames)):
            found.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = [] if len(here.parts) - root_depth >= max_depth else names
    return Discovery(dirs=tuple(sorted(found)), skipped_links=tuple(sorted(links)))


def fingerprint(root: Path) -> str:
    """Return a SHA-256 (hex) identifying the results at ``root`` (a delivery or one results directory).

    Covers every file's relative path and size, and the bytes of the metadata file and of the
    result CSVs; symbolic links count by their target text and are not followed. Two trees with
    the same fingerprint hold the same results (a delivery repeated after a crash, a results
    directory given twice under another name); a different one is a different run.

    :raises OSError: when a file cannot be read.
    """
    digest = hashlib.sha256()
    root = Path(root)
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(current)
        for name in sorted(filenames) + sorted(d for d in dirnames if (here / d).is_symlink()):
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"L {rel} -> {os.readlink(path)}\n".encode())
                continue
            digest.update(f"F {rel} {path.stat().st_size}\n".encode())
            if (name == METADATA_FILE or is_result_csv(name)) and path.is_file():  # a FIFO is not read
                with path.open("rb") as handle:  # in chunks: a 3 GiB CSV costs no memory
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """Print result CSVs (``csvs DIR``), results directories (``dirs ROOT``), or a CSV name (``name``).

    :returns: 0 when something was found, 3 when nothing was, 2 on an error.
    """
    return run_command(_parser(), _run, argv)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m ovsperf_common.resultdir",
        description="List the result CSVs of a results directory, or the results directories below ROOT.",
        epilog="exit codes: 0 found; 2 error; 3 nothing found. Paths with a newline are refused (exit 2).",
    )
    parser.add_argument("what", choices=("csvs", "dirs", "name"))
    parser.add_argument("path", help="DIR or ROOT; for 'name': the test index")
    parser.add_argument("test", nargs="?", help="for 'name': the test name")
    parser.add_argument("deployment", nargs="?", help="for 'name': the deployment")
    return parser


def _run(args: argparse.Namespace) -> int:
    if args.what == "name":
        try:
            print(result_csv_name(str(args.test), str(args.deployment), int(args.path)))
        except ValueError as err:
            print(f"ovsperf_common.resultdir: error: {err}", file=sys.stderr)
            return 2
        return 0
    args.path = Path(args.path)
    try:
        found = result_csvs(args.path) if args.what == "csvs" else find_results_dirs(args.path).dirs
    except OSError as err:
        print(f"ovsperf_common.resultdir: error: {err}", file=sys.stderr)
        return 2
    if any("\n" in str(p) for p in found):
        print("ovsperf_common.resultdir: error: a path holds a newline; not printed.", file=sys.stderr)
        return 2
    for path in found:
        print(path)
    return 0 if found else 3


if __name__ == "__main__":
    sys.exit(main())
