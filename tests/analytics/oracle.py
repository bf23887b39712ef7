"""docs/spec/metrics.md in plain Python, straight from the events: the tests' one oracle.

Slow and simple: per stream, event by event, with Python sets. It shares no code with
kstore (not the fold, not the projections, not the SQL or Spark), so every engine that
computes the metrics (the DuckDB ``metrics`` query, Spark's ``metrics_of``) and the
golden fixtures of tests/golden/queries are checked against the page itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from kstore.model import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
)

__all__ = ["metrics"]

Partition = tuple[str, int]


def metrics(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The ``metrics`` rows of every stream in ``events`` (streams in first-seen order),
    with the query's columns in its order; ``at`` as naive UTC, as the query gives it."""
    streams: dict[StreamId, list[Event]] = {}
    for event in events:
        streams.setdefault(event.stream, []).append(event)
    return [row for stream in streams.values() for row in _stream(stream)]


def _stream(events: list[Event]) -> list[dict[str, Any]]:
    members: dict[str, list[str]] = {}  # the group's members and their subscriptions
    topics: dict[str, int] = {}
    last_owner: dict[Partition, str] = {}  # prev(p): the last single owner
    previous: dict[str, set[Partition]] = {}  # the previous AssignmentCompleted
    # The latest AssignmentCompleted's generation, it and the one before it as held
    # (as written, ids renamed by MemberReplaced, a member that did not take one up
    # holding its share of the one before): what an AssignmentNotTakenUp of that
    # generation gives its member back.
    generation: int | None = None
    latest: dict[str, list[Partition]] = {}
    before: dict[str, list[Partition]] = {}
    starts: list[tuple[int, datetime]] = []
    rows = []
    for version, event in enumerate(events, start=1):
        data = event.data
        if isinstance(data, TopicChanged):
            topics[data.topic] = data.partitions
        elif isinstance(data, TopicDeleted):
            topics.pop(data.topic, None)
        elif isinstance(data, MemberJoined):
            members[data.member_id] = list(data.topics)
        elif isinstance(data, MemberLeft):
            members.pop(data.member_id, None)
        elif isinstance(data, SubscriptionChanged):
            if data.member_id in members:  # only MemberJoined makes a member
                members[data.member_id] = list(data.topics)
        elif isinstance(data, MemberReplaced):
            # The old id's membership, subscription and partitions are the new id's.
            old, new = data.old_member_id, data.new_member_id
            if old in members:
                members[new] = members.pop(old)
            last_owner = {tp: new if m == old else m for tp, m in last_owner.items()}
            if old != new:  # the new id's own partitions stay its own
                if old in previous:
                    previous[new] = previous.pop(old) | previous.get(new, set())
                # What an AssignmentNotTakenUp gives back reads the old id as the new too.
                latest, before = _merged(latest, old, new), _merged(before, old, new)
        elif isinstance(data, RebalanceStarted):
            starts.append((data.generation, event.at))
        elif isinstance(data, AssignmentNotTakenUp):
            # The member holds its share of the assignment before again (none if that
            # did not name it), and is the last owner of each of those partitions; a
            # fact of another generation, or naming a member neither names, is odd.
            member = data.member_id
            if data.generation == generation and (member in previous or member in before):
                held = before.get(member, [])
                latest = {**latest, member: held}
                previous[member] = set(held)
                last_owner.update(dict.fromkeys(held, member))
        elif isinstance(data, AssignmentCompleted):
            rows.append(_row(event, data, version, members, topics, last_owner, previous, starts))
            for tp, holders in _holders(data).items():
                if len(holders) == 1:
                    last_owner[tp] = next(iter(holders))
            before, latest, generation = latest, data.assignment, data.generation
            previous = {m: set(tps) for m, tps in data.assignment.items()}
    return rows


def _merged(shares: dict[str, list[Partition]], old: str, new: str) -> dict[str, list[Partition]]:
    if old not in shares:
        return shares
    merged = {m: tps for m, tps in shares.items() if m != old}
    merged[new] = list(dict.fromkeys([*shares[old], *shares.get(new, [])]))
    return merged


def _holders(data: AssignmentCompleted) -> dict[Partition, set[str]]:
    holders: dict[Partition, set[str]] = {}
    for member, tps in data.assignment.items():
        for tp in tps:
            holders.setdefault(tp, set()).add(member)
    return holders


def _millis(delta: timedelta) -> int:
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    # Whole milliseconds, towards zero (the integer division of both engines).
    return micros // 1000 if micros >= 0 else -(-micros // 1000)


def _row(
    event: Event,
    data: AssignmentCompleted,
    version: int,
    members: dict[str, list[str]],
    topics: dict[str, int],
    last_owner: dict[Partition, str],
    previous: dict[str, set[Partition]],
    starts: list[tuple[int, datetime]],
) -> dict[str, Any]:
    holders = _holders(data)
    single = {tp: next(iter(ms)) for tp, ms in holders.items() if len(ms) == 1}
    moved = sum(1 for tp, m in single.items() if tp in last_owner and last_owner[tp] != m)
    new = sum(1 for tp in single if tp not in last_owner)
    # (member, partition) pairs of the previous assignment that E does not repeat.
    revoked = sum(1 for m, tps in previous.items() for tp in tps if m not in holders.get(tp, ()))
    wanted = {t for ts in members.values() for t in ts if t in topics}
    unassigned = sum(1 for t in wanted for p in range(topics[t]) if (t, p) not in holders)
    retainable = [
        tp for tp in single if last_owner.get(tp) in members and tp[0] in members[last_owner[tp]]
    ]
    kept = sum(1 for tp in retainable if single[tp] == last_owner[tp])
    loads = [
        len(set(data.assignment.get(m, ()))) for m, ts in members.items() if set(ts) & set(topics)
    ]
    total = sum(loads)
    started = [at for generation, at in starts if generation == data.generation]
    return {
        "cluster": event.cluster,
        "group": event.group,
        "timeline": event.timeline,
        "version": version,
        "generation": data.generation,
        "at": event.at.astimezone(UTC).replace(tzinfo=None),
        "members": len(members),
        "assigned": len(holders),
        "moved": moved,
        "new": new,
        "revoked": revoked,
        "unassigned": unassigned,
        "retainable": len(retainable),
        "kept": kept,
        "stickiness": kept / len(retainable) if retainable else None,
        "imbalance": max(loads) - min(loads) if loads else None,
        "excess": sum(max(0, x - math.ceil(total / len(loads))) for x in loads) if loads else None,
        "double_assigned": sum(1 for ms in holders.values() if len(ms) > 1),
        "duration_ms": _millis(event.at - started[-1]) if started else None,
    }
