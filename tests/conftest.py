"""Shared test fixtures: the repo root on sys.path and paths to the bundled samples."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return ROOT / "sample_data"
