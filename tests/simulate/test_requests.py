"""The fold keeps the simulation's next assignor request up to date as it applies events
(``GroupState.requesting``) instead of making it again per decision: each request the run
hands its assignors must be the one a fold made from nothing at that event gives (with no
member's ``owned`` and ``generation`` where the assignor never reads them, or the members
revoked everything: ``GroupState.bare``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kstore.protocol.classic
import kstore.protocol.consumer
from kstore.assignors import AssignmentRequest, AssignmentResult, assign, reads_owned, strategies
from kstore.model.events import AssignmentCompleted
from kstore.model.fold import GroupState
from kstore.model.strategies import CLASSIC_STRATEGIES, CONSUMER_STRATEGIES, protocol_of
from kstore.simulate import Scenario, generate, load_scenario, run_scenario

EXAMPLES = sorted(p.stem for p in (Path(__file__).parents[2] / "examples").glob("*.yaml"))
GENERATED = [
    (kind, protocol)
    for kind in ("steady-churn", "autoscaling", "flapping-member", "rolling-deploy")
    for protocol in ("eager", "cooperative", "consumer")
]


def _requests_match(scenario: Scenario, seed: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run ``scenario``; each request its assignors got (as it was when they got it)
    equals a fresh fold's at that decision. Returns how many there were."""
    handed: list[dict[str, Any]] = []

    def answer(request: AssignmentRequest) -> AssignmentResult:
        handed.append(request.model_dump())
        return assign(request)

    with monkeypatch.context() as patched:
        patched.setattr(kstore.protocol.classic, "assign", answer)
        patched.setattr(kstore.protocol.consumer, "assign", answer)
        result = run_scenario(scenario, store=None, timeline="sim/requests", seed=seed)
    fresh: list[dict[str, Any]] = []
    state = GroupState()
    for event in result.sim.emitted:
        data = event.data
        # A classic group with no members completes without asking an assignor.
        asked = state.members or scenario.protocol == "consumer"
        if isinstance(data, AssignmentCompleted) and asked:
            request = GroupState.from_dict(state.to_dict()).to_request(data.strategy)
            made = request.model_dump()
            revoked = scenario.protocol == "eager" and protocol_of(data.strategy) == "cooperative"
            if revoked or not reads_owned(data.strategy):
                # Eager members revoked everything; range and roundrobin never read it.
                for member in made["members"].values():
                    member.update(owned=[], generation=None)
            fresh.append(made)
        state.apply(event)
    assert len(handed) == len(fresh)
    for number, (got, wanted) in enumerate(zip(handed, fresh, strict=True)):
        assert got == wanted, f"decision {number}"
    return len(handed)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_examples_requests_are_a_fresh_folds(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = load_scenario(Path(__file__).parents[2] / "examples" / f"{name}.yaml")
    assert _requests_match(scenario, 0, monkeypatch) > 0


@pytest.mark.parametrize(("kind", "protocol"), GENERATED)
def test_generated_runs_requests_are_a_fresh_folds(
    kind: str, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = generate(kind, members=10, steps=40, seed=2, protocol=protocol)  # type: ignore[arg-type]
    assert _requests_match(scenario, 2, monkeypatch) > 0


_ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["join", "leave", "crash", "subscribe", "partitions"]),
        st.integers(0, 30_000),  # ms after the step before
        st.integers(0, 50),  # which member, topic, how many
    ),
    max_size=25,
)


def _scenario(protocol: str, strategy: str, actions: list[tuple[str, int, int]]) -> Scenario:
    topics = {"orders": 4, "audit": 2}
    names = [f"c-{i:03d}" for i in range(3)]
    steps: list[dict[str, Any]] = []
    at = 5_000
    for action, gap, pick in actions:
        at += gap
        topic = sorted(topics)[pick % 2]
        if action == "join":
            names.append(f"j-{len(names):03d}")
            subscribed = ["orders", "audit"][: 1 + pick % 2]
            steps.append({"at": at, "join": {"name": names[-1], "topics": subscribed}})
        elif action in ("leave", "crash"):
            steps.append({"at": at, action: names[pick % len(names)]})
        elif action == "subscribe":
            chosen = [topic] if pick % 3 else ["orders", "audit"]
            steps.append(
                {"at": at, "subscribe": {"member": names[pick % len(names)], "topics": chosen}}
            )
        else:
            topics[topic] += 1 + pick % 3
            steps.append({"at": at, "partitions": {"topic": topic, "count": topics[topic]}})
    return Scenario.model_validate(
        {
            "name": "requests",
            "protocol": protocol,
            "strategy": strategy,
            "topics": {"orders": 4, "audit": 2},
            "members": [{"count": 3, "topics": ["orders"], "racks": ["r1", "r2"]}],
            "steps": steps,
        }
    )


_RUNS = st.one_of(
    st.tuples(st.just("eager"), st.sampled_from(CLASSIC_STRATEGIES)),
    st.tuples(st.just("cooperative"), st.just("cooperative-sticky")),
    st.tuples(st.just("consumer"), st.sampled_from(CONSUMER_STRATEGIES)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=_RUNS, actions=_ACTIONS)
def test_joins_leaves_and_changes_give_a_fresh_folds_requests(
    run: tuple[str, str], actions: list[tuple[str, int, int]]
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _requests_match(_scenario(*run, actions), 0, monkeypatch)


_NEVER_READ = [name for name in strategies() if not reads_owned(name)]


def test_assignors_that_never_read_owned_are_named() -> None:
    # The simulation hands these requests without owned partitions: each says so.
    assert {"range", "roundrobin", "server-range"} <= set(_NEVER_READ)
    assert {"sticky", "cooperative-sticky", "uniform"}.isdisjoint(_NEVER_READ)
    assert reads_owned("no-such-strategy")  # refused by ``assign`` as before


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_assignors_that_never_read_owned_answer_the_same_without(data: st.DataObject) -> None:
    from tests._range_requests import requests, without

    strategy = data.draw(st.sampled_from(_NEVER_READ))
    request = data.draw(requests(strategy))
    answer = assign(request).assignment
    assert answer == assign(without(request, "owned", "generation")).assignment
