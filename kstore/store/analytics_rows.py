"""Per-rebalance analytics facts, projected beside the assignment and ownership rows.

``queries/metrics.sql`` and the windows over it must answer over millions of assignment
rows in well under a second, so nothing partition-level is left for query time: each
``AssignmentCompleted`` E is settled once, when it is stored (and again, identically, by
``rebuild``), into counts per topic and per rebalance. The counts follow
docs/spec/metrics.md; the SQL adds them up and computes what needs other events
(``duration_ms``). ``Decision`` is the partition-level reading of E that both this module
and the ownership projection use: made as E is projected (each partition's previous
owner is read then), in plain lists; a batch's decisions are then read together,
columnar (``Entries``: numpy over every entry of the batch), so neither a
10,000-partition event nor thousands of small ones cost a Python loop with branches per
partition or numpy calls per event.

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
- ``kstore_members_at`` (a view over ``kstore_member_spans``): the members of the group
  at E (the fold's), one row per subscribed topic (``topic`` NULL for a member
  subscribing to nothing); listed here (``Listed``), stored as spans;
- ``kstore_topics_at``: the topics that exist at E with their partition counts;
- ``kstore_double_assignments``: each (partition, member) of a partition E assigns to
  more than one member;
- ``kstore_revocations``: each (member, partition) of the previous ``AssignmentCompleted``
  (MemberReplaced aliasing applied) that E does not repeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from itertools import chain, compress, filterfalse, repeat
from operator import attrgetter, eq, not_
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pydantic_core import to_json

from kstore.model.events import AssignmentCompleted
from kstore.model.fold import Applied, Member
from kstore.store.catalogue import ANALYTICS, arrow_schema, columns

if TYPE_CHECKING:
    from kstore.assignors import TopicPartition

__all__ = [
    "ANALYTICS_COLUMNS",
    "MEMBER_SPANS",
    "ROW_KEY",
    "Coded",
    "Decision",
    "Entries",
    "Listed",
    "RowKey",
    "analytics_tables",
    "coded",
    "gathered",
    "keyed_table",
    "offsets",
    "row_keys",
    "stable_groups",
]

ROW_KEY = ("cluster", "group_id", "timeline", "version")
RowKey = tuple[str, str, str, int]
"""An event's stream and version: the columns that key every projection row of it."""
MEMBER_SPANS = "kstore_member_spans"
ANALYTICS_COLUMNS: dict[str, tuple[str, ...]] = {
    table: columns(table) for table in ANALYTICS if table != MEMBER_SPANS
}
"""Table -> its columns, in the catalogue's order (``kstore.store.catalogue``): the
analytics tables of rows of their own (``kstore_member_spans`` apart)."""

_Ints = npt.NDArray[np.int64]
_NONE = np.iinfo(np.int64).max
_Bools = npt.NDArray[np.bool_]


class Decision:
    """E's assignment read entry by entry (one entry per listed member and partition), as
    E is projected: its ``people`` are its owners, then the other previous owners of its
    partitions (in order of first appearance), and ``local_prev[i]`` is the ``prev(p)``
    (the last owner before E) of the partition of the ``i``-th entry looked up (every
    entry, or those of the lists E does not repeat: see ``previous``) as an index into
    them (-1: none); ``last_owner`` is advanced by E (a partition E gives to
    exactly one member is that member's from now on). Plain lists: a batch's decisions
    are read together (``Entries``).

    ``owners`` are the assignment's members, ``counts`` how many entries each has;
    ``flags`` is None when every partition is listed once (the usual case), else per
    entry (first of its (member, partition), first of its partition, of a partition
    given to several members).

    ``previous``, if given, is the stream's decision before E, with nothing handed over
    since (``last_owner`` as it left it): a member whose list E repeats from it, where
    it listed every partition once, is the ``prev(p)`` of each of them, and E leaves
    their last owner as it is, so only the other members' lists are looked up (a sticky
    decision repeats almost all of the previous one): then ``repeated`` says per owner
    whether its list is the one ``previous`` gave it (and ``previous`` is kept), else it
    is None (every list looked up).

    ``size`` is E's number of entries and ``tps`` its partitions, entry by entry (made
    when first asked for: a decision that repeats lists needs them only for its rows'
    rarer cases). ``data_json`` is E's data as the log stores it."""

    __slots__ = (
        "_pieces",
        "_tps",
        "applied",
        "at_utc",
        "counts",
        "data",
        "flags",
        "key",
        "local_prev",
        "owners",
        "people",
        "previous",
        "repeated",
        "size",
    )

    def __init__(
        self,
        key: RowKey,
        applied: Applied,
        data: AssignmentCompleted,
        at_utc: datetime,
        last_owner: dict[TopicPartition, str],
        previous: Decision | None = None,
    ) -> None:
        self.key = key
        self.applied = applied
        self.data = data
        self.at_utc = at_utc
        assignment = data.assignment
        self.owners: list[str] = list(assignment)
        lists = list(assignment.values())
        self.counts: list[int] = list(map(len, lists))
        self.size = sum(self.counts)
        self._tps: list[TopicPartition] | None = None
        self._pieces: list[str] | None = None
        self.flags: tuple[list[bool], list[bool], list[bool]] | None = None
        self.previous: Decision | None = None
        self.repeated: list[bool] | None = None
        if (
            previous is not None
            and previous.flags is None
            and self._repeats(previous.data.assignment, lists, last_owner)
        ):
            self.previous = previous
            return
        self._read_previous(list(map(last_owner.get, self.tps)))
        if len(set(self.tps)) == len(self.tps):
            _give(last_owner, self.tps, self.owners, self.counts)
            return
        members = self.member_of_entries()
        holders: dict[TopicPartition, set[str]] = {}
        pair_first, tp_first = [], []
        for member, tp in zip(members, self.tps, strict=True):
            held = holders.setdefault(tp, set())
            tp_first.append(not held)
            pair_first.append(member not in held)
            held.add(member)
        shared = [len(holders[tp]) > 1 for tp in self.tps]
        self.flags = (pair_first, tp_first, shared)
        for member, tp, first, many in zip(members, self.tps, pair_first, shared, strict=True):
            if first and not many:
                last_owner[tp] = member

    def _repeats(
        self,
        before: Mapping[str, Any],
        lists: list[Any],
        last_owner: dict[TopicPartition, str],
    ) -> bool:
        """With ``before`` the previous decision's lists (each partition listed once):
        ``people``, ``local_prev`` and ``last_owner`` advanced, looking up only the lists
        that differ from the same member's in ``before``, if E lists every partition once
        (False: nothing done, E may not)."""
        same = list(map(eq, map(before.get, self.owners), lists))
        kept = set(compress(self.owners, same))
        other = list(compress(lists, map(not_, same)))
        looked = list(chain.from_iterable(other))
        found = list(map(last_owner.get, looked))
        # A partition of a repeated list has that member as its last owner: one that
        # another list names as well shows so (or two other lists name it).
        if len(set(looked)) != len(looked) or not kept.isdisjoint(found):
            return False
        self._read_previous(found)
        self.repeated = same
        others = compress(self.owners, map(not_, same))
        _give(last_owner, looked, others, map(len, other))
        return True

    def _read_previous(self, found: list[str | None]) -> None:
        """``people`` and ``local_prev`` from the previous owners ``found`` of the
        entries looked up."""
        people: dict[str | None, int] = dict(zip(self.owners, range(len(self.owners)), strict=True))
        _code_new(people, [name for name in dict.fromkeys(found) if name is not None])
        self.people: dict[str | None, int] = people
        self.local_prev: list[int] = list(map(people.get, found, repeat(-1, len(found))))

    @property
    def tps(self) -> list[TopicPartition]:
        if self._tps is None:
            self._tps = list(chain.from_iterable(self.data.assignment.values()))
        return self._tps

    def data_json(self) -> str:
        """E's data as the log stores it: pydantic's JSON, None fields left out. A big E
        whose entries are mostly in lists it repeats from ``previous`` is written in
        pieces, a member's list each (as pydantic writes it), those it repeats taken
        from ``previous``'s text (a sticky decision's JSON is then a tenth of its
        cost)."""
        before = self.previous
        if (
            before is None
            or self.repeated is None
            or self.size < _PIECES_FROM
            # A list written anew in pieces costs about twice its part of one call:
            # worth it where most entries are in lists taken as they are.
            or 2 * sum(compress(self.counts, self.repeated)) < self.size
        ):
            return self.data.stored_json()
        theirs, people = before.pieces(), before.people
        self._pieces = [
            theirs[people[member]] if same else _piece(member, given)
            for member, given, same in zip(
                self.owners, self.data.assignment.values(), self.repeated, strict=True
            )
        ]
        return _with_pieces(self.data, self._pieces)

    def pieces(self) -> list[str]:
        """Per owner, the JSON of its member and list in E's assignment (``_piece``)."""
        if self._pieces is None:
            self._pieces = list(map(_piece, self.owners, self.data.assignment.values()))
        return self._pieces

    def member_of_entries(self) -> list[str]:
        return [m for m, n in zip(self.owners, self.counts, strict=True) for _ in range(n)]

    def listings(self) -> list[int]:
        """Per entry, how many times its member was listed with its partition before it
        in E (0: the first time)."""
        seen: dict[tuple[str, TopicPartition], int] = {}
        out = []
        for pair in zip(self.member_of_entries(), self.tps, strict=True):
            listed = seen.get(pair, 0)
            out.append(listed)
            seen[pair] = listed + 1
        return out


def _give(
    last_owner: dict[TopicPartition, str],
    tps: Iterable[TopicPartition],
    members: Iterable[str],
    counts: Iterable[int],
) -> None:
    """``last_owner`` of each of ``tps`` (distinct), the entries of lists of ``counts``
    one after the other, set to its list's member of ``members``: maps, no Python per
    list (a decision has as many lists as members)."""
    last_owner.update(zip(tps, chain.from_iterable(map(repeat, members, counts)), strict=True))


_TOPICS = attrgetter("topics")
"""A ``Member``'s topics."""
_PIECES_FROM = 1024
"""The fewest entries of a decision whose JSON is written in pieces (``data_json``):
below, pydantic's one call costs less than the pieces' calls."""
_EMPTY = '"assignment":{}'


def _piece(member: str, given: Sequence[TopicPartition]) -> str:
    """``"member":[[topic,partition],...]`` as pydantic writes a member's list in E's
    JSON."""
    return to_json({member: given}).decode()[1:-1]


def _with_pieces(data: AssignmentCompleted, pieces: list[str]) -> str:
    """``data``'s JSON as pydantic writes it (None fields left out), its assignment
    made of ``pieces`` (``_piece``, one per member in order). The other fields are
    pydantic's own text: the first ``"assignment":{}`` there is that field (a string
    field's quotes are escaped)."""
    empty = data.model_copy(update={"assignment": {}}).stored_json()
    return empty.replace(_EMPTY, '"assignment":{' + ",".join(pieces) + "}", 1)


def _flat_ints(parts: Sequence[Sequence[int]]) -> _Ints:
    return np.fromiter(chain.from_iterable(parts), dtype=np.int64)


def _code_new(codes: dict[Any, int], values: Iterable[Any]) -> None:
    """``codes`` given each of ``values`` (distinct) it lacks, coded after its own in order."""
    more = list(filterfalse(codes.__contains__, values))
    codes.update(zip(more, range(len(codes), len(codes) + len(more)), strict=True))


def _ranges(starts: _Ints, counts: _Ints) -> _Ints:
    """The indices of runs of ``counts`` from ``starts``, one run after the other."""
    return np.repeat(starts - offsets(counts), counts) + np.arange(counts.sum(), dtype=np.int64)


def offsets(counts: Sequence[int] | _Ints) -> _Ints:
    """Where each of runs of ``counts`` values, one after the other, starts."""
    out = np.zeros(len(counts), dtype=np.int64)
    if len(counts) > 1:
        np.cumsum(counts[:-1], out=out[1:])
    return out


class Coded(NamedTuple):
    """Text as codes into ``names`` (-1: NULL). Made into an Arrow dictionary array,
    which DuckDB stores as the text itself: no Python string per row on the way."""

    codes: _Ints
    names: Sequence[str]

    def at(self, index: _Ints) -> Coded:
        return Coded(self.codes[index], self.names)

    def extended(self, values: Sequence[str | None]) -> Coded:
        """``values`` after these."""
        known = {name: i for i, name in enumerate(self.names)}
        more = [-1 if v is None else known.setdefault(v, len(known)) for v in values]
        return Coded(np.concatenate([self.codes, np.array(more, dtype=np.int64)]), list(known))

    def arrow(self) -> pa.Array:
        null = self.codes < 0
        indices = pa.array(np.maximum(self.codes, 0).astype(np.int32), mask=null)
        return pa.DictionaryArray.from_arrays(indices, pa.array(self.names, type=pa.string()))


def coded(values: Sequence[str | None]) -> Coded:
    names, codes = _encoded(values)
    return Coded(codes, names)


def gathered(values: Sequence[Any], index: _Ints, kind: pa.DataType) -> pa.Array:
    """``values[i]`` for each ``i`` of ``index`` (None: NULL), as one Arrow array of
    type ``kind``: numpy picks them (Arrow's ``take`` would import ``pyarrow.compute``,
    0.3 s), text coded."""
    return _arrow(_numpy(values, kind), kind, index)


_Column = Coded | npt.NDArray[Any]


def _numpy(values: Sequence[Any], kind: pa.DataType) -> _Column:
    """``values`` (None: NULL) as numbers or times in numpy (NULL: masked), or text
    coded."""
    if pa.types.is_string(kind):
        return coded(values)
    dtype = "datetime64[us]" if pa.types.is_timestamp(kind) else np.int64
    null = [v is None for v in values]
    if not any(null):
        return np.array(values, dtype=dtype)
    some = next(v for v in values if v is not None) if not all(null) else 0
    filled = np.array([some if v is None else v for v in values], dtype=dtype)
    return np.ma.masked_array(filled, mask=null)


def _arrow(column: _Column, kind: pa.DataType, index: _Ints | None = None) -> pa.Array:
    """The column (its rows ``index``) in Arrow: text as a dictionary array, the rest
    of type ``kind``."""
    if isinstance(column, Coded):
        return (column if index is None else column.at(index)).arrow()
    picked = column if index is None else column[index]
    if isinstance(picked, np.ma.MaskedArray):
        return pa.array(picked.data, type=kind, mask=np.ma.getmaskarray(picked))
    return pa.array(picked, type=kind)


def row_keys(keys: Sequence[RowKey]) -> list[_Column]:
    """The ``ROW_KEY`` columns of events keyed ``keys``, for ``keyed_table``."""
    schema = arrow_schema("kstore_rebalance_stats")
    columns = list(zip(*keys, strict=True)) if keys else [() for _ in ROW_KEY]
    return [
        _numpy(column, schema.field(name).type)
        for name, column in zip(ROW_KEY, columns, strict=True)
    ]


def keyed_table(
    table: str, keys: Sequence[_Column], of: _Ints, columns: Mapping[str, Any]
) -> pa.Table:
    """``table``'s rows: row ``r`` of the event whose key is row ``of[r]`` of ``keys``
    (``row_keys``), its other columns from ``columns`` (Arrow or numpy arrays, coded
    text or lists). Numbers and times have the catalogue's types, text is a dictionary
    array of it."""
    schema = arrow_schema(table)
    arrays = []
    for field in schema:
        if field.name in ROW_KEY:
            values = _arrow(keys[ROW_KEY.index(field.name)], field.type, of)
        else:
            values = columns[field.name]
            if isinstance(values, Coded | np.ndarray):
                values = _arrow(values, field.type)
            elif not isinstance(values, pa.Array):
                values = pa.array(values, type=field.type)
        arrays.append(values)
    return pa.Table.from_arrays(arrays, names=list(schema.names))


class Entries:
    """Every entry of a batch of decisions, columnar: ``event`` (the decision it is of),
    ``owner`` (an index into ``owner_names``, the batch's members), ``topic`` (into
    ``topic_names``), ``number``, ``listing`` (``Decision.listings``), the flags of
    ``Decision`` (``single``: the only entry of a partition given to one member), and per
    decision the ``first`` of its entries and of its owners. Local codes, per decision:
    ``local_owner`` indexes its owners, ``local_prev`` its ``people`` (its owners, then
    the other previous owners; -1: none); ``previous`` codes the previous owners.
    ``listed`` are the entries of the lists converted (``_converted``), ``through`` per
    one of them the last decision that lists it unchanged; ``looked`` those of the lists
    whose previous owners were looked up (all but those a decision repeats from its
    ``previous``)."""

    def __init__(self, decisions: Sequence[Decision]) -> None:
        self.decisions = decisions
        sizes = [d.size for d in decisions]
        owners = [len(d.owners) for d in decisions]
        self.sizes: _Ints = np.array(sizes, dtype=np.int64)
        self.event: _Ints = np.repeat(np.arange(len(decisions), dtype=np.int64), sizes)
        self.first: _Ints = offsets(sizes)
        self.first_owner: _Ints = offsets(owners)
        self.owner_names, codes = _encoded(list(chain.from_iterable(d.owners for d in decisions)))
        counts = _flat_ints([d.counts for d in decisions])
        self.owner: _Ints = np.repeat(codes, counts)
        # Each entry's owner as an index into its decision's owners.
        member_event = np.repeat(np.arange(len(decisions), dtype=np.int64), owners)
        local = np.arange(len(codes), dtype=np.int64) - self.first_owner[member_event]
        self.local_owner: _Ints = np.repeat(local, counts)
        size = sum(sizes)
        # Each list's partitions converted once: a list a decision repeats from the
        # previous one in the batch is gathered from where that one's was converted.
        converted = _converted(decisions)
        tps = list(chain.from_iterable(converted.lists))
        topics, numbers = zip(*tps, strict=True) if tps else ((), ())
        self.topic_names, topic = _encoded(topics)
        number = np.array(numbers, dtype=np.int64)
        lists = offsets(counts)  # where each owner's list starts among the entries
        if len(tps) < size:
            at = _ranges(offsets(counts[converted.own])[converted.of], counts)
            topic, number = topic[at], number[at]
        self.listed: _Ints = _ranges(lists[converted.own], counts[converted.own])
        self.through: _Ints = np.repeat(converted.through, counts[converted.own])
        self.topic: _Ints = topic
        self.number: _Ints = number
        self.pair_first: _Bools = np.ones(size, dtype=np.bool_)
        self.tp_first: _Bools = np.ones(size, dtype=np.bool_)
        self.shared: _Bools = np.zeros(size, dtype=np.bool_)
        self.listing: _Ints = np.zeros(size, dtype=np.int64)
        for d, start in zip(decisions, self.first.tolist(), strict=True):
            if d.flags is not None:
                end = start + d.size
                self.pair_first[start:end], self.tp_first[start:end], self.shared[start:end] = (
                    d.flags
                )
                self.listing[start:end] = d.listings()
        self.single: _Bools = self.pair_first & ~self.shared
        self.people: list[dict[str | None, int]] = [d.people for d in decisions]
        # A repeated list's previous owner is its member; the others' were looked up.
        self.local_prev: _Ints = self.local_owner.copy()
        found = np.flatnonzero(converted.looked)
        self.looked: _Ints = _ranges(lists[found], counts[found])
        self.local_prev[self.looked] = _flat_ints([d.local_prev for d in decisions])

    def previous(self, index: _Ints) -> Coded:
        """The previous owners (``prev(p)``) of the entries ``index``, coded (-1: none)."""
        # Each decision's people coded in the batch: maps, no Python per name (a
        # decision has as many as members).
        every = list(chain.from_iterable(self.people))
        distinct = dict.fromkeys(every)
        names = dict(zip(distinct, range(len(distinct)), strict=True))
        codes = chain(map(names.__getitem__, every), (-1,))  # the last: none
        known = np.fromiter(codes, dtype=np.int64, count=len(every) + 1)
        base = offsets([len(p) for p in self.people])
        local = self.local_prev[index]
        at = np.where(local >= 0, base[self.event[index]] + local, len(every))
        return Coded(known[at], [str(name) for name in names])

    def changed(self) -> _Ints:
        """Entries of single-owner partitions whose owner is not ``prev(p)``."""
        return np.flatnonzero(self.single & (self.local_prev != self.local_owner))


class _Converted(NamedTuple):
    """The lists of a batch's decisions to convert: every one but those a decision
    repeats from its ``previous`` in the batch."""

    lists: list[Sequence[TopicPartition]]
    of: _Ints
    """Per list of each decision (its owners', one after the other), the one converted
    that it is or repeats."""
    own: _Ints
    """Per list converted, its place among every decision's lists."""
    through: _Ints
    """Per list converted, the last decision that lists it (it or a repetition)."""
    looked: _Bools
    """Per list of each decision, whether its previous owners were looked up (all but
    the lists a decision repeats from its ``previous``, in the batch or not)."""


def _converted(decisions: Sequence[Decision]) -> _Converted:
    # Per list of each decision (its owners', one after the other): whether it repeats
    # the previous decision's list of its member, and which list of the batch that is.
    # Python per decision only (maps over its owners), then numpy for the batch.
    same: list[bool] = []
    looked: list[bool] = []
    local: list[int] = []  # a repeated list's place among its previous decision's lists
    theirs: list[int] = []  # per decision: where its previous decision's lists start
    first: list[int] = []  # per decision: where its lists start
    index = {id(d): i for i, d in enumerate(decisions)}
    for d in decisions:
        first.append(len(same))
        size = len(d.owners)
        if d.repeated is None:
            looked.extend(repeat(True, size))
        else:
            looked.extend(map(not_, d.repeated))
        before = None if d.previous is None else index.get(id(d.previous))
        if d.repeated is None or before is None:
            same.extend(repeat(False, size))
            local.extend(repeat(0, size))
            theirs.append(0)
            continue
        same.extend(d.repeated)
        local.extend(map(decisions[before].people.get, d.owners, repeat(0, size)))
        theirs.append(first[before])
    repeats = np.array(same, dtype=np.bool_)
    owners = [len(d.owners) for d in decisions]
    # Each list -> the first of the lists it repeats, one after the other.
    root = np.arange(len(same), dtype=np.int64)
    earlier = np.array(local, dtype=np.int64) + np.repeat(np.array(theirs, dtype=np.int64), owners)
    root[repeats] = earlier[repeats]
    while True:
        up = root[root]
        if np.array_equal(up, root):
            break
        root = up
    own = np.flatnonzero(~repeats)
    number = np.zeros(len(same), dtype=np.int64)
    number[own] = np.arange(len(own), dtype=np.int64)
    through = np.zeros(len(own), dtype=np.int64)
    np.maximum.at(through, number[root], np.repeat(np.arange(len(decisions)), owners))
    lists = chain.from_iterable(d.data.assignment.values() for d in decisions)
    converted: list[Sequence[TopicPartition]] = list(compress(lists, map(not_, same)))
    return _Converted(converted, number[root], own, through, np.array(looked, dtype=np.bool_))


def _encoded(values: Sequence[Any]) -> tuple[list[Any], _Ints]:
    """The distinct values but None, in order of first appearance, and each value's
    index among them (None: -1). Dict lookups: Arrow's dictionary encoding takes 0.8 of
    their time but imports ``pyarrow.compute``, 30 ms of CPU, more than it saves below
    some 2,000,000 values (a ``kstore append`` is a process of its own)."""
    first = dict.fromkeys(values)
    first.pop(None, None)
    names = list(first)
    codes: dict[Any, int] = dict(zip(names, range(len(names)), strict=True))
    codes[None] = -1
    return names, np.fromiter(map(codes.__getitem__, values), dtype=np.int64, count=len(values))


def _distinct(keys: _Ints) -> tuple[_Ints, _Ints]:
    """The distinct ``keys`` (non-negative), ascending, and each key's index among
    them: marked in an array as long as the largest key where that is not much longer
    than ``keys`` (no sort), else sorted."""
    size = int(keys.max()) + 1 if len(keys) else 0
    if size > 4 * len(keys) + 4096:
        found, inverse = np.unique(keys, return_inverse=True)
        return found, inverse.reshape(-1)
    present = np.zeros(size, dtype=np.bool_)
    present[keys] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[keys]


def stable_groups(columns: list[_Ints]) -> tuple[_Ints, npt.NDArray[np.bool_]]:
    """The order that sorts rows by ``columns`` (integers, the first the most
    significant), stable; and, in that order, whether each row's values differ from the
    row's before it (the first row's do). A column of one value is left out (it tells
    no rows apart)."""
    size = len(columns[0])
    telling = []
    for column in columns if size else ():
        low, high = int(column.min()), int(column.max())
        if low != high:
            telling.append((column - low if low else column, high - low + 1))
    code: _Ints = np.zeros(size, dtype=np.int64)
    span = 1
    for index, (column, width) in enumerate(telling):
        span *= width
        if span >= 1 << 62:  # too many for one number: sort by each column
            kept = [c for c, _ in telling]
            order = np.lexsort(kept[::-1])
            changed = np.zeros(size, dtype=np.bool_)
            for column in kept:
                ordered = column[order]
                changed[1:] |= ordered[1:] != ordered[:-1]
            break
        code = column if index == 0 else code * width + column
    else:
        order = np.argsort(code, kind="stable")
        ordered = code[order]
        changed = np.ones(size, dtype=np.bool_)
        changed[1:] = ordered[1:] != ordered[:-1]
    if size:
        changed[0] = True
    return order, changed


class Listed(NamedTuple):
    """Rows listed per decision: row ``r`` is of decision ``of[r]``; its text coded.
    ``through``: per row, the last decision of its stream that lists it again with
    each one in between (their rows not given; None: ``of``)."""

    of: _Ints
    columns: dict[str, Coded]
    through: _Ints | None = None


def analytics_tables(entries: Entries) -> tuple[dict[str, pa.Table], Listed]:
    """The ``ANALYTICS_COLUMNS`` tables' rows of a batch of decisions, and its
    ``kstore_members_at`` rows (``member``, ``topic``)."""
    analytics = _Analytics(entries)
    return analytics.tables(), analytics.members_at()


class _Analytics:
    """The analytics rows of a batch, columnar. Each E's topics (its assigned, revoked
    and subscribed ones, sorted), member codes (its ``people``, then the members at E
    not among them) and (topic, member) pairs get slots of their own, side by side
    (pairs topic-major within an E), so that each count is one numpy call for the whole
    batch (numpy's calls cost as much for five entries as for thousands)."""

    def __init__(self, entries: Entries) -> None:
        self.entries = entries
        decisions = entries.decisions
        self.keys = row_keys([d.key for d in decisions])
        self.names: list[str] = []
        """Every E's topics, one after the other."""
        widths: list[int] = []
        people: list[int] = []
        local_topic: list[int] = []  # per E and topic it assigns: the topic's code in E
        self.size: list[int] = []
        self.exists: list[bool] = []
        self.revoked: list[int] = []
        self.rows: dict[str, tuple[list[int], dict[str, list[Any]]]] = {
            table: ([], {c: [] for c in cols if c not in ROW_KEY})
            for table, cols in ANALYTICS_COLUMNS.items()
            if table in _LISTED
        }
        subscribed = _Subscribed()
        topics_at = self.rows["kstore_topics_at"][1]
        doubled = self.rows["kstore_double_assignments"][1]
        # Each E's assigned topics (codes into the batch's, ascending) and each entry's
        # place among them: numpy over the batch, no Python per entry.
        width = max(len(entries.topic_names), 1)
        each = np.arange(0, len(decisions) * width, width, dtype=np.int64)
        assigned, assigned_of = _distinct(np.repeat(each, entries.sizes) + entries.topic)
        bounds = np.searchsorted(assigned // width, np.arange(len(decisions) + 1)).tolist()
        assigned_topics = [entries.topic_names[c] for c in (assigned % width).tolist()]
        self.revocations = _revocations(entries)
        revoked = self.revocations.per_topic(len(decisions))
        for index, (d, mcode) in enumerate(zip(decisions, entries.people, strict=True)):
            applied = d.applied
            members, topics = applied.members, applied.topics
            gone = revoked[index]
            kinds = subscribed.read(members)
            own = assigned_topics[bounds[index] : bounds[index + 1]]
            names = sorted(
                {*own}
                | gone.keys()
                | {t for kind in dict.fromkeys(kinds) for t in subscribed.topics[kind]}
            )
            tcode = {t: i for i, t in enumerate(names)}
            local_topic.extend(tcode[t] for t in own)
            mcode = dict(mcode)
            _code_new(mcode, members)
            count = len(mcode)
            self.names.extend(names)
            widths.append(len(names))
            people.append(count)
            self.size.extend([topics.get(t, 0) for t in names])
            self.exists.extend([t in topics for t in names])
            self.revoked.extend([gone.get(t, 0) for t in names])
            subscribed.add(members, kinds, mcode, tcode, d.key[:3])
            self._listed("kstore_topics_at", list(topics.items()), topics_at)
            self._listed("kstore_double_assignments", _doubled(d), doubled)
        self.widths = widths
        self._all: _Ints | None = None  # every entry per topic slot (``_of_topics``)
        self.subscribed = subscribed.rows()
        topic = np.array(local_topic, dtype=np.int64)[assigned_of]
        self._counts(widths, people, topic)

    def _listed(
        self, table: str, rows: list[tuple[Any, ...]], columns: dict[str, list[Any]]
    ) -> None:
        self.rows[table][0].append(len(rows))
        if rows:
            for values, column in zip(zip(*rows, strict=True), columns.values(), strict=True):
                column.extend(values)

    def _counts(
        self,
        widths: list[int],
        people: list[int],
        topic: _Ints,
    ) -> None:
        entries = self.entries
        events = np.arange(len(widths), dtype=np.int64)
        self.topics = sum(widths)
        self.members = sum(people)
        topic_base = offsets(widths)
        self.member_base = offsets(people)
        pair_sizes = [w * m for w, m in zip(widths, people, strict=True)]
        pair_base = offsets(pair_sizes)
        slots = sum(pair_sizes)
        self.people: _Ints = np.array(people, dtype=np.int64)

        # Per entry (a member and partition that some E lists): its slots (an E's
        # entries are side by side: its values repeated, not gathered by entry).
        sizes = entries.sizes
        self.topic = np.repeat(topic_base, sizes) + topic
        owner, prev = entries.local_owner, entries.local_prev
        self.owner = np.repeat(self.member_base, sizes) + owner
        self.known = prev >= 0
        self.same = prev == owner
        pair_of = np.repeat(pair_base, sizes) + topic * np.repeat(self.people, sizes)  # + member

        # The (topic, member) pairs of a member at E subscribing to the topic (each
        # once): their slots, and their topic and member slots.
        rows = self.subscribed
        pairs = rows.local_topic >= 0
        pair_event = rows.of[pairs]
        pair_topic, pair_member = rows.local_topic[pairs], rows.local_member[pairs]
        pair_slot = pair_base[pair_event] + pair_topic * self.people[pair_event] + pair_member
        self.pair_topic = topic_base[pair_event] + pair_topic
        self.pair_member = self.member_base[pair_event] + pair_member
        eligible = np.zeros(slots, dtype=np.bool_)
        eligible[pair_slot] = True
        single = entries.single
        self.retainable = single & self.known & eligible[pair_of + np.maximum(prev, 0)]
        loaded = pair_of + owner
        if not entries.pair_first.all():
            loaded = loaded[entries.pair_first]
        self.pair_loads = np.bincount(loaded, minlength=slots)[pair_slot]
        self.size_of: _Ints = np.array(self.size, dtype=np.int64)
        self.exists_of: _Bools = np.array(self.exists, dtype=np.bool_)
        self.member_event = np.repeat(events, people)
        self.at_e = np.zeros(self.members, dtype=np.bool_)
        self.at_e[self.member_base[rows.member_of] + rows.member_local] = True

    def members_at(self) -> Listed:
        rows = self.subscribed
        kept = rows.kept
        columns = {"member": rows.member.at(kept), "topic": rows.topic.at(kept)}
        return Listed(rows.of[kept], columns, rows.through)

    def _of_topics(self, mask: _Bools) -> _Ints:
        """Per topic slot, its entries of ``mask``: those left out counted where they are
        fewer (a mask of most entries is not copied out)."""
        if 2 * np.count_nonzero(mask) <= len(mask):
            return np.bincount(self.topic[mask], minlength=self.topics)
        if self._all is None:
            self._all = np.bincount(self.topic, minlength=self.topics)
        return self._all - np.bincount(self.topic[~mask], minlength=self.topics)

    def tables(self) -> dict[str, pa.Table]:
        out = {
            "kstore_rebalance_stats": self._rebalance_stats(),
            "kstore_topic_stats": self._topic_stats(),
        }
        for table, (counts, listed) in self.rows.items():
            of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
            out[table] = keyed_table(table, self.keys, of, listed)
        gone = self.revocations
        columns = {"member": gone.member, "topic": gone.topic, "partition": gone.number}
        out["kstore_revocations"] = keyed_table("kstore_revocations", self.keys, gone.of, columns)
        return {table: out[table] for table in ANALYTICS_COLUMNS}

    def _topic_stats(self) -> pa.Table:
        entries = self.entries
        subscribers = np.bincount(self.pair_topic, minlength=self.topics)
        wanted = self.exists_of & (subscribers > 0)
        covered = self._of_topics(entries.tp_first & (entries.number < self.size_of[self.topic]))
        single, known, retainable = entries.single, self.known, self.retainable
        columns: dict[str, Any] = {
            "topic": self.names,
            "assigned": self._of_topics(entries.tp_first),
            "moved": self._of_topics(single & known & ~self.same),
            "new": self._of_topics(single & ~known),
            "revoked": self.revoked,
            "unassigned": np.where(wanted, self.size_of - covered, 0),
            "retainable": self._of_topics(retainable),
            "kept": self._of_topics(retainable & self.same),
            "double_assigned": self._of_topics(entries.tp_first & entries.shared),
            "subscribers": subscribers,
            # Per topic, max - min of its subscribers' partitions of it (NULL: none).
            "imbalance": _spread(self.pair_topic, self.pair_loads, self.topics),
        }
        of = np.repeat(np.arange(len(self.widths), dtype=np.int64), self.widths)
        return keyed_table("kstore_topic_stats", self.keys, of, columns)

    def _rebalance_stats(self) -> pa.Table:
        entries = self.entries
        decisions = entries.decisions
        # Loads over the members at E that subscribe to a topic that exists at E.
        counts = np.zeros(self.members, dtype=np.bool_)
        counts[self.pair_member[self.exists_of[self.pair_topic]]] = True
        loads = np.bincount(self.owner[entries.pair_first], minlength=self.members)
        counted = self.at_e & counts
        which, load = self.member_event[counted], loads[counted]
        many = np.bincount(which, minlength=len(decisions))
        total = np.bincount(which, weights=load, minlength=len(decisions)).astype(np.int64)
        ceiling = -(-total // np.maximum(many, 1))
        excess = np.bincount(
            which, weights=np.maximum(load - ceiling[which], 0), minlength=len(decisions)
        ).astype(np.int64)
        columns: dict[str, Any] = {
            "generation": [d.data.generation for d in decisions],
            "at": [d.at_utc for d in decisions],
            "members": [len(d.applied.members) for d in decisions],
            "imbalance": _spread(which, load, len(decisions)),
            "excess": _masked(excess, many == 0, pa.int32()),
        }
        of = np.arange(len(decisions), dtype=np.int64)
        return keyed_table("kstore_rebalance_stats", self.keys, of, columns)


class _MembersAt(NamedTuple):
    """A batch's ``kstore_members_at`` rows (a member at E and a topic it subscribes
    to, each once, in order; topic -1 for a member subscribing to nothing): ``of``
    their E, ``member`` and ``topic`` coded in the batch, and in E (``local_member``:
    the member's code among E's ``people`` and members at E; ``local_topic``: the
    topic's among E's topics)."""

    of: _Ints
    member: Coded
    topic: Coded
    local_member: _Ints
    local_topic: _Ints
    member_of: _Ints
    """Per member at an E (in order), its E."""
    member_local: _Ints
    """... and its code in E."""
    kept: _Ints
    """The rows but those of a member the stream's E before (in the batch) had with
    the same subscription (its rows go on those of that E),"""
    through: _Ints
    """... and per one of them, the last E that has its member so, each E between too."""


class _Subscribed:
    """The members at each E of a batch and their topics: Python per member only for
    its codes and its subscription, the (member, topic) rows in numpy (``rows``) from
    the few subscriptions the members have."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, ...], int] = {}
        """A member's topics (as its ``Member`` has them) -> its subscription."""
        self.topics: list[tuple[str, ...]] = []
        """Per subscription, its topics, each once, in order."""
        self.members: dict[str, int] = {}
        self.batch_topics: dict[str, int] = {}
        self.counts: list[int] = []  # per E: its members
        self.before: list[int] = []  # per E: its stream's E before it (-1: none)
        self.latest: dict[tuple[str, str, str], int] = {}  # per stream: its last E
        self.kind: list[int] = []  # per member at an E: its subscription,
        self.member: list[int] = []  # its code in the batch,
        self.local: list[int] = []  # in E,
        self.slot: list[int] = []  # and the slot of its subscription in E
        self.sizes: list[int] = []  # per slot: its rows (topics, or 1 for none),
        self.slot_local: list[int] = []  # one after the other: their topics in E
        self.slot_topic: list[int] = []  # and in the batch (-1: none)

    def read(self, members: Mapping[str, Member]) -> list[int]:
        """Each member's subscription."""
        kinds = list(map(_TOPICS, members.values()))
        for kind in dict.fromkeys(kinds):
            if kind not in self.found:
                self.found[kind] = len(self.topics)
                self.topics.append(tuple(dict.fromkeys(kind)))
        return list(map(self.found.__getitem__, kinds))

    def add(
        self,
        members: Mapping[str, Member],
        kinds: list[int],
        mcode: Mapping[str | None, int],
        tcode: Mapping[str, int],
        stream: tuple[str, str, str],
    ) -> None:
        """E's ``members``, their subscriptions (``read``), E's codes of its members
        and topics, and its stream."""
        slots: dict[int, int] = {}
        batch = self.batch_topics
        for kind in dict.fromkeys(kinds):
            slots[kind] = len(self.sizes)
            topics = self.topics[kind]
            self.sizes.append(max(len(topics), 1))
            self.slot_local.extend([tcode[t] for t in topics] or [-1])
            self.slot_topic.extend([batch.setdefault(t, len(batch)) for t in topics] or [-1])
        self.before.append(self.latest.get(stream, -1))
        self.latest[stream] = len(self.counts)
        self.counts.append(len(members))
        self.kind.extend(kinds)
        self.slot.extend(map(slots.__getitem__, kinds))
        self.local.extend(map(mcode.__getitem__, members))
        _code_new(self.members, members)
        self.member.extend(map(self.members.__getitem__, members))

    def rows(self) -> _MembersAt:
        sizes = np.array(self.sizes, dtype=np.int64)
        slot = np.array(self.slot, dtype=np.int64)
        repeats = sizes[slot]
        of = np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)
        local = np.array(self.local, dtype=np.int64)
        at = _ranges(offsets(sizes)[slot], repeats)
        member = np.repeat(np.array(self.member, dtype=np.int64), repeats)
        topic = np.array(self.slot_topic, dtype=np.int64)[at]
        repeated, through = self._repeated(of)
        new = ~repeated
        return _MembersAt(
            np.repeat(of, repeats),
            Coded(member, list(self.members)),
            Coded(topic, list(self.batch_topics)),
            np.repeat(local, repeats),
            np.array(self.slot_local, dtype=np.int64)[at],
            of,
            local,
            _ranges(offsets(repeats)[new], repeats[new]),
            np.repeat(through[new], repeats[new]),
        )

    def _repeated(self, of: _Ints) -> tuple[_Bools, _Ints]:
        """Per member at an E (of E ``of``): whether its stream's E before had it with
        the same subscription, and the last E that has it so from there on, each E
        between too (of a member that is repeated: any)."""
        size = len(of)
        member = np.array(self.member, dtype=np.int64)
        kind = np.array(self.kind, dtype=np.int64)
        before = np.array(self.before, dtype=np.int64)[of]
        width = len(self.members)
        key = of * width + member  # distinct: a member is at an E once
        order = np.argsort(key)
        wanted = before * width + member
        at = order[np.minimum(np.searchsorted(key[order], wanted), max(size - 1, 0))]
        repeated = (before >= 0) & (key[at] == wanted) & (kind[at] == kind)
        first = np.where(repeated, at, np.arange(size, dtype=np.int64))
        while True:  # each member at an E -> the first E of its run
            up = first[first]
            if np.array_equal(up, first):
                break
            first = up
        through = of.copy()
        np.maximum.at(through, first, of)
        return repeated, through


_LISTED = ("kstore_topics_at", "kstore_double_assignments")
"""The analytics tables whose few rows per E are listed as E is read."""


def _masked(values: _Ints, null: _Bools, kind: pa.DataType) -> pa.Array:
    """Numbers, NULL where ``null`` (an Arrow array's ``cast`` would import
    ``pyarrow.compute``: 0.3 s)."""
    return pa.array(values, type=kind, mask=null)


def _spread(groups: _Ints, values: _Ints, size: int) -> pa.Array:
    """Per group of ``size``, max - min of its ``values`` (NULL: none)."""
    most = np.full(size, -1, dtype=np.int64)
    least = np.full(size, _NONE, dtype=np.int64)
    np.maximum.at(most, groups, values)
    np.minimum.at(least, groups, values)
    none = most < 0
    return _masked(np.where(none, 0, most - least), none, pa.int32())


def _doubled(d: Decision) -> list[tuple[str, int, str]]:
    """(topic, partition, member) of each (partition, member) of a partition E gives
    to several members."""
    if d.flags is None:
        return []
    pair_first, _, shared = d.flags
    return [
        (*tp, member)
        for tp, member, first, many in zip(
            d.tps, d.member_of_entries(), pair_first, shared, strict=True
        )
        if first and many
    ]


class _Revocations(NamedTuple):
    """A batch's ``kstore_revocations`` rows: row ``r`` is of decision ``of[r]``, its
    ``member`` and partition (``topic``, ``number``) coded."""

    of: _Ints
    member: Coded
    topic: Coded
    number: _Ints

    def per_topic(self, decisions: int) -> list[dict[str, int]]:
        """Per decision of the batch, its revoked partitions' topics and how many of each
        (in order of their codes)."""
        out: list[dict[str, int]] = [{} for _ in range(decisions)]
        width = max(len(self.topic.names), 1)
        pairs, pair_of = _distinct(self.of * width + self.topic.codes)
        counts = np.bincount(pair_of, minlength=len(pairs)).tolist()
        for event, topic, count in zip(
            (pairs // width).tolist(), (pairs % width).tolist(), counts, strict=True
        ):
            out[event][self.topic.names[topic]] = count
        return out


def _revocations(entries: Entries) -> _Revocations:
    """The (member, partition) pairs of each decision E's previous assignment
    (``Applied.previous``) that E does not give that member, each once, in the order of
    the previous lists (a list E repeats from ``previous`` revokes none and is not
    read): Python per E only (maps over its lists); the pairs are told apart from E's
    entries by one sort of the batch (an eager range decision revokes from almost every
    member, a list each)."""
    members: list[str] = []
    lists: list[Sequence[TopicPartition]] = []
    listed: list[int] = []  # per E: its previous lists read
    for d in entries.decisions:
        previous = d.applied.previous
        read = list(previous)
        if d.repeated is not None:
            read = list(filterfalse(set(compress(d.owners, d.repeated)).__contains__, read))
        members.extend(read)
        lists.extend(map(previous.__getitem__, read))
        listed.append(len(read))
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    tps = list(chain.from_iterable(lists))
    topics, numbers = zip(*tps, strict=True) if tps else ((), ())
    member_codes = dict(zip(entries.owner_names, range(len(entries.owner_names)), strict=True))
    _code_new(member_codes, dict.fromkeys(members))
    topic_codes = dict(zip(entries.topic_names, range(len(entries.topic_names)), strict=True))
    _code_new(topic_codes, dict.fromkeys(topics))
    decisions = np.arange(len(listed), dtype=np.int64)
    of = np.repeat(np.repeat(decisions, listed), counts)
    member = np.repeat(
        np.fromiter(map(member_codes.__getitem__, members), dtype=np.int64, count=len(members)),
        counts,
    )
    topic = np.fromiter(map(topic_codes.__getitem__, topics), dtype=np.int64, count=len(topics))
    number = np.array(numbers, dtype=np.int64)
    # E's entries of the lists read first, then the previous pairs, sorted stably: a
    # previous pair that starts its group is in none of E's lists and is its first.
    now = entries.looked
    order, starts = stable_groups(
        [
            np.concatenate([entries.event[now], of]),
            np.concatenate([entries.owner[now], member]),
            np.concatenate([entries.topic[now], topic]),
            np.concatenate([entries.number[now], number]),
        ]
    )
    first = order[starts]
    gone = np.sort(first[first >= len(now)]) - len(now)
    return _Revocations(
        of[gone],
        Coded(member[gone], list(member_codes)),
        Coded(topic[gone], list(topic_codes)),
        number[gone],
    )
