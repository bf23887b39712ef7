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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from kstore._errors import UsageError, near_or_known
from kstore.store import QueryResult, Store

__all__ = [
    "QUERIES_DIR",
    "Query",
    "Result",
    "check_query",
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


Result = QueryResult


def _strip_header(text: str) -> str:
    lines = text.splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip().rstrip(";")


def _summary(name: str, text: str) -> str:
    """The header's first sentence, over as many comment lines as it runs (the first
    line alone cut ``query --list``'s summaries mid-sentence)."""
    said: list[str] = []
    for line in text.splitlines():
        words = line.removeprefix("--").strip()
        if not line.startswith("--") or not words or words.startswith(_PARAGRAPH_ENDS):
            break
        said.append(words)
    paragraph = " ".join(said).removeprefix(f"{name}:").strip()
    end = re.search(r"\.(\s|$)", paragraph)
    return paragraph[: end.start()] if end else paragraph


_PARAGRAPH_ENDS = ("Parameters:", "Required:")


@cache
def _load(name: str) -> Query:
    path = QUERIES_DIR / f"{name}.sql"
    text = path.read_text(encoding="utf-8")
    summary = _summary(name, text)
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
        known = [q.name for q in queries()]
        raise UsageError(f"no query {name!r}{near_or_known(name, known)}")
    return _load(name)


def check_query(name: str, params: Mapping[str, Any]) -> Query:
    """Query ``name``, if it takes every parameter of ``params`` and they hold its required ones."""
    query = get_query(name)
    unknown = sorted(set(params) - set(query.parameters))
    if unknown:
        raise UsageError(
            f"query {name}: unknown parameter {unknown[0]!r}"
            + near_or_known(unknown[0], query.parameters, said="its parameters")
        )
    missing = [p for p in query.required if params.get(p) is None]
    if missing:
        raise UsageError(
            f"query {name}: parameter {missing[0]!r} is required (--param {missing[0]}=VALUE)"
        )
    return query


def run_query(store: Store, name: str, params: Mapping[str, Any]) -> Result:
    """Run query ``name`` with ``params`` bound; parameters it does not use are an error."""
    query = check_query(name, params)
    return store.query(query.sql, {p: params.get(p) for p in query.parameters})


def run_sql(
    store: Store,
    sql: str,
    params: list[Any] | None = None,
    read_paths: Iterable[Path | str] = (),
) -> Result:
    """One read-only statement over the store's tables and views, and the files of
    ``read_paths`` (``Store.query``: nothing else can be read or written)."""
    return store.query(sql, params or [], read_paths)
