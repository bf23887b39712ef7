"""The classic protocol's edge cases, each checked against what Kafka's coordinator does."""

from __future__ import annotations

from datetime import UTC, datetime

from kstore._java import hash_order
from kstore.model.events import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
)
from kstore.protocol.classic import ClassicGroupSim, select_protocol
from kstore.protocol.group import MemberSpec
from kstore.protocol.settings import ProtocolSettings

STREAM = StreamId("default", "g", "sim/test")


def _sim(protocol: str = "eager", **settings: int) -> ClassicGroupSim:
    sim = ClassicGroupSim(
        STREAM,
        protocol=protocol,
        start=datetime(2026, 1, 1, tzinfo=UTC),
        settings=ProtocolSettings(**settings),
        seed=7,
    )
    sim.set_topic("t", 6)
    return sim


def _spec(name: str, *protocols: str, static: bool = False) -> MemberSpec:
    return MemberSpec(name, ("t",), protocols or ("range",), instance_id=name if static else None)


def _of(sim: ClassicGroupSim, kind: type) -> list[Event]:
    return [e for e in sim.emitted if isinstance(e.data, kind)]


def test_first_member_leads_and_initial_delay_is_extended_by_new_members() -> None:
    sim = _sim(initial_rebalance_delay_ms=3000)
    sim.start_client(_spec("a"))
    sim.run_until(1000)
    sim.start_client(_spec("b"))
    sim.run_until(20_000)
    [done] = _of(sim, AssignmentCompleted)
    first = _of(sim, MemberJoined)[0].data
    assert done.data.leader == first.member_id  # type: ignore[attr-defined]
    # b joined during the first 3 s delay, so the join phase waited another 3 s.
    assert (done.at - sim.start).total_seconds() == 6


def test_leader_leaving_during_a_rebalance_hands_over_to_the_first_hashmap_member() -> None:
    sim = _sim()
    for name in ("a", "b", "c"):
        sim.start_client(_spec(name))
    sim.run_until(10_000)
    sim.start_client(_spec("d"))  # starts a rebalance
    leader = sim.leader
    assert leader is not None and sim.phase == "PreparingRebalance"
    leader_client = sim.client_of(leader)
    assert leader_client is not None
    sim.stop_client(leader_client.spec.name, clean=True)
    sim.run_until(60_000)
    completed = _of(sim, AssignmentCompleted)[-1].data
    remaining = [m for m in _of(sim, MemberJoined) if m.data.member_id != leader]  # type: ignore[attr-defined]
    ids = [m.data.member_id for m in remaining]  # type: ignore[attr-defined]
    assert completed.leader == hash_order(ids)[0]  # type: ignore[attr-defined]
    assert leader not in completed.assignment  # type: ignore[attr-defined]
    assert completed.generation == 2  # type: ignore[attr-defined]


def test_member_joining_during_a_rebalance_is_in_that_generation() -> None:
    sim = _sim()
    for name in ("a", "b"):
        sim.start_client(_spec(name))
    sim.run_until(10_000)
    sim.start_client(_spec("c"))
    assert sim.phase == "PreparingRebalance"
    sim.start_client(_spec("d"))
    sim.run_until(60_000)
    starts = _of(sim, RebalanceStarted)
    assert [s.data.generation for s in starts] == [1, 2]  # type: ignore[attr-defined]
    last = _of(sim, AssignmentCompleted)[-1].data
    assert last.generation == 2 and len(last.assignment) == 4  # type: ignore[attr-defined]


def test_vote_picks_most_votes_and_breaks_ties_by_hashmap_order() -> None:
    members = [("m1", ("range", "roundrobin")), ("m2", ("roundrobin", "range"))]
    # One vote each: the tie goes to the protocol Java's HashMap iterates first.
    assert select_protocol(members) == hash_order(["range", "roundrobin"])[0]
    members.append(("m3", ("roundrobin", "range")))
    assert select_protocol(members) == "roundrobin"
    # Only protocols every member supports are candidates.
    assert select_protocol([("x", ("sticky", "range")), ("y", ("range",))]) == "range"


def test_member_without_a_common_protocol_is_refused() -> None:
    sim = _sim()
    sim.start_client(_spec("a", "range"))
    sim.run_until(10_000)
    sim.start_client(_spec("b", "roundrobin"))
    sim.run_until(20_000)
    assert len(sim.refused) == 1 and "INCONSISTENT_GROUP_PROTOCOL" in sim.refused[0]
    assert [j.data.client_id for j in _of(sim, MemberJoined)] == ["a"]  # type: ignore[attr-defined]
    assert len(_of(sim, RebalanceStarted)) == 1


def test_static_restart_within_the_session_timeout_causes_no_rebalance() -> None:
    sim = _sim(session_timeout_ms=30_000)
    for name in ("a", "b"):
        sim.start_client(_spec(name, static=True))
    sim.run_until(10_000)
    before = _of(sim, AssignmentCompleted)[-1].data.assignment  # type: ignore[attr-defined]
    sim.restart_client("a", 10_000)
    sim.run_until(120_000)
    [replaced] = _of(sim, MemberReplaced)
    assert len(_of(sim, RebalanceStarted)) == 1
    old, new = replaced.data.old_member_id, replaced.data.new_member_id  # type: ignore[attr-defined]
    assert sim.state.assignment[new] == tuple(before[old])
    assert sim.owned(sim.client("a")) == set(before[old])


def test_static_restart_after_its_session_timed_out_rejoins_with_a_rebalance() -> None:
    sim = _sim(session_timeout_ms=10_000)
    for name in ("a", "b"):
        sim.start_client(_spec(name, static=True))
    sim.run_until(10_000)
    sim.restart_client("a", 60_000)
    sim.run_until(200_000)
    assert not _of(sim, MemberReplaced)
    [left] = _of(sim, MemberLeft)
    assert left.data.reason == "session-timeout"  # type: ignore[attr-defined]
    assert [s.data.generation for s in _of(sim, RebalanceStarted)] == [1, 2, 3]  # type: ignore[attr-defined]
    assert len(sim.state.members) == 2


def test_cooperative_revokes_first_then_a_second_rebalance() -> None:
    sim = _sim("cooperative")
    for name in ("a", "b"):
        sim.start_client(_spec(name, "cooperative-sticky"))
    sim.run_until(10_000)
    sim.start_client(_spec("c", "cooperative-sticky"))
    sim.run_until(60_000)
    done = [e.data for e in _of(sim, AssignmentCompleted)]
    assert [d.generation for d in done] == [1, 2, 3]  # type: ignore[attr-defined]
    round1, round2 = done[1].assignment, done[2].assignment  # type: ignore[attr-defined]
    newcomer = next(m for m in round1 if m not in done[0].assignment)  # type: ignore[attr-defined]
    assert round1[newcomer] == []  # its partitions are still being revoked elsewhere
    assert len(round2[newcomer]) == 2


def test_crashed_member_is_removed_after_the_session_timeout() -> None:
    sim = _sim(session_timeout_ms=10_000, heartbeat_interval_ms=3_000)
    for name in ("a", "b"):
        sim.start_client(_spec(name))
    sim.run_until(20_000)
    sim.stop_client("a", clean=False)
    sim.run_until(20_000 + 9_000 - 3_000)
    assert not _of(sim, MemberLeft)
    sim.run_until(40_000)
    [left] = _of(sim, MemberLeft)
    assert left.data.reason == "session-timeout"  # type: ignore[attr-defined]
    assert 20_000 + 7_000 <= (left.at - sim.start).total_seconds() * 1000 <= 30_000
