"""A replay with the source's own strategy gives back its history: random scenarios.

The examples and generated scenarios (test_replay_follow_ups.py) miss what a random one
meets: a coordinator moving while a follow-up round runs, a member that unsubscribed
from a topic losing its partitions, a follow-up round late or merged into another
member's rejoin (12 of 600 seeds differed before). Each case is a scenario of random
steps, simulated through Kafka's protocol, then replayed: every decision must be the
source's."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kstore.analytics.replay import replay, replay_events
from kstore.model import AssignmentCompleted, Event, StreamId
from kstore.simulate import run_scenario
from kstore.simulate.scenario import ACTIONS, parse_scenario
from tests.store._stores import initialised_store

_ACTIONS = tuple(a for a in ACTIONS if a != "rolling-restart")  # the rest, one member each
_STRATEGIES = {
    "cooperative": ["cooperative-sticky"],
    "eager": ["range", "roundrobin", "sticky"],
    "consumer": ["uniform", "server-range"],
}


def random_scenario(seed: int) -> dict[str, Any]:
    """A scenario of up to 14 random steps over two topics and up to 6 members."""
    rng = random.Random(seed)
    protocol = rng.choice(["cooperative", "cooperative", "eager", "consumer"])
    topics = {"a": rng.randint(1, 12), "b": rng.randint(1, 6)}
    count = rng.randint(1, 6)
    names = [f"c-{i:03d}" for i in range(count)]
    subscriptions = [["a"], ["b"], ["a", "b"]]
    steps: list[dict[str, Any]] = []
    at = 0
    for k in range(rng.randint(1, 14)):
        at += rng.choice([100, 500, 1000, 3000, 10000, 40000])
        action = rng.choice(_ACTIONS)
        member = rng.choice(names) if names else None
        if action == "join":
            names.append(f"j{k}")
            steps.append(
                {"at": at, "join": {"name": f"j{k}", "topics": list(rng.choice(subscriptions))}}
            )
        elif action in ("leave", "crash") and member is not None:
            steps.append({"at": at, action: member})
            names.remove(member)
        elif action == "restart" and member is not None:
            down = rng.choice([1000, 10000, 60000])
            steps.append({"at": at, "restart": {"member": member, "down": down}})
        elif action == "scale":
            steps.append({"at": at, "scale": rng.randint(0, 8)})
        elif action == "subscribe" and member is not None:
            chosen = list(rng.choice(subscriptions))
            steps.append({"at": at, "subscribe": {"member": member, "topics": chosen}})
        elif action == "partitions":
            topic = rng.choice(["a", "b"])
            topics[topic] += rng.randint(1, 4)
            steps.append({"at": at, "partitions": {"topic": topic, "count": topics[topic]}})
        elif action in ("slow", "cut-off") and member is not None:
            steps.append({"at": at, action: {"member": member, "for": rng.choice([2000, 400000])}})
        elif action == "coordinator-failover":
            steps.append({"at": at, "coordinator-failover": True})
    first = {"a": topics["a"], "b": topics["b"]}
    for step in steps:  # the topics as they start: each partitions step grows them
        if "partitions" in step:
            grown = step["partitions"]
            first[grown["topic"]] = min(first[grown["topic"]], grown["count"] - 1)
    return {
        "name": "random",
        "protocol": protocol,
        "strategy": rng.choice(_STRATEGIES[protocol]),
        "topics": first,
        "members": [{"count": count, "topics": list(rng.choice(subscriptions))}],
        "steps": steps,
    }


def _decisions(events: list[Event]) -> list[dict[str, list[Any]]]:
    return [
        {m: sorted(tps) for m, tps in e.data.assignment.items() if tps}
        for e in events
        if isinstance(e.data, AssignmentCompleted)
    ]


@settings(max_examples=150, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=67)  # the coordinator moved while the source's follow-up round ran
@example(seed=176)  # a member that unsubscribed from a topic lost its partitions
@example(seed=53)  # the source's follow-up came 45 s late (its member was cut off)
def test_a_random_scenario_replays_to_its_own_decisions(seed: int) -> None:
    scenario = parse_scenario(yaml.safe_dump(random_scenario(seed)), "random.yaml")
    result = run_scenario(scenario, store=None, timeline="recorded", seed=seed)
    source = result.sim.emitted
    target = StreamId(*result.stream[:2], "replay")
    replayed = list(replay_events(source, target, scenario.default_strategy))
    assert _decisions(replayed) == _decisions(source)


@pytest.mark.parametrize("seed", [67, 176, 53])
def test_the_same_through_the_store(tmp_path: Path, seed: int) -> None:
    """``kstore replay`` reads the source from the store, where it reads the source's
    assignments only if the replay may make follow-up rounds (they depend on them)."""
    scenario = parse_scenario(yaml.safe_dump(random_scenario(seed)), "random.yaml")
    store = initialised_store(tmp_path / "s.duckdb")
    result = run_scenario(scenario, store=store, timeline="sim", seed=seed)
    cluster, group, _ = result.stream
    source = [s.event for s in store.events(group=group, timeline="sim")]
    for strategy in ("same", scenario.default_strategy):
        done = replay(store, cluster=cluster, group=group, strategy=strategy, source="sim")
        assert done.follow_ups == 0  # the source's own rounds replayed, none added
        made = [s.event for s in store.events(group=group, timeline=f"replay/{strategy}")]
        assert _decisions(made) == _decisions(source)
