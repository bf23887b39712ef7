"""A timeline knows whether it is complete (issue 13, item 2): a replay's decisions name
the source version they answer; ``coverage``, ``compare`` and ``timelines`` read up to
which source version each timeline has decided, and a partial one is compared over the
prefix it covers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks._fleet import group_events
from kstore.analytics import run_query
from kstore.analytics.advise import advice
from kstore.analytics.replay import replay, replay_events
from kstore.analytics.report import compare, partial
from kstore.commands.simulate import _override
from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    RebalanceStarted,
    StreamId,
    TopicChanged,
)
from kstore.simulate import load_scenario, run_scenario
from kstore.simulate.generate import generate
from kstore.store.log import Store

EXAMPLES = sorted(Path(__file__).parents[2].joinpath("examples").glob("*.yaml"))


def _coverage(store: Store, group: str) -> dict[str, tuple[Any, ...]]:
    """Timeline -> (source, decided_to, source_last, complete)."""
    rows = run_query(store, "coverage", {"group": group}).records()
    return {
        r["timeline"]: (r["source"], r["decided_to"], r["source_last"], r["complete"]) for r in rows
    }


def _rows(store: Store, group: str, timelines: list[str]) -> dict[str, dict[str, Any]]:
    return {r["timeline"]: r for r in compare(store, group, timelines, "default").records()}


def _stopper(after: int) -> Any:
    calls = iter(range(after))
    return lambda: next(calls, None) is None


def test_an_interrupted_replay_is_partial_and_compared_over_its_prefix(store: Store) -> None:
    """The issue's case: a replay stopped early beside a complete one and the source.
    Before, compare summed the partial one's few rebalances against the others' all."""
    source = list(group_events("g", 300, seed=5))
    store.append(source)
    replay(store, group="g", strategy="range")
    stopped = replay(store, group="g", strategy="sticky", stop=_stopper(len(source) // 4))
    assert not stopped.complete
    names = ["recorded", "replay/range", "replay/sticky"]
    cover = _coverage(store, "g")
    last = len(source)
    assert cover["recorded"] == ("recorded", last, last, True)
    assert cover["replay/range"] == ("recorded", last, last, True)
    _, decided, _, complete = cover["replay/sticky"]
    assert complete is False and len(source) // 4 <= decided < last
    rows = _rows(store, "g", names)
    # The same source range on every side: the source's rebalances up to `decided`.
    metrics = run_query(store, "metrics", {"group": "g", "timeline": "recorded"}).records()
    prefix = [m for m in metrics if m["version"] <= decided]
    for name in names:
        assert rows[name]["compared_to"] == decided
        assert rows[name]["rebalances"] == len(prefix)  # eager: one decision per rebalance
    assert rows["recorded"]["churn"] == sum(m["moved"] for m in prefix)
    assert rows["replay/sticky"]["complete"] is False
    assert rows["replay/range"]["complete"] is True
    (line,) = partial(compare(store, "g", names, "default"))
    assert line.startswith(f"replay/sticky is partial: it has decided up to version {decided} ")
    # Resumed, it is complete and everything is compared whole.
    replay(store, group="g", strategy="sticky", resume=True)
    rows = _rows(store, "g", names)
    assert all(r["complete"] and r["compared_to"] == last for r in rows.values())
    assert rows["recorded"]["rebalances"] == len(metrics)
    assert partial(compare(store, "g", names, "default")) == []


def test_a_source_that_grows_by_a_rebalance_makes_its_replay_partial_again(
    store: Store,
) -> None:
    source = list(group_events("g", 20, seed=2))
    store.append(source)
    replay(store, group="g", strategy="sticky")
    last = len(source)
    assert _coverage(store, "g")["replay/sticky"] == ("recorded", last, last, True)
    # A join alone leaves nothing to decide: still complete, decided to the new end.
    at = source[-1].at
    joined = Event(
        group="g", at=at + timedelta(seconds=1), data=MemberJoined(member_id="late", topics=[])
    )
    store.append([joined])
    assert _coverage(store, "g")["replay/sticky"] == ("recorded", last + 1, last + 1, True)
    # Its rebalance is: partial, decided to the version before it.
    generation = max(e.data.generation for e in source if isinstance(e.data, RebalanceStarted))
    store.append(
        [
            Event(
                group="g",
                at=at + timedelta(seconds=2),
                data=RebalanceStarted(generation=generation + 1, reason="join"),
            ),
            Event(
                group="g",
                at=at + timedelta(seconds=3),
                data=AssignmentCompleted(
                    generation=generation + 1, strategy="range", assignment={}
                ),
            ),
        ]
    )
    assert _coverage(store, "g")["replay/sticky"] == ("recorded", last + 2, last + 3, False)
    done = replay(store, group="g", strategy="sticky", resume=True)
    assert done.rebalances == 1
    assert _coverage(store, "g")["replay/sticky"] == ("recorded", last + 3, last + 3, True)


@pytest.mark.parametrize(
    "example",
    [*EXAMPLES, "steady-churn"],
    ids=lambda p: f"generated-{p}" if isinstance(p, str) else p.stem,
)
def test_a_cooperative_replay_stopped_anywhere_knows_how_far_it_decided(
    store: Store, example: Path | str
) -> None:
    """Stopped after each source event in turn, a cooperative replay has decided up to
    the version before the source rebalance of its first decision still to come (its own
    follow-up round answers the source's, which is not replayed again, also when events
    came during that round: a generated scenario's), and to the source's last version
    when none is."""
    if isinstance(example, str):
        made = generate(example, members=4, steps=10, seed=0, protocol="cooperative")
    else:
        made = load_scenario(example)
    scenario = _override(made, "cooperative-sticky", "cooperative")
    result = run_scenario(scenario, store=None, timeline="recorded", seed=1)
    source = result.sim.emitted
    store.append(source)
    cluster, group, _ = result.stream

    def decisions(events: list[Event]) -> list[int]:
        return [
            e.data.source_version
            for e in events
            if isinstance(e.data, AssignmentCompleted) and e.data.source_version is not None
        ]

    whole = decisions(
        list(replay_events(source, StreamId(cluster, group, "x"), "cooperative-sticky"))
    )
    expected: dict[str, int] = {}
    for stop in range(1, len(source) + 1):
        target = StreamId(cluster, group, f"cut/{stop}")
        prefix = list(replay_events(source[:stop], target, "cooperative-sticky"))
        if not decisions(prefix):
            continue
        store.append(prefix)
        made = len(decisions(prefix))
        expected[target.timeline] = whole[made] - 1 if made < len(whole) else len(source)
    found = {t: c[1] for t, c in _coverage(store, group).items() if t.startswith("cut/")}
    assert found == expected
    complete = {t for t, c in _coverage(store, group).items() if c[3]}
    assert complete >= {t for t, d in expected.items() if d == len(source)}


def test_a_rebalance_started_again_after_the_absorbed_follow_up_is_decided(
    store: Store,
) -> None:
    """After the replay's follow-up round, the source's next RebalanceStarted is that
    round; a second RebalanceStarted begins another rebalance, which is decided (it was
    taken for the follow-up's completion too)."""
    t0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
    everything = [("t", p) for p in range(4)]
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=4),  # v1
        MemberJoined(member_id="a", topics=["t"]),  # v2
        RebalanceStarted(generation=1, reason="join"),  # v3
        AssignmentCompleted(generation=1, strategy="range", assignment={"a": everything}),
        MemberJoined(member_id="b", topics=["t"]),  # v5
        RebalanceStarted(generation=2, reason="join"),  # v6
        AssignmentCompleted(generation=2, strategy="range", assignment={"a": everything}),
        RebalanceStarted(generation=3, reason="need to revoke partitions"),  # v8: absorbed
        RebalanceStarted(generation=4, reason="metadata"),  # v9
        AssignmentCompleted(generation=4, strategy="range", assignment={"a": everything}),
    ]
    store.append(
        [Event(group="g", at=t0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]
    )
    done = replay(store, group="g", strategy="cooperative-sticky")
    assert (done.rebalances, done.follow_ups) == (4, 1)
    answered = [
        s.event.data.source_version
        for s in store.events(group="g", timeline="replay/cooperative-sticky")
        if isinstance(s.event.data, AssignmentCompleted)
    ]
    assert answered == [4, 7, 7, 10]
    assert _coverage(store, "g")["replay/cooperative-sticky"] == ("recorded", 10, 10, True)


def test_the_advice_says_which_replays_are_partial_and_ranks_them_over_the_prefix(
    store: Store,
) -> None:
    source = list(group_events("g", 60, seed=9))
    store.append(source)
    replay(store, group="g", strategy="range")
    replay(store, group="g", strategy="optimal", stop=_stopper(len(source) // 3))
    found = advice(store, "g", "default")
    assert found is not None
    rows = {r["timeline"]: r for r in found.records()}
    assert {t: r["complete"] for t, r in rows.items()} == {
        "recorded": True,
        "replay/range": True,
        "replay/optimal": False,
    }
    table = {r["timeline"]: r for r in compare(store, "g", list(rows), "default").records()}
    assert all(rows[t]["churn"] == table[t]["churn"] for t in rows)
    assert len({r["rebalances"] for r in rows.values()}) == 1


def test_a_replay_stored_before_decisions_named_their_source_still_resumes(
    store: Store,
) -> None:
    """A kstore before this stored replays whose decisions name no source: such a
    prefix is still resumed (its decisions as they are), the new ones name it."""
    source = list(group_events("g", 30, seed=4))
    store.append(source)
    stream = StreamId("default", "g", "replay/sticky")
    old = []
    for event in replay_events(source[: len(source) // 2], stream, "sticky"):
        if isinstance(event.data, AssignmentCompleted):
            data = event.data.model_copy(update={"source": None, "source_version": None})
            event = event.model_copy(update={"data": data})
        old.append(event)
    store.append(old)
    assert _coverage(store, "g")["replay/sticky"] == ("replay/sticky",) + (len(old),) * 2 + (True,)
    done = replay(store, group="g", strategy="sticky", resume=True)
    assert done.resumed == len(old) and done.rebalances > 0
    assert _coverage(store, "g")["replay/sticky"] == ("recorded", len(source), len(source), True)
