"""A naive model of shared/spec/metrics.md, written straight from the page for the tests.

Slow and simple: per stream, event by event, with Python sets. Membership and topics at
E come from the store's fold (``GroupState``), whose rules the page points to; every
number is counted here from the definitions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from kstore.model import AssignmentCompleted, Event, GroupState, MemberReplaced, RebalanceStarted

__all__ = ["reference_metrics"]

Partition = tuple[str, int]


def _stream_metrics(events: list[Event]) -> list[dict[str, Any]]:
    state = GroupState()
    last_owner: dict[Partition, str] = {}
    starts: list[tuple[int, datetime]] = []  # (generation, at), in stream order
    rows: list[dict[str, Any]] = []
    for event in events:
        data = event.data
        previous = {m: set(tps) for m, tps in state.assignment.items()}
        state.apply(event)
        if isinstance(data, RebalanceStarted):
            starts.append((data.generation, event.at))
        elif isinstance(data, MemberReplaced):
            old, new = data.old_member_id, data.new_member_id
            last_owner = {tp: (new if m == old else m) for tp, m in last_owner.items()}
        if not isinstance(data, AssignmentCompleted):
            continue
        holders: dict[Partition, set[str]] = {}
        for member, tps in data.assignment.items():
            for tp in tps:
                holders.setdefault(tp, set()).add(member)
        doubled = {tp for tp, ms in holders.items() if len(ms) > 1}
        single = {tp: next(iter(ms)) for tp, ms in holders.items() if len(ms) == 1}
        members = state.members
        subscribed = {m: set(member.topics) for m, member in members.items()}
        moved = sum(1 for tp, o in single.items() if last_owner.get(tp) not in (None, o))
        new = sum(1 for tp in single if tp not in last_owner)
        retainable = [
            tp
            for tp in single
            if last_owner.get(tp) in subscribed and tp[0] in subscribed[last_owner[tp]]
        ]
        kept = sum(1 for tp in retainable if last_owner[tp] == single[tp])
        revoked = {
            tp for m, tps in previous.items() for tp in tps if m not in holders.get(tp, set())
        }
        wanted_topics = {t for ts in subscribed.values() for t in ts if t in state.topics}
        unassigned = sum(
            1 for t in wanted_topics for p in range(state.topics[t]) if (t, p) not in holders
        )
        counted = [m for m, ts in subscribed.items() if ts & set(state.topics)]
        loads = [len(set(data.assignment.get(m, ()))) for m in counted]
        total = sum(loads)
        start = [at for generation, at in starts if generation == data.generation]
        rows.append(
            {
                "cluster": event.cluster,
                "group": event.group,
                "timeline": event.timeline,
                "version": state.version,
                "generation": data.generation,
                "members": len(members),
                "assigned": len(holders),
                "moved": moved,
                "new": new,
                "revoked": len(revoked),
                "unassigned": unassigned,
                "retainable": len(retainable),
                "kept": kept,
                "stickiness": kept / len(retainable) if retainable else None,
                "imbalance": max(loads) - min(loads) if loads else None,
                "excess": sum(max(0, x - math.ceil(total / len(loads))) for x in loads)
                if loads
                else None,
                "double_assigned": len(doubled),
                "duration_ms": _millis(event.at - start[-1]) if start else None,
            }
        )
        for tp, owner in single.items():
            last_owner[tp] = owner
    return rows


def _millis(delta: Any) -> int:
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    # Whole milliseconds, towards zero (the integer division of both engines).
    return micros // 1000 if micros >= 0 else -(-micros // 1000)


def reference_metrics(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The metrics rows of every stream in ``events`` (streams in first-seen order)."""
    streams: dict[Any, list[Event]] = {}
    for event in events:
        streams.setdefault(event.stream, []).append(event)
    return [row for stream in streams.values() for row in _stream_metrics(stream)]
