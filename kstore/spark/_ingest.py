"""``kstore spark ingest``: recorded dumps (JSON Lines of events.md) into the log's Parquet form.

Each line goes through ``parse_event``, the validation of ``kstore append``, inside the
Spark tasks; nothing is dropped silently:

- a well-formed event joins the log (``OUT/events``, a folder per cluster: ``LOG_FOLDERS``);
- a malformed line goes to ``OUT/quarantine`` (JSON Lines: ``file``, ``line``,
  ``reason``, ``text``), its reason naming the field as ``kstore append`` would;
- a repeated ``event_id`` is a duplicate: the first occurrence (by file name, then line)
  is kept, the others are counted.

Order: the dumps' files by name, lines in file order, give the log order (``position``:
increasing in that order, not contiguous) and each stream's versions. An event without
``event_id`` gets one derived from its file and line number, so ingesting the same dumps
again yields the same ids. Each file is read whole by one task (``wholetext``): split
very large dumps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore.model.events import EventError, decode_json_line, parse_event
from kstore.spark._export import fresh_folder
from kstore.spark._frames import STREAM_COLUMNS, write_partitioned
from kstore.spark._schema import EVENT_COLUMNS, LogRow, event_schema, events_to_arrow, spark_schema
from kstore.spark._session import fit_partitions

__all__ = ["IngestResult", "ingest_dumps"]


_PARSED = pa.schema(
    [
        *(event_schema().field(name) for name in EVENT_COLUMNS if name != "position"),
        pa.field("file", pa.string()),
        pa.field("line", pa.int64()),
        pa.field("reason", pa.string()),
        pa.field("text", pa.string()),
    ]
)
"""One row per non-blank line: an event (``reason`` NULL) or a quarantined line."""


@dataclass(frozen=True, slots=True)
class IngestResult:
    events: int
    quarantined: int
    duplicates: int


def _parse(number: int, text: str) -> tuple[LogRow | None, str | None]:
    try:
        raw = decode_json_line(text, f"line {number}: ")
    except EventError as exc:
        return None, str(exc)
    try:
        return LogRow(0, 0, parse_event(raw)), None
    except EventError as exc:
        return None, f"line {number}: {exc}"


def _parse_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for file, content in zip(
            batch.column("file").to_pylist(), batch.column("value").to_pylist(), strict=True
        ):
            good: list[LogRow] = []
            good_lines: list[int] = []
            bad: dict[str, list[Any]] = {"line": [], "reason": [], "text": []}
            for number, text in enumerate(content.splitlines(), start=1):
                if not text.strip():
                    continue
                row, reason = _parse(number, text)
                if row is not None:
                    good.append(row)
                    good_lines.append(number)
                else:
                    bad["line"].append(number)
                    bad["reason"].append(reason)
                    bad["text"].append(text)
            events = events_to_arrow(good).drop_columns(["position"])
            events = events.append_column("file", pa.array([file] * len(good), pa.string()))
            events = events.append_column("line", pa.array(good_lines, pa.int64()))
            for name in ("reason", "text"):
                events = events.append_column(name, pa.nulls(len(good), pa.string()))
            yield from events.cast(_PARSED).to_batches()
            size = len(bad["line"])
            quarantined = {name: [None] * size for name in _PARSED.names}
            quarantined |= bad | {"file": [file] * size}
            yield from pa.table(quarantined, schema=_PARSED).to_batches()


def ingest_dumps(spark: Any, dumps: list[str], out: Path) -> IngestResult:
    """Validate, deduplicate and write the events of the ``dumps`` (files or folders)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fresh_folder(out)
    fit_partitions(spark, dumps)
    files = (
        spark.read.option("recursiveFileLookup", "true")
        .text(dumps, wholetext=True)
        .select(F.input_file_name().alias("file"), "value")
    )
    parsed = files.mapInArrow(_parse_files, spark_schema(_PARSED)).persist()
    try:
        bad = parsed.where(F.col("reason").isNotNull())
        bad.select("file", "line", "reason", "text").orderBy("file", "line").write.json(
            str(out / "quarantine")
        )
        good = parsed.where(F.col("reason").isNull())
        first = Window.partitionBy("event_id").orderBy("file", "line")
        unique = good.withColumn("_n", F.row_number().over(first)).where("_n = 1")
        # A global sort, then ids that grow with it: no single-task window over everything.
        ordered = unique.orderBy("file", "line").withColumn(
            "position", F.monotonically_increasing_id() + 1
        )
        ordered = ordered.withColumn(
            "version",
            F.row_number().over(Window.partitionBy(*STREAM_COLUMNS).orderBy("position")),
        )
        ordered = ordered.select(*EVENT_COLUMNS).persist()
        try:
            write_partitioned(ordered, out / "events", ["group_id", "position"])
            kept = ordered.count()
        finally:
            ordered.unpersist()
        return IngestResult(kept, bad.count(), good.count() - kept)
    finally:
        parsed.unpersist()
