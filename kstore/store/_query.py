"""Read-only SQL over the store: one SELECT, in a DuckDB sandbox that can write nothing
and read no file but the store and the ones the user names.

Two locks, either of which holds alone: the statement must be a single ``SELECT`` (or
``EXPLAIN``; DuckDB rewrites ``DESCRIBE``, ``SHOW``, ``SUMMARIZE`` and read-only
pragmas into selects), and the connection runs with ``enable_external_access`` off,
only the named paths in ``allowed_directories``/``allowed_paths``, and
``lock_configuration`` on, so no ``SET`` can undo it. DuckDB (1.5) takes the allowed
paths only once the database is open and only while external access is still on, so
the order of the settings matters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from kstore._errors import KstoreError, UsageError, did_you_mean, nearest
from kstore.model.strategies import known_protocol
from kstore.partitioner import partition_for_key
from kstore.store._lock import corruption
from kstore.store.interface import QueryResult

__all__ = ["Readable", "checked_statement", "readable", "run_sandboxed"]

_ALLOWED = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
# Errors in what the user wrote (exit 2); anything else is the store's or DuckDB's.
_USER_ERRORS = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
    duckdb.InvalidInputException,
    duckdb.OutOfRangeException,
    duckdb.PermissionException,
    duckdb.NotImplementedException,
)


@dataclass(frozen=True, slots=True)
class Readable:
    """Files and folders a query may read besides the store (absolute, resolved)."""

    directories: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


def readable(paths: Iterable[Path | str]) -> Readable:
    """The ``--read`` paths, each an existing file or folder."""
    directories: list[str] = []
    files: list[str] = []
    for given in paths:
        path = Path(given).expanduser()
        if not path.exists():
            raise UsageError(f"--read {given}: no such file or folder")
        resolved = path.resolve()
        if resolved.is_dir():
            directories.append(str(resolved).rstrip("/") + "/")
        else:
            files.append(str(resolved))
    return Readable(tuple(directories), tuple(files))


def checked_statement(sql: str) -> str:
    """``sql`` if it is one read-only statement, else a one-line refusal."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise UsageError(f"SQL: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise UsageError(f"SQL: give one statement, not {len(statements)}")
    kind = statements[0].type
    if kind not in _ALLOWED:
        # The keyword as written: DuckDB's type of INSTALL is LOAD, of SHOW is PRAGMA.
        words = _COMMENTS.sub(" ", statements[0].query).split()
        said = words[0].upper() if words else kind.name
        raise UsageError(f"SQL: only SELECT runs here (the store is read-only to SQL), not {said}")
    return sql


def _literal_list(values: Sequence[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


_REFUSED_PATH = re.compile(r'Cannot access (?:file|directory) "([^"]*)"')


def _read_hint(said: str, reads: Readable) -> str:
    """What to do about the path DuckDB refused: named with ``--read`` it may be, but a
    link out of the folder named (DuckDB checks where a path resolves to)."""
    found = _REFUSED_PATH.search(said)
    if found is not None and reads.directories:
        written = Path(os.path.abspath(Path(found[1]).expanduser()))
        real = written.resolve()
        inside = (str(p.resolve()).rstrip("/") + "/" for p in written.parents)
        if real != written and any(f.startswith(reads.directories) for f in inside):
            return (
                f"{found[1]} resolves to {real}, outside the folder named with --read; "
                f"name {real} or its folder with --read PATH to read it"
            )
    return "name the files a query may read with --read PATH"


_MISSING_TABLE = re.compile(r"Table with name (\S+) does not exist")
_DUCKDB_GUESS = re.compile(r"^(?:Candidate bindings: |Did you mean )(.+?)\??$", re.M)


def _duckdb_guess(exc: BaseException) -> str:
    """DuckDB's own nearest names, from the line after its first ("Candidate bindings:
    "group_id"", "Did you mean "length"?"), as kstore says them; "" where it has none.
    The first line alone (a user trial: ``SELECT "group"`` where the column is
    ``group_id``) named no column, function or type to use instead."""
    found = _DUCKDB_GUESS.search(str(exc))
    return f"; did you mean {found[1]}?" if found else ""


def _table_hint(db: Any, said: str) -> str:
    """After DuckDB's "Table with name X does not exist": the store's tables and views
    nearest X (DuckDB's own guess, cut with its other lines, may be a system view)."""
    found = _MISSING_TABLE.search(said)
    if found is None:
        return ""
    known = [
        row[0]
        for row in db.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal "
            "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
    ]
    near = nearest(found[1], known)
    return (
        f"; {did_you_mean(near)} (SHOW TABLES lists them)" if near else " (SHOW TABLES lists them)"
    )


_JSON_TEXT = {"kstore_events": "data", "kstore_snapshots": "state"}
"""The store's tables with a column of JSON text (VARCHAR in the file)."""


def run_sandboxed(
    db: Any,
    sql: str,
    params: Mapping[str, Any] | Sequence[Any],
    reads: Readable,
    spill: Path,
    json_text: bool = False,
) -> QueryResult:
    """Run the checked statement ``sql`` on ``db`` (a read-only DuckDB connection that
    is closed afterwards: the locked configuration lives as long as it does).

    ``spill``: an empty folder of this query's own for DuckDB's temporary files. DuckDB
    lets a query read its temporary directory whatever the sandbox says, and that was
    ``./.tmp`` (of the working directory), where any file was readable.

    ``json_text``: the store's columns of JSON text (``_JSON_TEXT``) read as DuckDB's
    JSON type (temporary views over the tables, of the same names), so that a result
    says which columns are JSON (``QueryResult.types``)."""
    if json_text:
        (database,) = db.execute("SELECT current_database()").fetchone()
        tables = {row[0] for row in db.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for table, column in _JSON_TEXT.items():
            # only where the statement names it: SHOW TABLES would list it twice
            if table in tables and table in sql.lower():
                db.execute(
                    f"CREATE TEMP VIEW {table} AS SELECT * REPLACE ({column}::JSON AS {column}) "
                    f'FROM "{database}".main.{table}'
                )
    db.execute(f"SET temp_directory = {_literal_list([str(spill)])[1:-1]}")
    if reads.directories:
        db.execute(f"SET allowed_directories = {_literal_list(reads.directories)}")
    if reads.files:
        db.execute(f"SET allowed_paths = {_literal_list(reads.files)}")
    db.execute("SET enable_progress_bar = false")  # it would draw on the terminal
    db.execute("SET enable_external_access = false")
    db.execute("SET lock_configuration = true")
    db.create_function(
        "kstore_partition",
        lambda key, count: partition_for_key(key, count),
        ["VARCHAR", "INTEGER"],
        "INTEGER",
        null_handling="default",
    )
    db.create_function(
        # "special": a strategy the catalogue does not hold gives NULL ("default" makes
        # DuckDB refuse the None, and the whole query failed on one custom assignor).
        "kstore_protocol",
        known_protocol,
        ["VARCHAR"],
        "VARCHAR",
        null_handling="special",
    )
    try:
        cursor = db.execute(sql, params if isinstance(params, Mapping) else list(params))
        columns = [d[0] for d in cursor.description] if cursor.description else []
        types = [str(d[1]) for d in cursor.description] if cursor.description else []
        rows: list[tuple[Any, ...]] = cursor.fetchall() if columns else []
    except duckdb.PermissionException as exc:
        said = _first_line(exc)
        raise UsageError(f"SQL: {said} ({_read_hint(said, reads)})") from None
    except duckdb.CatalogException as exc:
        said = _first_line(exc)
        hint = _table_hint(db, said) or _duckdb_guess(exc)
        raise UsageError(f"SQL: {said}{hint}") from None
    except _USER_ERRORS as exc:
        raise UsageError(f"SQL: {_first_line(exc)}{_duckdb_guess(exc)}") from None
    except duckdb.Error as exc:
        if corruption(Path(), exc) is not None:
            raise  # the store's window reports it
        raise KstoreError(f"SQL: {_first_line(exc)}") from None
    return QueryResult(columns, rows, types)
