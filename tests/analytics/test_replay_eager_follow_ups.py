"""An eager replay of a cooperative history has no follow-ups (issue 13): a source
rebalance that is only the source's follow-up round (nothing recorded since its previous
rebalance changes membership, subscriptions or topics) is no rebalance of the replay:
the eager assignment stands. Before, the replay decided each such round again as a
rebalance of its own (autoscaling-10-40-10: 7 replayed where an eager group has 5)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kstore.analytics import run_query
from kstore.analytics.replay import replay, replay_events
from kstore.commands.simulate import _override
from kstore.model import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    StreamId,
    TopicChanged,
)
from kstore.simulate import load_scenario, run_scenario
from kstore.simulate.generate import generate
from kstore.store.log import Store
from tests.processes import kstore_cli
from tests.store._stores import initialised_store

EXAMPLES = sorted(Path(__file__).parents[2].joinpath("examples").glob("*.yaml"))
AUTOSCALING = Path(__file__).parents[2] / "examples" / "autoscaling-10-40-10.yaml"
T0 = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


def _only_follow_ups(events: list[Event]) -> int:
    """The source's rebalances that are only a follow-up round, as the simulator says
    (Kafka's reason "need to revoke partitions and re-join"), with nothing but the
    round's own start between the previous decision (and its not-taken-up facts) and
    this one."""
    count = 0
    since: list[EventData] = []
    for event in events:
        data = event.data
        if isinstance(data, AssignmentNotTakenUp):
            continue
        if isinstance(data, AssignmentCompleted):
            starts = [d for d in since if isinstance(d, RebalanceStarted)]
            if len(since) == len(starts) and any("revoke partitions" in d.reason for d in starts):
                count += 1
            since = []
        else:
            since.append(data)
    return count


def _decisions(store: Store, group: str, timeline: str) -> int:
    return sum(
        isinstance(s.event.data, AssignmentCompleted)
        for s in store.events(group=group, timeline=timeline, assignments=False)
    )


@pytest.mark.parametrize("strategy", ["range", "sticky", "uniform"])
@pytest.mark.parametrize(
    "scenario",
    [*EXAMPLES, "autoscaling", "rolling-deploy", "flapping-member"],
    ids=lambda s: f"generated-{s}" if isinstance(s, str) else s.stem,
)
def test_an_eager_replay_has_none_of_the_sources_follow_ups(
    tmp_path: Path, scenario: Path | str, strategy: str
) -> None:
    if isinstance(scenario, str):
        made = generate(scenario, members=6, steps=40, seed=0, protocol="cooperative")
    else:
        made = load_scenario(scenario)
    store = initialised_store(tmp_path / "s.duckdb")
    made = _override(made, "cooperative-sticky", "cooperative")
    cluster, group, _ = run_scenario(made, store=store, timeline="sim", seed=1).stream
    source = [s.event for s in store.events(group=group, timeline="sim")]
    result = replay(store, cluster=cluster, group=group, strategy=strategy, source="sim")
    expected = _decisions(store, group, "sim") - _only_follow_ups(source)
    assert result.rebalances == _decisions(store, group, f"replay/{strategy}") == expected
    assert result.follow_ups == 0
    # every follow-up skipped is answered: the replay is complete
    rows = run_query(store, "coverage", {"group": group}).records()
    assert {r["complete"] for r in rows if r["timeline"] == f"replay/{strategy}"} == {True}


def test_the_cli_replays_the_examples_five_rebalances_not_seven(tmp_path: Path) -> None:
    """autoscaling-10-40-10 under cooperative-sticky: 7 rebalances, 2 of them the follow-up
    rounds of a scale-out; a range replay of it has 5, and is complete."""
    store = tmp_path / "s.duckdb"
    assert kstore_cli(store, "init").returncode == 0
    simulated = kstore_cli(
        store, "simulate", str(AUTOSCALING), "--strategy", "cooperative-sticky", "--timeline", "sim"
    )
    assert simulated.returncode == 0, simulated.stderr
    group = "autoscaling-10-40-10"
    done = kstore_cli(store, "replay", "--group", group, "--from", "sim", "--strategy", "range")
    assert done.returncode == 0, done.stderr
    assert "5 rebalances (0 follow-up rounds)" in done.stdout + done.stderr
    shown = kstore_cli(store, "compare", "--group", group, "--format", "json")
    rows = {r["timeline"]: r for r in json.loads(shown.stdout)}
    assert (rows["sim"]["rebalances"], rows["replay/range"]["rebalances"]) == (7, 5)
    assert rows["replay/range"]["complete"] is True


def _round(joined: list[str], during: list[EventData]) -> list[Event]:
    """Two members, then ``joined``: a cooperative decision that takes from both, then
    its follow-up round (with ``during`` recorded while it runs)."""
    first = {"a": [("t", p) for p in range(3)], "b": [("t", p) for p in range(3, 6)]}
    took = {"a": [("t", 0), ("t", 1)], "b": [("t", 3), ("t", 4)], "c": []}
    datas: list[EventData] = [TopicChanged(topic="t", partitions=6)]
    datas += [MemberJoined(member_id=m, topics=["t"]) for m in ("a", "b")]
    datas += [RebalanceStarted(generation=1, reason="join")]
    datas += [AssignmentCompleted(generation=1, strategy="cooperative-sticky", assignment=first)]
    datas += [MemberJoined(member_id=m, topics=["t"]) for m in joined]
    datas += [RebalanceStarted(generation=2, reason="join c")]
    datas += [AssignmentCompleted(generation=2, strategy="cooperative-sticky", assignment=took)]
    datas += [RebalanceStarted(generation=3, reason="need to revoke partitions and re-join")]
    datas += during
    final = {"a": [("t", 0), ("t", 1)], "b": [("t", 3), ("t", 4)], "c": [("t", 2), ("t", 5)]}
    datas += [AssignmentCompleted(generation=3, strategy="cooperative-sticky", assignment=final)]
    return [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]


def _replayed(source: list[Event], strategy: str = "range") -> list[Event]:
    return list(replay_events(source, StreamId("default", "g", f"replay/{strategy}"), strategy))


def test_the_skipped_follow_up_is_answered_by_the_decision_before_it() -> None:
    """Nothing is recorded for the follow-up round: the eager assignment of the round
    before stands, and that decision answers the follow-up's version too."""
    source = _round(["c"], [])
    replayed = _replayed(source)
    decisions = [e.data for e in replayed if isinstance(e.data, AssignmentCompleted)]
    assert [d.generation for d in decisions] == [1, 2]
    assert [d.source_version for d in decisions] == [5, len(source)]
    starts = [e.data for e in replayed if isinstance(e.data, RebalanceStarted)]
    assert [s.reason for s in starts] == ["join", "join c"]
    assert replayed[-1].at == source[-3].at  # the replay ends with its decision of gen 2


def test_a_member_leaving_during_the_follow_up_makes_it_a_rebalance_of_the_replay() -> None:
    """A leave recorded while the source's follow-up round ran changes membership: an
    eager group rebalances for it, so the replay decides that round."""
    source = _round(["c", "d"], [MemberLeft(member_id="d", reason="leave")])
    replayed = _replayed(source)
    decisions = [e.data for e in replayed if isinstance(e.data, AssignmentCompleted)]
    assert [d.generation for d in decisions] == [1, 2, 3]
    assert [d.source_version for d in decisions] == [5, 9, len(source)]
    kinds = [type(e.data).__name__ for e in replayed[-4:]]
    assert kinds == ["AssignmentCompleted", "RebalanceStarted", "MemberLeft", "AssignmentCompleted"]


def test_a_cooperative_replay_still_replays_the_follow_up_as_it_is() -> None:
    source = _round(["c"], [])
    decisions = [
        e.data
        for e in _replayed(source, "cooperative-sticky")
        if isinstance(e.data, AssignmentCompleted)
    ]
    assert [d.source_version for d in decisions] == [5, 8, len(source)]
