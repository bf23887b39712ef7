"""Properties over generated scenarios, checked on the events each run writes."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore.model.events import (
    AssignmentCompleted,
    Event,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
)
from kstore.model.fold import GroupState
from kstore.protocol.consumer import ConsumerGroupSim
from kstore.protocol.group import Client, MemberSpec
from kstore.protocol.settings import ProtocolSettings
from kstore.simulate import generate, run_scenario

_runs = st.tuples(
    st.sampled_from(["steady-churn", "autoscaling", "flapping-member", "rolling-deploy"]),
    st.sampled_from(["eager", "cooperative", "consumer"]),
    st.integers(1, 6),
    st.integers(0, 12),
    st.integers(0, 2**16),
)


def _events(kind: str, protocol: str, members: int, steps: int, seed: int) -> list[Event]:
    scenario = generate(kind, members=members, steps=steps, seed=seed, protocol=protocol)  # type: ignore[arg-type]
    result = run_scenario(scenario, store=None, timeline="sim/p", seed=seed)
    assert result.sim.state.version == len(result.sim.emitted)
    return result.sim.emitted


def _check_valid(state: GroupState, done: AssignmentCompleted) -> None:
    assert set(done.assignment) == set(state.members)
    seen: set[tuple[str, int]] = set()
    for member_id, tps in done.assignment.items():
        topics = state.members[member_id].topics
        for topic, partition in tps:
            assert topic in topics, f"{member_id} got {topic} it does not subscribe to"
            assert 0 <= partition < state.topics[topic]
            assert (topic, partition) not in seen, f"{topic}-{partition} assigned twice"
            seen.add((topic, partition))
    if done.protocol != "cooperative":
        wanted = {
            (t, p)
            for m in state.members.values()
            for t in m.topics
            for p in range(state.topics.get(t, 0))
        }
        assert seen == wanted, "eager and consumer targets assign every subscribed partition"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_runs)
def test_generated_runs_keep_kafkas_invariants(run: tuple[str, str, int, int, int]) -> None:
    events = _events(*run)
    state = GroupState()
    generation = 0
    previous: dict[tuple[str, int], str] = {}
    for event in events:
        data = event.data
        if isinstance(data, RebalanceStarted):
            assert data.generation == generation + 1
        if isinstance(data, MemberReplaced):
            previous = {
                tp: (data.new_member_id if owner == data.old_member_id else owner)
                for tp, owner in previous.items()
            }
        if isinstance(data, AssignmentCompleted):
            _check_valid(state, data)
            assert data.generation == generation + 1, "one generation per completed rebalance"
            generation = data.generation
            owners = {tuple(tp): m for m, tps in data.assignment.items() for tp in tps}
            if data.protocol == "cooperative":
                for tp, owner in owners.items():
                    before = previous.get(tp)  # type: ignore[arg-type]
                    assert before is None or before == owner or before not in data.assignment, (
                        f"{tp} went straight from {before} to {owner}"
                    )
            previous = owners  # type: ignore[assignment]
        state.apply(event)


@settings(max_examples=8, deadline=None)
@given(_runs)
def test_same_scenario_and_seed_give_the_same_events(run: tuple[str, str, int, int, int]) -> None:
    first = [e.to_dict() for e in _events(*run)]
    second = [e.to_dict() for e in _events(*run)]
    assert first == second


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["steady-churn", "autoscaling", "flapping-member", "rolling-deploy"]),
    st.integers(1, 6),
    st.integers(0, 12),
    st.integers(0, 2**16),
)
def test_consumer_claims_are_the_members_partitions(
    kind: str, members: int, steps: int, seed: int
) -> None:
    """The coordinator's one set of claimed partitions is what its members have or revoke,
    each partition claimed by one member."""
    scenario = generate(kind, members=members, steps=steps, seed=seed, protocol="consumer")
    sim = run_scenario(scenario, store=None, timeline="sim/p", seed=seed).sim
    assert isinstance(sim, ConsumerGroupSim)
    claims = [m.assigned | m.revoking for m in sim.epochs.values()]
    assert sim.claimed == set().union(*claims)
    assert sum(map(len, claims)) == len(sim.claimed)


@given(st.integers(1, 10_000), st.data(), st.integers(0, 10**9))
def test_next_tick_inline_is_next_tick(interval: int, data: st.DataObject, after: int) -> None:
    """The protocols' inline next heartbeat (a phase is less than the interval)."""
    sim = ConsumerGroupSim(
        StreamId("default", "g", "sim/p"),
        strategy="uniform",
        start=datetime(2026, 1, 1, tzinfo=UTC),
        settings=ProtocolSettings(),
        seed=1,
    )
    client = Client(
        MemberSpec("c", ("t",), ("uniform",)), phase=data.draw(st.integers(0, interval - 1))
    )
    assert sim.next_tick(client, after, interval) == after + (client.phase - after) % interval
