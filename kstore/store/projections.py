"""Projections: the rows that each stored event adds to the derived tables.

Pure code (no DuckDB): a ``StreamHead`` is what a stream's projection needs to go on
(its ``GroupState`` and the last owner of every partition ever assigned), and
``Projector`` turns stored events into the rows of ``kstore_assignment_spans``,
``kstore_ownership`` and the analytics tables. Appends and ``rebuild`` both go through
it, so incremental and rebuilt tables agree by construction (and a test checks it).
Events are fed one at a time, in order: each reads and advances its stream's head
(plain Python, per event); the rows of a whole batch are made at once when its tables
are asked for (``arrow``), columnar. The
rows read the fold only through its ``Applied`` records: the store's own fold's
(``feed``), or those of a producer's fold handed over with its events (``project``).

Ownership follows the ``prev(p)`` of docs/spec/metrics.md: a partition's previous
owner is its owner in the latest earlier ``AssignmentCompleted`` that assigned it to
exactly one member; a double-assigned partition changes nothing; ``MemberReplaced``
hands the old id's partitions to the new id (a row with cause ``MemberReplaced``); an
``AssignmentNotTakenUp`` gives its member back each partition it holds again whose last
owner is another or none (a row with cause ``AssignmentNotTakenUp``: none where, as kstore
writes it, the ``AssignmentCompleted`` gave the member that share already).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pydantic_core import to_json

from kstore.model.events import AssignmentCompleted, AssignmentNotTakenUp, Event, MemberReplaced
from kstore.model.fold import Applied, GroupState
from kstore.store.analytics_rows import (
    ANALYTICS_COLUMNS,
    MEMBER_SPANS,
    Coded,
    Decision,
    Entries,
    Listed,
    RowKey,
    analytics_tables,
    gathered,
    keyed_table,
    offsets,
    row_keys,
    stable_groups,
)
from kstore.store.catalogue import arrow_schema

if TYPE_CHECKING:
    from kstore.assignors import TopicPartition

__all__ = ["PROJECTED", "SPANNED", "Projector", "Spans", "StreamHead"]

PROJECTED = ("kstore_ownership", *ANALYTICS_COLUMNS)
"""The tables a ``Projector`` fills with rows of their own, in the order they are
stored (the ``SPANNED`` tables apart: ``Projector.spans``)."""

_Ints = npt.NDArray[np.int64]
SPANS = "kstore_assignment_spans"
SPANNED = (SPANS, MEMBER_SPANS)
"""The tables of spans (``Projector.spans``)."""


@dataclass(slots=True)
class StreamHead:
    """A stream's fold plus the partitions' last owners, after ``state.version`` events."""

    state: GroupState = field(default_factory=GroupState)
    last_owner: dict[TopicPartition, str] = field(default_factory=dict)

    def copy(self) -> StreamHead:
        return StreamHead(self.state.copy(), dict(self.last_owner))

    def to_json(self) -> str:
        """The head as a snapshot stores it (``from_json`` reads it back): pydantic's
        encoder, which writes the fold's tuples as lists as they are (json's took a list
        made per partition first, and twice the time to write them: a 10,000-partition
        head's text 20 -> 6 ms)."""
        owners = [(t, p, m) for (t, p), m in self.last_owner.items()]
        state = self.state.to_dict(tuples=True)
        return to_json({"state": state, "last_owner": owners}).decode()

    @classmethod
    def from_json(cls, text: str) -> StreamHead:
        raw = json.loads(text)
        owners = {(t, p): m for t, p, m in raw["last_owner"]}
        return cls(GroupState.from_dict(raw["state"]), owners)


@dataclass(frozen=True, slots=True)
class _Replaced:
    """An event that hands ``moved`` over to ``new``, each from its owner in ``old``: a
    ``MemberReplaced`` (the old id's partitions) or an ``AssignmentNotTakenUp`` (what
    its member holds again), the ``cause`` of its rows."""

    key: RowKey
    applied: Applied
    at_utc: datetime
    moved: list[TopicPartition]
    old: list[str | None]
    new: str
    cause: str


class Projector:
    """Collects projection rows, per table: the events fed are read as they come (their
    stream's head advanced), the rows of all of them made at once by ``arrow``.

    With ``keep=False`` it only advances heads (loading a stream's head from the log);
    with ``analytics_only`` it keeps the analytics rows but not the assignment and
    ownership rows (Spark's metrics need only those).
    """

    def __init__(self, keep: bool = True, *, analytics_only: bool = False) -> None:
        self.keep = keep
        self._log_rows = keep and not analytics_only
        self._read: list[Decision | _Replaced] = []
        """What the events fed since the tables were last made leave to project."""
        self._entries = 0
        self._tables: dict[str, pa.Table] = {}
        self._spans: list[Spans] | None = None
        self._decided: dict[tuple[str, str, str], tuple[StreamHead, Decision]] = {}
        """Per stream, its latest decision fed and the head it advanced, while nothing
        has been handed over since (``Decision``'s ``previous``)."""

    def rows(self) -> int:
        """About how many rows the events fed make (their assignment rows, one more per
        event read, and the rows made already)."""
        made: int = sum(t.num_rows for t in self._tables.values())
        return self._entries + len(self._read) + made

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
        """Add the rows of ``event``, an ``AssignmentCompleted``, ``MemberReplaced`` or
        ``AssignmentNotTakenUp`` that a fold applied as ``applied`` says (``head``'s own
        fold need not have: only its ``last_owner`` is read and advanced)."""
        data = event.data
        key = (*event.stream, applied.version)
        if isinstance(data, AssignmentCompleted):
            stream = key[:3]
            before = self._decided.get(stream)
            previous = before[1] if before is not None and before[0] is head else None
            decision = Decision(key, applied, data, at_utc, head.last_owner, previous)
            self._decided[stream] = (head, decision)
            if self.keep:
                self._read.append(decision)
                self._entries += decision.size
            else:  # no rows to make: the previous decision is of no more use
                decision.previous = None
        elif isinstance(data, MemberReplaced):
            old, new = data.old_member_id, data.new_member_id
            if old != new:
                moved = [tp for tp, owner in head.last_owner.items() if owner == old]
                self._hand(
                    head,
                    _Replaced(key, applied, at_utc, moved, [old] * len(moved), new, event.type),
                )
        elif isinstance(data, AssignmentNotTakenUp):
            member, last = data.member_id, head.last_owner
            back = [
                tp
                for held in applied.previous.values()
                for tp in dict.fromkeys(held)
                if last.get(tp) != member
            ]
            owners = [last.get(tp) for tp in back]
            self._hand(head, _Replaced(key, applied, at_utc, back, owners, member, event.type))

    def data_json(self, event: Event) -> str:
        """``event``'s data as the log stores it (JSON, None fields left out), once it is
        projected: a decision's as its ``Decision`` writes it (``Decision.data_json``)."""
        data = event.data
        if isinstance(data, AssignmentCompleted):
            found = self._decided.get(event.stream)
            if found is not None and found[1].data is data:
                return found[1].data_json()
        return data.stored_json()

    def _hand(self, head: StreamHead, handed: _Replaced) -> None:
        self._decided.pop(handed.key[:3], None)
        head.last_owner.update(dict.fromkeys(handed.moved, handed.new))
        if self._log_rows and handed.moved:
            self._read.append(handed)

    def arrow(self, table: str) -> pa.Table:
        """The rows of ``table`` (one of ``PROJECTED``) of the events fed so far: numbers
        and times of the catalogue's types, text as Arrow dictionary arrays of it (no
        rows: the catalogue's schema)."""
        if self._read:
            made = self._made()
            self._read, self._entries = [], 0
            # Their rows made, the decisions read against need the previous ones no more
            # (the stream's latest would keep all its earlier ones alive).
            for _, decision in self._decided.values():
                decision.previous = None
            for name, rows in made.items():
                held = self._tables.get(name)
                self._tables[name] = rows if held is None else pa.concat_tables([held, rows])
        found = self._tables.get(table)
        return found if found is not None else arrow_schema(table).empty_table()

    def spans(self) -> list[Spans]:
        """The spans (``kstore_assignment_spans``, ``kstore_member_spans``) of the
        ``AssignmentCompleted`` events fed, as if none was open before the first of each
        stream (``Spans``). A projector's spans are made once, after all its events."""
        self.arrow(SPANS)
        if self._spans is None:
            self._spans = _spans(Entries([]), Listed(np.zeros(0, dtype=np.int64), {}))
        return self._spans

    def _made(self) -> dict[str, pa.Table]:
        entries = Entries([d for d in self._read if isinstance(d, Decision)])
        made, members_at = analytics_tables(entries)
        if self._log_rows:
            if self._spans is not None and entries.decisions:
                raise RuntimeError("a projector's spans are made once, after all its events")
            self._spans = _spans(entries, members_at)
            made["kstore_ownership"] = _ownership(self._read, entries)
        return made


def _spans(entries: Entries, members_at: Listed) -> list[Spans]:
    keys = [d.key for d in entries.decisions]
    # A repeated list's entries go on the spans of the list it repeats: only the
    # lists converted are read (a sticky decision repeats almost all of them).
    listed = entries.listed
    assigned: dict[str, Coded | _Ints] = {
        "member": Coded(entries.owner, entries.owner_names).at(listed),
        "topic": Coded(entries.topic, entries.topic_names).at(listed),
        "partition": entries.number[listed],
        "listing": entries.listing[listed],
    }
    return [
        Spans(SPANS, keys, entries.event[listed], assigned, entries.through),
        Spans(MEMBER_SPANS, keys, members_at.of, members_at.columns, members_at.through),
    ]


class Spans:
    """The rows of a spans table (``kstore_assignment_spans``, ``kstore_member_spans``)
    that a batch of decisions makes, as if no span was open before it: a span per
    unbroken run of a stream's decisions in the batch that list a row of the same
    values (``listed``: a member and partition and its ``listing``; a member and
    topic), from the first (``from_version``) to the next one that does not
    (``to_version``; NULL: the run reaches the batch's end). Columnar, one sort of the
    batch's listed rows (row ``r`` of decision ``of[r]`` of those keyed ``keys``,
    listed again by each of its stream's decisions after it up to ``through[r]``,
    those not given as rows of their own; None: ``of``).

    ``head`` marks the spans that start at their stream's first decision of the batch
    (one that a span open before the batch continues, if there is one); ``firsts`` is
    each stream's first decision in the batch (its key). The store merges them with
    the spans it holds (``Store._store_spans``)."""

    def __init__(
        self,
        table: str,
        keys: Sequence[RowKey],
        listed_of: _Ints,
        listed: Mapping[str, Coded | _Ints],
        through: _Ints | None = None,
    ) -> None:
        self.name = table
        self.listed = tuple(listed)
        """The columns that tell spans apart (within a stream)."""
        streams: dict[tuple[str, str, str], int] = {}
        of = np.array([streams.setdefault(k[:3], len(streams)) for k in keys], dtype=np.int64)
        version = np.array([k[3] for k in keys], dtype=np.int64)
        # Each decision's place among its stream's decisions in the batch.
        by_stream = np.argsort(of, kind="stable")
        counts = np.bincount(of, minlength=len(streams))
        base = offsets(counts)
        place = np.empty(len(keys), dtype=np.int64)
        place[by_stream] = np.arange(len(keys), dtype=np.int64) - np.repeat(base, counts)
        event = listed_of
        until = place[event if through is None else through]
        order, changed = stable_groups(
            [of[event], *(c.codes if isinstance(c, Coded) else c for c in listed.values())]
        )
        changed[1:] |= place[event[order[1:]]] != until[order[:-1]] + 1
        starts = np.flatnonzero(changed)
        ends = np.append(starts[1:], len(order)) - 1
        first = order[starts]
        shown = np.argsort(first, kind="stable")  # the spans in the order listed
        first, last = first[shown], order[ends[shown]]
        self.of: _Ints = event[first]
        stream = of[self.of]
        after = until[last] + 1
        reaches_end = after >= counts[stream]
        to = by_stream[base[stream] + np.minimum(after, counts[stream] - 1)]
        self.head: npt.NDArray[np.bool_] = place[self.of] == 0
        self.firsts: list[RowKey] = [keys[i] for i in by_stream[base].tolist()]
        self.keys = row_keys(keys)
        self.to_version: np.ma.MaskedArray[Any, np.dtype[np.int64]] = np.ma.masked_array(
            version[to], mask=reaches_end
        )
        self.columns: dict[str, Coded | npt.NDArray[Any]] = {
            name: column.at(first) if isinstance(column, Coded) else column[first]
            for name, column in listed.items()
        }
        self.columns |= {
            "from_version": version[self.of],
            "to_version": self.to_version,
        }

    def __len__(self) -> int:
        return len(self.of)

    def table(self, rows: _Ints | None = None) -> pa.Table:
        """The spans (those of ``rows``: indices) as rows of their table."""
        if not len(self):
            return arrow_schema(self.name).empty_table()
        if rows is None:
            return keyed_table(self.name, self.keys, self.of, self.columns)
        columns = {
            name: column.at(rows) if isinstance(column, Coded) else column[rows]
            for name, column in self.columns.items()
        }
        return keyed_table(self.name, self.keys, self.of[rows], columns)


def _ownership(read: list[Decision | _Replaced], entries: Entries) -> pa.Table:
    """The rows of the partitions whose owner changed, in the order of the events read
    (a ``MemberReplaced``'s rows between those of its neighbours)."""
    changed = entries.changed()
    place = np.array([i for i, r in enumerate(read) if isinstance(r, Decision)], dtype=np.int64)
    of = place[entries.event[changed]]
    topic = Coded(entries.topic, entries.topic_names).at(changed)
    partition = entries.number[changed]
    previous = entries.previous(changed)
    owner = Coded(entries.owner, entries.owner_names).at(changed)
    cause = Coded(np.zeros(len(changed), dtype=np.int64), ["AssignmentCompleted"])
    replaced = [(i, r) for i, r in enumerate(read) if isinstance(r, _Replaced)]
    if replaced:
        counts = [len(r.moved) for _, r in replaced]
        of = np.concatenate([of, np.repeat(np.array([i for i, _ in replaced]), counts)])
        moved = [tp for _, r in replaced for tp in r.moved]
        topic = topic.extended([t for t, _ in moved])
        partition = np.concatenate([partition, np.array([p for _, p in moved], dtype=np.int64)])
        previous = previous.extended([old for _, r in replaced for old in r.old])
        owner = owner.extended([r.new for _, r in replaced for _ in r.moved])
        cause = cause.extended([r.cause for _, r in replaced for _ in r.moved])
        order = np.argsort(of, kind="stable")
        of, partition = of[order], partition[order]
        topic, previous, owner, cause = (c.at(order) for c in (topic, previous, owner, cause))
    columns = {
        "generation": gathered([r.applied.generation for r in read], of, pa.int32()),
        "at": gathered([r.at_utc for r in read], of, pa.timestamp("us")),
        "topic": topic,
        "partition": partition,
        "previous_owner": previous,
        "owner": owner,
        "cause": cause,
    }
    return keyed_table("kstore_ownership", row_keys([r.key for r in read]), of, columns)
