"""Client ``range`` and ``roundrobin``: worked examples, a naive model, properties."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kstore._java import hash_order
from kstore.assignors import AssignmentRequest, validate_request
from tests._range_requests import check_valid, permuted, requests, run

FAST = settings(max_examples=50, deadline=None)


def _request(strategy: str, topics: dict[str, int], members: dict[str, Any]) -> AssignmentRequest:
    return validate_request({"strategy": strategy, "topics": topics, "members": members})


def _tps(*pairs: str) -> list[tuple[str, int]]:
    """``"t0p2"`` -> ``("t0", 2)``."""
    out = []
    for pair in pairs:
        topic, partition = pair.split("p")
        out.append((topic, int(partition)))
    return out


# Seed 000, example 1: one topic of 7 partitions, three consumers.
def test_seed_example_1_range_one_topic_seven_partitions() -> None:
    members = {f"consumer{i}": {"topics": ["t0"]} for i in range(3)}
    got = run(_request("range", {"t0": 7}, members))
    assert got == {
        "consumer0": _tps("t0p0", "t0p1", "t0p2"),
        "consumer1": _tps("t0p3", "t0p4"),
        "consumer2": _tps("t0p5", "t0p6"),
    }


_EXAMPLE_SUBSCRIPTIONS = {
    "consumer0": {"topics": ["t0", "t1", "t2"]},
    "consumer1": {"topics": ["t0", "t1"]},
    "consumer2": {"topics": ["t2"]},
}


# Seed 000, example 2: unequal subscriptions, topics of 3, 2 and 1 partitions.
def test_seed_example_2_range_leaves_consumer2_idle() -> None:
    got = run(_request("range", {"t0": 3, "t1": 2, "t2": 1}, _EXAMPLE_SUBSCRIPTIONS))
    assert got == {
        "consumer0": _tps("t0p0", "t0p1", "t1p0", "t2p0"),
        "consumer1": _tps("t0p2", "t1p1"),
        "consumer2": [],
    }


def test_seed_example_2_roundrobin() -> None:
    got = run(_request("roundrobin", {"t0": 3, "t1": 2, "t2": 1}, _EXAMPLE_SUBSCRIPTIONS))
    assert got == {
        "consumer0": _tps("t0p0", "t0p2", "t1p1"),
        "consumer1": _tps("t0p1", "t1p0"),
        "consumer2": _tps("t2p0"),
    }


# Seed 000, example 3: topics of 4, 3 and 2 partitions; t2p1 goes to consumer0.
def test_seed_example_3_roundrobin_unbalanced() -> None:
    got = run(_request("roundrobin", {"t0": 4, "t1": 3, "t2": 2}, _EXAMPLE_SUBSCRIPTIONS))
    assert got == {
        "consumer0": _tps("t0p0", "t0p2", "t1p0", "t1p2", "t2p1"),
        "consumer1": _tps("t0p1", "t0p3", "t1p1"),
        "consumer2": _tps("t2p0"),
    }


def test_static_members_come_first_by_instance_id() -> None:
    members = {
        "a": {"topics": ["t"]},
        "b": {"topics": ["t"], "instance_id": "z"},
        "c": {"topics": ["t"], "instance_id": "y"},
    }
    for strategy in ("range", "roundrobin", "server-range"):
        got = run(_request(strategy, {"t": 3}, members))
        assert got == {"a": [("t", 2)], "b": [("t", 1)], "c": [("t", 0)]}, strategy


def test_equal_instance_ids_keep_java_hashmap_order() -> None:
    ids = ["consumer-1", "consumer-0", "x", "b7"]
    members = {m: {"topics": ["t"], "instance_id": "same"} for m in ids}
    first, *_ = hash_order(ids)
    assert first != ids[0]  # the request's first member is not the one Java meets first
    got = run(_request("range", {"t": 1}, members))
    assert got[first] == [("t", 0)]


def test_member_ids_compare_as_java_strings() -> None:
    # UTF-16: U+1F600 is a surrogate pair (0xD83D...), which sorts before U+FF01.
    members = {"\uff01": {"topics": ["t"]}, "\U0001f600": {"topics": ["t"]}}
    got = run(_request("range", {"t": 1}, members))
    assert got["\U0001f600"] == [("t", 0)]


def _naive_order(request: AssignmentRequest) -> list[str]:
    static = sorted((s.instance_id, m) for m, s in request.members.items() if s.instance_id)
    dynamic = sorted(m for m, s in request.members.items() if not s.instance_id)
    return [m for _, m in static] + dynamic


def _naive_roundrobin(request: AssignmentRequest) -> dict[str, list[tuple[str, int]]]:
    """Kafka's loop as written: walk the circle partition by partition."""
    circle = _naive_order(request)
    subscribed = {m: set(request.members[m].topics) for m in circle}
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in request.members}
    topics = sorted({t for s in subscribed.values() for t in s} & set(request.topics))
    cursor = 0
    for topic in topics:
        for partition in range(request.topics[topic]):
            while topic not in subscribed[circle[cursor % len(circle)]]:
                cursor += 1
            out[circle[cursor % len(circle)]].append((topic, partition))
            cursor += 1
    return out


class _NaiveTopic:
    def __init__(self, request: AssignmentRequest, topic: str, order: list[str]) -> None:
        self.count = request.topics[topic]
        self.members = [m for m in order if topic in request.members[m].topics]
        self.racks = {m: request.members[m].rack or None for m in self.members}
        listed = (request.partition_racks or {}).get(topic, [])
        self.partition_racks = [set(r) for r in listed] + [set()] * (self.count - len(listed))
        self.base, self.extra = divmod(self.count, len(self.members))
        self.taken = dict.fromkeys(self.members, 0)
        self.owner: dict[int, str] = {}
        member_racks = {r for r in self.racks.values() if r}
        everywhere = set().union(*self.partition_racks)
        self.has_racks = bool(member_racks)
        self.rack_aware = bool(member_racks & everywhere) and any(
            r != everywhere for r in self.partition_racks
        )

    def room(self, member: str) -> int:
        return max(0, self.base + (self.extra > 0) - self.taken[member])

    def matches(self, member: str, partition: int) -> bool:
        rack = self.racks[member]
        return rack is None or rack in self.partition_racks[partition]

    def give(self, member: str, partitions: list[int]) -> None:
        self.taken[member] += len(partitions)
        if self.taken[member] > self.base:
            self.extra -= 1
        self.owner.update(dict.fromkeys(partitions, member))

    def ranges(self, on_rack: bool) -> None:
        for member in self.members:
            free = [p for p in range(self.count) if p not in self.owner]
            if on_rack:
                free = [p for p in free if self.matches(member, p)]
            picked = free[: self.room(member)]
            if picked:
                self.give(member, picked)


def _naive_range(request: AssignmentRequest) -> dict[str, list[tuple[str, int]]]:
    """Kafka's rack-aware range as described, with every scan done from scratch."""
    order = _naive_order(request)
    names = {t for s in request.members.values() for t in s.topics} & set(request.topics)
    states = {t: _NaiveTopic(request, t, order) for t in sorted(names)}
    if any(s.rack_aware for s in states.values()):
        groups: dict[tuple[tuple[str, ...], int], list[_NaiveTopic]] = {}
        for s in states.values():
            groups.setdefault((tuple(s.members), s.count if s.has_racks else 0), []).append(s)
        for (members, count), group in groups.items():
            if len(group) == 1:
                if group[0].rack_aware:
                    group[0].ranges(on_rack=True)
                continue
            for p in range(count):
                for m in members:
                    if all(s.matches(m, p) and s.room(m) > 0 for s in group):
                        for s in group:
                            s.give(m, [p])
                        break
    for s in states.values():
        s.ranges(on_rack=False)
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in request.members}
    for topic, s in states.items():
        for p in range(s.count):
            out[s.owner[p]].append((topic, p))
    return out


@FAST
@given(requests("roundrobin"))
def test_roundrobin_matches_the_partition_by_partition_walk(request: AssignmentRequest) -> None:
    got = run(request)
    check_valid(request, got)
    assert got == _naive_roundrobin(request)


@FAST
@given(requests("range"))
def test_range_matches_the_naive_model(request: AssignmentRequest) -> None:
    got = run(request)
    check_valid(request, got)
    assert got == _naive_range(request)


@FAST
@given(requests("range", copartitioned=True))
def test_range_copartitioned_matches_the_naive_model(request: AssignmentRequest) -> None:
    got = run(request)
    check_valid(request, got)
    assert got == _naive_range(request)


@FAST
@given(requests("range"))
def test_range_balances_each_topic_among_its_subscribers(request: AssignmentRequest) -> None:
    got = run(request)
    for topic in request.topics:
        subscribers = [m for m, s in request.members.items() if topic in s.topics]
        loads = [sum(1 for t, _ in got[m] if t == topic) for m in subscribers]
        if loads:
            assert max(loads) - min(loads) <= 1, topic


@FAST
@given(requests("roundrobin", same_subscription=True))
def test_roundrobin_equal_subscriptions_balance_total_loads(request: AssignmentRequest) -> None:
    got = run(request)
    loads = [len(tps) for tps in got.values()]
    assert max(loads) - min(loads) <= 1


@FAST
@given(st.sampled_from(["range", "roundrobin"]).flatmap(requests), st.integers(0, 2**32))
def test_deterministic_and_independent_of_member_order(
    request: AssignmentRequest, seed: int
) -> None:
    got = run(request)
    assert run(request) == got
    shuffled = run(permuted(request, seed))
    assert {m: shuffled[m] for m in got} == got


@FAST
@given(requests("range", racks=False))
def test_range_without_racks_hands_out_contiguous_ranges(request: AssignmentRequest) -> None:
    got = run(request)
    for topic, count in request.topics.items():
        shares = Counter(m for m, tps in got.items() for t, _ in tps if t == topic)
        # Contiguous and in member order: consecutive owners never come back.
        owners = [m for p in range(count) for m, tps in got.items() if (topic, p) in tps]
        runs = [m for i, m in enumerate(owners) if i == 0 or owners[i - 1] != m]
        assert len(runs) == len(shares)
