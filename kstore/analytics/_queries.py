"""The named queries of ``kstore/queries/*.sql`` and the runner that binds their parameters.

The query files ship inside the package and load with ``importlib.resources``, so an
installed wheel has them (the repository's top-level ``queries/`` links to them).

A query file starts with a header of ``--`` lines: ``-- NAME: what it answers``, more
text, and optionally ``-- Required: $a, $b``. Its parameters are the ``$name`` tokens of
its body; every one is bound (``None`` when not given), never pasted into the text.
``@name`` in a body stands for the whole of another query (a subquery), so that
definitions such as ``metrics`` live in one file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from kstore._errors import KstoreError, UsageError
from kstore.partitioner import partition_for_key
from kstore.store.log import Store

__all__ = [
    "QUERIES_DIR",
    "Query",
    "Result",
    "check_query",
    "connect",
    "get_query",
    "queries",
    "run_query",
    "run_sql",
]

QUERIES_DIR: Traversable = files("kstore") / "queries"

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_INCLUDE = re.compile(r"@([a-z_]+)\b")


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    summary: str
    required: tuple[str, ...]
    sql: str

    @property
    def parameters(self) -> tuple[str, ...]:
        body = "\n".join(line.split("--", 1)[0] for line in self.sql.splitlines())
        return tuple(dict.fromkeys(_PARAM.findall(body)))


@dataclass(frozen=True, slots=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _strip_header(text: str) -> str:
    lines = text.splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip().rstrip(";")


@cache
def _load(name: str) -> Query:
    path = QUERIES_DIR / f"{name}.sql"
    text = path.read_text(encoding="utf-8")
    first = text.splitlines()[0] if text else ""
    summary = first.removeprefix("--").strip().removeprefix(f"{name}:").strip()
    required: tuple[str, ...] = ()
    for line in text.splitlines():
        if line.startswith("-- Required:"):
            required = tuple(_PARAM.findall(line))
    body = _INCLUDE.sub(lambda m: f"({_load(m.group(1)).sql})", _strip_header(text))
    return Query(name, summary, required, body)


def queries() -> list[Query]:
    """Every query of ``kstore/queries/``, by name."""
    names = [p.name.removesuffix(".sql") for p in QUERIES_DIR.iterdir() if p.name.endswith(".sql")]
    return [_load(name) for name in sorted(names)]


def get_query(name: str) -> Query:
    if not (QUERIES_DIR / f"{name}.sql").is_file():
        known = ", ".join(q.name for q in queries())
        raise UsageError(f"no query {name!r} (known: {known})")
    return _load(name)


@contextmanager
def connect(store: Store) -> Iterator[Any]:
    """A read-only connection to ``store`` with kstore's SQL functions registered.

    ``kstore_partition(key, partitions)``: the partition of a UTF-8 key under Kafka's
    default partitioner.
    """
    with store.reading() as db:
        db.create_function(
            "kstore_partition",
            lambda key, count: partition_for_key(key, count),
            ["VARCHAR", "INTEGER"],
            "INTEGER",
            null_handling="default",
        )
        try:
            yield db
        finally:
            db.remove_function("kstore_partition")


def _execute(db: Any, sql: str, params: Mapping[str, Any] | list[Any]) -> Result:
    import duckdb

    try:
        cursor = db.execute(sql, params)
    except duckdb.Error as exc:
        raise KstoreError(f"SQL: {str(exc).splitlines()[0]}") from None
    if cursor.description is None:
        return Result([], [])
    return Result([d[0] for d in cursor.description], cursor.fetchall())


def check_query(name: str, params: Mapping[str, Any]) -> Query:
    """Query ``name``, if it takes every parameter of ``params`` and they hold its required ones."""
    query = get_query(name)
    unknown = sorted(set(params) - set(query.parameters))
    if unknown:
        raise UsageError(
            f"query {name}: unknown parameter {unknown[0]!r} "
            f"(its parameters: {', '.join(query.parameters) or 'none'})"
        )
    missing = [p for p in query.required if params.get(p) is None]
    if missing:
        raise UsageError(f"query {name}: parameter {missing[0]!r} is required")
    return query


def run_query(store: Store, name: str, params: Mapping[str, Any]) -> Result:
    """Run query ``name`` with ``params`` bound; parameters it does not use are an error."""
    query = check_query(name, params)
    bound = {p: params.get(p) for p in query.parameters}
    with connect(store) as db:
        return _execute(db, query.sql, bound)


def run_sql(store: Store, sql: str, params: list[Any] | None = None) -> Result:
    """Any SQL over the store's tables and views, on a read-only connection."""
    with connect(store) as db:
        return _execute(db, sql, params or [])
