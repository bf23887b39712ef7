"""A replay reads the source's ``AssignmentNotTakenUp`` facts: the replayed member did
not take that generation up either, and holds what it held in the replay."""

from __future__ import annotations

from pathlib import Path

from kstore.analytics import run_query
from kstore.analytics.replay import check_decisions, replay
from kstore.model import AssignmentCompleted, AssignmentNotTakenUp, Event
from kstore.store.log import Store
from tests.analytics.test_coverage import _stopper
from tests.analytics.test_replay_check import _third_joins
from tests.analytics.test_replay_same import _assignments, _events, decided
from tests.store._stores import initialised_store


def _said_twice() -> list[Event]:
    """``_third_joins`` with m2 not taking generation 4 up, and m3 not taking up the
    follow-up round, generation 5 (it holds nothing still); generation 6 then gives m3
    t-0, 1, 6, 7 (m2 took 5 up, giving up t-0, 1)."""
    events = _third_joins(list(range(6)), [], said=True)
    later = _events(
        [
            AssignmentNotTakenUp(generation=5, member_id="m3"),
            decided(6, {"m1": list(range(8, 12)), "m2": list(range(2, 6)), "m3": [0, 1, 6, 7]}),
        ]
    )
    return events + [e.model_copy(update={"at": e.at.replace(minute=2)}) for e in later]


def _replayed(store: Store, timeline: str = "replay/same") -> list[Event]:
    return [s.event for s in store.events(group="g", timeline=timeline)]


def test_the_replay_keeps_each_member_that_did_not_take_a_round_up(store: Store) -> None:
    events = _said_twice()
    assert {c.verdict for c in check_decisions(events)} == {"same", "not-taken-up"}
    store.append(events)
    replay(store, group="g", strategy="same")
    assert _assignments(store, "replay/same") == _assignments(store, "recorded")
    facts = [e.data for e in _replayed(store) if isinstance(e.data, AssignmentNotTakenUp)]
    assert [(f.generation, f.member_id) for f in facts] == [(4, "m2"), (5, "m3")]
    # Each fact right after the decision of its (replayed) generation.
    replayed = _replayed(store)
    for index, event in enumerate(replayed):
        if isinstance(event.data, AssignmentNotTakenUp):
            before = [e.data for e in replayed[:index] if isinstance(e.data, AssignmentCompleted)]
            assert before[-1].generation == event.data.generation
    cover = run_query(store, "coverage", {"group": "g"}).records()
    assert {r["timeline"]: r["complete"] for r in cover} == {
        "recorded": True,
        "replay/same": True,
    }


def test_a_replay_stopped_anywhere_and_resumed_is_the_whole_one(tmp_path: Path) -> None:
    events = _said_twice()
    whole = initialised_store(tmp_path / "whole.duckdb")
    whole.append(events)
    replay(whole, group="g", strategy="same")
    expected = _replayed(whole)
    for after in range(1, len(events)):
        store = initialised_store(tmp_path / f"stopped-{after}.duckdb")
        store.append(events)
        assert not replay(store, group="g", strategy="same", stop=_stopper(after)).complete
        replay(store, group="g", strategy="same", resume=True)
        assert _replayed(store) == expected, after


def test_a_fact_of_no_decision_is_left_out(store: Store) -> None:
    events = _third_joins(list(range(2, 6)), [0, 1, 6, 7])
    odd = _events([AssignmentNotTakenUp(generation=2, member_id="m1")])[0]
    store.append([*events, odd.model_copy(update={"at": events[-1].at})])
    replay(store, group="g", strategy="same")
    assert not any(isinstance(e.data, AssignmentNotTakenUp) for e in _replayed(store))
    assert _assignments(store, "replay/same") == _assignments(store, "recorded")


def test_the_replays_tables_are_the_rebuilds(store: Store) -> None:
    """The replay hands its fold's records (the facts' too) to the store: the tables it
    projects are those a rebuild derives; as kstore writes the facts, none moves a
    partition."""
    store.append(_said_twice())
    for strategy in ("same", "cooperative-sticky"):
        replay(store, group="g", strategy=strategy)
    tables = ("kstore_assignments", "kstore_ownership", "kstore_topic_stats")
    before = [store.query(f"SELECT * FROM {t} ORDER BY ALL").rows for t in tables]
    store.rebuild()
    assert [store.query(f"SELECT * FROM {t} ORDER BY ALL").rows for t in tables] == before
    causes = store.query("SELECT DISTINCT cause FROM kstore_ownership").rows
    assert causes == [("AssignmentCompleted",)]
