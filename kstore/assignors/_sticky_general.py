"""The sticky assignors' general path: members subscribe to different topics.

Kafka's ``GeneralAssignmentBuilder``: keep valid owned partitions, hand out the rest one
by one to the least-loaded eligible member (rack-matched first), then move partitions
until the assignment is balanced, and revert the moves if they did not improve the
balance score. The result must be Kafka's to the partition, so every choice is Kafka's;
only the bookkeeping differs. Kafka rescans the whole group for each question ("is it
balanced?", "who is least loaded?"); here lazily refreshed heaps per topic answer them:

- ``_Lightest``: per topic, the subscriber first in (load, member id) order; entries are
  pushed when a load drops and refreshed when found stale after a rise.
- ``_Balance``: Kafka's ``isBalanced``: not balanced iff some member that could take more
  subscribes to a topic with a partition whose owner has at least two more partitions.

Partition movements keep Kafka's ``HashSet`` order (``HashSetOrder``): when a partition
would move back along a pair of members, Kafka moves the set's first element instead.

That substitution can make Kafka's balancing loop run forever (quirk 4 in
docs/assignors/sticky.md): a partition swapped in for another moves from a member that is
not the heaviest, and a later step of the same pass moves it back. The loop is
deterministic, so it never ends exactly when a pass ends in a state (owners and movement
records, ``HashSet`` order included) that an earlier pass ended in; ``_Passes`` watches
for that and stops there.
"""

from __future__ import annotations

import hashlib
import heapq
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain

from kstore._java import HashSetOrder
from kstore.assignors._sticky_group import NO_RACK, SMALL_GROUP, StickyGroup

__all__ = ["GeneralResult", "KafkaWouldThrow", "general_assign"]


class KafkaWouldThrow(Exception):
    """Kafka's assignor throws a NullPointerException on this request (quirk 1)."""

    def __init__(self, claimant: int, pid: int) -> None:
        super().__init__(claimant, pid)
        self.claimant = claimant
        self.pid = pid


@dataclass
class GeneralResult:
    owner: list[int]
    hash_sets_treeified: bool
    looping: list[tuple[int, int, int]]
    """Where Kafka never returns (quirk 4): the moves (pid, from, to) of a repeating pass."""


class _Movements:
    """Kafka's ``PartitionMovements``: where each moved partition came from and went."""

    def __init__(self, group: StickyGroup) -> None:
        self._group = group
        self.records: dict[int, tuple[int, int]] = {}
        self.by_topic: dict[int, dict[tuple[int, int], HashSetOrder[int]]] = {}
        self.treeified = False

    def actual_partition(self, pid: int, topic: int, old: int, new: int) -> int:
        pairs = self.by_topic.get(topic)
        if pairs is None:
            return pid
        record = self.records.get(pid)
        if record is not None:
            old = record[0]
        reverse = pairs.get((new, old))
        return pid if reverse is None else reverse.first()

    def move(self, pid: int, topic: int, old: int, new: int) -> None:
        record = self.records.pop(pid, None)
        if record is None:
            self._add(pid, topic, (old, new))
            return
        pairs = self.by_topic[topic]
        moved = pairs[record]
        moved.remove(pid)
        if not moved:
            del pairs[record]
            if not pairs:
                del self.by_topic[topic]
        if record[0] != new:
            self._add(pid, topic, (record[0], new))

    def state(self) -> tuple[tuple[int, tuple[int, int], tuple[int, tuple[int, ...]]], ...]:
        """Every movement record with its set's ``HashSet`` order."""
        return tuple(
            sorted(
                (topic, pair, moved.signature())
                for topic, pairs in self.by_topic.items()
                for pair, moved in pairs.items()
            )
        )

    def signature(self) -> bytes:
        """``state`` as bytes."""
        return repr(list(self.state())).encode()

    def _add(self, pid: int, topic: int, pair: tuple[int, int]) -> None:
        self.records[pid] = pair
        pairs = self.by_topic.get(topic)
        if pairs is None:
            pairs = self.by_topic[topic] = {}
        moved = pairs.get(pair)
        if moved is None:  # (a ``setdefault`` made a set for every move, mostly unused)
            moved = pairs[pair] = HashSetOrder()
        moved.add(pid, self._group.partition_hash(topic, pid))
        self.treeified = self.treeified or moved.treeified


class _Lightest:
    """Per topic, the subscriber first in (load, member id) order."""

    def __init__(self, load: list[int], rank: list[int], subscribers: list[list[int]]) -> None:
        self._load = load
        self._rank = rank
        self.heaps = [[(load[m], rank[m], m) for m in subs] for subs in subscribers]
        for heap in self.heaps:
            heapq.heapify(heap)

    def top(self, topic: int) -> tuple[int, int, int]:
        heap = self.heaps[topic]
        load = self._load
        while True:
            entry = heap[0]
            current = load[entry[2]]
            if entry[0] == current:
                return entry
            if entry[0] < current:
                heapq.heapreplace(heap, (current, entry[1], entry[2]))
            else:
                heapq.heappop(heap)

    def lowered(self, member: int, topics: list[int]) -> None:
        entry = (self._load[member], self._rank[member], member)
        for t in topics:
            heapq.heappush(self.heaps[t], entry)


class _Balance:
    """Kafka's ``isBalanced`` over the members taking part in reassignment."""

    def __init__(
        self,
        load: list[int],
        owner: list[int],
        members: list[int],
        member_topics: list[list[int]],
        max_load: list[int],
        topic_of: list[int],
        topics: list[int],
    ) -> None:
        self._load = load
        self._max_load = max_load
        self._member_topics = member_topics
        self._topics = topics
        size = max(topic_of, default=0) + 1
        # owned[t][m]: how many partitions of topic t member m owns (counted in C)
        self.owned: list[dict[int, int]] = [{} for _ in range(size)]
        self.owned_topics: list[dict[int, int]] = [{} for _ in load]
        for (t, m), count in Counter(zip(topic_of, owner, strict=True)).items():
            if m >= 0:
                self.owned[t][m] = count
                self.owned_topics[m][t] = count
        self._heaviest: list[list[tuple[int, int]]] = [
            [(-load[m], m) for m in per_topic] for per_topic in self.owned
        ]
        self._ready: list[list[tuple[int, int]]] = [[] for _ in range(size)]
        for m in members:
            if load[m] != max_load[m]:
                for t in member_topics[m]:
                    self._ready[t].append((load[m], m))
        for heap in self._heaviest + self._ready:
            heapq.heapify(heap)
        self._hist: dict[int, int] = dict(Counter(map(load.__getitem__, members)))
        self._min = min(self._hist, default=0)
        self._max = max(self._hist, default=0)
        self._witness = -1

    def _heaviest_load(self, topic: int) -> int:
        heap = self._heaviest[topic]
        owned = self.owned[topic]
        load = self._load
        while heap:
            negative, m = heap[0]
            current = load[m]
            if m not in owned:
                heapq.heappop(heap)
            elif -negative == current:
                return current
            elif -negative > current:
                heapq.heapreplace(heap, (-current, m))
            else:
                heapq.heappop(heap)
        return -1

    def _lightest_ready(self, topic: int) -> int:
        heap = self._ready[topic]
        load = self._load
        max_load = self._max_load
        while heap:
            seen, m = heap[0]
            current = load[m]
            if current == max_load[m] or seen > current:
                heapq.heappop(heap)
            elif seen == current:
                return current
            else:
                heapq.heapreplace(heap, (current, m))
        return -1

    def _violated(self, topic: int) -> bool:
        lightest = self._lightest_ready(topic)
        return lightest >= 0 and self._heaviest_load(topic) >= lightest + 2

    def balanced(self) -> bool:
        if self._min >= self._max - 1:
            return True
        if self._witness >= 0 and self._violated(self._witness):
            return False
        for t in self._topics:
            if self._violated(t):
                self._witness = t
                return False
        return True

    def moved(self, topic: int, old: int, new: int, new_was: int) -> None:
        """One partition of ``topic`` went from ``old`` to ``new`` (loads already updated)."""
        load = self._load
        hist = self._hist
        for before, after in ((load[old] + 1, load[old]), (new_was, load[new])):
            hist[before] -= 1
            if not hist[before]:
                del hist[before]
            hist[after] = hist.get(after, 0) + 1
        self._min = min(hist)
        self._max = max(hist)
        per_topic = self.owned[topic]
        left = per_topic[old] - 1
        if left:
            per_topic[old] = left
            self.owned_topics[old][topic] = left
        else:
            del per_topic[old]
            del self.owned_topics[old][topic]
        per_topic[new] = per_topic.get(new, 0) + 1
        owned_by_new = self.owned_topics[new]
        owned_by_new[topic] = owned_by_new.get(topic, 0) + 1
        heavier = (-load[new], new)
        for t in owned_by_new:
            heapq.heappush(self._heaviest[t], heavier)
        # the lazy heaps only need an entry where a load fell, or rose from the maximum
        if load[old] != self._max_load[old]:
            lighter = (load[old], old)
            for t in self._member_topics[old]:
                heapq.heappush(self._ready[t], lighter)
        if new_was == self._max_load[new]:
            ready = (load[new], new)
            for t in self._member_topics[new]:
                heapq.heappush(self._ready[t], ready)


class _Looping(Exception):
    """Kafka's balancing loop would run forever from here (quirk 4)."""

    def __init__(self, moves: list[tuple[int, int, int]]) -> None:
        super().__init__(moves)
        self.moves = moves


class _Passes:
    """The states the passes of one balancing loop ended in (digests of them)."""

    def __init__(self) -> None:
        self._seen: set[object] = set()

    def ended(self, owner: list[int], movements: _Movements) -> bool:
        """Record a pass's end; whether an earlier pass ended in the same state."""
        key: object
        if len(owner) <= SMALL_GROUP:
            # The state itself: a few dozen numbers, cheaper to keep than to digest (a
            # tuple of ints equals another exactly when their reprs do).
            key = (tuple(owner), movements.state())
        else:
            digest = hashlib.blake2b(array("q", owner).tobytes(), digest_size=32)
            digest.update(movements.signature())
            key = digest.digest()
        if key in self._seen:
            return True
        self._seen.add(key)
        return False


def _balance_score(loads: list[int]) -> int:
    ordered = sorted(loads)
    n = len(ordered)
    return sum(c * (2 * i - n + 1) for i, c in enumerate(ordered))


def general_assign(group: StickyGroup, *, kafka_claims: bool = True) -> GeneralResult:
    """Kafka's general path. ``kafka_claims=False`` drops older-generation claims by
    members not subscribed to the claimed partition's topic (quirks 1 and 2)."""
    n = len(group.member_ids)
    total = group.total
    rank = group.name_rank
    racks = group.racks
    member_topics = group.member_topics
    counts = group.partition_counts
    topic_of = group.pid_topic
    subscribed = [set(ts) for ts in member_topics]
    topic_subs: list[list[int]] = [[] for _ in group.topics]
    for m, ts in enumerate(member_topics):
        for t in ts:
            topic_subs[t].append(m)

    owner = [-1] * total
    load = [0] * n
    revocation_required = False
    rack_aware = racks.enabled
    for pid, m in zip(group.claims.pid, group.claims.member, strict=True):
        if topic_of[pid] not in subscribed[m] or (rack_aware and racks.mismatch(m, pid)):
            revocation_required = True
        else:
            owner[pid] = m
            load[m] += 1

    # By subscriber count, then topic (a stable sort of the topics in order).
    topic_order = sorted(range(len(group.topics)), key=list(map(len, topic_subs)).__getitem__)
    offsets = group.offsets
    sorted_all = list(
        chain.from_iterable(range(offsets[t], offsets[t] + counts[t]) for t in topic_order)
    )
    unassigned = [pid for pid in sorted_all if owner[pid] < 0]
    initializing = max(load, default=0) == 0

    def give(pid: int, m: int) -> None:
        owner[pid] = m
        load[m] += 1

    remaining = unassigned
    if racks.enabled:
        remaining = _assign_rack_matched(group, unassigned, topic_of, topic_subs, load, give)
    if remaining:
        lightest = _Lightest(load, rank, topic_subs)
        for pid in remaining:
            give(pid, lightest.top(topic_of[pid])[2])

    movable_topic = [len(subs) >= 2 for subs in topic_subs]
    max_load = [sum(map(counts.__getitem__, ts)) for ts in member_topics]
    owns_movable = set(
        chain.from_iterable(
            owner[offsets[t] : offsets[t] + counts[t]]
            for t in range(len(counts))
            if movable_topic[t]
        )
    )
    taking_part = [load[m] < max_load[m] or m in owns_movable for m in range(n)]
    participants = [m for m in range(n) if taking_part[m]]
    participant_loads = [load[m] for m in participants]
    if not participants or max(participant_loads) <= min(participant_loads) + 1:
        # Balanced already (``isBalanced``'s first test): Kafka's balancing loop stops
        # before its first partition, so nothing below would move or throw.
        return GeneralResult(owner, False, [])
    sorted_all = [pid for pid in sorted_all if movable_topic[topic_of[pid]]]
    unassigned = [pid for pid in unassigned if movable_topic[topic_of[pid]]]
    movable_topics_of = [[t for t in ts if movable_topic[t]] for ts in member_topics]

    previous: dict[int, int] = {}
    previous_generation: dict[int, int] = {}
    generation, latest = group.generation, group.max_generation
    for pid, m in zip(group.owned.pid, group.owned.member, strict=True):  # by member
        gen = generation[m]
        if gen >= latest or (not kafka_claims and topic_of[pid] not in subscribed[m]):
            continue
        if pid not in previous or gen > previous_generation[pid]:
            previous[pid] = m
            previous_generation[pid] = gen

    before_owner = list(owner)
    before_score = _balance_score(participant_loads)
    movements = _Movements(group)
    lightest = _Lightest(load, rank, topic_subs)
    balance = _Balance(
        load,
        owner,
        participants,
        movable_topics_of,
        max_load,
        topic_of,
        [t for t in range(len(group.topics)) if movable_topic[t]],
    )

    moves: list[tuple[int, int, int]] = []

    def process_move(pid: int, new: int) -> None:
        old = owner[pid]
        moves.append((pid, old, new))
        topic = topic_of[pid]
        movements.move(pid, topic, old, new)
        owner[pid] = new
        load[old] -= 1
        new_was = load[new]
        load[new] += 1
        lightest.lowered(old, movable_topics_of[old])
        balance.moved(topic, old, new, new_was)

    def reassign(pid: int, new: int) -> None:
        moved = movements.actual_partition(pid, topic_of[pid], owner[pid], new)
        process_move(moved, new)

    def perform(partitions: list[int]) -> bool:
        performed = False
        modified = True
        passes = _Passes()
        while modified:
            modified = False
            moves.clear()
            for pid in partitions:
                if balance.balanced():
                    break
                current = owner[pid]
                claimant = previous.get(pid)
                if claimant is not None:
                    if not taking_part[claimant]:
                        raise KafkaWouldThrow(claimant, pid)
                    if load[current] > load[claimant] + 1:
                        reassign(pid, claimant)
                        performed = modified = True
                        continue
                entry = lightest.top(topic_of[pid])
                if entry[0] < load[current] - 1:
                    reassign(pid, entry[2])
                    performed = modified = True
            if modified and passes.ended(owner, movements):
                raise _Looping(list(moves))
        return performed

    looping: list[tuple[int, int, int]] = []
    try:
        if not revocation_required:
            perform(unassigned)
        performed = perform(sorted_all)
    except _Looping as loop:
        # Kafka never gets past this; kstore finishes from where the loop repeats.
        looping = loop.moves
        performed = True
    if (
        not initializing
        and performed
        and _balance_score([load[m] for m in participants]) >= before_score
    ):
        owner = before_owner
    return GeneralResult(owner, movements.treeified, looping)


def _assign_rack_matched(
    group: StickyGroup,
    unassigned: list[int],
    topic_of: list[int],
    topic_subs: list[list[int]],
    load: list[int],
    give: Callable[[int, int], None],
) -> list[int]:
    """First pass of Kafka's ``maybeAssign``: each partition to the least-loaded subscriber
    on one of its racks or without a rack; returns the partitions nobody could take."""
    racks = group.racks
    rank = group.name_rank
    by_rack: list[dict[int, list[tuple[int, int, int]]]] = []
    for subs in topic_subs:
        heaps: dict[int, list[tuple[int, int, int]]] = {}
        for m in subs:
            heaps.setdefault(racks.member_rack[m], []).append((load[m], rank[m], m))
        for heap in heaps.values():
            heapq.heapify(heap)
        by_rack.append(heaps)

    def top(heap: list[tuple[int, int, int]]) -> tuple[int, int, int]:
        while True:
            entry = heap[0]
            if entry[0] == load[entry[2]]:
                return entry
            heapq.heapreplace(heap, (load[entry[2]], entry[1], entry[2]))

    left: list[int] = []
    for pid in unassigned:
        heaps = by_rack[topic_of[pid]]
        best: tuple[int, int, int] | None = None
        for rack in (NO_RACK, *racks.rack_sets[racks.partition_rack_set[pid]]):
            candidates = heaps.get(rack)
            if candidates:
                entry = top(candidates)
                if best is None or entry < best:
                    best = entry
        if best is None:
            left.append(pid)
        else:
            give(pid, best[2])
    return left
