"""The metrics query against metrics.md computed in plain Python (oracle.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore.analytics import run_query
from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
)
from kstore.store.log import Store
from tests.analytics.oracle import metrics as oracle_metrics
from tests.store._stores import initialised_store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
TOPICS = ["t1", "t2", "t3"]
COLUMNS = [
    "cluster",
    "group",
    "timeline",
    "version",
    "generation",
    "at",
    "members",
    "assigned",
    "moved",
    "new",
    "revoked",
    "unassigned",
    "retainable",
    "kept",
    "stickiness",
    "imbalance",
    "excess",
    "double_assigned",
    "duration_ms",
]


@st.composite
def histories(draw: st.DrawFn, group: str = "g", timeline: str = "recorded") -> list[Event]:
    """A stream with the odd facts metrics.md covers: doubles, unknown members, leavers,
    replacements, deleted topics, partitions past a topic's count."""
    members: list[str] = []
    fresh = iter(f"m{i}" for i in range(1000))
    datas: list[EventData] = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(
            st.sampled_from(
                [
                    "topic",
                    "delete",
                    "join",
                    "leave",
                    "replace",
                    "sub",
                    "start",
                    "assign",
                    "assign",
                    "assign",
                ]
            )
        )
        topics = st.lists(st.sampled_from(TOPICS), max_size=3)
        if kind == "topic":
            datas.append(
                TopicChanged(
                    topic=draw(st.sampled_from(TOPICS)), partitions=draw(st.integers(1, 5))
                )
            )
        elif kind == "delete":
            datas.append(TopicDeleted(topic=draw(st.sampled_from(TOPICS))))
        elif kind == "join":
            member = (
                next(fresh)
                if not members or draw(st.booleans())
                else draw(st.sampled_from(members))
            )
            members.append(member)
            datas.append(MemberJoined(member_id=member, topics=draw(topics)))
        elif kind == "leave" and members:
            member = draw(st.sampled_from(members))
            members = [m for m in members if m != member]
            datas.append(MemberLeft(member_id=member, reason="leave"))
        elif kind == "replace" and members:
            # the new id: a fresh one, the old one itself, or another member (a merge)
            old = draw(st.sampled_from(members))
            new = draw(st.sampled_from([next(fresh), old, *members]))
            members = [new if m == old else m for m in members if m != new or m == old]
            datas.append(MemberReplaced(old_member_id=old, new_member_id=new, instance_id="i"))
        elif kind == "sub":
            # members, and ids that are not (any more): those stay non-members
            datas.append(
                SubscriptionChanged(
                    member_id=draw(st.sampled_from([*members, "ghost", "m0"])), topics=draw(topics)
                )
            )
        elif kind == "start":
            datas.append(RebalanceStarted(generation=draw(st.integers(0, 3)), reason="r"))
        elif kind == "assign":
            pool = [*members, "ghost"] if members else ["ghost"]
            partition = st.tuples(st.sampled_from(TOPICS), st.integers(0, 5))
            assignment = draw(
                st.dictionaries(st.sampled_from(pool), st.lists(partition, max_size=6), max_size=4)
            )
            datas.append(
                AssignmentCompleted(
                    generation=draw(st.integers(0, 3)), strategy="range", assignment=assignment
                )
            )
    step = draw(st.sampled_from([timedelta(seconds=1), timedelta(microseconds=1500)]))
    return [
        Event(group=group, timeline=timeline, at=T0 + i * step, data=d) for i, d in enumerate(datas)
    ]


def _compare(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for row, expected in zip(got, want, strict=True):
        for key, value in expected.items():
            if key == "stickiness" and value is not None:
                assert row[key] is not None and abs(row[key] - value) < 1e-9, (key, row, expected)
            else:
                assert row[key] == value, (key, row, expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), other=histories(group="h"))
def test_metrics_match_the_definitions(
    tmp_path_factory: Any, history: list[Event], other: list[Event]
) -> None:
    store = initialised_store(Path(tmp_path_factory.mktemp("m")) / "kstore.duckdb")
    store.append([*history, *other])
    result = run_query(store, "metrics", {"group": "g"})
    assert result.columns == COLUMNS
    rows = result.records()
    assert {(r["cluster"], r["group"], r["timeline"]) for r in rows} <= {
        ("default", "g", "recorded")
    }
    _compare(rows, oracle_metrics(history))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_metrics_survive_a_rebuild(tmp_path_factory: Any, history: list[Event]) -> None:
    store = initialised_store(Path(tmp_path_factory.mktemp("r")) / "kstore.duckdb")
    store.append(history)
    before = run_query(store, "metrics", {}).rows
    store.rebuild()
    assert run_query(store, "metrics", {}).rows == before


def test_a_worked_example(store: Store) -> None:
    """Cooperative: a partition revoked in one round keeps its owner as prev in the next."""

    def at(s: int) -> datetime:
        return T0 + timedelta(seconds=s)

    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=4),
        MemberJoined(member_id="a", topics=["t"]),
        RebalanceStarted(generation=1, reason="join"),
        AssignmentCompleted(
            generation=1, strategy="x", assignment={"a": [("t", p) for p in range(4)]}
        ),
        MemberJoined(member_id="b", topics=["t"]),
        RebalanceStarted(generation=2, reason="join"),
        AssignmentCompleted(
            generation=2, strategy="x", assignment={"a": [("t", 0), ("t", 1)], "b": []}
        ),
        RebalanceStarted(generation=3, reason="follow-up"),
        AssignmentCompleted(
            generation=3,
            strategy="x",
            assignment={"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]},
        ),
    ]
    store.append([Event(group="g", at=at(i), data=d) for i, d in enumerate(datas)])
    rows = run_query(store, "metrics", {"group": "g"}).records()
    assert [(r["moved"], r["new"], r["revoked"], r["unassigned"]) for r in rows] == [
        (0, 4, 0, 0),
        (0, 0, 2, 2),
        (2, 0, 0, 0),
    ]
    assert [(r["retainable"], r["kept"], r["stickiness"]) for r in rows] == [
        (0, 0, None),
        (2, 2, 1.0),
        (4, 2, 0.5),
    ]
    assert [(r["imbalance"], r["excess"], r["duration_ms"]) for r in rows] == [
        (0, 0, 1000),
        (2, 1, 1000),
        (0, 0, 1000),
    ]
