"""kafka-python's recording assignor without a broker (the merge: test_merge.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from kstore.assignors import assign
from kstore.model import fold
from kstore.record.kafka_python import recording_assignor
from kstore.store._lock import store_lock
from kstore.store.log import NotAStoreError, SchemaError, Store


@dataclass
class Cluster:
    counts: dict[str, int]

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self.counts.get(topic)
        return set(range(count)) if count else None


def join_member(member_id: str, instance_id: str | None, topics: list[str]) -> Any:
    metadata = ConsumerProtocolSubscription(version=0, topics=topics, user_data=b"")
    return SimpleNamespace(member_id=member_id, group_instance_id=instance_id, metadata=metadata)


# Static and dynamic members interleaved, as JoinGroup may list them.
INTERLEAVED = [
    join_member("m-1", "static-1", ["t"]),
    join_member("m-2", None, ["t"]),
    join_member("m-3", "static-3", ["t"]),
    join_member("m-4", None, ["t"]),
]


def owners(answer: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    return {
        member: [(t, p) for t, ps in assignment.assigned_partitions for p in ps]
        for member, assignment in answer.items()
    }


@pytest.mark.parametrize(
    ("strategy", "theirs"),
    [("range", RangePartitionAssignor), ("roundrobin", RoundRobinPartitionAssignor)],
)
def test_no_member_is_dropped_when_static_and_dynamic_interleave(
    strategy: str, theirs: Any
) -> None:
    cluster = Cluster({"t": 8})
    ours = owners(recording_assignor(strategy, None, "g").assign(cluster, INTERLEAVED))
    assert all(len(ours[m.member_id]) == 2 for m in INTERLEAVED)
    assert sorted(tp for tps in ours.values() for tp in tps) == [("t", p) for p in range(8)]
    # kafka-python's own assignor leaves a member with nothing here (the quirk kstore avoids).
    kafka_python = owners(theirs.assign(cluster, INTERLEAVED))
    assert any(not kafka_python.get(m.member_id) for m in INTERLEAVED)


def test_the_answer_is_kstores_assignor_on_the_same_request() -> None:
    assignor = recording_assignor("cooperative-sticky", None, "g")
    members = [join_member("a", None, ["t", "u"]), join_member("b", None, ["t"])]
    cluster = Cluster({"t": 5, "u": 3})
    request = assignor.request(cluster, members)
    expected = assign(request).assignment
    assert owners(assignor.assign(cluster, members)) == {
        member: sorted(tps) for member, tps in expected.items()
    }


def test_metadata_carries_what_the_member_owns_and_its_generation() -> None:
    assignor = recording_assignor("sticky", None, "g")
    assignment = SimpleNamespace(assigned_partitions=[("t", [0, 2])])
    assignor.on_assignment(assignment, 5)
    sent = ConsumerProtocolSubscription.decode(assignor.metadata({"t"}).encode())
    members = [SimpleNamespace(member_id="a", group_instance_id=None, metadata=sent)]
    request = assignor.request(Cluster({"t": 3}), members)
    assert request.members["a"].owned == [("t", 0), ("t", 2)]
    assert request.members["a"].generation == 5


def test_the_leader_records_its_generation_once(store: Store) -> None:
    leader = recording_assignor("range", store, "g", cluster="prod")
    cluster = Cluster({"t": 4})
    answer = leader.assign(cluster, INTERLEAVED)
    leader.on_assignment(answer["m-1"], 3)
    follower = recording_assignor("range", store, "g", cluster="prod")
    follower.on_assignment(answer["m-2"], 3)  # not the leader: records nothing
    leader.flush(30)
    follower.flush(30)
    events = [s.event for s in store.events()]
    assert [e.type for e in events].count("AssignmentCompleted") == 1
    state = fold(events)
    assert state.generation == 3
    assert {m: sorted(tps) for m, tps in state.assignment.items()} == owners(answer)
    assert state.members["m-1"].instance_id == "static-1"
    # The replay of the recorded state with the same strategy gives the same assignment.
    replay = assign(fold(events[:-1]).to_request("range")).assignment
    assert {m: sorted(tps) for m, tps in replay.items()} == owners(answer)


def test_a_busy_store_does_not_hold_up_the_consumer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """on_assignment runs on kafka-python's network loop, which sends the heartbeats: it
    returns while another process holds the store, and the record follows once it is free."""
    monkeypatch.setenv("KSTORE_LOCK_TIMEOUT", "30")
    leader = recording_assignor("range", store, "g")
    answer = leader.assign(Cluster({"t": 4}), INTERLEAVED)
    with store_lock(store.path, exclusive=True):
        leader.on_assignment(answer["m-1"], 1)
        leader.assign(Cluster({"t": 4}), INTERLEAVED[:2])
        leader.on_assignment(answer["m-1"], 2)
    leader.flush(60)
    done = [s.event.data.to_dict() for s in store.events() if s.event.type == "AssignmentCompleted"]
    assert [d["generation"] for d in done] == [1, 2]  # in order, none lost
    assert sorted(done[-1]["assignment"]) == ["m-1", "m-2"]


def test_a_store_that_cannot_record_is_said_when_the_assignor_is_made(tmp_path: Path) -> None:
    """A user trial: ``recording_assignor("range", store="typo.duckdb", ...)`` (no store
    there) or a store of an older schema made a consumer that ran and consumed, its log
    getting a traceback at each generation it led, nothing recorded. The assignor is
    refused when it is made, with the line the CLI gives, before the consumer exists."""
    with pytest.raises(NotAStoreError, match="no store here; create it with `kstore --store"):
        recording_assignor("range", tmp_path / "typo.duckdb", "g")
    old = Store(tmp_path / "old.duckdb")
    old.init()
    old.migrate("0005_rebalance_stats")
    with pytest.raises(SchemaError, match=r"older than this kstore's .*upgrade it with"):
        recording_assignor("range", str(old.path), "g")
    old.init()
    assert recording_assignor("range", str(old.path), "g").store is not None
