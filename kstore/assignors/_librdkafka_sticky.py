"""``librdkafka:sticky`` and ``librdkafka:cooperative-sticky``: librdkafka 2.16's sticky
assignor (``rdkafka_sticky_assignor.c``) and the cooperative step of its group
coordinator (``rd_kafka_cooperative_protocol_adjust_assignment``).

librdkafka registers its one sticky assignor as ``cooperative-sticky``; ``librdkafka:sticky``
is what that assignor computes before the cooperative step (the target of the round).
The algorithm is a port of an older Java ``AbstractStickyAssignor`` (its general path
only) with librdkafka's own data structures: its hash maps iterate newest entry first,
its partition lists keep insertion order, and a few steps differ from Java's. Those
steps are reproduced as librdkafka runs them (docs/assignors/librdkafka.md lists them).
Where librdkafka aborts or crashes, kstore answers with Kafka's Java assignor of the
same name and a warning.
"""

from __future__ import annotations

from bisect import insort
from itertools import pairwise

from kstore.assignors._contract import (
    AssignmentRequest,
    AssignmentResult,
    TopicPartition,
    sorted_assignment,
)
from kstore.assignors._librdkafka_common import (
    c_key,
    eligible_topics,
    merge_sort,
    partition_racks,
    tp_key,
    use_rack_aware,
)

__all__ = ["LIBRDKAFKA_COOPERATIVE_STICKY", "LIBRDKAFKA_STICKY"]

_Pair = tuple[str, str]
"""A ``ConsumerPair`` as its map compares it: (source or "", destination or "")."""


class _Abort(Exception):
    """Where librdkafka's assignor aborts (an assertion) or crashes (a NULL dereference)."""


def _int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _by_generation(a: tuple[str, int], b: tuple[str, int]) -> int:
    """``ConsumerGenerationPair_cmp_generation``: a C ``int`` subtraction."""
    return _int32(a[1] - b[1])


def _remove(items: list[TopicPartition], tp: TopicPartition) -> bool:
    """``rd_kafka_topic_partition_list_del``: the first ``tp`` out, order kept."""
    try:
        items.remove(tp)
    except ValueError:
        return False
    return True


class _Movements:
    """``PartitionMovements_t``. Unlike Java, a partition that moves back to where it
    came from keeps its old record in ``moves`` (only the per-topic index drops it)."""

    def __init__(self) -> None:
        self.moves: dict[TopicPartition, tuple[str | None, str | None]] = {}
        self.by_topic: dict[str, dict[_Pair, list[TopicPartition]]] = {}

    @staticmethod
    def _key(src: str | None, dst: str | None) -> _Pair:
        return src or "", dst or ""

    def _remove_record(self, tp: TopicPartition) -> tuple[str | None, str | None]:
        pair = self.moves[tp]
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            raise _Abort("a partition's movement record has no topic entry (NULL dereference)")
        found = pairs.get(self._key(*pair))
        if found is None:
            raise _Abort("assertion plist failed (PartitionMovements_removeMovementRecord)")
        _remove(found, tp)
        if not found:
            del pairs[self._key(*pair)]
        if not pairs:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str | None, str | None]) -> None:
        self.moves[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(self._key(*pair), []).append(tp)

    def move(self, at: _Ref, old: str | None, new: str) -> None:
        tp = at.get()
        if tp in self.moves:
            src, dst = self._remove_record(tp)
            if dst != old:
                raise _Abort(
                    "assertion !rd_strcmp(existing_cpair->dst, old_consumer) failed "
                    "(PartitionMovements_movePartition)"
                )
            if src != new:
                self._add_record(at.get(), (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition(self, tp: TopicPartition, old: str | None, new: str) -> _Ref:
        pairs = self.by_topic.get(tp[0])
        if pairs is None:
            return _Ref(tp)
        pair = self.moves.get(tp)
        if pair is not None and pair[1] != old:
            raise _Abort(
                "assertion !rd_strcmp(oldConsumer, cpair->dst) failed "
                "(PartitionMovements_getTheActualPartitionToBeMoved)"
            )
        # librdkafka builds the reverse pair from the consumer the partition is with now,
        # not from where it first came from (Java's choice).
        found = pairs.get(self._key(new, old))
        return _Ref(tp) if not found else _Ref(found[0], found)


class _Ref:
    """The partition librdkafka moves, held as it holds it: a pointer. One into a
    movement list (``&plist->elems[0]``) sees that list shift when the partition's own
    record is taken out of it, so the partition after it is moved instead; once the
    list is freed (emptied) the pointer dangles and librdkafka crashes."""

    __slots__ = ("_in", "_tp")

    def __init__(self, tp: TopicPartition, within: list[TopicPartition] | None = None) -> None:
        self._tp = tp
        self._in = within

    def get(self) -> TopicPartition:
        if self._in is None:
            return self._tp
        if not self._in:
            raise _Abort("SIGSEGV: a moved partition read from a freed movement list")
        return self._in[0]


class _Run:
    """One run of ``rd_kafka_sticky_assignor_assign_cb``."""

    def __init__(self, request: AssignmentRequest) -> None:
        self.request = request
        members = request.members
        self.topics = eligible_topics(request)
        racks = {topic: partition_racks(request, topic) for topic in self.topics}
        self.rack_of: dict[str, str | None] | None = None
        self.racks_of: dict[TopicPartition, frozenset[str]] = {}
        if use_rack_aware(
            (members[m].rack for subs in self.topics.values() for m in subs), racks.values()
        ):
            self.rack_of = {m: members[m].rack for subs in self.topics.values() for m in subs}
            self.racks_of = {
                (topic, p): r for topic, per in racks.items() for p, r in enumerate(per)
            }
        self.subscriptions = {m: set(sub.topics) for m, sub in members.items()}
        self.current: dict[str, list[TopicPartition]] = {}
        self.potential: dict[str, list[TopicPartition]] = {}
        # A member may take a partition iff it subscribes to its (existing) topic.
        self.eligible: dict[str, set[str]] = {m: set() for m in members}
        self.keys = {m: c_key(m) for m in members}
        self.consumers_of: dict[TopicPartition, list[str]] = {}
        self.owner: dict[TopicPartition, str] = {}
        self.previous: dict[TopicPartition, str] = {}
        self.movements = _Movements()
        self.sorted: list[str] = []

    # -- helpers ---------------------------------------------------------------------

    def _key(self, member: str) -> tuple[int, bytes]:
        """``sort_by_map_elem_val_toppar_list_cnt``: partition count, then member id."""
        return len(self.current[member]), self.keys[member]

    def _resort(self, *changed: str) -> None:
        # The order is total, so re-placing the members whose count changed is the sort.
        for member in changed:
            self.sorted.remove(member)
        for member in changed:
            insort(self.sorted, member, key=self._key)

    def _mismatch(self, consumer: str, tp: TopicPartition) -> bool:
        if self.rack_of is None:
            return False
        rack = self.rack_of.get(consumer)
        return rack is not None and rack not in self.racks_of.get(tp, frozenset())

    def _holding(self, consumer: str | None) -> list[TopicPartition]:
        found = self.current.get(consumer) if consumer is not None else None
        if found is None:
            raise _Abort("a consumer outside the current assignment (NULL dereference)")
        return found

    # -- the steps of assign_cb --------------------------------------------------------

    def prepopulate(self) -> None:
        claims: dict[TopicPartition, list[tuple[str, int]]] = {}
        for member, sub in self.request.members.items():
            self.current[member] = []
            self.potential[member] = []
            generation = -1 if sub.generation is None else sub.generation
            for tp in sub.owned:
                claims.setdefault(tp, []).append((member, generation))
                self.owner[tp] = member
        for tp in reversed(claims):
            ordered = merge_sort(claims[tp], _by_generation)
            if any(_by_generation(a, b) == 0 for a, b in pairwise(ordered)):
                # Two claims of one generation: the partition is nobody's.
                self.owner.pop(tp, None)
                continue
            self.current[ordered[-1][0]].append(tp)
            if len(ordered) >= 2:
                self.previous[tp] = ordered[-2][0]

    def populate_potential(self) -> None:
        for topic, subscribers in self.topics.items():
            partitions = [(topic, p) for p in range(self.request.topics[topic])]
            for member in subscribers:
                self.potential[member].extend(partitions)
                self.eligible[member].add(topic)
            # Every partition of a topic has the topic's subscribers (a shared list: read only).
            self.consumers_of.update(dict.fromkeys(partitions, subscribers))

    def _identical(self) -> bool:
        lists = [self.consumers_of[tp] for tp in reversed(self.consumers_of)]
        if any(a != b for a, b in pairwise(lists)):
            return False
        sets = [self.eligible[m] for m in reversed(self.potential)]
        return all(a == b for a, b in pairwise(sets))

    def sort_partitions(self) -> list[TopicPartition]:
        consumers_of = self.consumers_of
        if not self._identical():
            return sorted(consumers_of, key=lambda tp: (len(consumers_of[tp]), *tp_key(tp)))
        held: dict[str, list[TopicPartition]] = {}
        for consumer in reversed(self.current):
            partitions = self.current[consumer]
            partitions.sort(key=tp_key)  # librdkafka sorts the current lists in place
            valid = [tp for tp in partitions if tp in consumers_of]
            if valid:
                held[consumer] = valid
        keys = self.keys

        def key(member: str) -> tuple[int, bytes]:
            return len(held[member]), keys[member]

        order = sorted(held, key=key)
        result: list[TopicPartition] = []
        while order:
            remaining = held[order[-1]]
            moved_before = [tp for tp in remaining if tp in self.previous]
            if moved_before:
                _remove(remaining, moved_before[0])
                result.append(moved_before[0])
            elif remaining:
                result.append(remaining.pop(0))
            else:
                order.pop()
                continue
            insort(order, order.pop(), key=key)
        was_empty = not result
        listed = set(result)
        for tp in reversed(consumers_of):
            if tp not in listed:
                result.append(tp)
        if was_empty:
            result.sort(key=tp_key)
        return result

    def _maybe_assign(self, partitions: list[TopicPartition], *, racks: bool) -> None:
        i = 0
        while i < len(partitions):
            tp = partitions[i]
            assigned = False
            for consumer in self.sorted:
                if tp[0] not in self.eligible[consumer]:
                    continue
                if racks and self._mismatch(consumer, tp):
                    continue
                self.current[consumer].append(tp)
                self.owner[tp] = consumer
                self._resort(consumer)
                assigned = True
                break
            if assigned and racks:
                del partitions[i]
            else:
                i += 1

    def _can_participate(self, consumer: str) -> bool:
        current = self.current[consumer]
        if len(current) < len(self.potential[consumer]):
            return True
        return any(len(self.consumers_of.get(tp, ())) >= 2 for tp in current)

    def _balanced(self) -> bool:
        current = self.current
        if len(current[self.sorted[0]]) >= len(current[self.sorted[-1]]) - 1:
            return True
        holder: dict[TopicPartition, str] = {}
        for consumer in reversed(current):
            for tp in current[consumer]:
                holder[tp] = consumer
        for consumer in self.sorted:
            mine = current[consumer]
            potential = self.potential[consumer]
            if len(mine) == len(potential):
                continue
            for tp in potential:
                if tp in mine:
                    continue
                other = holder.get(tp)
                if len(mine) < len(self._holding(other)):
                    return False
        return True

    def _process_move(self, at: _Ref, new: str) -> None:
        old = self.owner.get(at.get())
        self.movements.move(at, old, new)
        tp = at.get()
        self.current[new].append(tp)
        _remove(self._holding(old), tp)
        self.owner[tp] = new
        assert old is not None  # _holding aborts otherwise
        self._resort(*{new: None, old: None})

    def _reassign_to(self, tp: TopicPartition, new: str) -> None:
        self._process_move(self.movements.actual_partition(tp, self.owner.get(tp), new), new)

    def _reassign(self, tp: TopicPartition) -> None:
        for consumer in self.sorted:
            if tp[0] in self.eligible[consumer]:
                self._reassign_to(tp, consumer)
                return
        raise _Abort("assertion reassignPartition(): no new consumer found")

    def _perform(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            i = 0
            while i < len(partitions) and not self._balanced():
                tp = partitions[i]
                i += 1
                consumer = self.owner.get(tp)
                if consumer is None:
                    raise _Abort("assertion consumer failed (performReassignments)")
                mine = self._holding(consumer)
                previous = self.previous.get(tp)
                if previous is not None and len(mine) > len(self._holding(previous)) + 1:
                    self._reassign_to(tp, previous)
                    performed = modified = True
                    continue
                consumers = self.consumers_of[tp]
                rack = self.rack_of.get(consumer) if self.rack_of is not None else None
                racks = self.racks_of.get(tp, frozenset())
                if rack is not None and rack in racks:
                    assert self.rack_of is not None
                    rack_of = self.rack_of
                    if any(
                        rack_of.get(other) in racks and len(mine) > len(self._holding(other)) + 1
                        for other in consumers
                    ):
                        self._reassign(tp)
                        performed = modified = True
                        continue
                if any(
                    other != consumer and len(mine) > len(self._holding(other)) + 1
                    for other in consumers
                ):
                    self._reassign(tp)
                    performed = modified = True
        return performed

    def balance(
        self,
        sorted_partitions: list[TopicPartition],
        unassigned: list[TopicPartition],
        revoke: bool,
    ) -> None:
        current = self.current
        initializing = len(current[self.sorted[-1]]) == 0
        leftover = unassigned
        if self.rack_of is not None and self.rack_of:
            leftover = list(unassigned)
            self._maybe_assign(leftover, racks=True)
        self._maybe_assign(leftover, racks=False)

        for tp in reversed(self.consumers_of):
            if len(self.consumers_of[tp]) < 2:
                _remove(sorted_partitions, tp)
                _remove(unassigned, tp)
        fixed: dict[str, list[TopicPartition]] = {}
        for consumer in list(self.sorted):
            if not self._can_participate(consumer):
                self.sorted.remove(consumer)
                fixed[consumer] = current.pop(consumer)

        before = {m: list(tps) for m, tps in current.items()}
        owners_before = dict(self.owner)
        if not revoke and unassigned:
            self._perform(unassigned)
        performed = self._perform(sorted_partitions)
        if not initializing and performed and _score(current) >= _score(before):
            for m, tps in before.items():
                current[m] = tps
            self.owner = owners_before
        current.update(fixed)

    def run(self) -> dict[str, list[TopicPartition]]:
        self.prepopulate()
        self.populate_potential()
        sorted_partitions = self.sort_partitions()
        unassigned = list(sorted_partitions)
        revoke = False
        for consumer in reversed(self.current):
            partitions = self.current[consumer]
            i = 0
            while i < len(partitions):
                tp = partitions[i]
                if tp not in self.consumers_of:
                    self.owner.pop(tp, None)
                    del partitions[i]
                elif tp[0] not in self.subscriptions[consumer] or self._mismatch(consumer, tp):
                    revoke = True
                    del partitions[i]
                else:
                    _remove(unassigned, tp)
                    i += 1
        self.sorted = sorted(self.current, key=self._key)
        self.balance(sorted_partitions, unassigned, revoke)
        return self.current


def _score(assignment: dict[str, list[TopicPartition]]) -> int:
    sizes = [len(tps) for tps in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])


def _same_member(request: AssignmentRequest, a: str, b: str) -> bool:
    """``rd_kafka_group_member_cmp(a, b) == 0``."""
    ia, ib = request.members[a].instance_id, request.members[b].instance_id
    if ia is not None and ib is not None:
        return ia == ib
    return a == b


def _cooperative(
    request: AssignmentRequest, target: dict[str, list[TopicPartition]]
) -> dict[str, list[TopicPartition]]:
    """``rd_kafka_cooperative_protocol_adjust_assignment``: a partition whose owner changes
    is withheld; one owned but not assigned (gone, or its owner unsubscribed) goes back
    to its owner. Where several members claim a partition, the last one in request
    order is its owner."""
    assigned: dict[TopicPartition, str] = {}
    for member in request.members:
        for tp in target[member]:
            assigned[tp] = member
    owned: dict[TopicPartition, str] = {}
    for member, sub in request.members.items():
        for tp in sub.owned:
            owned[tp] = member
    result: dict[str, list[TopicPartition]] = {m: [] for m in request.members}
    for tp, member in assigned.items():
        owner = owned.get(tp)
        if owner is None:
            result[member].append(tp)
        elif _same_member(request, member, owner):
            result[owner].append(tp)
    for tp, owner in owned.items():
        if tp not in assigned:
            result[owner].append(tp)
    return result


class LibrdkafkaSticky:
    """``librdkafka:sticky`` (the target) or ``librdkafka:cooperative-sticky``."""

    # Owned partitions are read as given: librdkafka hands back owned partitions of
    # deleted topics, so normalise must not drop them (see raw_owned).
    reads_owned = True
    raw_owned = True

    def __init__(self, name: str, *, cooperative: bool) -> None:
        self.name = name
        self.cooperative = cooperative

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        members = request.members
        if not members:
            return AssignmentResult(assignment={})
        try:
            target = _Run(request).run()
        except _Abort as abort:
            return self._java_instead(request, str(abort))
        result = _cooperative(request, target) if self.cooperative else target
        return AssignmentResult(assignment=sorted_assignment(members, result))

    def _java_instead(self, request: AssignmentRequest, why: str) -> AssignmentResult:
        from kstore.assignors import assign

        base = self.name.split(":", 1)[1]
        java = assign(request.model_copy(update={"strategy": base}))
        warning = (
            f"{self.name}: librdkafka 2.16 aborts on this request ({why}); "
            f"answered with Kafka's Java {base} assignor"
        )
        return AssignmentResult(assignment=java.assignment, warnings=[warning, *java.warnings])


LIBRDKAFKA_STICKY = LibrdkafkaSticky("librdkafka:sticky", cooperative=False)
LIBRDKAFKA_COOPERATIVE_STICKY = LibrdkafkaSticky("librdkafka:cooperative-sticky", cooperative=True)
