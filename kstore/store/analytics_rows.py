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
from datetime import datetime
from itertools import chain
from typing import Any

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
        codes = encoded.indices.fill_null(len(names)).to_numpy(zero_copy_only=False)
        return names, codes.astype(np.int64)
    first = dict.fromkeys(values)
    first.pop(None, None)
    names = list(first)
    index = {name: i for i, name in enumerate(names)}
    missing = len(names)
    return names, np.array([index.get(v, missing) for v in values], dtype=np.int64)


_ARROW_FROM = 1000


def _counts(codes: _Ints, mask: _Bools, size: int) -> _Ints:
    return np.bincount(codes[mask], minlength=size).astype(np.int64)


class AnalyticsRows:
    """Collects the rows of the ``ANALYTICS_COLUMNS`` tables (as tuples: a few per
    event, converted to Arrow once per table by ``arrow``)."""

    def __init__(self) -> None:
        self._rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in ANALYTICS_COLUMNS}

    def rows(self) -> int:
        return sum(map(len, self._rows.values()))

    def arrow(self, table: str) -> pa.Table:
        """The rows of ``table`` collected so far, with the catalogue's types."""
        schema = arrow_schema(table)
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
        previous = applied.previous
        tps = decision.tps

        revoked = _revoked(previous, decision)
        subscribed = {m: dict.fromkeys(member.topics) for m, member in members.items()}
        names = sorted(
            set(decision.topic_names)
            | {tp[0] for _, tp in revoked}
            | {t for ts in subscribed.values() for t in ts}
        )
        tcode = {t: i for i, t in enumerate(names)}
        width = len(names)
        topic: _Ints = np.array([tcode[t] for t in decision.topic_names], dtype=np.int64)
        topic = topic[decision.topic]
        number = decision.number

        # Member codes: ``decision.people`` (so ``decision.owner`` and ``decision.prev``
        # are codes), then the members at E that are not among them.
        mcode: dict[str, int] = {m: i for i, m in enumerate(decision.people)}
        for m in members:
            mcode.setdefault(m, len(mcode))
        owner = decision.owner
        prev = decision.prev
        # eligible[m, t]: m is a member at E and subscribes to t
        eligible = np.zeros((len(mcode), width), dtype=np.bool_)
        pairs = [(mcode[m], tcode[t]) for m, ts in subscribed.items() for t in ts]
        if pairs:
            eligible[tuple(np.array(pairs, dtype=np.int64).T)] = True
        at_e = np.zeros(len(mcode), dtype=np.bool_)
        at_e[[mcode[m] for m in members]] = True

        single = decision.single
        known = prev >= 0
        retainable = single & known & eligible[np.maximum(prev, 0), topic]
        size = np.array([topics.get(t, 0) for t in names], dtype=np.int64)
        exists = np.array([t in topics for t in names], dtype=np.bool_)
        wanted = exists & eligible.any(axis=0)
        covered = _counts(topic, decision.tp_first & (number < size[topic]), width)
        loads = np.bincount(owner[decision.pair_first], minlength=len(mcode))
        topic_loads = np.bincount(
            (owner * width + topic)[decision.pair_first], minlength=len(mcode) * width
        ).reshape(len(mcode), width)
        revoked_per_topic = Counter(tp[0] for _, tp in revoked)  # (member, partition) pairs

        counts = {
            "assigned": _counts(topic, decision.tp_first, width),
            "moved": _counts(topic, single & known & (prev != owner), width),
            "new": _counts(topic, single & ~known, width),
            "revoked": np.array([revoked_per_topic[t] for t in names], dtype=np.int64),
            "unassigned": np.where(wanted, size - covered, 0),
            "retainable": _counts(topic, retainable, width),
            "kept": _counts(topic, retainable & (prev == owner), width),
            "double_assigned": _counts(topic, decision.tp_first & decision.shared, width),
            "subscribers": eligible.sum(axis=0),
        }
        # Per topic, max - min of its subscribers' partitions of it (None: no subscriber).
        most = np.where(eligible, topic_loads, -1).max(axis=0, initial=-1).tolist()
        least = np.where(eligible, topic_loads, _NONE).min(axis=0, initial=_NONE).tolist()
        spreads = [None if hi < 0 else hi - lo for hi, lo in zip(most, least, strict=True)]
        self._add(
            "kstore_topic_stats",
            key,
            list(zip(names, *(counts[c].tolist() for c in _TOPIC_COUNTS), spreads, strict=True)),
        )

        counted = loads[at_e & eligible[:, exists].any(axis=1)]
        imbalance = excess = None
        if counted.size:
            imbalance = int(counted.max() - counted.min())
            ceiling = -(-int(counted.sum()) // counted.size)
            excess = int(np.maximum(counted - ceiling, 0).sum())
        self._add(
            "kstore_rebalance_stats",
            key,
            [(data.generation, at_utc, len(members), imbalance, excess)],
        )
        self._add(
            "kstore_members_at",
            key,
            [(m, t) for m, ts in subscribed.items() for t in (ts or (None,))],
        )
        self._add("kstore_topics_at", key, list(topics.items()))
        doubled = np.flatnonzero(decision.pair_first & decision.shared).tolist()
        self._add(
            "kstore_double_assignments",
            key,
            [(*tps[i], decision.owners[decision.owner[i]]) for i in doubled],
        )
        self._add("kstore_revocations", key, [(m, *tp) for m, tp in revoked])


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
