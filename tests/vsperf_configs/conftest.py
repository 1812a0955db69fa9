from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "vsperf_configs" / "inventory.example.yaml"


@pytest.fixture
def example_inventory(tmp_path: Path) -> Path:
    """A copy of the shipped example inventory, safe to edit."""
    path = tmp_path / "inventory.yaml"
    shutil.copy(EXAMPLE, path)
    return path
