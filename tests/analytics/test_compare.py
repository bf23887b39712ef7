"""compare's columns against optimal: churn and disruption (churn + unassigned)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kstore.analytics import run_query
from kstore.analytics.replay import replay
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

T0 = datetime(2026, 11, 24, tzinfo=UTC)


def _totals(store: Store, timeline: str) -> tuple[int, int]:
    rows = run_query(store, "metrics", {"group": "g", "timeline": timeline}).records()
    return sum(r["moved"] for r in rows), sum(r["unassigned"] for r in rows)


def test_unassigned_partitions_count_against_a_history(store: Store) -> None:
    """A history that parks partitions unowned while b is in the group, then gives them
    back to their last owner: no move counted, so its churn is below optimal's."""
    every = [("t", p) for p in range(4)]
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=4),
        MemberJoined(member_id="a", topics=["t"]),
        RebalanceStarted(generation=1, reason="join"),
        AssignmentCompleted(generation=1, strategy="x", assignment={"a": every}),
        MemberJoined(member_id="b", topics=["t"]),
        RebalanceStarted(generation=2, reason="join"),
        AssignmentCompleted(generation=2, strategy="x", assignment={"a": every[:2], "b": []}),
        MemberLeft(member_id="b", reason="leave"),
        RebalanceStarted(generation=3, reason="leave"),
        AssignmentCompleted(generation=3, strategy="x", assignment={"a": every}),
    ]
    store.append(
        [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]
    )
    replay(store, group="g", strategy="optimal")
    table = compare(store, "g", ["recorded", "replay/optimal"], "default")
    rows = {r["timeline"]: r for r in table.records()}
    moved, unassigned = _totals(store, "recorded")
    best_moved, best_unassigned = _totals(store, "replay/optimal")
    assert best_unassigned == 0 and unassigned > 0
    recorded = rows["recorded"]
    assert recorded["churn_above_optimal"] == moved - best_moved < 0
    assert recorded["disruption_above_optimal"] == moved + unassigned - best_moved
    assert recorded["disruption_above_optimal"] > recorded["churn_above_optimal"]
    optimal = rows["replay/optimal"]
    assert optimal["churn_above_optimal"] == optimal["disruption_above_optimal"] == 0
