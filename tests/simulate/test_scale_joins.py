"""A scale step's new members joined in one loop (``ClassicGroupSim.start_each``) give the
events of ``start_client`` called for each in turn: dynamic and static members, protocol
lists the group does not support (refused), and scale steps that land inside a join
phase or right after a leave. (A list naming a protocol twice is left out: the vote
finds no candidate for it, before this loop as after.) Its members that leave, in one
loop too (``ClassicGroupSim.stop_each``), give those of ``stop_client`` for each."""

from __future__ import annotations

import random

import pytest

from kstore.protocol.group import GroupSim, MemberSpec
from kstore.simulate.scenario import Scenario
from tests.simulate._outcome import Outcome, outcome


def _scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    protocol = rng.choice(["eager", "eager", "cooperative"])
    if protocol == "cooperative":  # every member's assignors must all be cooperative
        protocols = ["cooperative-sticky"]
        other = ["cooperative-sticky"]
    else:
        protocols = rng.choice(
            [
                ["range"],
                ["roundrobin", "range"],
                ["roundrobin"],
                ["sticky", "roundrobin", "range"],
                ["sticky", "cooperative-sticky"],
            ]
        )
        other = rng.choice([["range"], ["roundrobin"], ["roundrobin", "range"], ["sticky"]])
    steps: list[dict[str, object]] = []
    at = 5_000
    for _ in range(16):
        at += rng.choice([0, 50, 400, 3_000, 20_000])
        roll = rng.random()
        if roll < 0.6:
            steps.append({"at": at, "scale": rng.randrange(1, 14)})
        elif roll < 0.8:
            steps.append({"at": at, "crash": rng.choice(["o-a", "c-000"])})
        else:
            name = rng.choice(["o-a", "o-b"])
            steps.append({"at": at, "restart": {"member": name, "down": 2_000}})
    return Scenario.model_validate(
        {
            "name": f"scale-{seed}",
            "protocol": protocol,
            "topics": {"t": 12},
            "members": [
                {
                    "count": rng.randrange(1, 6),
                    "topics": ["t"],
                    "protocols": protocols,
                    "static": rng.random() < 0.3,
                },
                {"name": "o-a", "topics": ["t"], "protocols": other},
                {"name": "o-b", "topics": ["t"], "protocols": other},
            ],
            "steps": steps,
            "until": at + 60_000,
        }
    )


def _run(scenario: Scenario, seed: int) -> Outcome:
    return outcome(scenario, seed, "sim/scale")


@pytest.mark.parametrize("seed", range(80))
def test_scale_leaves_in_one_loop_as_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = _scenario(seed)
    together = _run(scenario, seed)

    def one_by_one(sim: GroupSim, names: list[str]) -> None:
        for name in names:
            sim.stop_client(name, clean=True)

    from kstore.protocol.classic import ClassicGroupSim

    monkeypatch.setattr(ClassicGroupSim, "stop_each", one_by_one)
    assert _run(scenario, seed) == together


@pytest.mark.parametrize("seed", range(80))
def test_scale_joins_in_one_loop_as_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = _scenario(seed)
    together = _run(scenario, seed)

    def one_by_one(sim: GroupSim, specs: list[MemberSpec]) -> None:
        for spec in specs:
            sim.start_client(spec)

    from kstore.protocol.classic import ClassicGroupSim

    monkeypatch.setattr(ClassicGroupSim, "start_each", one_by_one)
    assert _run(scenario, seed) == together


def test_a_scale_step_the_group_refuses_inside_a_join_phase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The template's members offer only ``range``; the group, rebalancing, holds only a
    ``roundrobin`` member: each new member is refused (INCONSISTENT_GROUP_PROTOCOL)."""
    scenario = Scenario.model_validate(
        {
            "name": "scale-refused",
            "protocol": "eager",
            "settings": {"session_timeout_ms": 6_000},
            "topics": {"t": 6},
            "members": [
                {"count": 1, "topics": ["t"], "protocols": ["range"]},
                {"name": "o-a", "topics": ["t"], "protocols": ["roundrobin"]},
            ],
            "steps": [
                {"at": 1_000, "crash": "c-000"},
                {"at": 20_000, "restart": {"member": "o-a", "down": 2_000}},
                {"at": 23_000, "scale": 4},
            ],
            "until": 60_000,
        }
    )
    together = _run(scenario, 1)
    assert len(together[1]) == 1 + 3  # o-a at the start, then each new member

    def one_by_one(sim: GroupSim, specs: list[MemberSpec]) -> None:
        for spec in specs:
            sim.start_client(spec)

    from kstore.protocol.classic import ClassicGroupSim

    monkeypatch.setattr(ClassicGroupSim, "start_each", one_by_one)
    assert _run(scenario, 1) == together
