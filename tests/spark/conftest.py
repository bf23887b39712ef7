"""Spark test fixtures: one local session per test process, shared by the modules.

A session takes 6-9 s to start and its first jobs pay the JVM's warm-up (a minute on a
busy machine), so it is made once; the Spark modules share an xdist group, so they run
in the same worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kstore.spark._session import C1_ONLY, build_session

SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    # C1 only, as ``fit_jvm`` has a small local command do: the tests' jobs are small and
    # many, and C2's compiling of them took a core from the other worker.
    "spark.driver.extraJavaOptions": C1_ONLY,
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = build_session("local[2]", SETTINGS, app_name="kstore-tests")
    yield session
    session.stop()
