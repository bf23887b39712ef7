"""A bare DuckDB load: the limit the store's appends are measured against."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import duckdb

__all__ = ["bare_seconds"]


def bare_seconds(
    source: Path, target: Path, names: Sequence[str], commits: int = 1
) -> tuple[float, int]:
    """Seconds to insert the rows kstore stored in ``names`` (as Arrow, read first) into
    a new file, connect and commit included; and how many rows that was. A view's rows
    go into a table of its columns (the rows as a table would hold them). ``commits`` > 1
    splits every table's rows, in their stored order, into that many transactions (the
    limit of appends made in as many batches; DuckDB's own checkpoint settings)."""
    with duckdb.connect(str(source), read_only=True) as connection:
        tables = {name: connection.sql(f"SELECT * FROM {name}").to_arrow_table() for name in names}
        ddl = {name: _ddl(connection, name) for name in tables}
    rows = sum(t.num_rows for t in tables.values())
    started = time.perf_counter()
    with duckdb.connect(str(target)) as connection:
        for name in tables:
            connection.execute(ddl[name])
        for commit in range(commits):
            connection.begin()
            for index, (name, table) in enumerate(tables.items()):
                lo, hi = (table.num_rows * k // commits for k in (commit, commit + 1))
                connection.register(f"bare_{index}", table.slice(lo, hi - lo))
                connection.execute(f"INSERT INTO {name} SELECT * FROM bare_{index}")
            connection.commit()
    return time.perf_counter() - started, rows


def _ddl(connection: duckdb.DuckDBPyConnection, name: str) -> str:
    """The table's own ``CREATE TABLE``; for a view, one of its columns and types."""
    found = connection.sql(f"SELECT sql FROM duckdb_tables() WHERE table_name = '{name}'")
    rows = found.fetchall()
    if rows:
        return str(rows[0][0])
    columns = connection.sql(
        "SELECT column_name, data_type FROM duckdb_columns() "
        f"WHERE table_name = '{name}' ORDER BY column_index"
    ).fetchall()
    listed = ", ".join(f'"{column}" {kind}' for column, kind in columns)
    return f"CREATE TABLE {name} ({listed})"
