"""Fixtures of the analytics tests: a fresh store file per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstore.store.log import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    created = Store(tmp_path / "kstore.duckdb")
    created.init()
    return created
