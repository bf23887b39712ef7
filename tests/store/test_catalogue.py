"""The read model's one catalogue against what is built from it and what migrations make."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from kstore.spark._schema import EVENT_COLUMNS, assignment_schema, event_schema
from kstore.store import catalogue
from kstore.store.analytics_rows import ANALYTICS_COLUMNS
from kstore.store.log import Store
from kstore.store.projections import PROJECTED, SPANNED, Projector
from kstore.store.schema import metadata

_DUCKDB = {
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "string": "VARCHAR",
    "timestamp": "TIMESTAMP",
}


def test_the_migrated_store_has_the_catalogues_tables_in_its_column_order(store: Store) -> None:
    # alembic check compares names, types and nullability, not the order of columns; the
    # bulk inserts and the log's reads rely on it too.
    with duckdb.connect(str(store.path), read_only=True) as db:
        found: dict[str, list[tuple[str, str, bool]]] = {}
        for table, column, kind, nullable in db.sql(
            "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
            "WHERE table_name IN (SELECT table_name FROM duckdb_tables()) "
            "AND table_name <> 'alembic_version' ORDER BY table_name, column_index"
        ).fetchall():
            found.setdefault(table, []).append((column, kind, nullable))
    expected = {
        table: [(c.name, _DUCKDB[c.kind], c.nullable) for c in cols]
        for table, cols in catalogue.TABLES.items()
    }
    assert found == expected


def test_the_metadata_and_the_column_lists_come_from_the_catalogue() -> None:
    assert set(metadata.tables) == set(catalogue.TABLES)
    for name, table in metadata.tables.items():
        assert [(c.name, c.nullable) for c in table.columns] == [
            (c.name, c.nullable) for c in catalogue.TABLES[name]
        ]
    for table, columns in ANALYTICS_COLUMNS.items():
        assert columns == catalogue.columns(table)
    assert {*PROJECTED, *SPANNED} == set(catalogue.DERIVED) - {"kstore_streams"}
    for table in PROJECTED:
        assert Projector().arrow(table).schema == catalogue.arrow_schema(table)
    spans = Projector().spans()
    assert [s.name for s in spans] == list(SPANNED)
    for made in spans:
        assert made.table().schema == catalogue.arrow_schema(made.name)


def test_the_migrated_store_has_the_catalogues_views_in_their_column_order(store: Store) -> None:
    with duckdb.connect(str(store.path), read_only=True) as db:
        found: dict[str, list[tuple[str, str]]] = {}
        for view, column, kind in db.sql(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE table_name IN (SELECT view_name FROM duckdb_views() WHERE NOT internal) "
            "ORDER BY table_name, column_index"
        ).fetchall():
            if view in catalogue.VIEWS:  # (the analytics views are SQL of their own)
                found.setdefault(view, []).append((column, kind))
    expected = {
        view: [(c.name, _DUCKDB[c.kind]) for c in cols] for view, cols in catalogue.VIEWS.items()
    }
    assert found == expected


def test_the_parquet_and_spark_schemas_come_from_the_catalogue() -> None:
    assert catalogue.columns("kstore_events") == EVENT_COLUMNS
    assert assignment_schema() == catalogue.arrow_schema("kstore_assignments")
    log = event_schema()
    for col in catalogue.TABLES["kstore_events"]:
        if col.name == "at":
            assert log.field("at").type == pa.timestamp("us", tz="UTC")
        elif col.name != "data":  # Parquet keeps the data as a struct, not JSON text
            assert log.field(col.name).type == col.arrow, col.name
