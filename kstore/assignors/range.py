"""``range``: Kafka's client ``RangeAssignor``, rack-aware as in KIP-881.

Per topic, the subscribers in Kafka's order (static members by instance id first,
then by member id) receive contiguous ranges, the first ``partitions % subscribers``
one partition more.

Rack awareness is decided per topic: it is used when some subscriber has a rack, the
subscribers' racks meet the partitions' replica racks, and not every partition lives
on exactly the full set of those racks. When any topic qualifies, a first pass places
partitions on members of a matching rack (a member without a rack matches anything)
while keeping each topic's quota (``partitions // subscribers``, plus one for as many
members as there are left-over partitions):

- topics with the same subscribers and the same partition count, whose subscribers
  have racks, are co-partitioned: partition *p* of all of them goes to the first
  member with room whose rack holds partition *p* of every one of them. Kafka does
  this for such a group even when none of its topics qualifies on its own;
- any other qualifying topic: each subscriber in turn takes up to its room from the
  lowest-numbered free partitions on its rack.

Then every topic's free partitions are dealt out in ranges: each subscriber in turn
takes up to its room from the lowest-numbered free partitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from kstore.assignors._contract import AssignmentRequest, AssignmentResult
from kstore.assignors._range_common import (
    Dealer,
    ordered_members,
    topic_subscribers,
)

__all__ = ["RANGE", "RangeAssignor"]

_FREE = -1
_RACK = attrgetter("rack")


class _Quota:
    """How many partitions of one topic each subscriber (by index) may still take."""

    __slots__ = ("base", "extra", "taken")

    def __init__(self, partitions: int, subscribers: int) -> None:
        self.base, self.extra = divmod(partitions, subscribers)
        self.taken = [0] * subscribers

    def room(self, index: int) -> int:
        return max(0, self.base + (self.extra > 0) - self.taken[index])

    def take(self, index: int, count: int) -> None:
        self.taken[index] += count
        if self.taken[index] > self.base:
            self.extra -= 1


def _partition_racks(
    request: AssignmentRequest, topic: str, interned: dict[tuple[str, ...], frozenset[str]]
) -> list[frozenset[str]]:
    # Few distinct rack lists exist, so each set is built once and shared.
    sets = []
    for racks in (request.partition_racks or {}).get(topic, []):
        key = tuple(racks)
        found = interned.get(key)
        if found is None:
            found = interned[key] = frozenset(key)
        sets.append(found)
    return sets + [frozenset()] * (request.topics[topic] - len(sets))


def _match_copartitioned(
    quota: _Quota,
    member_racks: Sequence[str | None],
    partition_racks: Sequence[frozenset[str]],
    owner: list[int],
) -> None:
    # Each partition goes to the first member with room and a matching rack. Room
    # never grows again, so each rack's queue of members is walked only once.
    queues: dict[str | None, list[int]] = {}
    for index, rack in enumerate(member_racks):
        queues.setdefault(rack, []).append(index)
    heads = dict.fromkeys(queues, 0)

    def first_with_room(rack: str | None) -> int | None:
        queue = queues.get(rack)
        if queue is None:
            return None
        head = heads[rack]
        while head < len(queue) and quota.room(queue[head]) == 0:
            head += 1
        heads[rack] = head
        return queue[head] if head < len(queue) else None

    for partition, racks in enumerate(partition_racks):
        best = first_with_room(None)
        for rack in racks:
            found = first_with_room(rack)
            if found is not None and (best is None or found < best):
                best = found
        if best is not None:
            owner[partition] = best
            quota.take(best, 1)


def _take_first(
    candidates: Sequence[int], head: int, limit: int, owner: list[int], index: int
) -> tuple[int, int]:
    """Give ``index`` up to ``limit`` free partitions of ``candidates`` from ``head`` on.

    Returns where the next scan may start and how many were taken; everything before
    that point is owned by now.
    """
    taken = 0
    while taken < limit and head < len(candidates):
        partition = candidates[head]
        head += 1
        if owner[partition] == _FREE:
            owner[partition] = index
            taken += 1
    return head, taken


def _match_ranges(
    quota: _Quota,
    member_racks: Sequence[str | None],
    partition_racks: Sequence[frozenset[str]],
    owner: list[int],
) -> None:
    on_rack: dict[str, list[int]] = {}
    for partition, racks in enumerate(partition_racks):
        for replica_rack in racks:
            on_rack.setdefault(replica_rack, []).append(partition)
    everything = range(len(owner))
    heads: dict[str | None, int] = {}
    for index, rack in enumerate(member_racks):
        limit = quota.room(index)
        if limit == 0:
            continue
        candidates = everything if rack is None else on_rack.get(rack, [])
        head, taken = _take_first(candidates, heads.get(rack, 0), limit, owner, index)
        heads[rack] = head
        if taken:
            quota.take(index, taken)


def _fill_ranges(quota: _Quota, owner: list[int]) -> None:
    head = 0
    everything = range(len(owner))
    for index in range(len(quota.taken)):
        head, taken = _take_first(everything, head, quota.room(index), owner, index)
        if taken:
            quota.take(index, taken)


def _rack_matched_owners(
    request: AssignmentRequest,
    racks: list[str | None],
    subscribers: dict[str, list[int]],
) -> dict[str, list[int]]:
    """Topic -> subscriber index owning each partition, for topics the rack pass touches.

    Topics left out get plain ranges.
    """
    if not any(racks):
        return {}
    units: dict[tuple[tuple[int, ...], int], list[str]] = {}
    topic_racks: dict[str, list[frozenset[str]]] = {}
    qualifying: set[str] = set()
    interned: dict[tuple[str, ...], frozenset[str]] = {}
    racks_of_circle: dict[int, set[str | None]] = {}
    for topic, circle in subscribers.items():
        subscriber_racks = racks_of_circle.get(id(circle))
        if subscriber_racks is None:
            subscriber_racks = {racks[position] for position in circle} - {None}
            racks_of_circle[id(circle)] = subscriber_racks
        if not subscriber_racks:
            continue
        per_partition = _partition_racks(request, topic, interned)
        topic_racks[topic] = per_partition
        all_racks = frozenset().union(*per_partition)
        if not subscriber_racks.isdisjoint(all_racks) and any(
            r != all_racks for r in per_partition
        ):
            qualifying.add(topic)
        units.setdefault((tuple(circle), len(per_partition)), []).append(topic)
    if not qualifying:
        return {}

    owners: dict[str, list[int]] = {}
    for (members, count), topics in units.items():
        member_racks = [racks[position] for position in members]
        quota = _Quota(count, len(members))
        owner = [_FREE] * count
        if len(topics) > 1:
            shared = [
                frozenset.intersection(*racks_of)
                for racks_of in zip(*(topic_racks[t] for t in topics), strict=True)
            ]
            _match_copartitioned(quota, member_racks, shared, owner)
        elif topics[0] in qualifying:
            _match_ranges(quota, member_racks, topic_racks[topics[0]], owner)
        else:
            continue
        _fill_ranges(quota, owner)
        for topic in topics:
            owners[topic] = owner
    return owners


class RangeAssignor:
    """The classic range assignor (ignores owned partitions)."""

    name = "range"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        order = ordered_members(request)
        subscribers = topic_subscribers(request, order)
        racks = [rack or None for rack in map(_RACK, map(request.members.__getitem__, order))]
        owners = _rack_matched_owners(request, racks, subscribers)
        dealer = Dealer(request, order)
        dealer.all_ranges(request.topics, subscribers, owners)
        return dealer.result()


RANGE = RangeAssignor()
