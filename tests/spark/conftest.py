"""Spark test fixtures: one local session per test module (a session takes 6-9 s to start)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kstore.spark._session import build_session

SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
}


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = build_session("local[2]", SETTINGS, app_name="kstore-tests")
    yield session
    session.stop()
