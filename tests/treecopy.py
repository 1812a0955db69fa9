"""Copy this checkout's files (tracked or new, not ignored) into a directory, as a clean clone has them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_tree_files(destination: Path) -> Path:
    """Copy every file git tracks or would track (``--others --exclude-standard``) into ``destination``.

    :returns: ``destination``, holding the same relative paths as the checkout.
    """
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b"\0")
    for raw in files:
        rel = raw.decode()
        if rel and (ROOT / rel).is_file():
            (destination / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, destination / rel)
    return destination
