"""compare's averages do not depend on DuckDB's threads (issue 13): a timeline and a copy
of it compare equal to the last digit. DuckDB's parallel ``avg`` of doubles added each
thread's share in the order the threads finished: 40,000 rebalances replayed twice with
range gave stickiness 0.7041776044400817 and 0.7041776044400946, other digits each run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from kstore.analytics._queries import check_query
from kstore.analytics.report import compare
from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    TopicChanged,
)
from kstore.store.log import Store

T0 = datetime(2026, 11, 27, tzinfo=UTC)
REBALANCES = 12_000
"""Two timelines of as many rows as this: more than one of the store's row groups (16,384
rows), so DuckDB spreads the scan over its threads."""


def _history(timeline: str) -> list[Event]:
    """Members coming and going, each rebalance turning the partitions one owner on where
    it can: stickiness of every kind between 0 and 1."""
    datas: list[EventData] = [TopicChanged(topic="t", partitions=7)]
    members: list[str] = []
    for generation in range(1, REBALANCES + 1):
        if len(members) < 2 or (len(members) < 5 and generation % 3):
            members.append(f"m{generation}")
            datas.append(MemberJoined(member_id=members[-1], topics=["t"]))
        else:
            gone = members.pop(generation % len(members))
            datas.append(MemberLeft(member_id=gone, reason="leave"))
        datas.append(RebalanceStarted(generation=generation, reason="change"))
        assignment: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        for p in range(7):
            assignment[members[(p + generation // 2) % len(members)]].append(("t", p))
        datas.append(
            AssignmentCompleted(generation=generation, strategy="x", assignment=assignment)
        )
    return [
        Event(group="g", timeline=timeline, at=T0 + timedelta(seconds=i), data=d)
        for i, d in enumerate(datas)
    ]


def _compared(
    path: Path, threads: int, name: str = "compare", **params: str
) -> dict[str, list[Any]]:
    """Query ``name``'s rows of group g by timeline (each without its timeline), run by
    DuckDB on ``threads`` threads."""
    params["group"] = "g"
    query = check_query(name, params)
    with duckdb.connect(str(path), read_only=True) as db:
        db.execute(f"SET threads = {threads}")
        rows = db.execute(query.sql, {p: params.get(p) for p in query.parameters})
        names = [d[0] for d in rows.description]
        found: dict[str, list[Any]] = {}
        for row in rows.fetchall():
            fields = dict(zip(names, row, strict=True))
            found.setdefault(fields.pop("timeline"), []).append(fields)
        return found


def test_a_timeline_and_its_copy_compare_equal_on_any_threads(store: Store) -> None:
    store.append(_history("recorded"))
    store.append(_history("copy"))
    runs = [_compared(store.path, threads) for threads in (4, 4, 4, 2, 1)]
    for run in runs:
        assert run["recorded"] == run["copy"]
        assert run == runs[0]
    windows = [_compared(store.path, 4, "windows", window="day") for _ in range(3)]
    assert all(run["recorded"] == run["copy"] == windows[0]["copy"] for run in windows)
    shown = {
        r["timeline"]: r for r in compare(store, "g", ["recorded", "copy"], "default").records()
    }
    assert shown["recorded"]["stickiness"] == shown["copy"]["stickiness"]
    assert shown["recorded"]["stickiness"] == runs[0]["recorded"][0]["stickiness"]
    assert 0 < shown["recorded"]["stickiness"] < 1
