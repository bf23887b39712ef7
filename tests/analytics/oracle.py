"""metrics.md in plain Python, straight from a stream's events: the tests' oracle.

It shares no code with the SQL and its projections.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from kstore.model import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
)

__all__ = ["metrics"]

Partition = tuple[str, int]


def metrics(events: list[Event]) -> list[dict[str, Any]]:
    """One dict per AssignmentCompleted, with the columns of the metrics query."""
    members: dict[str, list[str]] = {}
    topics: dict[str, int] = {}
    last_owner: dict[Partition, str] = {}
    previous: dict[str, set[Partition]] = {}
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
            old, new = data.old_member_id, data.new_member_id
            if old in members:
                members[new] = members.pop(old)
            last_owner = {tp: new if m == old else m for tp, m in last_owner.items()}
            if old in previous:  # the new id's own partitions stay its own
                previous[new] = previous.pop(old) | previous.get(new, set())
        elif isinstance(data, RebalanceStarted):
            starts.append((data.generation, event.at))
        elif isinstance(data, AssignmentCompleted):
            rows.append(_row(event, data, version, members, topics, last_owner, previous, starts))
            owners = _owners(data)
            for tp, ms in owners.items():
                if len(ms) == 1:
                    last_owner[tp] = next(iter(ms))
            previous = {m: set(tps) for m, tps in data.assignment.items()}
    return rows


def _owners(data: AssignmentCompleted) -> dict[Partition, set[str]]:
    owners: dict[Partition, set[str]] = {}
    for member, tps in data.assignment.items():
        for tp in tps:
            owners.setdefault(tp, set()).add(member)
    return owners


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
    owners = _owners(data)
    single = {tp: next(iter(ms)) for tp, ms in owners.items() if len(ms) == 1}
    moved = sum(1 for tp, m in single.items() if tp in last_owner and last_owner[tp] != m)
    new = sum(1 for tp in single if tp not in last_owner)
    revoked = {tp for m, tps in previous.items() for tp in tps if m not in owners.get(tp, set())}
    wanted = {t for ts in members.values() for t in ts if t in topics}
    unassigned = sum(1 for t in wanted for p in range(topics[t]) if (t, p) not in owners)
    retainable = [
        tp for tp in single if last_owner.get(tp) in members and tp[0] in members[last_owner[tp]]
    ]
    kept = sum(1 for tp in retainable if single[tp] == last_owner[tp])
    loads = [
        len(set(data.assignment.get(m, ())))
        for m, ts in members.items()
        if any(t in topics for t in ts)
    ]
    imbalance = max(loads) - min(loads) if loads else None
    excess = (
        sum(max(0, load - math.ceil(sum(loads) / len(loads))) for load in loads) if loads else None
    )
    started = [at for generation, at in starts if generation == data.generation]
    duration = (event.at - started[-1]) // timedelta(milliseconds=1) if started else None
    return {
        "version": version,
        "generation": data.generation,
        "at": event.at.replace(tzinfo=None),
        "members": len(members),
        "assigned": len(owners),
        "moved": moved,
        "new": new,
        "revoked": len(revoked),
        "unassigned": unassigned,
        "retainable": len(retainable),
        "kept": kept,
        "stickiness": kept / len(retainable) if retainable else None,
        "imbalance": imbalance,
        "excess": excess,
        "double_assigned": sum(1 for ms in owners.values() if len(ms) > 1),
        "duration_ms": duration,
    }
