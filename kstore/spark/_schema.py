"""The log's Parquet form, its Arrow and Spark schemas derived from the pydantic event models.

One row per event, in the columns of the store's ``kstore_events`` table, except that
``data`` is a typed struct instead of JSON text: the union of the fields of every event
type (``EVENT_TYPES``), each nullable, so Spark SQL and DuckDB can reach
``data.generation`` or ``data.assignment`` directly. The struct's fields and types are
read off the models' annotations, so a new event type or field reaches Parquet and
Spark without being written down a second time here.

``events_to_arrow`` and ``arrow_to_events`` convert between ``Event`` objects and that
form; the way back goes through ``parse_event``, the same validation as ``kstore append``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any

import pyarrow as pa
from pydantic.fields import FieldInfo

from kstore.store.events import EVENT_TYPES, Event, parse_event

__all__ = [
    "ASSIGNMENT_COLUMNS",
    "EVENT_COLUMNS",
    "LogRow",
    "arrow_to_events",
    "assignment_schema",
    "data_type",
    "event_schema",
    "events_to_arrow",
    "spark_schema",
]

# A tuple field is a topic-partition in events.md (``[topic, partition]``); Parquet gets
# the names, so SQL reads ``tp.topic`` rather than a position.
_TUPLE_NAMES: dict[tuple[type, ...], tuple[str, ...]] = {(str, int): ("topic", "partition")}

_ENVELOPE: dict[str, str] = {"event_id": "event_id", "cluster": "cluster", "group": "group_id"}
_ENVELOPE |= {"timeline": "timeline"}
"""Envelope fields of ``Event`` -> their column (the store's names)."""

_STORAGE: dict[str, pa.DataType] = {
    "position": pa.int64(),
    "version": pa.int32(),
    "type": pa.string(),
    "at": pa.timestamp("us", tz="UTC"),
    "at_offset_s": pa.int32(),
    "schema_version": pa.int16(),
}
"""Columns the store adds to an event (its place in the log, its time split in two)."""


def _arrow_type(annotation: Any) -> pa.DataType:
    """The Arrow type of a pydantic field annotation (optional or not: columns are nullable)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _arrow_type(args[0])
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"no Arrow type for the union {annotation!r}")
        return _arrow_type(inner[0])
    if origin is typing.Literal:
        if all(isinstance(a, str) for a in args):
            return pa.string()
        raise TypeError(f"no Arrow type for {annotation!r}")
    if origin is list:
        return pa.list_(_arrow_type(args[0]))
    if origin is dict:
        return pa.map_(_arrow_type(args[0]), _arrow_type(args[1]))
    if origin is tuple:
        plain = tuple(_plain(a) for a in args)
        names = _TUPLE_NAMES.get(plain)
        if names is None:
            raise TypeError(f"no column names for the tuple {annotation!r}")
        return pa.struct([pa.field(n, _arrow_type(a)) for n, a in zip(names, args, strict=True)])
    if annotation is str:
        return pa.string()
    if annotation is bool:
        return pa.bool_()
    if annotation is int:
        return pa.int64()
    if annotation is float:
        return pa.float64()
    raise TypeError(f"no Arrow type for {annotation!r}")


def _plain(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


@cache
def data_type() -> pa.StructType:
    """The ``data`` struct: every field of every event type, first seen first."""
    fields: dict[str, pa.DataType] = {}
    for name, model in EVENT_TYPES.items():
        info: FieldInfo
        for field_name, info in model.model_fields.items():
            kind = _arrow_type(info.annotation)
            seen = fields.setdefault(field_name, kind)
            if seen != kind:
                raise TypeError(
                    f"{name}.{field_name} is {kind}, but another event type has it as {seen}"
                )
    return pa.struct([pa.field(n, t) for n, t in fields.items()])


EVENT_COLUMNS: tuple[str, ...] = ("position", "event_id", "cluster", "group_id", "timeline")
EVENT_COLUMNS += ("version", "type", "at", "at_offset_s", "schema_version", "data")

ASSIGNMENT_COLUMNS: tuple[str, ...] = ("cluster", "group_id", "timeline", "version")
ASSIGNMENT_COLUMNS += ("generation", "member", "topic", "partition")


@cache
def event_schema() -> pa.Schema:
    """The log's Arrow schema (``EVENT_COLUMNS``)."""
    envelope = {
        column: _arrow_type(Event.model_fields[field].annotation)
        for field, column in _ENVELOPE.items()
    }
    types_ = envelope | _STORAGE | {"data": data_type()}
    return pa.schema([pa.field(name, types_[name]) for name in EVENT_COLUMNS])


@cache
def assignment_schema() -> pa.Schema:
    """The assignment projection (``kstore_assignments``): one row per assigned partition."""
    kinds = dict.fromkeys(("cluster", "group_id", "timeline", "member", "topic"), pa.string())
    kinds |= {"version": pa.int32(), "generation": pa.int32(), "partition": pa.int32()}
    return pa.schema([pa.field(name, kinds[name]) for name in ASSIGNMENT_COLUMNS])


def spark_schema(schema: pa.Schema | None = None) -> Any:
    """The Spark ``StructType`` of an Arrow schema (default: the log's)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema if schema is not None else event_schema())


@dataclass(frozen=True, slots=True)
class LogRow:
    """An event with its place in the log (``position`` None: in no log yet)."""

    position: int | None
    version: int
    event: Event


def _to_column(value: Any, kind: pa.DataType) -> Any:
    """A model's ``model_dump`` value in the shape Arrow takes for ``kind``."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return [(k, _to_column(v, kind.item_type)) for k, v in value.items()]
    if pa.types.is_list(kind):
        return [_to_column(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return {kind.field(i).name: v for i, v in enumerate(value)}
    return value


def _from_column(value: Any, kind: pa.DataType) -> Any:
    """The other way: Arrow's Python value back to the JSON shape of events.md."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        items = value.items() if isinstance(value, dict) else value
        return {k: _from_column(v, kind.item_type) for k, v in items}
    if pa.types.is_list(kind):
        return [_from_column(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return [value[kind.field(i).name] for i in range(kind.num_fields)]
    return value


def events_to_arrow(rows: Iterable[LogRow]) -> pa.Table:
    """Events in the log's Parquet form (``event_schema``)."""
    struct = data_type()
    kinds = {struct.field(i).name: struct.field(i).type for i in range(struct.num_fields)}
    columns: dict[str, list[Any]] = {name: [] for name in EVENT_COLUMNS}
    for row in rows:
        event = row.event
        offset = event.at.utcoffset() or timedelta(0)
        dumped = event.data.model_dump()
        data = dict.fromkeys(kinds)
        data |= {name: _to_column(value, kinds[name]) for name, value in dumped.items()}
        for name, value in (
            ("position", row.position),
            ("event_id", event.event_id),
            ("cluster", event.cluster),
            ("group_id", event.group),
            ("timeline", event.timeline),
            ("version", row.version),
            ("type", event.type),
            ("at", event.at.astimezone(UTC)),
            ("at_offset_s", int(offset.total_seconds())),
            ("schema_version", event.data.schema_version),
            ("data", data),
        ):
            columns[name].append(value)
    return pa.table(columns, schema=event_schema())


def arrow_to_events(table: pa.Table | pa.RecordBatch) -> Iterator[LogRow]:
    """The events of a log table (any column order; ``position`` may be absent)."""
    struct = data_type()
    kinds = {struct.field(i).name: struct.field(i).type for i in range(struct.num_fields)}
    for raw in table.to_pylist():
        at: datetime = raw["at"]
        if at.tzinfo is None:  # Spark's timestamp_ntz, or a naive UTC column
            at = at.replace(tzinfo=UTC)
        zone = timedelta(seconds=raw["at_offset_s"] or 0)
        data = {
            name: _from_column(value, kinds[name])
            for name, value in (raw["data"] or {}).items()
            if value is not None and name in kinds
        }
        event = parse_event(
            {
                "event_id": raw["event_id"],
                "cluster": raw["cluster"],
                "group": raw["group_id"],
                "timeline": raw["timeline"],
                "type": raw["type"],
                "at": at.astimezone(timezone(zone) if zone else UTC),
                "data": data,
            },
            schema_version=raw["schema_version"],
        )
        yield LogRow(raw.get("position"), raw["version"], event)
