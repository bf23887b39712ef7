"""Golden fixtures for every query of kstore/queries, in the style of sqlglot's fixtures.

``tests/golden/queries/logs/*.yaml`` are small event logs; each
``tests/golden/queries/<query>/<case>.yaml`` names a log, the parameters and the rows the
query must answer, worked out by hand from docs/spec/metrics.md and the query's header
(the comments in each file say how). One helper runs them all, one store per log.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from kstore.analytics import queries, run_query
from kstore.model import Event, parse_event
from kstore.store import Store
from tests.analytics.oracle import metrics as oracle_metrics
from tests.store._stores import initialised_store

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "queries"
CASES = sorted(GOLDEN.glob("*/*.yaml"))
CASES = [case for case in CASES if case.parent.name != "logs"]


def load_log(name: str) -> list[Event]:
    """The events of ``logs/<name>.yaml``: per stream, [seconds, type, data] each."""
    raw = yaml.safe_load((GOLDEN / "logs" / f"{name}.yaml").read_text())
    start: datetime = raw["start"]
    events = []
    for stream in raw["streams"]:
        where = {k: stream[k] for k in ("cluster", "group", "timeline") if k in stream}
        for i, (seconds, kind, data) in enumerate(stream["events"], start=1):
            at = start + timedelta(seconds=seconds)
            event_id = f"{name}-{'/'.join(where.values())}-{i}"
            fields = {"event_id": event_id, **where, "type": kind, "at": at.isoformat()}
            events.append(parse_event({**fields, "data": data}))
    return events


@cache
def _store(name: str, root: Path) -> Store:
    store = initialised_store(root / f"{name}.duckdb")
    store.append(load_log(name))
    return store


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("golden")
    return lambda name: _store(name, root)


def plain(value: Any) -> Any:
    """A value as the fixtures write it: times as naive UTC text."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ")
    return value


def same(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return got is want
    if isinstance(want, float) and isinstance(got, float):
        return math.isclose(got, want, rel_tol=1e-12)
    return bool(plain(got) == plain(want))


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_query_answers_its_golden_rows(case: Path, stores: Any) -> None:
    spec = yaml.safe_load(case.read_text())
    result = run_query(stores(spec["log"]), case.parent.name, spec.get("params") or {})
    assert result.columns == spec["columns"]
    want = [list(row) for row in spec["rows"]]
    got = [list(row) for row in result.rows]
    assert len(got) == len(want), [[plain(v) for v in row] for row in got]
    for number, (row, expected) in enumerate(zip(got, want, strict=True)):
        bad = [
            (column, plain(g), plain(w))
            for column, g, w in zip(spec["columns"], row, expected, strict=True)
            if not same(g, w)
        ]
        assert not bad, f"row {number}: {bad}"


def test_every_query_has_golden_fixtures() -> None:
    covered = {case.parent.name for case in CASES}
    assert {q.name for q in queries()} <= covered


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.parent.name == "metrics"], ids=lambda p: p.stem
)
def test_the_oracle_agrees_with_the_metrics_fixtures(case: Path) -> None:
    # Worked by hand, computed by the tests' oracle (tests/analytics/oracle.py): the same.
    spec = yaml.safe_load(case.read_text())
    params = spec.get("params") or {}
    rows = [
        [row[column] for column in spec["columns"]]
        for row in oracle_metrics(load_log(spec["log"]))
        if all(row[key] == value for key, value in params.items())
    ]
    rows.sort(key=lambda row: row[:4])
    assert [[plain(v) for v in row] for row in rows] == [
        [plain(v) for v in row] for row in spec["rows"]
    ]
