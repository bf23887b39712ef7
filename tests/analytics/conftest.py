"""Fixtures of the analytics tests: a fresh store file per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstore.store.log import Store
from tests.store._stores import initialised_store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return initialised_store(tmp_path / "kstore.duckdb")
