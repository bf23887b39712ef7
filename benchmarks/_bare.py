"""A bare DuckDB load: the limit the store's appends are measured against."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import duckdb

__all__ = ["bare_seconds"]


def bare_seconds(source: Path, target: Path, names: Sequence[str]) -> tuple[float, int]:
    """Seconds to insert the rows kstore stored in ``names`` (as Arrow, read first) into
    a new file, connect and commit included; and how many rows that was."""
    with duckdb.connect(str(source), read_only=True) as connection:
        tables = {name: connection.sql(f"SELECT * FROM {name}").to_arrow_table() for name in names}
        ddl = {
            name: connection.sql(
                f"SELECT sql FROM duckdb_tables() WHERE table_name = '{name}'"
            ).fetchall()[0][0]
            for name in tables
        }
    rows = sum(t.num_rows for t in tables.values())
    started = time.perf_counter()
    with duckdb.connect(str(target)) as connection:
        for name in tables:
            connection.execute(ddl[name])
        connection.begin()
        for index, (name, table) in enumerate(tables.items()):
            connection.register(f"bare_{index}", table)
            connection.execute(f"INSERT INTO {name} SELECT * FROM bare_{index}")
        connection.commit()
    return time.perf_counter() - started, rows
