"""The pipeline on Spark (PySpark): export, ingest, replay and metrics for fleets of groups.

DuckDB stays the embedded default; these run the same work over Parquet on a Spark
cluster (or ``local[*]``). See docs/spark.md. Everything but ``export_store`` needs the
``spark`` extra (``pip install 'kstore[spark]'``); pyspark is imported when a function
needs it, so ``import kstore.spark`` works without it.

The way through: ``export_store`` (a store -> Parquet) or ``ingest_dumps`` (recorded
dumps -> Parquet), ``read_log`` (Parquet -> a DataFrame of the log), then
``write_replays`` and ``write_metrics`` (or ``replay_log``, ``metrics_of`` and
``summarise`` for the DataFrames themselves). ``build_session`` makes a session with
kstore's defaults.
"""

from __future__ import annotations

from kstore.spark._export import ExportResult, export_store
from kstore.spark._frames import read_log
from kstore.spark._ingest import IngestResult, ingest_dumps
from kstore.spark._metrics import (
    METRIC_COLUMNS,
    WINDOW_COLUMNS,
    metrics_of,
    summarise,
    write_metrics,
)
from kstore.spark._replay import replay_log, write_replays
from kstore.spark._schema import assignment_schema, event_schema
from kstore.spark._session import build_session

__all__ = [
    "METRIC_COLUMNS",
    "WINDOW_COLUMNS",
    "ExportResult",
    "IngestResult",
    "assignment_schema",
    "build_session",
    "event_schema",
    "export_store",
    "ingest_dumps",
    "metrics_of",
    "read_log",
    "replay_log",
    "summarise",
    "write_metrics",
    "write_replays",
]
