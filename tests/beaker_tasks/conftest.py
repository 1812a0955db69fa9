from __future__ import annotations

from pathlib import Path

import pytest

from .shims import Lab


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    """A fake lab machine with restraint's commands (recording shims)."""
    return Lab(tmp_path / "lab")
