"""What Kafka's range and round-robin assignors share: member order, subscribers, output.

Kafka's client ``RangeAssignor`` / ``RoundRobinAssignor`` and the coordinator's
``RangeAssignor`` all order members the same way: members with a
``group.instance.id`` first, by instance id, then the others by member id, both with
``String.compareTo``. Java's sort is stable and starts from the order of a
``HashMap`` filled in request order, so two members with the same instance id keep
that hash order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain, repeat

from kstore._java import hash_order
from kstore.assignors._contract import (
    Assignment,
    AssignmentRequest,
    AssignmentResult,
    TopicPartition,
)

__all__ = [
    "add_ranges",
    "java_sorted",
    "java_string_key",
    "new_assignment",
    "ordered_members",
    "result",
    "topic_partitions",
    "topic_subscribers",
]


def _needs_utf16(strings: Iterable[str]) -> bool:
    # Code point order (Python) and UTF-16 code unit order (Java) differ only when a
    # character beyond U+FFFF is compared with one in U+E000..U+FFFF.
    return any(not s.isascii() and max(s) > "\uffff" for s in strings)


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be")


def java_string_key(strings: Iterable[str]) -> Callable[[str], str | bytes]:
    """A sort key giving ``String.compareTo`` order over ``strings``."""
    return _utf16 if _needs_utf16(strings) else str


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted as Java sorts them."""
    items = list(strings)
    key = java_string_key(items)
    return sorted(items) if key is str else sorted(items, key=key)


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


def topic_partitions(topic: str, count: int) -> list[TopicPartition]:
    """``[(topic, 0), ..., (topic, count - 1)]``."""
    return list(zip(repeat(topic, count), range(count), strict=True))


def new_assignment(request: AssignmentRequest) -> Assignment:
    """An empty list for every member, in request order."""
    return {member: [] for member in request.members}


def result(assignment: Assignment) -> AssignmentResult:
    """Wrap lists the assignor built already sorted (topic in Java order, then partition)."""
    return AssignmentResult.model_construct(assignment=assignment, warnings=[])


def add_ranges(
    assignment: Assignment,
    order: list[str],
    partitions: list[TopicPartition],
    subscribers: list[int],
) -> None:
    """Deal ``partitions`` out in contiguous ranges, the first ``count % n`` get one more."""
    base, extra = divmod(len(partitions), len(subscribers))
    start = 0
    for index, position in enumerate(subscribers):
        end = start + base + (index < extra)
        if end == start:
            break
        assignment[order[position]] += partitions[start:end]
        start = end
