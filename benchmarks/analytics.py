"""Analytics on a long stream: queries beside a flat table, replay beside the assignor.

The stream: ``REBALANCES`` rebalances of a group of ``PARTITIONS`` partitions (10 topics)
and ``MEMBERS`` members, one member leaving or joining before each, a tenth of the
partitions moving each time (1,000 x 10,000 = 10 million assignment rows in full mode).

- loading: the stream is appended in batches of ``_BATCH`` events (one transaction
  each); the time is printed with the table.
- ``metrics``, ``windows`` and ``topics`` (goal: each under 1 s), each beside a
  hand-written DuckDB query over a flat table of the same assignment rows
  (version, at, member, topic, partition) computing the same kind of answer (churn per
  rebalance, per hour, per topic and hour) from the rows themselves, in memory (the
  limit: what a query without kstore's projections costs).
- replay with ``sticky`` and ``optimal`` of the stream's first rebalances: rebalances
  per second, and the assignor's own time for the same decisions; the rest (reading
  the source, folding, building requests, storing the decisions with their projection
  rows) is printed beside it as kstore's own time per rebalance.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from benchmarks._goals import verdict
from kstore.analytics import run_query
from kstore.analytics.replay import replay
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

__all__ = ["main"]

_BATCH = 250

_FLAT_OWNED = """
WITH owned AS (
    SELECT version, "at", member, topic,
           lag(member) OVER (PARTITION BY topic, "partition" ORDER BY version) AS before
    FROM flat
)
"""
_FLAT = {
    "metrics": _FLAT_OWNED
    + """
SELECT version, any_value("at"), count(*) AS assigned,
       count(*) FILTER (WHERE before IS NOT NULL AND before <> member) AS moved,
       count(*) FILTER (WHERE before IS NULL) AS new
FROM owned GROUP BY version ORDER BY version
""",
    "windows": _FLAT_OWNED
    + """
SELECT date_trunc('hour', "at") AS window_start, count(DISTINCT version) AS rebalances,
       count(*) FILTER (WHERE before IS NOT NULL AND before <> member) AS churn
FROM owned GROUP BY ALL ORDER BY ALL
""",
    "topics": _FLAT_OWNED
    + """
SELECT topic, date_trunc('hour', "at") AS window_start,
       count(*) FILTER (WHERE before IS NOT NULL AND before <> member) AS churn
FROM owned GROUP BY ALL ORDER BY ALL
""",
}


def _stream(rebalances: int, partitions: int, members: int) -> list[Event]:
    start = datetime(2026, 11, 21, tzinfo=UTC)
    per_topic = partitions // 10
    topics = [f"topic-{t}" for t in range(10)]
    datas: list[EventData] = [TopicChanged(topic=t, partitions=per_topic) for t in topics]
    present = [f"consumer-{m}" for m in range(members)]
    datas += [MemberJoined(member_id=m, topics=topics) for m in present]
    spare = members
    for generation in range(1, rebalances + 1):
        if generation % 2:
            datas.append(MemberLeft(member_id=present.pop(0), reason="session-timeout"))
        else:
            present.append(f"consumer-{spare}")
            spare += 1
            datas.append(MemberJoined(member_id=present[-1], topics=topics))
        datas.append(RebalanceStarted(generation=generation, reason="membership"))
        owners: dict[str, list[tuple[str, int]]] = {m: [] for m in present}
        for p in range(partitions):
            shift = generation if p % 10 == 0 else 0
            owners[present[(p + shift) % len(present)]].append((topics[p % 10], p // 10))
        datas.append(
            AssignmentCompleted(generation=generation, strategy="range", assignment=owners)
        )
    return [
        Event(group="big", at=start + timedelta(seconds=30 * i), data=d)
        for i, d in enumerate(datas)
    ]


def _timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main(quick: bool) -> None:
    rebalances, partitions, members = (60, 2_000, 50) if quick else (1_000, 10_000, 500)
    replayed = 20 if quick else 100
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "kstore.duckdb")
        store.init()
        making = time.perf_counter()
        events = _stream(rebalances, partitions, members)
        making = time.perf_counter() - making
        loading = time.perf_counter()
        for lo in range(0, len(events), _BATCH):
            store.append(events[lo : lo + _BATCH])
        loading = time.perf_counter() - loading
        with duckdb.connect(str(store.path), read_only=True) as db:
            flat = db.sql(
                "SELECT a.version, r.at, a.member, a.topic, a.partition FROM kstore_assignments a "
                "JOIN kstore_rebalances r USING (cluster, group_id, timeline, version)"
            ).to_arrow_table()
        rows = flat.num_rows
        bare = duckdb.connect()
        bare.register("flat_arrow", flat)
        bare.execute("CREATE TABLE flat AS SELECT * FROM flat_arrow")
        table = Table(
            title=f"analytics: {rebalances:,} rebalances x {partitions:,} partitions "
            f"= {rows:,} assignment rows ({len(events):,} events made in {making:.1f} s, "
            f"appended in batches of {_BATCH} in {loading:.1f} s)"
        )
        for column in ("query", "kstore s", "flat-table query s", "goal", "verdict"):
            table.add_column(column)
        for name in ("metrics", "windows", "topics"):
            run_query(store, name, {"group": "big"})  # warm: file cache, plans
            seconds = _timed(partial(run_query, store, name, {"group": "big"}))
            flat_s = _timed(partial(bare.execute, _FLAT[name]))
            table.add_row(name, f"{seconds:.3f}", f"{flat_s:.3f}", "< 1 s", verdict(seconds < 1))
        console.print(table)

        # Replays of the first rebalances (a smaller source stream of the same shape).
        source = _stream(replayed, partitions, members)
        store.append([event.model_copy(update={"group": "replayed"}) for event in source])
        table = Table(title=f"replay: {replayed} rebalances x {partitions:,} partitions")
        columns = ("strategy", "rebalances/s", "assignor s", "replay s", "assignor share")
        for column in (*columns, "kstore ms per rebalance"):
            table.add_column(column)
        for strategy in ("sticky", "optimal"):
            done = replay(store, group="replayed", strategy=strategy)
            table.add_row(
                strategy,
                f"{done.rebalances / done.seconds:.1f}",
                f"{done.assignor_seconds:.2f}",
                f"{done.seconds:.2f}",
                f"{done.assignor_seconds / done.seconds:.0%}",
                f"{(done.seconds - done.assignor_seconds) / done.rebalances * 1000:.0f}",
            )
        console.print(table)
