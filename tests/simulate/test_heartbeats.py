"""A consumer-protocol group's heartbeats after an epoch bump, gone through in one pass
(``ConsumerGroupSim._heartbeats``: those that only go on handled inline, up to the first
that does more), give the events and ownership figures of ``_heartbeat`` called for each
in turn: members that crash, leave, restart (static and dynamic), are cut off, slowed
past their poll timeout, change their subscription, a topic that grows, the coordinator
that moves, steps that land while heartbeats are due."""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest

from kstore.protocol.consumer import ConsumerGroupSim
from kstore.protocol.group import Client
from kstore.simulate.scenario import Scenario
from tests.simulate._outcome import Outcome, outcome


def _scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    names = ["c-000", "c-001", "c-002", "s-a", "s-b"]
    steps: list[dict[str, object]] = []
    at = 2_000
    partitions = 8
    for _ in range(24):
        at += rng.choice([0, 1, 300, 2_500, 9_000, 40_000])
        name = rng.choice(names)
        roll = rng.random()
        if roll < 0.2:
            steps.append({"at": at, "restart": {"member": name, "down": rng.choice([500, 8_000])}})
        elif roll < 0.35:
            cut = rng.choice([2_000, 60_000])
            steps.append({"at": at, "cut-off": {"member": name, "for": cut}})
        elif roll < 0.5:
            steps.append({"at": at, "slow": {"member": name, "for": rng.choice([1_000, 400_000])}})
        elif roll < 0.6:
            topics = rng.choice([["t"], ["t", "u"], ["u"]])
            steps.append({"at": at, "subscribe": {"member": name, "topics": topics}})
        elif roll < 0.7:
            partitions += rng.randrange(1, 4)
            steps.append({"at": at, "partitions": {"topic": "t", "count": partitions}})
        elif roll < 0.75:
            steps.append({"at": at, "coordinator-failover": True})
        else:
            steps.append({"at": at, "scale": rng.randrange(1, 9)})
    return Scenario.model_validate(
        {
            "name": f"heartbeats-{seed}",
            "protocol": "consumer",
            "strategy": rng.choice(["uniform", "server-range"]),
            "topics": {"t": 8, "u": 3},
            "members": [
                {"count": 3, "topics": ["t"]},
                {"name": "s-a", "topics": ["t", "u"], "static": True},
                {"name": "s-b", "topics": ["t"], "static": True},
            ],
            "steps": steps,
            "until": at + 120_000,
        }
    )


def _run(scenario: Scenario, seed: int) -> Outcome:
    return outcome(scenario, seed, "sim/heartbeats")


@pytest.mark.parametrize("seed", range(60))
def test_heartbeats_in_one_pass_as_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = _scenario(seed)
    together = _run(scenario, seed)
    assert len(together[0]) > 10

    def one_by_one(sim: ConsumerGroupSim, due: Iterable[tuple[Client, int]]) -> None:
        for client, life in due:
            sim._heartbeat(client, life)

    monkeypatch.setattr(ConsumerGroupSim, "_heartbeats", one_by_one)
    assert _run(scenario, seed) == together
