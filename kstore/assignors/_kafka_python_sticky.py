"""``kafka-python:sticky``: the sticky assignor of kafka-python 3.0.12
(``kafka/coordinator/assignors/sticky/``), for groups whose kafka-python leader ran it.

It follows an older Java sticky algorithm (before KAFKA-9987's fast path), with
kafka-python's own turns:

- a member's previous partitions and generation come from its user data (here:
  ``owned`` as the member sent it, grouped by topic in order of first appearance, and
  ``generation``, -1 when absent); of several claimants the highest generation keeps a
  partition, the next one is its "previous" owner; a claimant with the same generation
  as one already seen is ignored unless that generation is 0;
- members are ranked by (partition count, member id); partitions by (number of
  potential members, topic, partition);
- members that cannot take part in the reassignment are taken out of the working
  assignment; looking them up again puts them back with nothing, which counts in the
  balance score, and moving a partition to one of them fails (``KeyError``).

Where kafka-python raises, kstore answers with Kafka's Java sticky assignor and a
warning. Where kafka-python picks from a Python set (a previously moved partition to
move back, a partition that had another owner before), the choice depends on the string
hash seed; kstore takes the lowest partition. Racks and instance ids are not read.
"""

from __future__ import annotations

from collections import defaultdict
from copy import deepcopy

from kstore.assignors._contract import (
    AssignmentRequest,
    AssignmentResult,
    TopicPartition,
    sorted_assignment,
)
from kstore.assignors._kafka_python import java_instead

__all__ = ["KAFKA_PYTHON_STICKY"]

_NO_GENERATION = -1
_Pair = tuple[str, str]
"""A move: (from member, to member)."""


class _Raises(Exception):
    """Where kafka-python 3.0.12 raises; the argument names its exception."""


class _Ranked:
    """The members ranked by (partition count, member id), each with the partitions it
    had when ranked; kafka-python keeps (member, partitions) pairs in a set and removing
    a pair that is not there raises."""

    def __init__(self, assignment: dict[str, list[TopicPartition]]) -> None:
        self.held = {member: tuple(parts) for member, parts in assignment.items()}

    def drop(self, member: str, parts: list[TopicPartition]) -> None:
        if self.held.get(member) != tuple(parts):
            raise _Raises("KeyError")
        del self.held[member]

    def put(self, member: str, parts: list[TopicPartition]) -> None:
        self.held[member] = tuple(parts)

    def ascending(self) -> list[str]:
        return sorted(self.held, key=lambda m: (len(self.held[m]), m))

    def least(self) -> str:
        return min(self._keys())[1]

    def most(self) -> str:
        return max(self._keys())[1]

    def _keys(self) -> list[tuple[int, str]]:
        if not self.held:
            raise _Raises("TypeError")
        return [(len(parts), member) for member, parts in self.held.items()]


class _Movements:
    """Partition moves so far, to move a partition back rather than another one away."""

    def __init__(self) -> None:
        self.of: dict[TopicPartition, _Pair] = {}
        self.by_topic: dict[str, dict[_Pair, set[TopicPartition]]] = {}

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        earlier = self.of.get(tp)
        if earlier is None:
            self._record(tp, (old, new))
            return
        self._forget(tp, earlier)
        if earlier[1] != old:
            raise _Raises("ValueError")
        if earlier[0] != new:
            self._record(tp, (earlier[0], new))

    def to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        moves = self.by_topic.get(tp[0])
        if moves is None:
            return tp
        earlier = self.of.get(tp)
        if earlier is not None:
            if earlier[1] != old:
                raise _Raises("ValueError")
            old = earlier[0]
        back = moves.get((new, old))
        return min(back) if back else tp

    def _record(self, tp: TopicPartition, pair: _Pair) -> None:
        self.of[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(pair, set()).add(tp)

    def _forget(self, tp: TopicPartition, pair: _Pair) -> None:
        del self.of[tp]
        moves = self.by_topic[tp[0]]
        moves[pair].discard(tp)
        if not moves[pair]:
            del moves[pair]
        if not moves:
            del self.by_topic[tp[0]]


def _by_topic(owned: list[TopicPartition]) -> list[TopicPartition]:
    """``owned`` as kafka-python's user data carries it: grouped by topic, topics in
    order of first appearance."""
    topics: dict[str, list[TopicPartition]] = {}
    for tp in owned:
        topics.setdefault(tp[0], []).append(tp)
    return [tp for parts in topics.values() for tp in parts]


def _balance_score(assignment: dict[str, list[TopicPartition]]) -> int:
    counts = [len(parts) for parts in assignment.values()]
    return sum(abs(a - b) for i, a in enumerate(counts) for b in counts[i + 1 :])


class _Run:
    """One assignment, in kafka-python's steps."""

    def __init__(self, request: AssignmentRequest) -> None:
        self.members = request.members
        # ``current`` is looked up with defaults, as kafka-python's defaultdict is.
        self.current: defaultdict[str, list[TopicPartition]] = defaultdict(list)
        self.owner: dict[TopicPartition, str] = {}
        self.previous: dict[TopicPartition, str] = {}
        self.potential_members: dict[TopicPartition, list[str]] = {
            (t, p): [] for t, n in request.topics.items() for p in range(n)
        }
        self.potential: dict[str, list[TopicPartition]] = {}
        self.revocation_required = False
        self.movements = _Movements()
        self._read_previous()
        for member, sub in self.members.items():
            parts = [(t, p) for t in sub.topics for p in range(request.topics.get(t, 0))]
            self.potential[member] = parts
            for tp in parts:
                self.potential_members[tp].append(member)
            if member not in self.current:
                self.current[member] = []
        self.order = self._sorted_partitions()
        self.unassigned = self._to_reassign()
        self.ranked = _Ranked(self.current)

    def _read_previous(self) -> None:
        claims: dict[TopicPartition, dict[int, str]] = {}
        for member, sub in self.members.items():
            generation = _NO_GENERATION if sub.generation is None else sub.generation
            for tp in _by_topic(sub.owned):
                by_generation = claims.setdefault(tp, {})
                if not (generation and generation in by_generation):
                    by_generation[generation] = member
        for tp, by_generation in claims.items():
            latest = sorted(by_generation, reverse=True)
            self.current[by_generation[latest[0]]].append(tp)
            if len(latest) > 1:
                self.previous[tp] = by_generation[latest[1]]
        self.fresh = not self.current
        self.owner = {tp: m for m, parts in self.current.items() for tp in parts}

    def _identical_subscriptions(self) -> bool:
        return all(
            len({tuple(v) for v in lists}) <= 1
            for lists in (self.potential_members.values(), self.potential.values())
        )

    def _sorted_partitions(self) -> list[TopicPartition]:
        by_reach = sorted(
            self.potential_members, key=lambda tp: (len(self.potential_members[tp]), *tp)
        )
        if self.fresh or not self._identical_subscriptions():
            return by_reach
        # Round robin over the current owners, the fullest first, each giving up a
        # partition that had another owner before if it has one.
        left = {
            m: [tp for tp in parts if tp in self.potential_members]
            for m, parts in self.current.items()
        }
        order: list[TopicPartition] = []
        queue = set(left)
        while queue:
            member = max(queue, key=lambda m: (len(left[m]), m))
            parts = left[member]
            moved_before = [tp for tp in parts if tp in self.previous]
            if moved_before:
                tp = min(moved_before)
                parts.remove(tp)
                order.append(tp)
            elif parts:
                order.append(parts.pop())
            else:
                queue.discard(member)
        seen = set(order)
        return order + [tp for tp in by_reach if tp not in seen]

    def _to_reassign(self) -> list[TopicPartition]:
        unassigned = list(self.order)
        for member, parts in self.current.items():
            gone: list[TopicPartition] = []
            for tp in parts:
                if tp not in self.potential_members:
                    gone.append(tp)
                elif tp[0] not in self.members[member].topics:
                    gone.append(tp)
                    self.revocation_required = True
                else:
                    unassigned.remove(tp)
            for tp in gone:
                parts.remove(tp)
                del self.owner[tp]
        return unassigned

    def balance(self) -> None:
        initializing = not self.current[self.ranked.most()]
        for tp in self.unassigned:
            if self.potential_members[tp]:
                self._assign(tp)
        fixed_partitions = {tp for tp, ms in self.potential_members.items() if len(ms) < 2}
        self.order = [tp for tp in self.order if tp not in fixed_partitions]
        self.unassigned = [tp for tp in self.unassigned if tp not in fixed_partitions]
        fixed: dict[str, list[TopicPartition]] = {}
        for member in self.potential:
            if not self._movable(member):
                self.ranked.drop(member, self.current[member])
                fixed[member] = self.current.pop(member)
        before = deepcopy(self.current)
        before_owner = dict(self.owner)
        if not self.revocation_required:
            self._reassign_all(self.unassigned)
        moved = self._reassign_all(self.order)
        if not initializing and moved and _balance_score(self.current) >= _balance_score(before):
            self.current = before
            self.owner = before_owner
        self.current.update(fixed)

    def _assign(self, tp: TopicPartition) -> None:
        for member in self.ranked.ascending():
            if tp in self.potential[member]:
                self.ranked.drop(member, self.current[member])
                self.current[member].append(tp)
                self.owner[tp] = member
                self.ranked.put(member, self.current[member])
                return

    def _movable(self, member: str) -> bool:
        parts = self.current[member]
        if len(parts) < len(self.potential[member]):
            return True
        return any(len(self.potential_members[tp]) >= 2 for tp in parts)

    def _balanced(self) -> bool:
        current = self.current
        if len(current[self.ranked.least()]) >= len(current[self.ranked.most()]) - 1:
            return True
        holder = {tp: m for m, parts in list(current.items()) for tp in parts}
        for member in self.ranked.ascending():
            count = len(current[member])
            if count == len(self.potential[member]):
                continue
            for tp in self.potential[member]:
                if tp not in current[member]:
                    other = holder.get(tp)
                    if other is None:
                        raise _Raises("KeyError")
                    if count < len(current[other]):
                        return False
        return True

    def _reassign_all(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._balanced():
                    break
                owner = self.owner.get(tp)
                size = len(self.current[owner]) if owner is not None else 0
                before = self.previous.get(tp)
                if before is not None and size > len(self.current[before]) + 1:
                    self._reassign_to(tp, before)
                    performed = modified = True
                    continue
                for other in self.potential_members[tp]:
                    if size > len(self.current[other]) + 1:
                        self._reassign(tp)
                        performed = modified = True
                        break
        return performed

    def _reassign(self, tp: TopicPartition) -> None:
        for member in self.ranked.ascending():
            if tp in self.potential[member]:
                self._reassign_to(tp, member)
                return
        raise _Raises("AssertionError")

    def _reassign_to(self, tp: TopicPartition, new: str) -> None:
        owner = self._owner(tp)
        moving = self.movements.to_move(tp, owner, new)
        substitute = self._owner(moving)
        if substitute != owner:
            self._move(tp, substitute)
        self._move(moving, new)

    def _owner(self, tp: TopicPartition) -> str:
        owner = self.owner.get(tp)
        if owner is None:
            raise _Raises("KeyError")
        return owner

    def _move(self, tp: TopicPartition, new: str) -> None:
        old = self._owner(tp)
        self.ranked.drop(old, self.current[old])
        self.ranked.drop(new, self.current[new])
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.owner[tp] = new
        self.ranked.put(new, self.current[new])
        self.ranked.put(old, self.current[old])


class KafkaPythonSticky:
    name = "kafka-python:sticky"
    reads_owned = True
    raw_owned = True
    """kafka-python reads its user data as sent: owned partitions that no longer exist
    still make an assignment a reassignment."""

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        try:
            run = _Run(request)
            run.balance()
        except _Raises as failure:
            return java_instead(request, "sticky", f"{failure} on this request")
        out = {m: list(run.current.get(m, [])) for m in request.members}
        return AssignmentResult(assignment=sorted_assignment(request.members, out))


KAFKA_PYTHON_STICKY = KafkaPythonSticky()
