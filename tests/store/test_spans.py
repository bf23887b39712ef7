"""Assignments stored as spans: ``kstore_assignments`` (a view) lists every
``AssignmentCompleted``'s entries, however the events were batched or rebuilt."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    GroupState,
    MemberJoined,
    MemberLeft,
)
from kstore.store import log
from kstore.store.analytics_rows import stable_groups
from kstore.store.interface import ConcurrencyError
from kstore.store.log import Store
from kstore.store.projections import SPANNED
from tests.store._stores import fresh_store
from tests.store.events_gen import make_event, streams


def _listed(events: list[Event]) -> Counter[tuple[Any, ...]]:
    """Each ``AssignmentCompleted``'s entries, as ``kstore_assignments`` must list them."""
    rows: Counter[tuple[Any, ...]] = Counter()
    versions: Counter[tuple[str, str, str]] = Counter()
    for event in events:
        versions[event.stream] += 1
        data = event.data
        if isinstance(data, AssignmentCompleted):
            for member, tps in data.assignment.items():
                for topic, partition in tps:
                    key = (*event.stream, versions[event.stream], data.generation)
                    rows[(*key, member, topic, partition)] += 1
    return rows


def _members_at(events: list[Event]) -> Counter[tuple[Any, ...]]:
    """The members of the group at each ``AssignmentCompleted`` (the fold's), a row per
    topic each subscribes to (None: none), as ``kstore_members_at`` must list them."""
    rows: Counter[tuple[Any, ...]] = Counter()
    folds: dict[tuple[str, str, str], GroupState] = {}
    for event in events:
        state = folds.setdefault(event.stream, GroupState())
        state.applied = []
        state.apply(event)
        if isinstance(event.data, AssignmentCompleted):
            (applied,) = state.applied
            for member, held in applied.members.items():
                for topic in dict.fromkeys(held.topics) or (None,):
                    rows[(*event.stream, applied.version, member, topic)] += 1
    return rows


def _rows(store: Store, table: str) -> list[tuple[Any, ...]]:
    (rows,) = _tables(store, table)
    return rows


def _tables(store: Store, *tables: str) -> list[list[tuple[Any, ...]]]:
    """Each table's rows, sorted, read on one connection (a connection is 20 ms)."""
    with duckdb.connect(str(store.path), read_only=True) as connection:
        return [
            sorted(connection.sql(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in tables
        ]


def _two_timelines(draw: st.DrawFn) -> list[Event]:
    """Two streams of one group (timelines), their events interleaved."""
    first = draw(streams(max_size=30))
    second = draw(streams(max_size=30, timeline="replay"))
    picks = draw(st.lists(st.booleans(), min_size=len(first) + len(second)))
    merged, a, b = [], iter(first), iter(second)
    for pick in picks:
        taken = next(a if pick else b, None) or next(b if pick else a, None)
        if taken is not None:
            merged.append(taken)
    return merged + list(a) + list(b)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cuts=st.lists(st.integers(1, 60), max_size=6))
def test_the_view_lists_every_decision_in_any_batches_and_after_a_rebuild(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, cuts: list[int]
) -> None:
    events = data.draw(st.composite(_two_timelines)())
    store = fresh_store(tmp_path_factory.getbasetemp() / "spans.duckdb")
    bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
    for lo, hi in itertools.pairwise(bounds):
        store.append(events[lo:hi])
    expected, members = _listed(events), _members_at(events)
    views = ("kstore_assignments", "kstore_members_at")
    assignments, members_at, *spans = _tables(store, *views, *SPANNED)
    assert Counter(assignments) == expected
    assert Counter(members_at) == members
    store.rebuild()
    assignments, members_at, *rebuilt = _tables(store, *views, *SPANNED)
    assert rebuilt == spans
    assert Counter(assignments) == expected
    assert Counter(members_at) == members


def test_a_rebuild_in_many_chunks_closes_the_spans_of_the_chunks_before(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = _sticky(rebalances=12, partitions=30)
    store.append(events)
    spans = _rows(store, "kstore_assignment_spans")
    monkeypatch.setattr(log, "REBUILD_ROWS", 40)
    store.rebuild()
    assert _rows(store, "kstore_assignment_spans") == spans
    assert Counter(_rows(store, "kstore_assignments")) == _listed(events)


def _sticky(rebalances: int, partitions: int) -> list[Event]:
    """A group of three members whose decisions each move one partition."""
    events = []
    for generation in range(1, rebalances + 1):
        owners: dict[str, list[tuple[str, int]]] = {"a": [], "b": [], "c": []}
        for p in range(partitions):
            owner = "abc"[(p + (generation if p == generation % partitions else 0)) % 3]
            owners[owner].append(("t", p))
        data = AssignmentCompleted(generation=generation, strategy="sticky", assignment=owners)
        events.append(make_event(data, generation))
    return events


def test_a_sticky_group_stores_a_span_per_move_not_a_row_per_partition(store: Store) -> None:
    events = _sticky(rebalances=20, partitions=100)
    for lo in range(0, len(events), 3):  # small batches: spans open across them
        store.append(events[lo : lo + 3])
    assert len(_rows(store, "kstore_assignments")) == 20 * 100
    spans = _rows(store, "kstore_assignment_spans")
    assert len(spans) < 100 + 2 * 20
    assert sum(span[-1] is None for span in spans) == 100  # the last decision's
    assert Counter(_rows(store, "kstore_assignments")) == _listed(events)


def test_copies_of_a_partition_listed_again_go_on_or_end_each_by_itself(store: Store) -> None:
    """A member listed with a partition twice, then once, then three times, with a
    decision between that lists nothing, one event an append: each copy (``listing``)
    is a span of its own, continued or closed across appends by itself."""
    twice, once, thrice = ([("t", 0)] * n for n in (2, 1, 3))
    decisions = [{"a": twice, "b": once}, {"a": once}, {"a": thrice}, {}, {"a": twice}]
    events = [
        make_event(AssignmentCompleted(generation=g, strategy="range", assignment=a), g)
        for g, a in enumerate(decisions, start=1)
    ]
    for event in events:
        store.append([event])
    spans = {(s[3], s[6], s[7], s[8]) for s in _rows(store, "kstore_assignment_spans")}
    # (member, listing, from_version, to_version): the decisions are versions 1 to 5
    assert spans == {
        ("a", 0, 1, 4),
        ("a", 1, 1, 2),
        ("a", 1, 3, 4),
        ("a", 2, 3, 4),
        ("b", 0, 1, 2),
        ("a", 0, 5, None),
        ("a", 1, 5, None),
    }
    assert Counter(_rows(store, "kstore_assignments")) == _listed(events)


_kept = st.one_of(st.none(), st.lists(st.tuples(st.just("t"), st.integers(0, 7)), max_size=3))
_joined = st.dictionaries(
    st.sampled_from("abc"), st.one_of(st.none(), st.lists(st.sampled_from("tu"), max_size=2))
)


# 20 examples (40 before): each appends its events one by one into a store of its own
# (~10 appends, 1.1 s an example at load 5). The rows made alone and in a batch are
# the same, over lists repeated from the decision before or drawn, in 150 examples of
# ``test_repeated_lists.py::test_generated_streams_make_the_rows_read_alone`` (the
# projector these spans come from), and the views against their oracles in any
# batches and after a rebuild in ``test_the_view_lists_every_decision_...`` above.
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(_joined, st.fixed_dictionaries({m: _kept for m in "abc"})),
        min_size=1,
        max_size=12,
    ),
    cuts=st.lists(st.integers(1, 30), max_size=3),
)
def test_lists_and_members_repeated_through_several_decisions_make_the_spans_of_each_alone(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[dict[str, list[str] | None], dict[str, list[tuple[str, int]] | None]]],
    cuts: list[int],
) -> None:
    """Members joining (again, maybe with other topics) or leaving before each decision,
    each member's list repeated from the decision before (None) or drawn; the events in
    batches: the spans of each event appended alone."""
    lists: dict[str, list[tuple[str, int]]] = {}
    events = []
    for generation, (joined, step) in enumerate(steps, start=1):
        for member, topics in joined.items():
            changed: EventData = (
                MemberLeft(member_id=member, reason="leave")
                if topics is None
                else MemberJoined(member_id=member, topics=topics)
            )
            events.append(make_event(changed, generation))
        lists = {m: lists.get(m, []) if drawn is None else drawn for m, drawn in step.items()}
        lists = {m: tps for m, tps in lists.items() if tps or step[m] is None}
        data = AssignmentCompleted(generation=generation, strategy="sticky", assignment=lists)
        events.append(make_event(data, generation))
    base = tmp_path_factory.getbasetemp()
    alone, batched = fresh_store(base / "alone.duckdb"), fresh_store(base / "batched.duckdb")
    for event in events:
        alone.append([event])
    bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
    for lo, hi in itertools.pairwise(bounds):
        batched.append(events[lo:hi])
    assignments, members_at, *spans = _tables(
        batched, "kstore_assignments", "kstore_members_at", *SPANNED
    )
    assert spans == _tables(alone, *SPANNED)
    assert Counter(assignments) == _listed(events)
    assert Counter(members_at) == _members_at(events)


def test_a_rejected_batch_closes_no_span(store: Store) -> None:
    events = _sticky(rebalances=4, partitions=10)
    store.append(events[:2])
    before = _rows(store, "kstore_assignment_spans")
    with pytest.raises(ConcurrencyError):
        store.append(events[2:], expected_version=1)
    assert _rows(store, "kstore_assignment_spans") == before
    store.append(events[2:], expected_version=2)
    assert Counter(_rows(store, "kstore_assignments")) == _listed(events)


def test_a_downgrade_stores_the_views_rows_and_an_upgrade_rebuilds_the_spans(
    store: Store,
) -> None:
    joined = make_event(MemberJoined(member_id="a", topics=["t", "u"]))
    events = [joined, *_sticky(rebalances=6, partitions=20)]
    store.append(events)
    views = ("kstore_assignments", "kstore_members_at")
    rows = [_rows(store, view) for view in views]
    assert len(rows[1]) == 6 * 2
    spans = [_rows(store, table) for table in SPANNED]
    store.migrate("0006_log_without_indexes")
    with duckdb.connect(str(store.path), read_only=True) as connection:
        tables = {
            name for (name,) in connection.sql("SELECT table_name FROM duckdb_tables()").fetchall()
        }
    assert set(views) <= tables and not set(SPANNED) & tables
    assert [_rows(store, view) for view in views] == rows
    store.init()
    assert [_rows(store, table) for table in SPANNED] == spans
    assert [_rows(store, view) for view in views] == rows


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda width: st.lists(
            st.tuples(*[st.sampled_from([0, 1, 5, -3, 2**40, -(2**40)])] * width),
            max_size=25,
        ).map(lambda rows: (width, rows))
    )
)
def test_stable_groups_are_a_stable_sort_by_every_column(shape: tuple[int, list[Any]]) -> None:
    """Whatever the columns leave out (one value) or overflow (sorted column by column):
    the order a stable sort by all of them gives, and where their values change."""
    width, rows = shape
    columns = [np.array([row[c] for row in rows], dtype=np.int64) for c in range(width)]
    order, changed = stable_groups(columns)
    expected = sorted(range(len(rows)), key=lambda i: rows[i])
    assert order.tolist() == expected
    assert changed.tolist() == [
        at == 0 or rows[i] != rows[expected[at - 1]] for at, i in enumerate(expected)
    ]
