"""What Kafka's range and round-robin assignors share: member order, subscribers, output.

Kafka's client ``RangeAssignor`` / ``RoundRobinAssignor`` and the coordinator's
``RangeAssignor`` all order members the same way: members with a
``group.instance.id`` first, by instance id, then the others by member id, both with
``String.compareTo``. Java's sort is stable and starts from the order of a
``HashMap`` filled in request order, so two members with the same instance id keep
that hash order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, cycle, islice, product, repeat
from operator import attrgetter, call

from kstore._java import hash_order, java_sorted, java_string_key
from kstore.assignors._contract import (
    _TOPICS,
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


_INSTANCE = attrgetter("instance_id")
_APPEND = attrgetter("append")


def ordered_members(request: AssignmentRequest) -> list[str]:
    """Member ids in Kafka's order: static members by instance id, then the rest by id."""
    members = request.members
    ids = list(members)
    instances = list(map(_INSTANCE, members.values()))
    if instances.count(None) == len(ids):  # no static member (maps: every decision asks)
        key = java_string_key(ids)
        return sorted(ids) if key is str else sorted(ids, key=key)
    static = {m: i for m, i in zip(ids, instances, strict=True) if i is not None}
    key = java_string_key(chain(ids, static.values()))
    dynamic = sorted((m for m in ids if m not in static), key=key)
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
    # Each member's subscription by maps (every decision asks): mostly one for all.
    subscriptions = list(map(tuple, map(_TOPICS, map(request.members.__getitem__, order))))
    by_subscription: dict[tuple[str, ...], list[int]] = {}
    if subscriptions and subscriptions.count(subscriptions[0]) == len(subscriptions):
        by_subscription[subscriptions[0]] = list(range(len(subscriptions)))
    else:
        for position, subscription in enumerate(subscriptions):
            by_subscription.setdefault(subscription, []).append(position)
    groups = list(by_subscription.values())
    naming: defaultdict[str, list[int]] = defaultdict(list)  # topic -> indices into groups
    for index, subscription in enumerate(by_subscription):
        for found in map(naming.__getitem__, subscription):
            found.append(index)
    if len(groups) == len(order):
        # Every member subscribes differently: group i is the member at position i.
        return {topic: found for topic, found in naming.items() if topic in topics}
    return {
        topic: groups[found[0]]
        if len(found) == 1
        else sorted(chain.from_iterable(map(groups.__getitem__, found)))
        for topic, found in naming.items()
        if topic in topics
    }


_Append = Callable[[TopicPartition], None]


class Dealer:
    """Builds the result: each topic's partitions appended, in order, to their owners.

    Topics are dealt in Java name order: every member's list then comes out sorted by
    topic, then partition. An assignor says who owns each partition of a topic as an
    iterator of owners; tuples are made and appended in one pass that runs in C
    (``map`` with ``operator.call``), which is what counts at a million partitions.
    """

    def __init__(self, request: AssignmentRequest, order: list[str]) -> None:
        # Maps, no Python per member (every decision of a simulation makes a dealer).
        members = request.members
        empty: Iterator[list[TopicPartition]] = map(list, repeat((), len(members)))
        self.assignment: Assignment = dict(zip(members, empty, strict=True))
        self._lists = list(map(self.assignment.__getitem__, order))
        self._appends: list[_Append] | None = None
        # Topics with the same subscriber list (shared, see topic_subscribers) and
        # partition count have the same owners.
        self._range_owners: dict[tuple[int, int], list[_Append]] = {}

    def all_ranges(
        self,
        counts: dict[str, int],
        subscribers: dict[str, list[int]],
        owners: dict[str, list[int]],
    ) -> None:
        """Every topic of ``subscribers`` in ranges, except that partition ``p`` of a topic
        in ``owners`` goes to ``subscribers[topic][owners[topic][p]]``."""
        topics = java_sorted(subscribers)
        shapes = {(id(subscribers[topic]), counts[topic]) for topic in topics}
        if len(shapes) == 1 and not owners:
            self._same_ranges(topics, counts[topics[0]], subscribers[topics[0]])
            return
        for topic in topics:
            owner = owners.get(topic)
            if owner is None:
                self.ranges(topic, counts[topic], subscribers[topic])
            else:
                self.owned(topic, subscribers[topic], owner)

    def ranges(self, topic: str, count: int, subscribers: list[int]) -> None:
        """Contiguous ranges in subscriber order, the first ``count % n`` one longer."""
        key = (id(subscribers), count)
        owners = self._range_owners.get(key)
        if owners is None:
            base, extra = divmod(count, len(subscribers))
            appends = map(self._append.__getitem__, subscribers)
            if base:
                lengths = chain(repeat(base + 1, extra), repeat(base, len(subscribers) - extra))
                owners = list(chain.from_iterable(map(repeat, appends, lengths)))
            else:
                owners = list(islice(appends, count))  # one each for the first ``count``
            self._range_owners[key] = owners
        self._deal(topic, count, owners)

    def round_robin(self, counts: dict[str, int], subscribers: dict[str, list[int]]) -> None:
        """Every topic's partitions in turn to the next subscriber at or after a cursor
        that carries over from topic to topic (see ``roundrobin``)."""
        topics = java_sorted(subscribers)
        if len({id(circle) for circle in subscribers.values()}) == 1:
            # One circle: the cursor just walks it, so the i-th partition of all, in
            # order, goes to circle[i % n], and each member's share is one slice.
            circle = subscribers[topics[0]]
            sizes = map(counts.__getitem__, topics)
            every = list(chain.from_iterable(map(_partitions, topics, sizes)))
            for k, position in enumerate(circle):
                self._lists[position].extend(every[k :: len(circle)])
            return
        cursor = 0
        for topic in topics:
            count = counts[topic]
            circle = subscribers[topic]
            first = bisect_left(circle, cursor)
            if first == len(circle):
                first = 0
            self.strides(topic, count, circle, first)
            cursor = circle[(first + count - 1) % len(circle)] + 1

    def strides(self, topic: str, count: int, circle: list[int], first: int) -> None:
        """Partition ``k`` to ``circle[(first + k) % len(circle)]``."""
        turn = map(self._append.__getitem__, circle[first:] + circle[:first])
        self._deal(topic, count, islice(cycle(turn), count))

    def owned(self, topic: str, subscribers: list[int], owner: list[int]) -> None:
        """Partition ``p`` to ``subscribers[owner[p]]``."""
        positions = map(subscribers.__getitem__, owner)
        self._deal(topic, len(owner), map(self._append.__getitem__, positions))

    @property
    def _append(self) -> list[_Append]:
        """Each list's ``append``, in ``order`` (made when first dealt with)."""
        if self._appends is None:
            self._appends = list(map(_APPEND, self._lists))
        return self._appends

    def result(self) -> AssignmentResult:
        return AssignmentResult.model_construct(assignment=self.assignment, warnings=[])

    def _same_ranges(self, topics: list[str], count: int, subscribers: list[int]) -> None:
        # Every topic has these subscribers and ``count`` partitions, so each subscriber
        # gets the same range of every topic: its whole list is one product, made in C.
        base, extra = divmod(count, len(subscribers))
        if len(topics) == 1:  # one topic: each list the next of its partitions, by maps
            lists = map(self._lists.__getitem__, subscribers[:count])
            lengths = chain(repeat(base + 1, extra), repeat(base, len(subscribers) - extra))
            partitions = repeat(_partitions(topics[0], count))
            deque(map(list.extend, lists, map(islice, partitions, lengths)), maxlen=0)
            return
        start = 0
        for k, position in enumerate(subscribers[:count]):
            end = start + base + (k < extra)
            self._lists[position].extend(product(topics, range(start, end)))
            start = end

    @staticmethod
    def _deal(topic: str, count: int, owners: Iterable[_Append]) -> None:
        deque(map(call, owners, _partitions(topic, count)), maxlen=0)


def _partitions(topic: str, count: int) -> Iterator[TopicPartition]:
    return zip(repeat(topic, count), range(count), strict=True)
