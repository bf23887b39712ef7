"""``AssignmentNotTakenUp``, kstore's own event type: the member holds what it held before
the generation, in the fold, the next request, the store's tables and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.model import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    GroupState,
    MemberJoined,
    MemberReplaced,
    RebalanceStarted,
    TopicChanged,
    fold,
)
from kstore.store.log import Store
from kstore.store.projections import StreamHead
from tests.store.events_gen import make_event, streams
from tests.store.test_cli_store import run


def decided(generation: int, shares: dict[str, list[int]]) -> AssignmentCompleted:
    assignment = {m: [("t", p) for p in ps] for m, ps in shares.items()}
    return AssignmentCompleted(generation=generation, strategy="sticky", assignment=assignment)


def history(*more: Any) -> list[Event]:
    """a and b hold t-0..2 and t-3..5 in generation 1; c joins; generation 2 gives b
    t-4, 5 and c t-3, 0 ..."""
    datas = [
        TopicChanged(topic="t", partitions=6),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t"]),
        RebalanceStarted(generation=1, reason="join"),
        decided(1, {"a": [0, 1, 2], "b": [3, 4, 5]}),
        MemberJoined(member_id="c", topics=["t"]),
        RebalanceStarted(generation=2, reason="c joined"),
        decided(2, {"a": [1, 2], "b": [4, 5], "c": [3, 0]}),
        *more,
    ]
    return [make_event(d, i) for i, d in enumerate(datas)]


def test_the_member_holds_what_it_held_before_with_that_generation() -> None:
    state = fold(history(AssignmentNotTakenUp(generation=2, member_id="b", reason="x")))
    assert state.assignment["b"] == (("t", 3), ("t", 4), ("t", 5))
    assert state.held_from == {"b": 1}
    request = state.to_request("sticky")
    assert request.members["b"].owned == [("t", 3), ("t", 4), ("t", 5)]
    assert request.members["b"].generation == 1
    assert request.members["a"].generation == 2 and request.members["c"].generation == 2
    # A member the assignment before did not name holds nothing, of no generation.
    joined = fold(history(AssignmentNotTakenUp(generation=2, member_id="c")))
    assert joined.assignment["c"] == ()
    assert joined.to_request("sticky").members["c"].generation is None
    # The next AssignmentCompleted settles everyone's generation again.
    after = fold(history(AssignmentNotTakenUp(generation=2, member_id="b"), decided(3, {})))
    assert after.held_from == {} and after.previous_held_from == {"b": 1}


def test_a_member_replaced_after_the_decision_gets_its_old_ids_holdings_back() -> None:
    # A static member re-joins under a new id, then does not take generation 2 up: what it
    # held in generation 1 under its old id is what it holds.
    replaced = MemberReplaced(old_member_id="b", new_member_id="b2", instance_id="i")
    state = fold(history(replaced, AssignmentNotTakenUp(generation=2, member_id="b2")))
    assert state.assignment["b2"] == (("t", 3), ("t", 4), ("t", 5))
    assert "b" not in state.assignment and state.held_from == {"b2": 1}
    assert state.previous["b2"] == (("t", 3), ("t", 4), ("t", 5))


def test_a_fact_of_another_generation_changes_nothing() -> None:
    plain = fold(history())
    for odd in (
        AssignmentNotTakenUp(generation=1, member_id="b"),
        AssignmentNotTakenUp(generation=2, member_id="nobody"),
    ):
        state = fold(history(odd))
        assert (state.assignment, state.held_from) == (plain.assignment, {})


def test_the_state_keeps_it_through_a_snapshot() -> None:
    state = fold(history(AssignmentNotTakenUp(generation=2, member_id="b")))
    again = StreamHead.from_json(StreamHead(state).to_json()).state
    assert again == state
    assert (again.held_from, again.previous_generation) == ({"b": 1}, 1)
    # A state written before the type existed reads as holding nothing earlier.
    raw = state.to_dict()
    del raw["held_from"], raw["previous"]
    older = GroupState.from_dict(raw)
    assert older.held_from == {} and older.previous == {}


@pytest.mark.parametrize(("old", "new"), [("a", "c"), ("c", "a")])
def test_a_replaced_id_holding_nothing_leaves_the_others_generation(old: str, new: str) -> None:
    """Found by the property below: a (not taken up, holding nothing) and c (holding t1-0
    of generation 0) merged by ``MemberReplaced``, either way round, held t1-0 of no
    generation."""
    datas = [
        MemberJoined(member_id="a", topics=[]),
        AssignmentCompleted(generation=0, strategy="range", assignment={"a": [], "c": [("t1", 0)]}),
        AssignmentNotTakenUp(generation=0, member_id="a"),
        MemberReplaced(old_member_id=old, new_member_id=new, instance_id="i"),
    ]
    state = fold([make_event(d, i) for i, d in enumerate(datas)])
    request = state.to_request("range").members
    assert state.assignment[new] == (("t1", 0),)
    assert list(request) == [new]  # "a" renamed, or "a" kept (the old id was no member)
    assert request[new].owned == [("t1", 0)] and request[new].generation == 0


@settings(max_examples=150, deadline=None)
@given(streams(max_size=14), st.data())
def test_folds_as_if_its_share_were_replaced_by_its_old_holdings(
    events: list[Event], data: st.DataObject
) -> None:
    """A stream with ``AssignmentNotTakenUp`` of M after E folds, at every event after,
    to the state of the stream whose E gives M its old holdings instead: the same
    assignment, and the same next request but for M's generation (the one it held them
    in, until the next ``AssignmentCompleted``)."""
    decisions = [i for i, e in enumerate(events) if isinstance(e.data, AssignmentCompleted)]
    if not decisions:
        return
    at = data.draw(st.sampled_from(decisions))
    member = data.draw(st.sampled_from(["a", "b", "c", "d"]))
    e = events[at].data
    assert isinstance(e, AssignmentCompleted)
    before = fold(events[:at])
    old = before.assignment.get(member)
    fact = make_event(AssignmentNotTakenUp(generation=e.generation, member_id=member), at)
    with_fact = [*events[: at + 1], fact, *events[at + 1 :]]
    shares = dict(e.assignment)
    if member in shares or old is not None:
        shares[member] = list(old or ())
    replaced = events[at].model_copy(update={"data": e.model_copy(update={"assignment": shares})})
    without = [*events[:at], replaced, *events[at + 1 :]]
    one, other = fold(with_fact[: at + 2]), fold(without[: at + 1])
    for step in range(at + 1, len(events) + 1):
        if step > at + 1:
            one.apply(with_fact[step])
            other.apply(without[step - 1])
        assert one.assignment == other.assignment
        assert one.members == other.members
        mine = one.to_request("range").members
        theirs = other.to_request("range").members
        assert {m: s.owned for m, s in mine.items()} == {m: s.owned for m, s in theirs.items()}
        for m in mine:
            # the stream may hold facts of its own: only the inserted one tells them apart
            if one.held_from.get(m, "none") == other.held_from.get(m, "none"):
                assert mine[m].generation == theirs[m].generation
            elif mine[m].owned:  # a share of an earlier generation, with it
                held = one.held_from.get(m, one.generation)
                assert mine[m].generation == held != theirs[m].generation


def test_append_and_events_round_trip_and_a_malformed_one_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.duckdb"
    Store(path).init()
    lines = [e.to_dict() for e in history(AssignmentNotTakenUp(generation=2, member_id="b"))]
    given_file = tmp_path / "in.jsonl"
    given_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = run(capsys, monkeypatch, "--store", str(path), "append", str(given_file))
    assert code == 0, err
    code, out, _ = run(capsys, monkeypatch, "--store", str(path), "events")
    assert [json.loads(line) for line in out.splitlines()] == lines
    code, out, _ = run(capsys, monkeypatch, "--store", str(path), "state", "--group", "g")
    state = json.loads(out)
    assert state["assignment"]["b"] == [["t", 3], ["t", 4], ["t", 5]]
    assert state["held_from"] == {"b": 1}
    bad = {**lines[-1], "event_id": "x", "data": {"generation": "2", "member_id": "b"}}
    given_file.write_text(json.dumps(lines[0]) + "\n" + json.dumps(bad) + "\n")
    code, out, err = run(capsys, monkeypatch, "--store", str(path), "append", str(given_file))
    assert code == 2 and err.count("\n") == 1
    assert "line 2: data.generation:" in err


def test_ownership_gives_the_member_its_partitions_back(store: Store) -> None:
    """As kstore writes it (E gives b its old share already) the fact moves nothing; as
    a writer may give it (E gives b's t-3 to c), the member has t-3 back from c."""
    kept = history(
        AssignmentNotTakenUp(generation=2, member_id="b"),
    )
    kept[7] = kept[7].model_copy(
        update={"data": decided(2, {"a": [1, 2], "b": [3, 4, 5], "c": [0]})}
    )
    store.append(kept)
    store.append(
        [
            e.model_copy(update={"timeline": "other"})
            for e in history(AssignmentNotTakenUp(generation=2, member_id="b"))
        ]
    )
    rows = store.query(
        "SELECT timeline, version, topic, partition, previous_owner, owner, cause "
        "FROM kstore_ownership WHERE version = 9 ORDER BY timeline, partition"
    ).rows
    assert rows == [("other", 9, "t", 3, "c", "b", "AssignmentNotTakenUp")]
    rebuilt_before = store.query("SELECT * FROM kstore_ownership ORDER BY ALL").rows
    store.rebuild()
    assert store.query("SELECT * FROM kstore_ownership ORDER BY ALL").rows == rebuilt_before
