"""A decision read against the stream's previous one in the batch (``Decision``'s
``previous``: only the lists it does not repeat are looked up) makes the rows that it
makes read on its own: decisions that repeat, move, double-assign and drop partitions,
with members replaced between them."""

from __future__ import annotations

import weakref
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.model import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    EventData,
    MemberJoined,
    MemberReplaced,
    TopicChanged,
)
from kstore.model.fold import GroupState
from kstore.store.analytics_rows import _PIECES_FROM
from kstore.store.projections import PROJECTED, Projector, StreamHead

T0 = datetime(2026, 11, 24, tzinfo=UTC)
_TPS = [("t", p) for p in range(4)] + [("u", p) for p in range(2)]
_MEMBERS = ["a", "b", "c"]
_REVOKED = "kstore_revocations"


def _events(datas: list[EventData]) -> list[Event]:
    return [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]


def _start() -> list[EventData]:
    return [
        TopicChanged(topic="t", partitions=4),
        TopicChanged(topic="u", partitions=2),
        *(MemberJoined(member_id=m, topics=["t", "u"]) for m in _MEMBERS),
    ]


def _rows(batches: list[list[Event]]) -> tuple[dict[str, list[dict[str, Any]]], StreamHead]:
    """The projected rows of the events fed in ``batches``, a projector each."""
    head = StreamHead()
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in PROJECTED}
    for batch in batches:
        projector = Projector()
        for event in batch:
            projector.feed(head, event, event.at.replace(tzinfo=None))
        for name in PROJECTED:
            rows[name].extend(projector.arrow(name).to_pylist())
    return rows, head


def _same_rows(datas: list[EventData]) -> None:
    stream = _events(datas)
    together, head = _rows([stream])
    alone, alone_head = _rows([[event] for event in stream])
    assert together == alone
    assert head.last_owner == alone_head.last_owner


def _decided(generation: int, **lists: list[tuple[str, int]]) -> AssignmentCompleted:
    return AssignmentCompleted(generation=generation, strategy="x", leader="a", assignment=lists)


def test_repeated_moved_doubled_and_replaced_lists_make_the_rows_read_alone() -> None:
    first = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("u", 0)], "c": [("u", 1)]}
    datas = [
        *_start(),
        _decided(1, **first),
        _decided(2, **first),  # all repeated
        _decided(3, **{**first, "c": [("u", 1), ("t", 1)]}),  # t1 also a's, repeated
        _decided(4, **first),  # after a double assignment
        _decided(5, **first),
        _decided(6, a=[("t", 0)], b=first["b"], c=[("u", 1), ("t", 1)]),  # a moves t1
        _decided(7, a=[("t", 0)], b=first["b"], c=[("u", 1)]),  # t1 last c's, unassigned
        _decided(8, a=[("t", 0)], b=first["b"], c=[("u", 1), ("t", 3)]),
        MemberReplaced(old_member_id="b", new_member_id="c", instance_id="i"),
        _decided(9, a=[("t", 0)], c=[("u", 1), ("t", 3)]),  # after a hand-over
        _decided(10, a=[("t", 0)], c=[("u", 1), ("t", 3)], b=[("t", 2), ("u", 0)]),
        MemberReplaced(old_member_id="a", new_member_id="d", instance_id="j"),
        _decided(11, a=[("t", 0)], c=[("u", 1), ("t", 3)]),  # t0 last d's
        _decided(12, a=[("t", 0), ("t", 1)], c=[("u", 1), ("t", 3)]),
        _decided(13, a=[("t", 0)], c=[("u", 1), ("t", 3), ("t", 1)]),  # a did not take
        AssignmentNotTakenUp(generation=13, member_id="a"),  # it up: t1 a's again
        _decided(14, a=[("t", 0)], c=[("u", 1), ("t", 3), ("t", 1)]),
        _decided(15, a=[("t", 0), ("t", 0), ("u", 0)], c=[("u", 1)]),  # a lists t0 twice
        _decided(16, c=[("u", 1), ("t", 0)]),  # revoked once
    ]
    _same_rows(datas)
    _revocations_as_defined(datas)


_lists = st.lists(st.sampled_from(_TPS), max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(
                st.just("decide"),
                st.fixed_dictionaries({m: st.one_of(st.none(), _lists) for m in _MEMBERS}),
            ),
            st.tuples(st.just("replace"), st.tuples(*(st.sampled_from(_MEMBERS),) * 2)),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_generated_streams_make_the_rows_read_alone(steps: list[tuple[str, object]]) -> None:
    """Each member's list is repeated from the previous decision (None) or drawn."""
    datas: list[EventData] = _start()
    previous: dict[str, list[tuple[str, int]]] = {}
    for generation, (kind, step) in enumerate(steps, 1):
        if kind == "replace":
            assert isinstance(step, tuple)
            old, new = step
            datas.append(MemberReplaced(old_member_id=old, new_member_id=new, instance_id="i"))
            continue
        assert isinstance(step, dict)
        lists = {m: previous.get(m, []) if given is None else given for m, given in step.items()}
        datas.append(_decided(generation, **lists))
        previous = lists
    _same_rows(datas)
    _revocations_as_defined(datas)


def _revocations_as_defined(datas: list[EventData]) -> None:
    """The ``kstore_revocations`` rows of a batch are, decision by decision, each
    (member, partition) of the assignment before it (the fold's, replaced members
    renamed) that it does not give that member, each once, in the order listed."""
    events = _events(datas)
    rows, _ = _rows([events])
    fold = GroupState(applied=[])
    expected = []
    for event in events:
        fold.apply(event)
        if isinstance(event.data, AssignmentCompleted):
            applied = fold.applied[-1]
            for member, held in applied.previous.items():
                now = event.data.assignment.get(member, [])
                expected.extend(
                    (applied.version, member, topic, partition)
                    for topic, partition in dict.fromkeys(held)
                    if (topic, partition) not in now
                )
    got = [(r["version"], r["member"], r["topic"], r["partition"]) for r in rows[_REVOKED]]
    assert got == expected


def test_a_decision_is_not_kept_alive_by_the_next_once_its_rows_are_made() -> None:
    """A decision read against the previous one holds it (for the batch's rows) only
    until they are made: a projector that keeps no rows (a head loaded from the log), or
    one whose rows were made, does not hold every earlier decision of the stream."""
    lists = {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("u", 0)], "c": [("u", 1)]}
    for keep in (False, True):
        events = _events([*_start(), *(_decided(g, **lists) for g in range(1, 5))])
        projector, head = Projector(keep), StreamHead()
        for event in events:
            projector.feed(head, event, event.at.replace(tzinfo=None))
        projector.arrow(PROJECTED[0])
        earlier = weakref.ref(events[-2].data)
        del events, event
        assert earlier() is None, keep


def test_a_big_decision_repeating_lists_writes_the_json_pydantic_writes() -> None:
    """A decision of at least ``_PIECES_FROM`` entries that repeats lists of the
    previous one writes its JSON in pieces (those it repeats taken from the previous
    one's text): the same text as pydantic's, whatever its member ids and other fields
    hold (quotes, escapes, the text ``"assignment":{}`` itself)."""
    odd = ['a"b', "c\\d", "é", "new\nline", '"assignment":{}', "\u2028", "\x7f", "x" * 300]
    members = [*odd, *(f"m{i}" for i in range(40))]
    tps = [("t", p) for p in range(_PIECES_FROM + 100)]
    lists = {m: tps[i :: len(members)] for i, m in enumerate(members)}
    moved = {**lists, odd[0]: lists[odd[1]], odd[1]: lists[odd[0]]}
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=len(tps)),
        *(MemberJoined(member_id=m, topics=["t"]) for m in members),
        AssignmentCompleted(generation=1, strategy="s", assignment=lists),
        AssignmentCompleted(generation=2, strategy='"assignment":{}', assignment=lists),
        AssignmentCompleted(
            generation=3, strategy="s", assignment=moved, leader=odd[2], client="c\n"
        ),
        AssignmentCompleted(generation=4, strategy="s", assignment=moved, source="r"),
    ]
    projector, head = Projector(), StreamHead()
    for event in _events(datas):
        projector.feed(head, event, event.at.replace(tzinfo=None))
        assert projector.data_json(event) == event.data.model_dump_json(exclude_none=True)


def test_a_big_decision_whose_lists_mostly_changed_is_written_in_one_call() -> None:
    """Pieces cost about twice their part of pydantic's one call: a decision whose
    entries are mostly in lists it does not repeat (a range decision after a member
    left) is written whole, and the same text."""
    members = [f"m{i}" for i in range(10)]
    tps = [("t", p) for p in range(_PIECES_FROM + 100)]
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=len(tps)),
        *(MemberJoined(member_id=m, topics=["t"]) for m in members),
        *(
            AssignmentCompleted(
                generation=g,
                strategy="range",
                assignment={m: tps[i + g :: len(members)] for i, m in enumerate(members)},
            )
            for g in (1, 2)
        ),
    ]
    projector, head = Projector(), StreamHead()
    for event in _events(datas):
        projector.feed(head, event, event.at.replace(tzinfo=None))
        assert projector.data_json(event) == event.data.model_dump_json(exclude_none=True)
    decision = projector._decided[event.stream][1]
    assert decision.repeated is not None and not any(decision.repeated)
    assert decision._pieces is None
