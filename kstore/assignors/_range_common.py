"""What Kafka's range and round-robin assignors share: member order, subscribers, output.

Kafka's client ``RangeAssignor`` / ``RoundRobinAssignor`` and the coordinator's
``RangeAssignor`` all order members the same way: members with a
``group.instance.id`` first, by instance id, then the others by member id, both with
``String.compareTo``. Java's sort is stable and starts from the order of a
``HashMap`` filled in request order, so two members with the same instance id keep
that hash order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from itertools import chain, cycle, islice, repeat
from operator import call

from kstore._java import hash_order, java_string_key
from kstore.assignors._contract import (
    Assignment,
    AssignmentRequest,
    AssignmentResult,
    TopicPartition,
)

__all__ = [
    "Dealer",
    "ordered_members",
    "topic_subscribers",
]


def ordered_members(request: AssignmentRequest) -> list[str]:
    """Member ids in Kafka's order: static members by instance id, then the rest by id."""
    members = request.members
    ids = list(members)
    static = {m: sub.instance_id for m, sub in members.items() if sub.instance_id is not None}
    key = java_string_key(chain(ids, static.values()))
    dynamic = sorted((m for m in ids if m not in static), key=key)
    if not static:
        return dynamic
    base: Iterable[str] = static
    if len(set(static.values())) < len(static):
        # Equal instance ids compare equal: the stable sort keeps the HashMap order.
        base = [m for m in hash_order(ids) if m in static]
    return sorted(base, key=lambda m: key(static[m])) + dynamic


def topic_subscribers(request: AssignmentRequest, order: list[str]) -> dict[str, list[int]]:
    """Existing subscribed topic -> positions in ``order`` of its subscribers, ascending.

    Members with the same subscription share one list, so a group where everybody
    subscribes to the same topics costs one list, not one per topic.
    """
    topics = request.topics
    members = request.members
    by_subscription: dict[tuple[str, ...], list[int]] = {}
    for position, member in enumerate(order):
        by_subscription.setdefault(tuple(members[member].topics), []).append(position)
    groups: dict[str, list[list[int]]] = {}
    for subscription, positions in by_subscription.items():
        for topic in subscription:
            if topic in topics:
                groups.setdefault(topic, []).append(positions)
    return {
        topic: found[0] if len(found) == 1 else sorted(chain.from_iterable(found))
        for topic, found in groups.items()
    }


_Append = Callable[[TopicPartition], None]


class Dealer:
    """Builds the result: each topic's partitions appended, in order, to their owners.

    Topics must be dealt in Java name order: every member's list then comes out sorted
    by topic, then partition. An assignor says who owns each partition of a topic as an
    iterator of owners; tuples are made and appended in one pass that runs in C
    (``map`` with ``operator.call``), which is what counts at a million partitions.
    """

    def __init__(self, request: AssignmentRequest, order: list[str]) -> None:
        self.assignment: Assignment = {member: [] for member in request.members}
        self._append: list[_Append] = [self.assignment[member].append for member in order]
        # Topics with the same subscriber list (shared, see topic_subscribers) and
        # partition count have the same owners.
        self._range_owners: dict[tuple[int, int], list[_Append]] = {}

    def ranges(self, topic: str, count: int, subscribers: list[int]) -> None:
        """Contiguous ranges in subscriber order, the first ``count % n`` one longer."""
        key = (id(subscribers), count)
        owners = self._range_owners.get(key)
        if owners is None:
            base, extra = divmod(count, len(subscribers))
            lengths = chain(repeat(base + 1, extra), repeat(base, len(subscribers) - extra))
            runs = map(repeat, map(self._append.__getitem__, subscribers), lengths)
            owners = self._range_owners[key] = list(chain.from_iterable(runs))
        self._deal(topic, count, owners)

    def strides(self, topic: str, count: int, circle: list[int], first: int) -> None:
        """Partition ``k`` to ``circle[(first + k) % len(circle)]``."""
        turn = map(self._append.__getitem__, circle[first:] + circle[:first])
        self._deal(topic, count, islice(cycle(turn), count))

    def owned(self, topic: str, subscribers: list[int], owner: list[int]) -> None:
        """Partition ``p`` to ``subscribers[owner[p]]``."""
        positions = map(subscribers.__getitem__, owner)
        self._deal(topic, len(owner), map(self._append.__getitem__, positions))

    def result(self) -> AssignmentResult:
        return AssignmentResult.model_construct(assignment=self.assignment, warnings=[])

    @staticmethod
    def _deal(topic: str, count: int, owners: Iterable[_Append]) -> None:
        partitions = zip(repeat(topic, count), range(count), strict=True)
        deque(map(call, owners, partitions), maxlen=0)
