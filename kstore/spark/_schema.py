"""The log's Parquet form, its Arrow and Spark schemas derived from the pydantic event models.

One row per event, in the columns of the store's ``kstore_events`` table, except that
``data`` is a typed struct instead of JSON text: the union of the fields of every event
type (``EVENT_TYPES``), each nullable, so Spark SQL and DuckDB can reach
``data.generation`` or ``data.assignment`` directly. The struct's fields and types are
read off the models' annotations, so a new event type or field reaches Parquet and
Spark without being written down a second time here.

``events_to_arrow`` and ``arrow_to_events`` convert between ``Event`` objects and that
form, ``stored_to_arrow`` from the store's own rows. Only kstore writes this form (export,
ingest, replay), each event validated on its way in, so the way back trusts it as the
store trusts its rows (``parse_stored_event``): no second validation, older schema
versions upcast.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import cache
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic.fields import FieldInfo
from pydantic_core import from_json

from kstore.model.events import EVENT_TYPES, Event, parse_stored_event
from kstore.store import catalogue

__all__ = [
    "ASSIGNMENT_COLUMNS",
    "EVENT_COLUMNS",
    "LogRow",
    "arrow_to_events",
    "assignment_schema",
    "data_type",
    "event_schema",
    "events_to_arrow",
    "read_batch",
    "spark_schema",
    "stored_to_arrow",
]

# A tuple field is a topic-partition in events.md (``[topic, partition]``); Parquet gets
# the names, so SQL reads ``tp.topic`` rather than a position.
_TUPLE_NAMES: dict[tuple[type, ...], tuple[str, ...]] = {(str, int): ("topic", "partition")}

_ENVELOPE: dict[str, str] = {"event_id": "event_id", "cluster": "cluster", "group": "group_id"}
_ENVELOPE |= {"timeline": "timeline"}
"""Envelope fields of ``Event`` -> their column (the store's names)."""

_STORAGE: dict[str, pa.DataType] = {
    field.name: field.type for field in catalogue.arrow_schema("kstore_events")
} | {"at": pa.timestamp("us", tz="UTC")}
"""The store's types of the log's columns (the catalogue's), ``at`` with its zone (UTC)."""


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


EVENT_COLUMNS = catalogue.columns("kstore_events")

_ENVELOPE_COLUMNS = (*_ENVELOPE.values(), "at", "at_offset_s")
"""The columns ``_envelope`` takes, in its order."""

_READ_BATCH = 10_000

ASSIGNMENT_COLUMNS = catalogue.columns("kstore_assignments")


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
    return catalogue.arrow_schema("kstore_assignments")


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


def _json_to_arrow(kind: pa.DataType) -> Callable[[Any], Any] | None:
    """What a JSON value of type ``kind`` needs before ``pa.array`` takes it (None: nothing).

    ``pa.array`` takes a dict for a map but only a tuple for a struct, and JSON gives a
    tuple field (a topic-partition) as a list.
    """
    if pa.types.is_struct(kind):
        return tuple
    if pa.types.is_list(kind):
        value = _json_to_arrow(kind.value_type)
        return None if value is None else lambda items: [value(v) for v in items]
    if pa.types.is_map(kind):
        item = _json_to_arrow(kind.item_type)
        return None if item is None else lambda items: {k: item(v) for k, v in items.items()}
    return None


@cache
def _data_from_json() -> dict[str, Callable[[Any], Any]]:
    """``data`` field -> its ``_json_to_arrow``, for the fields that need one."""
    struct = data_type()
    convert = {
        struct.field(i).name: _json_to_arrow(struct.field(i).type) for i in range(struct.num_fields)
    }
    return {name: function for name, function in convert.items() if function is not None}


def _python_values(array: pa.Array) -> list[Any]:
    """An array's values as the event models hold them (map: dict, struct: tuple), built
    child array by child array: ``to_pylist`` makes a dict per struct, far slower.
    """
    kind = array.type
    values: list[Any]
    if pa.types.is_struct(kind):
        values = list(zip(*map(_python_values, array.flatten()), strict=True))
    elif pa.types.is_list(kind) or pa.types.is_map(kind):
        # Offsets point into the whole child arrays, also in a slice.
        offsets = array.offsets.to_pylist()
        first = offsets[0]
        spans = [(a - first, b - first) for a, b in pairwise(offsets)]
        if pa.types.is_map(kind):
            keys = array.keys.slice(first, offsets[-1] - first).to_pylist()
            items = _python_values(array.items.slice(first, offsets[-1] - first))
            values = [dict(zip(keys[a:b], items[a:b], strict=True)) for a, b in spans]
        else:
            flat = _python_values(array.values.slice(first, offsets[-1] - first))
            values = [flat[a:b] for a, b in spans]
    else:
        return list(array.to_pylist())
    if array.null_count:
        valid = array.is_valid().to_pylist()
        values = [value if ok else None for value, ok in zip(values, valid, strict=True)]
    return values


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _instants(column: pa.Array) -> list[datetime]:
    """A timestamp column's values in UTC (a column without a zone is read as UTC), made
    from their microseconds: a sixth of the cost of Arrow's ``to_pylist``, which looks
    each value's zone up."""
    micros = column.cast(pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
    return [_EPOCH + timedelta(microseconds=m) for m in micros.to_pylist()]


def _data_objects(data: pa.StructArray) -> list[dict[str, Any]]:
    """Each row's ``data`` as a dict, NULL fields and fields no event type has left out."""
    known = data_type()
    objects: list[dict[str, Any]] = [{} for _ in range(len(data))]
    for field, values in zip(data.type, data.flatten(), strict=True):
        if known.get_field_index(field.name) < 0:
            continue
        present = values.is_valid()
        rows = pc.indices_nonzero(present).to_pylist()
        for row, value in zip(rows, _python_values(values.filter(present)), strict=True):
            objects[row][field.name] = value
    return objects


@cache
def _zone(offset_s: int) -> tzinfo:
    return UTC if offset_s == 0 else timezone(timedelta(seconds=offset_s))


def _envelope(
    event_id: str, cluster: str, group: str, timeline: str, at: datetime, offset_s: int | None
) -> dict[str, Any]:
    """``Event``'s fields but ``data``, from a log row; ``at`` in the zone it was written in."""
    if at.tzinfo is None:  # Spark's timestamp_ntz, or a naive UTC column
        at = at.replace(tzinfo=UTC)
    return {
        "event_id": event_id,
        "cluster": cluster,
        "group": group,
        "timeline": timeline,
        "at": at.astimezone(_zone(offset_s or 0)),
    }


def _offset_s(at: datetime) -> int:
    offset = at.utcoffset()
    return 0 if offset is None else int(offset.total_seconds())


def events_to_arrow(rows: Iterable[LogRow]) -> pa.Table:
    """Events in the log's Parquet form (``event_schema``).

    Built a column at a time; ``data`` from each model's own field dictionary (every
    field, in field order, each a plain value: str, int, a list, a dict or a tuple, as
    ``_arrow_type`` allows), which is what ``model_dump`` would copy out of it field by
    field; Arrow stores an aware ``at`` in UTC itself."""
    rows = rows if isinstance(rows, list) else list(rows)
    events = [row.event for row in rows]
    columns: dict[str, list[Any]] = {
        "position": [row.position for row in rows],
        "event_id": [event.event_id for event in events],
        "cluster": [event.cluster for event in events],
        "group_id": [event.group for event in events],
        "timeline": [event.timeline for event in events],
        "version": [row.version for row in rows],
        "type": [event.type for event in events],
        "at": [event.at for event in events],
        "at_offset_s": [_offset_s(event.at) for event in events],
        "schema_version": [event.data.schema_version for event in events],
        "data": [vars(event.data) for event in events],
    }
    return pa.table([columns[name] for name in EVENT_COLUMNS], schema=event_schema())


def stored_to_arrow(stored: pa.Table) -> pa.Table:
    """Rows of the store's ``kstore_events`` (``at`` naive UTC, ``data`` JSON text) in the
    log's Parquet form. The store validated them when storing them, so data of today's
    schema version goes from its JSON straight into the struct; older data is upcast by
    ``parse_stored_event`` (and then has today's version).
    """
    versions: list[int] = stored.column("schema_version").to_pylist()
    kinds: list[str] = stored.column("type").to_pylist()
    convert = _data_from_json()
    data: list[dict[str, Any]] = []
    for row, text in enumerate(stored.column("data").to_pylist()):
        raw = from_json(text)
        model = EVENT_TYPES.get(kinds[row])
        if model is not None and versions[row] == model.schema_version:
            for name, function in convert.items():
                if name in raw:
                    raw[name] = function(raw[name])
            data.append(raw)
        else:
            envelope = _envelope(*(stored.column(n)[row].as_py() for n in _ENVELOPE_COLUMNS))
            event = parse_stored_event(envelope, kinds[row], raw, versions[row])
            data.append(event.data.model_dump())
            versions[row] = event.data.schema_version
    columns = {name: stored.column(name) for name in EVENT_COLUMNS[:-2]}
    columns |= {"schema_version": versions, "data": pa.array(data, type=data_type())}
    return pa.table(columns).cast(event_schema())


def arrow_to_events(table: pa.Table | pa.RecordBatch) -> Iterator[LogRow]:
    """The events of a log table (any column order; ``position`` may be absent)."""
    # A table read from many files has a chunk per file: each batch's fixed work would be
    # paid per file, so batches are cut afresh.
    batches = (
        table.combine_chunks().to_batches(max_chunksize=_READ_BATCH)
        if isinstance(table, pa.Table)
        else [table]
    )
    for batch in batches:
        yield from read_batch(batch)[0]


Streams = tuple[list[str], list[str], list[str]]
"""A batch's ``cluster``, ``group_id`` and ``timeline`` columns, row by row."""


def read_batch(batch: pa.RecordBatch) -> tuple[list[LogRow], Streams]:
    """A log batch's rows as events, and its stream columns (where its streams change).

    Each event is made as the store reads one (``parse_stored_event``: its data
    unvalidated, upcast from another schema version)."""
    clusters, groups, timelines = (
        batch.column(name).to_pylist() for name in ("cluster", "group_id", "timeline")
    )
    instants = _instants(batch.column("at"))
    offsets = batch.column("at_offset_s").to_pylist()
    if any(offsets):  # ``at`` in the zone it was written in (UTC is the instants' own)
        instants = [
            at if not offset else at.astimezone(_zone(offset))
            for at, offset in zip(instants, offsets, strict=True)
        ]
    positions = (
        batch.column("position").to_pylist()
        if "position" in batch.schema.names
        else [None] * batch.num_rows
    )
    rows: list[LogRow] = []
    for position, version, kind, written, data, event_id, cluster, group, timeline, at in zip(
        positions,
        batch.column("version").to_pylist(),
        batch.column("type").to_pylist(),
        batch.column("schema_version").to_pylist(),
        _data_objects(batch.column("data")),
        batch.column("event_id").to_pylist(),
        clusters,
        groups,
        timelines,
        instants,
        strict=True,
    ):
        envelope = {"event_id": event_id, "cluster": cluster, "group": group}
        envelope |= {"timeline": timeline, "at": at}
        rows.append(LogRow(position, version, parse_stored_event(envelope, kind, data, written)))
    return rows, (clusters, groups, timelines)
