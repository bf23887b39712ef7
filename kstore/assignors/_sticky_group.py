"""A sticky-assignor request in the shape Kafka's ``AbstractStickyAssignor`` sees it.

Members are numbered in the iteration order of the subscription ``HashMap`` (filled in
request order), topics in ``String`` order of their names, and a partition is one integer
(``offsets[topic] + partition``), so ascending ids are (topic, partition) order. Only
topics that some member subscribes to and that exist take part (Kafka's
``partitionsPerTopic``); owned partitions of any other topic are dropped here.

Claims of the same partition by several members are settled as Kafka settles them
(KIP-341): the highest generation keeps it, and a tie at the top leaves it to nobody.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate, chain, repeat

import numpy as np
import numpy.typing as npt

from kstore._java import hash_order, java_sorted, java_string_key, string_hash, to_int32
from kstore.assignors._claims import Claims, settle_claims
from kstore.assignors._contract import AssignmentRequest, MemberSubscription

__all__ = ["NO_RACK", "SMALL_GROUP", "Claims", "RackInfo", "StickyGroup", "build_group"]

NO_RACK = -1

SMALL_GROUP = 512
"""Partitions (and claims) up to which a group's steps run on Python lists: below this a
numpy call's fixed cost (about a microsecond each) outweighs the Python it replaces. The
groups kstore replays by the million have a few dozen partitions."""


@dataclass
class RackInfo:
    """KIP-881 rack data, as ``AbstractStickyAssignor.RackInfo`` derives it.

    ``member_rack`` holds rack ids only when rack-aware assignment is on (else all
    ``NO_RACK``). ``partition_rack_set[pid]`` indexes ``rack_sets``. ``rack_consumers``
    (consumers on a partition's racks, for ordering unassigned partitions) is set whenever
    some member has a rack, even when rack-aware assignment is off, as in Kafka.
    """

    enabled: bool
    member_rack: list[int]
    rack_sets: list[frozenset[int]]
    partition_rack_set: list[int]
    rack_consumers: list[int] | None

    def mismatch(self, member: int, pid: int) -> bool:
        rack = self.member_rack[member]
        return rack != NO_RACK and rack not in self.rack_sets[self.partition_rack_set[pid]]


@dataclass
class StickyGroup:
    member_ids: list[str]
    name_rank: list[int]
    generation: list[int]
    topics: list[str]
    partition_counts: list[int]
    offsets: list[int]
    total: int
    topic_lists: list[list[str]]
    all_subscriptions_equal: bool
    owned: Claims
    claims: Claims
    multiply_claimed: set[int]
    max_generation: int
    racks: RackInfo
    small: bool = False
    """At most ``SMALL_GROUP`` partitions and claims: the steps run on lists."""
    _topic_hashes: list[int] = field(default_factory=list)
    _member_topics: list[list[int]] = field(default_factory=list)
    _pid_topic: list[int] = field(default_factory=list)

    @property
    def pid_topic(self) -> list[int]:
        """Each partition id's topic index (``topic_of`` as a list over all ids)."""
        if not self._pid_topic and self.total:
            for t, count in enumerate(self.partition_counts):
                self._pid_topic += repeat(t, count)
        return self._pid_topic

    @property
    def member_topics(self) -> list[list[int]]:
        """Each member's subscribed topics that take part, as topic indices."""
        if not self._member_topics and self.member_ids:
            index = {t: i for i, t in enumerate(self.topics)}
            self._member_topics = [[index[t] for t in ts if t in index] for ts in self.topic_lists]
        return self._member_topics

    def topic_of(self, pid: int) -> int:
        """Topic index of a partition id (binary search over the offsets)."""
        offsets = self.offsets
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= pid:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def split(
        self, pids: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Each partition id's topic index and partition number (``topic_of`` over an
        array)."""
        offsets = np.asarray(self.offsets, dtype=np.int64)
        topic = np.searchsorted(offsets, pids, side="right") - 1
        return topic, pids - offsets[topic]

    def partition_hash(self, topic: int, pid: int) -> int:
        """``TopicPartition.hashCode`` of a partition id of ``topic``."""
        if not self._topic_hashes:
            self._topic_hashes = [string_hash(t) for t in self.topics]
        partition = pid - self.offsets[topic]
        return to_int32(31 * (31 + partition) + self._topic_hashes[topic])


def _subscriptions_equal(topic_lists: list[list[str]]) -> bool:
    # Kafka takes its reference set from the first *non-empty* subscription it meets, so
    # empty subscriptions iterated before it do not count (quirk 3 in the docs).
    reference: set[str] = set()
    for topics in topic_lists:
        if not reference:
            reference.update(topics)
        elif len(topics) != len(reference) or not reference.issuperset(topics):
            return False
    return True


def _owned_claims(specs: list[MemberSubscription], offset_of: dict[str, int]) -> Claims:
    """Every member's owned partitions of the topics taking part, as one flat list."""
    lists = [spec.owned for spec in specs]
    try:  # usually every owned topic takes part: one comprehension over them all
        pid = [offset_of[t] + p for owned in lists for t, p in owned]
    except KeyError:
        lists = [[(t, p) for t, p in owned if t in offset_of] for owned in lists]
        pid = [offset_of[t] + p for owned in lists for t, p in owned]
    member = list(chain.from_iterable(map(repeat, range(len(lists)), map(len, lists))))
    return Claims(pid, member, len(specs))


def _rack_info(
    request: AssignmentRequest,
    specs: list[MemberSubscription],
    topics: list[str],
    offsets: list[int],
    total: int,
) -> RackInfo:
    no_racks = [NO_RACK] * len(specs)
    if not any([spec.rack for spec in specs]):
        return RackInfo(False, no_racks, [frozenset()], [], None)
    rack_ids: dict[str, int] = {}
    consumers_on_rack: dict[int, int] = {}
    rack_of: list[int] = []
    for spec in specs:
        rack = spec.rack
        if rack:
            rid = rack_ids.setdefault(rack, len(rack_ids))
            consumers_on_rack[rid] = consumers_on_rack.get(rid, 0) + 1
            rack_of.append(rid)
        else:
            rack_of.append(NO_RACK)
    consumer_racks = set(consumers_on_rack)
    set_ids: dict[frozenset[int], int] = {frozenset(): 0}
    partition_set = [0] * total
    given = request.partition_racks or {}
    for topic, offset in zip(topics, offsets, strict=False):
        for p, replica_racks in enumerate(given.get(topic, ())):
            racks = frozenset(rack_ids.setdefault(r, len(rack_ids)) for r in replica_racks)
            partition_set[offset + p] = set_ids.setdefault(racks, len(set_ids))
    rack_sets = list(set_ids)
    used_sets = set(partition_set)
    all_partition_racks = frozenset().union(*(rack_sets[i] for i in used_sets))
    rack_consumers = [sum(consumers_on_rack.get(r, 0) for r in s) for s in rack_sets]
    enabled = not consumer_racks.isdisjoint(all_partition_racks) and any(
        rack_sets[i] != all_partition_racks for i in used_sets
    )
    return RackInfo(
        enabled,
        rack_of if enabled else no_racks,
        rack_sets,
        partition_set,
        rack_consumers,
    )


def build_group(request: AssignmentRequest) -> StickyGroup:
    """The request as Kafka's sticky assignors see it (see the module docstring)."""
    subs = request.members
    member_ids = hash_order(list(subs))
    specs = [subs[m] for m in member_ids]
    n = len(member_ids)
    key = java_string_key(member_ids)
    names: list[str] | list[str | bytes] = member_ids if key is str else list(map(key, member_ids))
    by_name = sorted(range(n), key=names.__getitem__)
    # Each member's place in ``by_name``: the inverse of a permutation is its argsort.
    name_rank = sorted(range(n), key=by_name.__getitem__)

    existing = request.topics
    topic_lists = [spec.topics for spec in specs]
    topics = java_sorted(existing.keys() & set().union(*topic_lists))
    counts = [existing[t] for t in topics]
    offsets = [0, *accumulate(counts)]
    total = offsets.pop()
    offset_of = dict(zip(topics, offsets, strict=True))

    generation = [-1 if spec.generation is None else spec.generation for spec in specs]
    owned = _owned_claims(specs, offset_of)
    claims, tied = settle_claims(owned, generation)
    return StickyGroup(
        member_ids=member_ids,
        name_rank=name_rank,
        generation=generation,
        topics=topics,
        partition_counts=counts,
        offsets=offsets,
        total=total,
        topic_lists=topic_lists,
        all_subscriptions_equal=_subscriptions_equal(topic_lists),
        owned=owned,
        claims=claims,
        multiply_claimed=tied,
        max_generation=max(generation, default=-1),
        racks=_rack_info(request, specs, topics, offsets, total),
        small=total <= SMALL_GROUP and len(owned.pid) <= SMALL_GROUP,
    )
