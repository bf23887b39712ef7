"""Projections: the rows that each stored event adds to the derived tables.

Pure code (no DuckDB): a ``StreamHead`` is what a stream's projection needs to go on
(its ``GroupState`` and the last owner of every partition ever assigned), and
``Projector`` turns stored events into columns for ``kstore_assignments`` and
``kstore_ownership``. Appends and ``rebuild`` both go through it, one event at a time,
so incremental and rebuilt tables agree by construction (and a test checks it).

Ownership follows the ``prev(p)`` of shared/spec/metrics.md: a partition's previous
owner is its owner in the latest earlier ``AssignmentCompleted`` that assigned it to
exactly one member; a double-assigned partition changes nothing; ``MemberReplaced``
hands the old id's partitions to the new id (a row with cause ``MemberReplaced``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kstore.assignors import TopicPartition
from kstore.store.analytics_rows import AnalyticsRows
from kstore.store.events import AssignmentCompleted, Event, MemberReplaced
from kstore.store.fold import GroupState

__all__ = ["ASSIGNMENT_COLUMNS", "OWNERSHIP_COLUMNS", "Projector", "StreamHead"]

_STREAM = ("cluster", "group_id", "timeline", "version", "generation")
ASSIGNMENT_COLUMNS: tuple[str, ...] = (*_STREAM, "member", "topic", "partition")
OWNERSHIP_COLUMNS: tuple[str, ...] = (*_STREAM, "at", "topic", "partition")
OWNERSHIP_COLUMNS += ("previous_owner", "owner", "cause")


@dataclass(slots=True)
class StreamHead:
    """A stream's fold plus the partitions' last owners, after ``state.version`` events."""

    state: GroupState = field(default_factory=GroupState)
    last_owner: dict[TopicPartition, str] = field(default_factory=dict)

    def copy(self) -> StreamHead:
        return StreamHead(self.state.copy(), dict(self.last_owner))

    def to_json(self) -> str:
        owners = [[t, p, m] for (t, p), m in self.last_owner.items()]
        return json.dumps({"state": self.state.to_dict(), "last_owner": owners})

    @classmethod
    def from_json(cls, text: str) -> StreamHead:
        raw = json.loads(text)
        owners = {(t, p): m for t, p, m in raw["last_owner"]}
        return cls(GroupState.from_dict(raw["state"]), owners)


def _columns(names: tuple[str, ...]) -> dict[str, list[Any]]:
    return {name: [] for name in names}


class Projector:
    """Collects projection rows as columns, ready for ``pyarrow.table``.

    With ``keep=False`` it only advances heads (loading a stream's head from the log).
    """

    def __init__(self, keep: bool = True) -> None:
        self.keep = keep
        self.assignments = _columns(ASSIGNMENT_COLUMNS)
        self.ownership = _columns(OWNERSHIP_COLUMNS)
        self.analytics = AnalyticsRows()

    def rows(self) -> int:
        return (
            len(self.assignments["member"]) + len(self.ownership["owner"]) + self.analytics.rows()
        )

    def feed(self, head: StreamHead, event: Event, at_utc: datetime) -> None:
        """Apply ``event`` (the stream's next) to ``head`` and add the rows it makes.

        ``at_utc`` is the event's time as the store keeps it (naive UTC).
        """
        state = head.state
        previous = state.assignment
        state.apply(event)
        data = event.data
        if isinstance(data, AssignmentCompleted):
            if self.keep:
                self.analytics.assignment(state, data, previous, head.last_owner)
            self._assignment(head, data, at_utc)
        elif isinstance(data, MemberReplaced):
            old, new = data.old_member_id, data.new_member_id
            moved = [tp for tp, owner in head.last_owner.items() if owner == old]
            self._changes(head, [(tp, old, new) for tp in moved], at_utc, "MemberReplaced")

    def _assignment(self, head: StreamHead, data: AssignmentCompleted, at_utc: datetime) -> None:
        state = head.state
        cluster, group, timeline = state.stream or ("", "", "")
        owners: dict[TopicPartition, str] = {}
        doubled: set[TopicPartition] = set()
        for member, tps in data.assignment.items():
            for tp in tps:
                if owners.setdefault(tp, member) != member:
                    doubled.add(tp)
        if self.keep:
            columns = self.assignments
            count = sum(len(tps) for tps in data.assignment.values())
            for name, value in (
                ("cluster", cluster),
                ("group_id", group),
                ("timeline", timeline),
                ("version", state.version),
                ("generation", data.generation),
            ):
                columns[name].extend([value] * count)
            for member, tps in data.assignment.items():
                columns["member"].extend([member] * len(tps))
                columns["topic"].extend([tp[0] for tp in tps])
                columns["partition"].extend([tp[1] for tp in tps])
        last = head.last_owner
        changes = [
            (tp, last.get(tp), owner)
            for tp, owner in owners.items()
            if tp not in doubled and last.get(tp) != owner
        ]
        self._changes(head, changes, at_utc, "AssignmentCompleted")

    def _changes(
        self,
        head: StreamHead,
        changes: list[tuple[TopicPartition, str | None, str]],
        at_utc: datetime,
        cause: str,
    ) -> None:
        if not self.keep:
            for tp, _, owner in changes:
                head.last_owner[tp] = owner
            return
        state = head.state
        cluster, group, timeline = state.stream or ("", "", "")
        columns = self.ownership
        count = len(changes)
        for name, value in (
            ("cluster", cluster),
            ("group_id", group),
            ("timeline", timeline),
            ("version", state.version),
            ("generation", state.generation),
            ("at", at_utc),
            ("cause", cause),
        ):
            columns[name].extend([value] * count)
        for (topic, partition), previous, owner in changes:
            columns["topic"].append(topic)
            columns["partition"].append(partition)
            columns["previous_owner"].append(previous)
            columns["owner"].append(owner)
            head.last_owner[(topic, partition)] = owner
