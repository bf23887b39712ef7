"""``librdkafka:range`` and ``librdkafka:roundrobin``: librdkafka 2.16's range and
round-robin assignors (``rdkafka_range_assignor.c``, ``rdkafka_roundrobin_assignor.c``).

Range, per topic: subscribers in librdkafka's member order take contiguous ranges, the
first ``partitions % subscribers`` one more. Rack-aware passes (KIP-881) run first:
topics with the same subscribers and partition count are co-partitioned (partition
*p* of all of them to the first subscriber with room whose rack holds *p* of every one;
a subscriber without a rack is never chosen there), other topics that need rack
awareness give each subscriber in turn its room from the free partitions on its rack
(a subscriber without a rack takes any). Round-robin: topics in name order, each
partition to the next subscriber of the member circle, the cursor carried over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kstore.assignors._contract import AssignmentRequest, AssignmentResult, sorted_assignment
from kstore.assignors._librdkafka_common import (
    c_key,
    eligible_topics,
    partition_racks,
    sorted_members,
    use_rack_aware,
)

__all__ = ["LIBRDKAFKA_RANGE", "LIBRDKAFKA_ROUNDROBIN"]


@dataclass
class _Topic:
    """``rd_kafka_topic_assignment_state_t``: one topic's quota and what is taken."""

    name: str
    count: int
    members: list[str]
    racks: list[frozenset[str]]
    base: int = 0
    extra: int = 0
    free: list[bool] = field(default_factory=list)
    left: int = 0
    taken: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.base, self.extra = divmod(self.count, len(self.members))
        self.free = [True] * self.count
        self.left = self.count
        self.taken = dict.fromkeys(self.members, 0)

    def room(self, member: str) -> int:
        return self.base + (self.extra > 0) - self.taken[member]

    def give(self, member: str, partition: int, out: dict[str, list[tuple[str, int]]]) -> None:
        out[member].append((self.name, partition))
        self.free[partition] = False
        self.left -= 1
        self.taken[member] += 1
        if self.taken[member] > self.base:
            self.extra -= 1


def _ranges(
    topic: _Topic,
    racks: dict[str, str | None] | None,
    out: dict[str, list[tuple[str, int]]],
) -> None:
    """``rd_kafka_assign_ranges``: each member in turn takes up to its room from the free
    partitions, lowest first; with ``racks``, only those on its rack (any if it has none)."""
    for member in topic.members:
        if topic.left == 0:
            break
        room = topic.room(member)
        if room <= 0:
            continue
        rack = racks.get(member) if racks is not None else None
        picks = []
        for partition in range(topic.count):
            if not topic.free[partition]:
                continue
            if room <= 0:
                break
            if rack and rack not in topic.racks[partition]:
                continue
            picks.append(partition)
            room -= 1
        for partition in picks:
            topic.give(member, partition, out)


def _co_partitioned(
    bucket: list[_Topic], racks: dict[str, str | None], out: dict[str, list[tuple[str, int]]]
) -> None:
    first = bucket[0]
    for partition in range(first.count):
        for member in first.members:
            rack = racks[member]
            if all(
                rack and rack in topic.racks[partition] and topic.room(member) > 0
                for topic in bucket
            ):
                for topic in bucket:
                    topic.give(member, partition, out)
                break


class LibrdkafkaRange:
    name = "librdkafka:range"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        members = request.members
        out: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        racks = {m: sub.rack for m, sub in members.items()}
        topics = [
            _Topic(
                name,
                request.topics[name],
                sorted_members(subs, members),
                partition_racks(request, name),
            )
            for name, subs in eligible_topics(request).items()
        ]
        buckets: dict[tuple[tuple[str, ...], int], list[_Topic]] = {}
        for topic in topics:
            buckets.setdefault((tuple(topic.members), topic.count), []).append(topic)
        for bucket in buckets.values():
            if len(bucket) > 1:
                _co_partitioned(bucket, racks, out)
            elif use_rack_aware((racks[m] for m in bucket[0].members), [bucket[0].racks]):
                _ranges(bucket[0], racks, out)
        for topic in topics:
            _ranges(topic, None, out)
        return AssignmentResult(assignment=sorted_assignment(members, out))


class LibrdkafkaRoundRobin:
    name = "librdkafka:roundrobin"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        members = request.members
        out: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        circle = sorted_members(list(members), members)
        subscribed = [set(members[m].topics) for m in circle]
        cursor = -1
        for topic in sorted(eligible_topics(request), key=c_key):
            for partition in range(request.topics[topic]):
                cursor = (cursor + 1) % len(circle)
                while topic not in subscribed[cursor]:
                    cursor = (cursor + 1) % len(circle)
                out[circle[cursor]].append((topic, partition))
        return AssignmentResult(assignment=sorted_assignment(members, out))


LIBRDKAFKA_RANGE = LibrdkafkaRange()
LIBRDKAFKA_ROUNDROBIN = LibrdkafkaRoundRobin()
