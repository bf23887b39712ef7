"""Projections: the rows that each stored event adds to the derived tables.

Pure code (no DuckDB): a ``StreamHead`` is what a stream's projection needs to go on
(its ``GroupState`` and the last owner of every partition ever assigned), and
``Projector`` turns stored events into columns for ``kstore_assignments`` and
``kstore_ownership``. Appends and ``rebuild`` both go through it, one event at a time,
so incremental and rebuilt tables agree by construction (and a test checks it). The
rows read the fold only through its ``Applied`` records: the store's own fold's
(``feed``), or those of a producer's fold handed over with its events (``project``).

Ownership follows the ``prev(p)`` of docs/spec/metrics.md: a partition's previous
owner is its owner in the latest earlier ``AssignmentCompleted`` that assigned it to
exactly one member; a double-assigned partition changes nothing; ``MemberReplaced``
hands the old id's partitions to the new id (a row with cause ``MemberReplaced``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from kstore.assignors import TopicPartition
from kstore.model.events import AssignmentCompleted, Event, MemberReplaced
from kstore.model.fold import Applied, GroupState
from kstore.store._columns import Column
from kstore.store.analytics_rows import ROW_KEY, AnalyticsRows, Decision, RowKey
from kstore.store.catalogue import columns

__all__ = ["ASSIGNMENT_COLUMNS", "OWNERSHIP_COLUMNS", "Projector", "StreamHead"]

ASSIGNMENT_COLUMNS = columns("kstore_assignments")

OWNERSHIP_COLUMNS = columns("kstore_ownership")


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


def _columns(names: tuple[str, ...]) -> dict[str, Column]:
    return {name: Column() for name in names}


class Projector:
    """Collects projection rows as columns (``Column``: Arrow-ready), per table.

    With ``keep=False`` it only advances heads (loading a stream's head from the log);
    with ``analytics_only`` it keeps the analytics rows but not the assignment and
    ownership rows (Spark's metrics need only those).
    """

    def __init__(self, keep: bool = True, *, analytics_only: bool = False) -> None:
        self.keep = keep
        self._log_rows = keep and not analytics_only
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
        if state.applied is None:
            state.applied = []
        state.apply(event)
        for applied in state.applied:
            self.project(head, event, at_utc, applied)
        state.applied.clear()

    def project(self, head: StreamHead, event: Event, at_utc: datetime, applied: Applied) -> None:
        """Add the rows of ``event``, an ``AssignmentCompleted`` or ``MemberReplaced``
        that a fold applied as ``applied`` says (``head``'s own fold need not have:
        only its ``last_owner`` is read and advanced)."""
        data = event.data
        key = (*event.stream, applied.version)
        if isinstance(data, AssignmentCompleted):
            decision = Decision(data.assignment, head.last_owner)
            if self._log_rows:
                self._assignment(key, data, decision)
            if self.keep:
                self.analytics.assignment(key, applied, data, at_utc, decision)
            self._decided(head, key, applied, decision, at_utc)
        elif isinstance(data, MemberReplaced):
            old, new = data.old_member_id, data.new_member_id
            if old != new:
                moved = [tp for tp, owner in head.last_owner.items() if owner == old]
                self._replaced(head, key, applied, moved, old, new, at_utc)

    def _stream_key(self, key: RowKey, count: int, columns: dict[str, Column]) -> None:
        for name, value in zip(ROW_KEY, key, strict=True):
            columns[name].repeat(value, count)

    def _assignment(self, key: RowKey, data: AssignmentCompleted, decision: Decision) -> None:
        columns = self.assignments
        count = len(decision.tps)
        self._stream_key(key, count, columns)
        columns["generation"].repeat(data.generation, count)
        columns["member"].coded(decision.owner, decision.owners)
        columns["topic"].coded(decision.topic, decision.topic_names)
        columns["partition"].numbers(decision.number)

    def _ownership(
        self, key: RowKey, applied: Applied, count: int, at_utc: datetime, cause: str
    ) -> None:
        columns = self.ownership
        self._stream_key(key, count, columns)
        columns["generation"].repeat(applied.generation, count)
        columns["at"].repeat(at_utc, count)
        columns["cause"].repeat(cause, count)

    def _decided(
        self, head: StreamHead, key: RowKey, applied: Applied, decision: Decision, at_utc: datetime
    ) -> None:
        changed = decision.changed()
        tps = [decision.tps[i] for i in changed.tolist()]
        owners = [decision.owners[i] for i in decision.owner[changed].tolist()]
        if self._log_rows:
            self._ownership(key, applied, len(tps), at_utc, "AssignmentCompleted")
            columns = self.ownership
            columns["topic"].coded(decision.topic[changed], decision.topic_names)
            columns["partition"].numbers(decision.number[changed])
            columns["previous_owner"].coded(decision.prev[changed], decision.people)
            columns["owner"].coded(decision.owner[changed], decision.owners)
        head.last_owner.update(zip(tps, owners, strict=True))

    def _replaced(
        self,
        head: StreamHead,
        key: RowKey,
        applied: Applied,
        tps: list[TopicPartition],
        old: str,
        new: str,
        at_utc: datetime,
    ) -> None:
        if self._log_rows:
            self._ownership(key, applied, len(tps), at_utc, "MemberReplaced")
            columns = self.ownership
            columns["topic"].extend([tp[0] for tp in tps])
            columns["partition"].extend([tp[1] for tp in tps])
            columns["previous_owner"].repeat(old, len(tps))
            columns["owner"].repeat(new, len(tps))
        head.last_owner.update(dict.fromkeys(tps, new))
