"""The metrics contract run against DuckDB's ``metrics`` query over a store."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kstore.analytics import run_query
from kstore.model import Event
from tests.spark.metrics_contract import MetricsContract
from tests.store._stores import initialised_store


class TestDuckDBMetrics(MetricsContract):
    # A store a history: cheap enough for the odd histories that found the
    # AssignmentNotTakenUp case only now and then at three.
    odd_examples = 40

    def engine_metrics(self, events: list[Event]) -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            store = initialised_store(Path(tmp) / "kstore.duckdb")
            store.append(events)
            return run_query(store, "metrics", {}).records()
