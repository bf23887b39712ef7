"""Per-rebalance analytics facts, projected beside the assignment and ownership rows.

``queries/metrics.sql`` and the windows over it must answer over millions of assignment
rows in well under a second, so nothing partition-level is left for query time: each
``AssignmentCompleted`` E is settled once, when it is stored (and again, identically, by
``rebuild``), into counts per topic and per rebalance. The counts follow
docs/spec/metrics.md; the SQL adds them up and computes what needs other events
(``duration_ms``). ``Decision`` is the partition-level reading of E that both this module
and the ownership projection use, columnar (numpy), so a 10,000-partition event costs a
few list comprehensions rather than a Python loop with branches per partition.

Tables (one set of rows per E, keyed by its stream and version):

- ``kstore_rebalance_stats``: one row: ``generation``, ``at``, ``members`` (of the group
  at E), ``imbalance`` and ``excess`` (over the members subscribing to an existing topic;
  NULL when there is none);
- ``kstore_topic_stats``: one row per topic that E assigns, that the previous assignment
  held, or that a member of the group at E subscribes to: ``assigned``, ``moved``,
  ``new``, ``revoked``, ``unassigned``, ``retainable``, ``kept``, ``double_assigned``
  restricted to the topic's partitions (they add up to E's numbers), ``subscribers``
  (members at E subscribing to it) and ``imbalance`` (max - min of their partitions of
  the topic; NULL without subscribers);
- ``kstore_members_at``: the members of the group at E (the fold's), one row per
  subscribed topic (``topic`` NULL for a member subscribing to nothing);
- ``kstore_topics_at``: the topics that exist at E with their partition counts;
- ``kstore_double_assignments``: each (partition, member) of a partition E assigns to
  more than one member;
- ``kstore_revocations``: each (member, partition) of the previous ``AssignmentCompleted``
  (MemberReplaced aliasing applied) that E does not repeat.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from kstore.assignors import TopicPartition
from kstore.model.events import AssignmentCompleted
from kstore.model.fold import Applied
from kstore.store.catalogue import ANALYTICS, arrow_schema, columns

__all__ = ["ANALYTICS_COLUMNS", "ROW_KEY", "AnalyticsRows", "Decision", "RowKey"]

ROW_KEY = ("cluster", "group_id", "timeline", "version")
RowKey = tuple[str, str, str, int]
"""An event's stream and version: the columns that key every projection row of it."""
_TOPIC_COUNTS: tuple[str, ...] = ("assigned", "moved", "new", "revoked", "unassigned")
_TOPIC_COUNTS += ("retainable", "kept", "double_assigned", "subscribers")
ANALYTICS_COLUMNS: dict[str, tuple[str, ...]] = {table: columns(table) for table in ANALYTICS}
"""Table -> its columns, in the catalogue's order (``kstore.store.catalogue``)."""

_Ints = npt.NDArray[np.int64]
_NONE = np.iinfo(np.int64).max
_Bools = npt.NDArray[np.bool_]


class Decision:
    """E's assignment read entry by entry (one entry per listed member and partition).

    ``owners`` are the assignment's member ids; ``owner[i]`` indexes them. ``pair_first``
    marks the first entry of each (member, partition), ``tp_first`` the first of each
    partition, ``shared`` the entries of partitions given to more than one member.
    ``prev[i]`` is ``prev(p)`` of the entry's partition (``last_owner`` before E) as an
    index into ``people`` (E's owners first, then the other previous owners; -1: none).
    """

    def __init__(
        self, assignment: Mapping[str, Any], last_owner: Mapping[TopicPartition, str]
    ) -> None:
        self.assignment = assignment
        self.owners: list[str] = list(assignment)
        lists = list(assignment.values())
        self.tps: list[TopicPartition] = list(chain.from_iterable(lists))
        size = len(self.tps)
        self.owner: _Ints = np.repeat(
            np.arange(len(lists), dtype=np.int64), [len(x) for x in lists]
        )
        # Codes in order of first appearance, from Arrow's dictionary encoding.
        topics, numbers = zip(*self.tps, strict=True) if size else ((), ())
        self.topic_names, self.topic = _encoded(topics)
        self.number: _Ints = np.array(numbers, dtype=np.int64)
        last = last_owner.get
        names, codes = _encoded([last(tp) for tp in self.tps])
        people = {m: i for i, m in enumerate(self.owners)}
        for name in names:
            people.setdefault(name, len(people))
        self.people: list[str] = list(people)
        self.prev: _Ints = np.array([people[n] for n in names] + [-1], dtype=np.int64)[codes]
        if len(set(self.tps)) == size:  # the usual case: every partition listed once
            self.pair_first: _Bools = np.ones(size, dtype=np.bool_)
            self.tp_first: _Bools = self.pair_first
            self.shared: _Bools = np.zeros(size, dtype=np.bool_)
            self.doubled = False
        else:
            self.pair_first = np.zeros(size, dtype=np.bool_)
            self.tp_first = np.zeros(size, dtype=np.bool_)
            holders: dict[TopicPartition, set[str]] = {}
            members = [self.owners[i] for i in self.owner.tolist()]
            for i, (member, tp) in enumerate(zip(members, self.tps, strict=True)):
                held = holders.setdefault(tp, set())
                self.tp_first[i] = not held
                self.pair_first[i] = member not in held
                held.add(member)
            self.shared = np.array([len(holders[tp]) > 1 for tp in self.tps], dtype=np.bool_)
            self.doubled = bool(self.shared.any())  # a partition given to several members
        self.single: _Bools = self.pair_first & ~self.shared

    def changed(self) -> _Ints:
        """Entries of E's single-owner partitions whose owner is not ``prev(p)``."""
        return np.flatnonzero(self.single & (self.prev != self.owner))


def _encoded(values: Sequence[Any]) -> tuple[list[Any], _Ints]:
    """The distinct values but None, in order of first appearance, and each value's
    index among them (None: the index one past the last). Dict lookups for a small
    group's handful of values (an Arrow call costs ten times as much there), Arrow's
    dictionary encoding from ``_ARROW_FROM`` values (it is then half the time)."""
    if len(values) >= _ARROW_FROM:
        encoded = pa.array(values, type=pa.string()).dictionary_encode()
        names: list[Any] = encoded.dictionary.to_pylist()
        # NaN where None (Arrow's ``fill_null`` would import ``pyarrow.compute``: 0.3 s).
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        return names, np.nan_to_num(codes, nan=len(names)).astype(np.int64)
    first = dict.fromkeys(values)
    first.pop(None, None)
    names = list(first)
    index = {name: i for i, name in enumerate(names)}
    missing = len(names)
    return names, np.array([index.get(v, missing) for v in values], dtype=np.int64)


_ARROW_FROM = 1000


_SETTLED = ("kstore_topic_stats", "kstore_rebalance_stats")
"""The tables whose counts are settled for a batch of E at once (``_Settle``)."""


class AnalyticsRows:
    """Collects the rows of the ``ANALYTICS_COLUMNS`` tables: the counts of the
    ``_SETTLED`` tables for a whole batch of E at once (``_Settle``), the other tables'
    few rows per E as tuples; each table converted to Arrow once by ``arrow``."""

    def __init__(self) -> None:
        self._rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in ANALYTICS_COLUMNS}
        self._pending: list[_Pending] = []
        self._waiting = 0
        self._settled: dict[str, list[pa.Table]] = {table: [] for table in _SETTLED}

    def rows(self) -> int:
        settled: int = sum(t.num_rows for tables in self._settled.values() for t in tables)
        return sum(map(len, self._rows.values())) + self._waiting + settled

    def arrow(self, table: str) -> pa.Table:
        """The rows of ``table`` collected so far, with the catalogue's types."""
        if self._pending:
            settle = _Settle(self._pending)
            self._settled["kstore_topic_stats"].append(settle.topic_stats())
            self._settled["kstore_rebalance_stats"].append(settle.rebalance_stats())
            self._pending, self._waiting = [], 0
        schema = arrow_schema(table)
        if table in self._settled:
            done = self._settled[table]
            return pa.concat_tables(done) if done else schema.empty_table()
        rows = self._rows[table]
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
        return pa.Table.from_arrays(
            [
                pa.array(values, type=field.type)
                for values, field in zip(columns, schema, strict=True)
            ],
            schema=schema,
        )

    def _add(self, table: str, key: tuple[Any, ...], rows: list[tuple[Any, ...]]) -> None:
        self._rows[table].extend([(*key, *row) for row in rows])

    def assignment(
        self,
        key: RowKey,
        applied: Applied,
        data: AssignmentCompleted,
        at_utc: datetime,
        decision: Decision,
    ) -> None:
        """Rows for E = ``data``, whose fold ``applied`` gives the group at E and the
        assignment before it."""
        members = applied.members
        topics = applied.topics
        tps = decision.tps

        revoked = _revoked(applied.previous, decision)
        subscribed = {m: dict.fromkeys(member.topics) for m, member in members.items()}
        names = sorted(
            set(decision.topic_names)
            | {tp[0] for _, tp in revoked}
            | {t for ts in subscribed.values() for t in ts}
        )
        tcode = {t: i for i, t in enumerate(names)}
        # Member codes: ``decision.people`` (so ``decision.owner`` and ``decision.prev``
        # are codes), then the members at E that are not among them.
        mcode: dict[str, int] = {m: i for i, m in enumerate(decision.people)}
        for m in members:
            mcode.setdefault(m, len(mcode))
        people = len(mcode)
        revoked_per_topic = Counter(tp[0] for _, tp in revoked)  # (member, partition) pairs
        self._pending.append(
            _Pending(
                key=key,
                generation=data.generation,
                at_utc=at_utc,
                members=len(members),
                names=names,
                sizes=[topics.get(t, 0) for t in names],
                exists=[t in topics for t in names],
                revoked=[revoked_per_topic[t] for t in names],
                people=people,
                at_e=[mcode[m] for m in members],
                pairs=[tcode[t] * people + mcode[m] for m, ts in subscribed.items() for t in ts],
                topic_of_name=[tcode[t] for t in decision.topic_names],
                decision=decision,
            )
        )
        self._waiting += len(tps) + len(names)
        self._add(
            "kstore_members_at",
            key,
            [(m, t) for m, ts in subscribed.items() for t in (ts or (None,))],
        )
        self._add("kstore_topics_at", key, list(topics.items()))
        if decision.doubled:
            doubled = np.flatnonzero(decision.pair_first & decision.shared).tolist()
            self._add(
                "kstore_double_assignments",
                key,
                [(*tps[i], decision.owners[decision.owner[i]]) for i in doubled],
            )
        self._add("kstore_revocations", key, [(m, *tp) for m, tp in revoked])


@dataclass(slots=True)
class _Pending:
    """One E's own part of its counts, kept until ``_Settle`` counts a batch's at once
    (numpy's calls cost as much for five entries as for thousands: per E they were most
    of a small group's append)."""

    key: RowKey
    generation: int
    at_utc: datetime
    members: int
    names: list[str]
    """The topics of E's rows: assigned, revoked or subscribed to, sorted."""
    sizes: list[int]
    """Per topic of ``names``: its partitions at E (0: no such topic)."""
    exists: list[bool]
    revoked: list[int]
    people: int
    """How many member codes: ``decision.people``, then the members at E not among them."""
    at_e: list[int]
    pairs: list[int]
    """Each (member at E, topic it subscribes to), as ``topic * people + member``."""
    topic_of_name: list[int]
    """``decision.topic_names`` as indexes into ``names``."""
    decision: Decision


def _offsets(counts: Sequence[int]) -> _Ints:
    """Where each of runs of ``counts`` values, one after the other, starts."""
    out = np.zeros(len(counts), dtype=np.int64)
    if len(counts) > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


def _joined(parts: Sequence[npt.NDArray[Any]], dtype: type) -> npt.NDArray[Any]:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


class _Settle:
    """The counts of a batch of pending E, columnar. Every E's topics, member codes and
    (member, topic) pairs get slots of their own, side by side (pairs topic-major within
    an E), so that each count is one numpy call for the whole batch."""

    def __init__(self, pending: list[_Pending]) -> None:
        self.pending = pending
        events = np.arange(len(pending), dtype=np.int64)
        widths = [len(p.names) for p in pending]
        people = [p.people for p in pending]
        self.topics = sum(widths)
        self.members = sum(people)
        topic_base = _offsets(widths)
        self.member_base = _offsets(people)
        pair_sizes = [w * m for w, m in zip(widths, people, strict=True)]
        pair_base = _offsets(pair_sizes)
        pairs = sum(pair_sizes)
        self.people: _Ints = np.array(people, dtype=np.int64)

        # Per entry (a member and partition that some E lists): its E, topic and codes.
        decisions = [p.decision for p in pending]
        event = np.repeat(events, [len(d.tps) for d in decisions])
        name_base = _offsets([len(p.topic_of_name) for p in pending])
        topic_of_name = np.array([t for p in pending for t in p.topic_of_name], dtype=np.int64)
        local_topic = topic_of_name[
            _joined([d.topic for d in decisions], np.int64) + name_base[event]
        ]
        self.topic = topic_base[event] + local_topic
        owner = _joined([d.owner for d in decisions], np.int64)
        prev = _joined([d.prev for d in decisions], np.int64)
        self.number = _joined([d.number for d in decisions], np.int64)
        self.single = _joined([d.single for d in decisions], np.bool_)
        self.pair_first = _joined([d.pair_first for d in decisions], np.bool_)
        self.tp_first = _joined([d.tp_first for d in decisions], np.bool_)
        self.shared = _joined([d.shared for d in decisions], np.bool_)
        self.owner = self.member_base[event] + owner
        self.known = prev >= 0
        self.same = prev == owner
        pair_of = pair_base[event] + local_topic * self.people[event]  # + member code

        self.eligible = np.zeros(pairs, dtype=np.bool_)
        pair_event = np.repeat(events, [len(p.pairs) for p in pending])
        given = np.array([c for p in pending for c in p.pairs], dtype=np.int64)
        self.eligible[pair_base[pair_event] + given] = True
        self.retainable = self.single & self.known & self.eligible[pair_of + np.maximum(prev, 0)]
        self.topic_loads = np.bincount((pair_of + owner)[self.pair_first], minlength=pairs)
        # Each pair slot's topic slot and member slot.
        slot_event = np.repeat(events, pair_sizes)
        local = np.arange(pairs, dtype=np.int64) - pair_base[slot_event]
        slot_people = self.people[slot_event]
        self.pair_topic = topic_base[slot_event] + local // slot_people
        self.pair_member = self.member_base[slot_event] + local % slot_people
        self.size: _Ints = np.array([n for p in pending for n in p.sizes], dtype=np.int64)
        self.exists: _Bools = np.array([e for p in pending for e in p.exists], dtype=np.bool_)

    def _counts(self, mask: _Bools) -> _Ints:
        return np.bincount(self.topic[mask], minlength=self.topics)

    def topic_stats(self) -> pa.Table:
        subscribers = np.bincount(self.pair_topic[self.eligible], minlength=self.topics)
        wanted = self.exists & (subscribers > 0)
        covered = self._counts(self.tp_first & (self.number < self.size[self.topic]))
        single, known, retainable = self.single, self.known, self.retainable
        counts = {
            "assigned": self._counts(self.tp_first),
            "moved": self._counts(single & known & ~self.same),
            "new": self._counts(single & ~known),
            "revoked": [n for p in self.pending for n in p.revoked],
            "unassigned": np.where(wanted, self.size - covered, 0),
            "retainable": self._counts(retainable),
            "kept": self._counts(retainable & self.same),
            "double_assigned": self._counts(self.tp_first & self.shared),
            "subscribers": subscribers,
        }
        # Per topic, max - min of its subscribers' partitions of it (NULL: no subscriber).
        spread = _spread(
            self.pair_topic[self.eligible], self.topic_loads[self.eligible], self.topics
        )
        columns: dict[str, Any] = _keys([(p.key, len(p.names)) for p in self.pending])
        columns["topic"] = [t for p in self.pending for t in p.names]
        columns.update(counts)
        columns["imbalance"] = spread
        return _table("kstore_topic_stats", columns)

    def rebalance_stats(self) -> pa.Table:
        pending = self.pending
        # Loads over the members at E that subscribe to a topic that exists at E.
        counts = np.zeros(self.members, dtype=np.bool_)
        counts[self.pair_member[self.eligible & self.exists[self.pair_topic]]] = True
        at_e = np.zeros(self.members, dtype=np.bool_)
        at_e[
            [int(b) + m for p, b in zip(pending, self.member_base, strict=True) for m in p.at_e]
        ] = True
        member_event = np.repeat(np.arange(len(pending), dtype=np.int64), self.people)
        loads = np.bincount(self.owner[self.pair_first], minlength=self.members)
        counted = at_e & counts
        which, load = member_event[counted], loads[counted]
        many = np.bincount(which, minlength=len(pending))
        total = np.bincount(which, weights=load, minlength=len(pending)).astype(np.int64)
        ceiling = -(-total // np.maximum(many, 1))
        excess = np.bincount(
            which, weights=np.maximum(load - ceiling[which], 0), minlength=len(pending)
        ).astype(np.int64)
        columns: dict[str, Any] = _keys([(p.key, 1) for p in pending])
        columns["generation"] = [p.generation for p in pending]
        columns["at"] = [p.at_utc for p in pending]
        columns["members"] = [p.members for p in pending]
        columns["imbalance"] = _spread(which, load, len(pending))
        columns["excess"] = _Masked(excess, many == 0)
        return _table("kstore_rebalance_stats", columns)


class _Masked(NamedTuple):
    """Numbers of a column, NULL where ``null``; converted to the column's type once
    (an Arrow array's ``cast`` would import ``pyarrow.compute``: 0.3 s)."""

    values: _Ints
    null: _Bools


def _spread(groups: _Ints, values: _Ints, size: int) -> _Masked:
    """Per group of ``size``, max - min of its ``values`` (NULL: none)."""
    most = np.full(size, -1, dtype=np.int64)
    least = np.full(size, _NONE, dtype=np.int64)
    np.maximum.at(most, groups, values)
    np.minimum.at(least, groups, values)
    none = most < 0
    return _Masked(np.where(none, 0, most - least), none)


def _keys(runs: list[tuple[RowKey, int]]) -> dict[str, list[Any]]:
    """The key columns of rows, each key repeated its count of times."""
    columns: dict[str, list[Any]] = {name: [] for name in ROW_KEY}
    for key, count in runs:
        for name, value in zip(ROW_KEY, key, strict=True):
            columns[name].extend([value] * count)
    return columns


def _table(table: str, columns: dict[str, Any]) -> pa.Table:
    schema = arrow_schema(table)
    return pa.Table.from_arrays(
        [
            pa.array(values.values, type=field.type, mask=values.null)
            if isinstance(values := columns[field.name], _Masked)
            else pa.array(values, type=field.type)
            for field in schema
        ],
        schema=schema,
    )


def _revoked(
    previous: Mapping[str, tuple[TopicPartition, ...]], decision: Decision
) -> list[tuple[str, TopicPartition]]:
    """(member, partition) pairs of ``previous`` that E does not give that member."""
    out: list[tuple[str, TopicPartition]] = []
    for m, tps in previous.items():
        kept = set(decision.assignment.get(m, ()))
        if not kept.issuperset(tps):
            out.extend((m, tp) for tp in dict.fromkeys(tps) if tp not in kept)
    return out
