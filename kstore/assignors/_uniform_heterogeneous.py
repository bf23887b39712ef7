"""``UniformAssignor`` when members subscribe to different topics.

Kafka's ``UniformHeterogeneousAssignmentBuilder`` (as reworked in KAFKA-17710):

1. every member keeps its current partitions of the topics it still subscribes to;
2. the free partitions are handed out topic by topic, topics ordered by partitions per
   subscriber (descending), then subscriber count, then topic id; within a topic, in
   ascending partition order, each to the least-loaded subscriber (ties: lowest index);
3. balancing passes (at most 16) over the topics with two or more subscribers, in the same
   topic order: the most-loaded subscribers give up their highest-numbered partitions of
   the topic to the least-loaded ones until the two differ by at most one partition. The
   passes stop once a whole round of topics moved nothing.

"Load" is a member's partition count over all topics. Ties are always broken by member
index, i.e. by ``memberIds()`` order.
"""

from __future__ import annotations

from kstore.assignors._uniform_model import UniformGroup

__all__ = ["assign_heterogeneous"]

_MAX_PASSES = 16


class _Loads:
    """Chooses receivers and givers among the subscribers of one topic.

    The subscribers are sorted by load (ties by index). Receivers come from a window
    growing from the light end: each member in it gets one partition per round, and the
    window takes in the next members once they are no heavier than its own level.
    Givers come the same way from the heavy end, walking from the heaviest down; a giver
    with nothing left to give is swapped out of its window. Both levels are the loads a
    window's members had before the current round; the topic counts as balanced once
    they are at most one apart.
    """

    __slots__ = (
        "_loads",
        "_order",
        "high_level",
        "high_next",
        "high_start",
        "high_stop",
        "low_level",
        "low_next",
        "low_stop",
    )

    def __init__(self, loads: list[int]) -> None:
        self._loads = loads
        self._order: list[int] = []
        self.low_stop = self.low_level = self.low_next = 0
        self.high_start = self.high_stop = self.high_level = self.high_next = 0

    def reset(self, members: list[int]) -> int:
        """Start over with ``members`` (ascending indexes); returns max load - min load."""
        loads = self._loads
        order = self._order = sorted(members, key=loads.__getitem__)
        lightest, heaviest = loads[order[0]], loads[order[-1]]
        self.low_stop = 0
        self.low_level = lightest - 1
        self.low_next = 0
        self.high_start = self.high_stop = len(order)
        self.high_level = heaviest + 1
        self.high_next = len(order) - 1
        return heaviest - lightest

    def balanced(self) -> bool:
        return self.high_level - self.low_level <= 1

    def receiver(self) -> int:
        """The next member to receive a partition."""
        order, loads = self._order, self._loads
        if self.low_next >= self.low_stop:
            self.low_level += 1
            while self.low_stop < len(order) and loads[order[self.low_stop]] == self.low_level:
                self.low_stop += 1
            self.low_next = 0
        member = order[self.low_next]
        self.low_next += 1
        return member

    def giver(self) -> int:
        """The next member to give up a partition, or -1 if none is left."""
        order, loads = self._order, self._loads
        if self.high_next < self.high_start:
            if self.high_stop <= self.high_start and self.high_start > 0:
                # Every member of the window was swapped out: restart the level from the
                # next lighter member, so the window is sure to take it in.
                self.high_level = loads[order[self.high_start - 1]]
            else:
                self.high_level -= 1
            while self.high_start > 0 and loads[order[self.high_start - 1]] == self.high_level:
                self.high_start -= 1
            self.high_next = self.high_stop - 1
        if self.high_next < 0:
            return -1
        member = order[self.high_next]
        self.high_next -= 1
        return member

    def drop_giver(self) -> None:
        """Swap the member last returned by ``giver`` out of the heavy window."""
        order = self._order
        at, last = self.high_next + 1, self.high_stop - 1
        order[at], order[last] = order[last], order[at]
        self.high_stop -= 1


class _Builder:
    """One heterogeneous assignment: members' loads and each topic's partition owners."""

    def __init__(self, group: UniformGroup) -> None:
        self.counts = group.partition_counts
        self.offsets = group.offsets
        subscriptions = [group.subscribed(m) for m in range(len(group.member_ids))]
        self.subscribers: dict[int, list[int]] = {}
        for index, topics in enumerate(subscriptions):
            for topic_id in topics:
                self.subscribers.setdefault(topic_id, []).append(index)
        self.loads = [0] * len(group.member_ids)
        self.owners = {t: [-1] * self.counts[t] for t in self.subscribers}
        # A member keeps its current partitions of the topics it still subscribes to.
        for index, (slots, topics) in enumerate(zip(group.owned, subscriptions, strict=True)):
            subscribed = set(topics)
            for topic_id, parts in group.by_topic(slots).items():
                if topic_id in subscribed:
                    self.loads[index] += len(parts)
                    topic_owners = self.owners[topic_id]
                    for partition in parts:
                        topic_owners[partition] = index

    def topic_order(self, topics: list[int]) -> list[int]:
        counts, subscribers = self.counts, self.subscribers

        def key(topic_id: int) -> tuple[float, int, int]:
            n = len(subscribers[topic_id])
            return (-(counts[topic_id] / n), n, topic_id)

        return sorted(topics, key=key)

    def move(self, topic_id: int, partition: int, member: int) -> None:
        owners = self.owners[topic_id]
        previous = owners[partition]
        if previous != -1:
            self.loads[previous] -= 1
        owners[partition] = member
        self.loads[member] += 1

    def hand_out_free(self) -> None:
        free = {
            t: [p for p, owner in enumerate(owners) if owner == -1]
            for t, owners in self.owners.items()
        }
        loads = _Loads(self.loads)
        for topic_id in self.topic_order([t for t, parts in free.items() if parts]):
            loads.reset(self.subscribers[topic_id])
            for partition in free[topic_id]:
                self.move(topic_id, partition, loads.receiver())

    def balance(self) -> None:
        topics = self.topic_order([t for t, subs in self.subscribers.items() if len(subs) >= 2])
        if not topics:
            return
        loads = _Loads(self.loads)
        last_moved = -1
        for _ in range(_MAX_PASSES):
            for position, topic_id in enumerate(topics):
                if position == last_moved:
                    return  # a whole round of topics moved nothing
                moved = self.balance_topic(topic_id, loads)
                if moved or last_moved == -1:
                    last_moved = position

    def balance_topic(self, topic_id: int, loads: _Loads) -> int:
        if loads.reset(self.subscribers[topic_id]) <= 1:
            return 0
        held: dict[int, list[int]] = {}
        for partition, owner in enumerate(self.owners[topic_id]):
            held.setdefault(owner, []).append(partition)
        moved = 0
        while not loads.balanced():
            giver = loads.giver()
            while giver != -1 and not held.get(giver):
                loads.drop_giver()
                giver = loads.giver()
            if giver == -1:
                break
            partition = held[giver].pop()
            receiver = loads.receiver()
            if loads.balanced():
                break
            self.move(topic_id, partition, receiver)
            moved += 1
        return moved

    def result(self, members: int) -> list[list[int]]:
        assignment: list[list[int]] = [[] for _ in range(members)]
        for topic_id, owners in self.owners.items():
            base = self.offsets[topic_id]
            for partition, owner in enumerate(owners):
                assignment[owner].append(base + partition)
        return assignment


def assign_heterogeneous(group: UniformGroup) -> list[list[int]]:
    """Each member's new slots (indexes as in ``group.member_ids``)."""
    builder = _Builder(group)
    if builder.subscribers:
        builder.hand_out_free()
        builder.balance()
    return builder.result(len(group.member_ids))
