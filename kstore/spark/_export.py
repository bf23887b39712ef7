"""``kstore export``: the store's log and assignment projection as partitioned Parquet.

Layout under the output folder (Hive style, readable by Spark and DuckDB alike)::

    events/cluster=<c>/group_id=<g>/part-*.parquet       the log (EVENT_COLUMNS)
    assignments/cluster=<c>/group_id=<g>/part-*.parquet  kstore_assignments

Partition values are percent-encoded in the path (``a/b`` -> ``a%2Fb``); both engines
decode them. Within a file rows are in log order. The assignment rows are made by the
store's own ``Projector`` as the events stream past, so they equal ``kstore_assignments``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from kstore._errors import UsageError
from kstore.spark._schema import (
    ASSIGNMENT_COLUMNS,
    LogRow,
    assignment_schema,
    event_schema,
    events_to_arrow,
)
from kstore.store.events import StreamId
from kstore.store.log import Store
from kstore.store.projections import Projector, StreamHead

__all__ = ["PARTITION_COLUMNS", "ExportResult", "export_store", "fresh_folder", "write_parquet"]

PARTITION_COLUMNS = ["cluster", "group_id"]
_BATCH = 50_000


@dataclass(frozen=True, slots=True)
class ExportResult:
    events: int
    assignments: int
    streams: int


def fresh_folder(path: Path) -> None:
    """Refuse to write into a folder that holds something already (nothing is overwritten)."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"{path}: exists and is not empty; choose a new output folder")


def write_parquet(batches: Iterator[pa.RecordBatch], schema: pa.Schema, out: Path) -> None:
    """Batches as Hive-partitioned Parquet by cluster and group under ``out``."""
    ds.write_dataset(
        batches,
        out,
        schema=schema,
        format="parquet",
        partitioning=PARTITION_COLUMNS,
        partitioning_flavor="hive",
        basename_template="part-{i}.parquet",
        max_partitions=1 << 30,
        max_open_files=512,
        existing_data_behavior="overwrite_or_ignore",
    )


class _Collector:
    def __init__(self) -> None:
        self.heads: dict[StreamId, StreamHead] = {}
        self.rows: list[LogRow] = []
        self.projector = Projector()
        self.assignments: list[pa.Table] = []
        self.events = 0

    def event_batches(self, store: Store) -> Iterator[pa.RecordBatch]:
        for stored in store.events():
            event = stored.event
            head = self.heads.setdefault(event.stream, StreamHead())
            self.projector.feed(head, event, event.at.astimezone(UTC).replace(tzinfo=None))
            self.rows.append(LogRow(stored.position, stored.version, event))
            if len(self.rows) >= _BATCH:
                yield from self._flush_events()
        yield from self._flush_events()

    def _flush_events(self) -> Iterator[pa.RecordBatch]:
        if self.rows:
            self.events += len(self.rows)
            yield from events_to_arrow(self.rows).to_batches()
            self.rows = []
            # Arrow holds the projection's rows far more compactly than Python lists.
            columns = {name: self.projector.assignments[name] for name in ASSIGNMENT_COLUMNS}
            self.assignments.append(pa.table(columns, schema=assignment_schema()))
            self.projector = Projector()


def export_store(store: Store, out: Path) -> ExportResult:
    """Write the store's log and assignment projection under ``out`` (a new folder)."""
    fresh_folder(out)
    collector = _Collector()
    write_parquet(collector.event_batches(store), event_schema(), out / "events")
    assignments = (
        pa.concat_tables(collector.assignments)
        if collector.assignments
        else assignment_schema().empty_table()
    )
    write_parquet(iter(assignments.to_batches()), assignment_schema(), out / "assignments")
    return ExportResult(collector.events, assignments.num_rows, len(collector.heads))
