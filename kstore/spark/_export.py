"""``kstore export``: the store's log and assignment projection as partitioned Parquet.

Layout under the output folder (Hive style, readable by Spark and DuckDB alike)::

    events/cluster=<c>/group_id=<g>/part-*.parquet       the log (EVENT_COLUMNS)
    assignments/cluster=<c>/group_id=<g>/part-*.parquet  kstore_assignments

Partition values are percent-encoded in the path (``a/b`` -> ``a%2Fb``); both engines
decode them. Within a file rows are in log order. The events are read a page at a time,
each page in a read window of its own, so writers go on in between; the assignments are
the rows of ``kstore_assignments`` of those events, read in one window.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from kstore._errors import KstoreError, UsageError
from kstore.spark._schema import (
    assignment_schema,
    event_schema,
    stored_to_arrow,
)
from kstore.store.log import Store

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
        preserve_order=True,
    )


class _Export:
    """One export's reads, counting what went past."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.events = 0
        self.last_position = 0
        self.assignments = 0

    def write(self, batches: Iterator[pa.RecordBatch], schema: pa.Schema, out: Path) -> None:
        """``write_parquet``, raising a failed read only once Arrow's writer has stopped
        (raised inside its threads, the process could abort on its way out)."""
        failed: list[KstoreError] = []

        def guarded() -> Iterator[pa.RecordBatch]:
            try:
                yield from batches
            except KstoreError as exc:
                failed.append(exc)

        write_parquet(guarded(), schema, out)
        if failed:
            raise failed[0]

    def event_batches(self) -> Iterator[pa.RecordBatch]:
        for page in self.store.event_pages(_BATCH):
            self.events += page.num_rows
            self.last_position = page.column("position")[-1].as_py()
            yield from stored_to_arrow(page).to_batches()

    def assignment_batches(self) -> Iterator[pa.RecordBatch]:
        """The exported events' rows of ``kstore_assignments``."""
        for batch in self.store.assignment_batches(self.last_position, _BATCH):
            self.assignments += batch.num_rows
            yield batch

    def streams(self) -> int:
        found = self.store.query(
            "SELECT count(*) FROM (SELECT DISTINCT cluster, group_id, timeline "
            "FROM kstore_events WHERE position <= ?)",
            [self.last_position],
        )
        return int(found.rows[0][0])


def export_store(store: Store, out: Path) -> ExportResult:
    """Write the store's log and assignment projection under ``out`` (a new folder).
    Stopped part way (Ctrl-C, a full disk), what it wrote is removed: a log without its
    assignments, or without some groups, read as whole to ``spark`` (a user trial found
    one left by a Ctrl-C, and ``export`` again then refused the folder)."""
    fresh_folder(out)
    made = not out.exists()
    try:
        export = _Export(store)
        export.write(export.event_batches(), event_schema(), out / "events")
        export.write(export.assignment_batches(), assignment_schema(), out / "assignments")
        streams = export.streams()
    except BaseException:
        for part in ("events", "assignments"):
            shutil.rmtree(out / part, ignore_errors=True)
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise
    return ExportResult(export.events, export.assignments, streams)
