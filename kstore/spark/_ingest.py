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
``event_id`` gets one named by its content, as ``kstore append`` gives it, so ingesting
the same dumps again yields the same ids.

Memory does not grow with a file: Spark reads each file in line-aligned splits
(``spark.sql.files.maxPartitionBytes``, 128 MiB by default), the tasks parse an Arrow
batch of lines at a time, and the sorts and windows after the parse spill to disk. A
line's number is its split's first line number plus its place in the split: a first pass
counts each split's lines in the JVM (no Python, no parsing), then the parse numbers
them. Lines are cut where ``kstore append`` cuts them (``str.splitlines``), so the
numbers and reasons are those ``kstore append`` gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore.model.events import EventError, decode_json_line, parse_event
from kstore.spark._export import fresh_folder
from kstore.spark._frames import STREAM_COLUMNS, write_partitioned
from kstore.spark._schema import EVENT_COLUMNS, LogRow, event_schema, events_to_arrow, spark_schema
from kstore.spark._session import conf_set, fit_partitions

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


_SPLIT = "spark.sql.files.maxPartitionBytes"
_SPLIT_BYTES = 16 << 20
"""Bytes of a dump per task. A task's parsed lines are one block of the cache: Spark's
128 MiB default made blocks of several hundred MB, and reading one back from disk
(``MEMORY_AND_DISK``) ran a 1 GB heap out of memory on a 450 MB dump."""

_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""The line breaks of ``str.splitlines`` (``kstore append``'s cut) other than ``\\r`` and
``\\n``, at which Spark's text reader has cut already."""

Split = tuple[str, int]
"""A split of a dump: its file and the byte where the split starts."""


def _lines(text: str) -> list[str]:
    """The lines ``str.splitlines`` makes of one line of Spark's reader (one per break
    of ``_BREAKS`` in it, and one after the last: the counting pass's count)."""
    return (text + "\n").splitlines()


def _numberer(first: dict[Split, int]) -> Any:
    """``mapInArrow`` over the lines of ``files``, each split's lines in order, numbered
    from ``first`` (each split's first line number in its file)."""

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        split: Split | None = None
        number = 0
        for batch in batches:
            good: list[LogRow] = []
            where: dict[str, list[Any]] = {"file": [], "line": []}
            bad: dict[str, list[Any]] = {"file": [], "line": [], "reason": [], "text": []}
            for file, start, value in zip(
                batch.column("file").to_pylist(),
                batch.column("start").to_pylist(),
                batch.column("value").to_pylist(),
                strict=True,
            ):
                if (file, start) != split:
                    split = (file, start)
                    number = first[split]
                pieces = _lines(value)
                for line, text in enumerate(pieces, start=number):
                    if not text.strip():
                        continue
                    row, reason = _parse(line, text)
                    if row is not None:
                        good.append(row)
                        where["file"].append(file)
                        where["line"].append(line)
                    else:
                        for name, item in zip(bad, (file, line, reason, text), strict=True):
                            bad[name].append(item)
                number += len(pieces)
            events = events_to_arrow(good).drop_columns(["position"])
            for name, items in where.items():
                events = events.append_column(name, pa.array(items, _PARSED.field(name).type))
            for name in ("reason", "text"):
                events = events.append_column(name, pa.nulls(len(good), pa.string()))
            yield from events.cast(_PARSED).to_batches()
            size = len(bad["line"])
            quarantined = {name: [None] * size for name in _PARSED.names} | bad
            yield from pa.table(quarantined, schema=_PARSED).to_batches()

    return parse


def _first_lines(lines: Any) -> dict[Split, int]:
    """Each split's first line number in its file, from the lines of every split counted
    in the JVM (Python's extra breaks included): a few numbers per file."""
    from pyspark.sql import functions as F

    value = F.col("value")
    breaks = F.length(value) - F.length(F.translate(value, _BREAKS, ""))
    counted = lines.groupBy("file", "start").agg(F.sum(breaks + 1).alias("lines")).collect()
    first: dict[Split, int] = {}
    number: dict[str, int] = {}
    for row in sorted(counted, key=lambda r: (r["file"], r["start"])):
        first[(row["file"], row["start"])] = number.get(row["file"], 1)
        number[row["file"]] = first[(row["file"], row["start"])] + int(row["lines"])
    return first


def ingest_dumps(spark: Any, dumps: list[str], out: Path) -> IngestResult:
    """Validate, deduplicate and write the events of the ``dumps`` (files or folders)."""

    fresh_folder(out)
    fit_partitions(spark, dumps)
    with _split_size(spark):
        return _ingest(spark, dumps, out)


@contextmanager
def _split_size(spark: Any) -> Iterator[None]:
    """Splits of ``_SPLIT_BYTES`` while the block runs (unless a ``--conf`` says)."""
    if spark.sparkContext.getConf().contains(_SPLIT):
        yield
        return
    with conf_set(spark, {_SPLIT: str(_SPLIT_BYTES)}):
        yield


def _ingest(spark: Any, dumps: list[str], out: Path) -> IngestResult:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # Line-aligned splits of each file, read twice: counted (JVM only), then parsed.
    lines = (
        spark.read.option("recursiveFileLookup", "true")
        .text(dumps)
        .select(
            F.input_file_name().alias("file"),
            F.col("_metadata.file_block_start").alias("start"),
            "value",
        )
    )
    parse = _numberer(_first_lines(lines))
    parsed = lines.mapInArrow(parse, spark_schema(_PARSED)).persist()
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
