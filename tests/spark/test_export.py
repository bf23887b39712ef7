"""``kstore export`` and the log's Parquet form, without Spark (DuckDB and Arrow read it)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.dataset as ds
import pytest
from hypothesis import given, settings

from benchmarks._fleet import fleet
from kstore.cli import main
from kstore.model import EVENT_TYPES, Event, TopicChanged
from kstore.spark._export import export_store
from kstore.spark._frames import _streams_of
from kstore.spark._schema import (
    LogRow,
    arrow_to_events,
    data_type,
    event_schema,
    events_to_arrow,
)
from kstore.spark._session import parse_conf
from kstore.store.log import Store
from tests.store.events_gen import streams

_HIVE = "hive_partitioning = true, hive_types_autocast = false"


def test_data_struct_has_every_field_of_every_event_type() -> None:
    struct = data_type()
    names = {struct.field(i).name for i in range(struct.num_fields)}
    assert names == {f for model in EVENT_TYPES.values() for f in model.model_fields}
    assert str(struct.field("assignment").type) == (
        "map<string, list<item: struct<topic: string, partition: int64>>>"
    )
    assert event_schema().names[-1] == "data"


@settings(max_examples=40, deadline=None)
@given(streams())
def test_events_round_trip_through_arrow(events: list[Event]) -> None:
    rows = [LogRow(i, i, event) for i, event in enumerate(events, start=1)]
    table = events_to_arrow(rows)
    assert list(arrow_to_events(table)) == rows
    # Spark's tasks read the log a batch at a time; cut from a table, batches are slices.
    sliced = [row for batch in table.to_batches(max_chunksize=3) for row in arrow_to_events(batch)]
    assert sliced == rows


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_a_tasks_batches_are_cut_into_whole_streams(size: int) -> None:
    # ``map_streams``'s tasks get a partition's rows sorted by stream then version, in
    # batches cut anywhere: a stream across batches, a batch starting a stream, a batch
    # of one row.
    events = [e for e in fleet(4, 2) if e.group != "g00002"]
    events += [e.model_copy(update={"timeline": "replay/x"}) for e in fleet(2, 1)]
    rows = sorted(
        (LogRow(i, i, e) for i, e in enumerate(events, start=1)),
        key=lambda r: (r.event.cluster, r.event.group, r.event.timeline, r.version),
    )
    batches = events_to_arrow(rows).to_batches(max_chunksize=size)
    streams = list(_streams_of(iter(batches)))
    assert [row for stream in streams for row in stream] == rows
    assert [s[0].event.stream for s in streams] == list(dict.fromkeys(r.event.stream for r in rows))
    assert all(len({r.event.stream for r in stream}) == 1 for stream in streams)


def _topic_changed_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Today's TopicChanged becomes version 2; its version 1 had one partition fewer."""

    def upcast(cls: type[TopicChanged], data: dict[str, Any], version: int) -> dict[str, Any]:
        return {**data, "partitions": data["partitions"] + 1} if version == 1 else data

    monkeypatch.setattr(TopicChanged, "schema_version", 2)
    monkeypatch.setattr(TopicChanged, "upcast", classmethod(upcast))


def test_reading_the_log_upcasts_older_schema_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [LogRow(i, i, event) for i, event in enumerate(fleet(2, 2), start=1)]
    table = events_to_arrow(rows)
    _topic_changed_v2(monkeypatch)
    back = list(arrow_to_events(table))
    partitions = [
        (row.event.data.partitions, old.event.data.partitions)
        for row, old in zip(back, rows, strict=True)
        if isinstance(row.event.data, TopicChanged) and isinstance(old.event.data, TopicChanged)
    ]
    assert partitions and all(new == old + 1 for new, old in partitions)
    assert [r for r in back if r.event.type != "TopicChanged"] == [
        r for r in rows if r.event.type != "TopicChanged"
    ]


def test_export_upcasts_older_schema_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(2, 3))
    _topic_changed_v2(monkeypatch)
    export_store(store, tmp_path / "out")
    table = ds.dataset(tmp_path / "out" / "events", format="parquet", partitioning="hive")
    read = table.to_table()
    versions = set(zip(read["type"].to_pylist(), read["schema_version"].to_pylist(), strict=True))
    assert ("TopicChanged", 2) in versions and ("TopicChanged", 1) not in versions
    exported = sorted(arrow_to_events(read), key=lambda r: r.position or 0)
    assert exported == [LogRow(s.position, s.version, s.event) for s in store.events()]


def test_export_is_the_store_log_and_projection(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    odd = [
        e.model_copy(update={"group": "a/b=c %x", "event_id": e.event_id + "x"})
        for e in fleet(1, 5)
    ]
    store.append([*fleet(4, 10), *odd])
    result = export_store(store, tmp_path / "out")
    stored = [LogRow(s.position, s.version, s.event) for s in store.events()]
    assert result.events == len(stored) and result.streams == 5

    table = ds.dataset(tmp_path / "out" / "events", format="parquet", partitioning="hive")
    exported = sorted(arrow_to_events(table.to_table()), key=lambda r: r.position or 0)
    assert exported == stored

    files = tmp_path / "out" / "assignments" / "**" / "*.parquet"
    ours = duckdb.sql(
        'SELECT cluster, group_id, timeline, version, generation, member, topic, "partition" '
        f"FROM read_parquet('{files}', {_HIVE}) ORDER BY ALL"
    ).fetchall()
    theirs = store.query(
        'SELECT cluster, group_id, timeline, version, generation, member, topic, "partition"'
        " FROM kstore_assignments ORDER BY ALL"
    ).rows
    assert ours == theirs and len(ours) == result.assignments > 0
    assert ("default" not in {r[0] for r in ours}) and "a/b=c %x" in {r[1] for r in ours}


def test_export_refuses_a_used_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(1, 2))
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("")
    monkeypatch.setattr(
        sys,
        "argv",
        ["kstore", "--store", str(store.path), "export", "--out", str(tmp_path / "used")],
    )
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    assert "not empty" in capsys.readouterr().err


def test_conf_pass_through() -> None:
    assert parse_conf(["spark.executor.memory=4g", "a.b=x=y"]) == {
        "spark.executor.memory": "4g",
        "a.b": "x=y",
    }
    with pytest.raises(Exception, match="KEY=VALUE"):
        parse_conf(["novalue"])
