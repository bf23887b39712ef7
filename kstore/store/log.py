"""The store: an append-only log of events in a DuckDB file, and what is derived from it.

Every access is a short window: take the side lock (``_lock``), open the file (DuckDB
directly; through SQLAlchemy with ``NullPool`` for alembic's migrations), check the
schema revision, work, close, let go. Writes run in one DuckDB transaction per append,
so a batch, its projection rows, its stream heads and snapshots, and a recorder's
checkpoint, are stored together or not at all, even when the process is killed
halfway. Bulk rows go in as Arrow tables.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import duckdb
import numpy as np
import pyarrow as pa
from pydantic_core import from_json

from kstore._apart import FORKS, Apart
from kstore._errors import KstoreError, UsageError
from kstore._gc import cyclic_gc_paused
from kstore.model.events import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    MemberReplaced,
    StreamId,
    by_id,
    conflict,
    parse_stored_event,
)
from kstore.model.fold import Applied, GroupState
from kstore.store import catalogue
from kstore.store._lock import (
    StoreBusyError,
    busy_elsewhere,
    corruption,
    lock_timeout,
    store_lock,
    yielding_to_writers,
)
from kstore.store._query import checked_statement, readable, run_sandboxed
from kstore.store.catalogue import DERIVED, HEAD, REVISIONS
from kstore.store.interface import (
    AppendResult,
    CheckpointWrite,
    ConcurrencyError,
    Folded,
    QueryResult,
    StoredEvent,
    StreamInfo,
)
from kstore.store.projections import PROJECTED, Projector, Spans, StreamHead

__all__ = [
    "SNAPSHOT_EVERY",
    "AppendResult",
    "CheckpointWrite",
    "ConcurrencyError",
    "NotAStoreError",
    "QueryResult",
    "SchemaError",
    "Store",
    "StoredEvent",
    "StreamInfo",
]

SNAPSHOT_EVERY = 100
"""A stream gets a snapshot once it has moved this many versions past its last one."""

REBUILD_ROWS = 500_000
"""``rebuild`` stores the rows it made once the events read make about this many."""

if TYPE_CHECKING:
    import sqlalchemy as sa

_T = TypeVar("_T")
_READ_PAGE = 5000
MIGRATIONS = "kstore.store:migrations"
"""Alembic's ``script_location``: the migrations ship in the package (importlib.resources)."""

_STREAM_COLUMNS = ("cluster", "group_id", "timeline")
# Column lists and Arrow types from the read model's one catalogue.
_EVENT_COLUMNS = catalogue.columns("kstore_events")
_HEAD_COLUMNS = catalogue.columns("kstore_streams")
_ASSIGNMENT_COLUMNS = catalogue.columns("kstore_assignments")
_ARROW_TYPES = catalogue.ARROW_TYPES


class _Known(NamedTuple):
    """What the log holds of a stream before a batch."""

    version: int
    snapshot: int
    """The version of its latest snapshot (0: none)."""
    first_at: datetime | None
    last_at: datetime | None


_NEW = _Known(0, 0, None, None)


class SchemaError(KstoreError):
    """No store, or a store whose schema revision this code cannot use as it is."""


class NotAStoreError(SchemaError, UsageError):
    """No store at the path given, or a file there that is not one (no DuckDB database,
    or another program's): the user's mistake (a path mistyped, another file given as
    the store, the store not made yet), exit 2."""


_MAGIC = b"DUCK"
"""The bytes a DuckDB database file holds at ``_MAGIC_AT`` (after its header's checksum)."""
_MAGIC_AT = 8


def _foreign(path: Path, *, empty: bool) -> NotAStoreError | None:
    """The error for a file at ``path`` that is not a DuckDB database (its header does
    not start as DuckDB's do), else None (no file, or a DuckDB one). DuckDB itself opened
    some such files as a database in memory (a ``.jsonl`` one: ``init`` said it created
    the store and stored nothing) and called the others corrupt; a DuckDB file damaged
    past its header stays DuckDB's to report (``corruption``). An empty file counts only
    if ``empty`` (under the store's lock): before it, it may be a store being made, whose
    header DuckDB writes at once, holding the lock."""
    try:
        with path.open("rb") as f:
            head = f.read(_MAGIC_AT + len(_MAGIC))
    except (FileNotFoundError, IsADirectoryError):
        return None
    if head[_MAGIC_AT:] == _MAGIC or not (head or empty):
        return None
    what = "not a DuckDB database file" if head else "an empty file"
    return NotAStoreError(f"{path}: not a kstore store ({what}); kstore left it as it is")


def _q(name: str) -> str:
    return f'"{name}"'


def _cols(names: Iterable[str]) -> str:
    return ", ".join(_q(n) for n in names)


def _utc(at: datetime) -> tuple[datetime, int]:
    """``at`` as naive UTC, and its offset in seconds (an aware time taken back by its
    offset: a third less than ``astimezone`` for each event of a batch)."""
    offset = at.utcoffset()
    if offset is None:
        return at.astimezone(UTC).replace(tzinfo=None), 0
    if not offset:
        return at.replace(tzinfo=None), 0
    return (at - offset).replace(tzinfo=None), int(offset.total_seconds())


def _aware(at_utc: datetime, offset_s: int) -> datetime:
    zone = UTC if offset_s == 0 else timezone(timedelta(seconds=offset_s))
    return at_utc.replace(tzinfo=UTC).astimezone(zone)


def _arrow(columns: Mapping[str, list[Any]]) -> pa.Table:
    return pa.table(
        {name: pa.array(values, type=_ARROW_TYPES.get(name)) for name, values in columns.items()}
    )


_DECIDED = tuple(name for name in AssignmentCompleted.model_fields if name != "assignment")
"""The fields of an ``AssignmentCompleted`` that ``events(assignments=False)`` reads."""

_LIGHT = f"type = 'AssignmentCompleted' AND schema_version = {AssignmentCompleted.schema_version}"
_PATHS = ", ".join(f"'$.{name}'" for name in _DECIDED)
_ASSIGNMENT_AT = """strpos(data, ',"assignment":{')"""
_END = "substr(data, greatest(strlen(data) - 4095, 1))"
_AFTER_ASSIGNMENT = (
    r'(?:\]|\{)\}((?:,"(?:'
    + "|".join(_DECIDED)
    + r')":(?:"(?:[^"\\]|\\.)*"|-?[0-9]+|null|true|false))*)\}$'
)
_FIELDS_TEXT = (
    f"CASE WHEN {_ASSIGNMENT_AT} > 0 AND regexp_matches({_END}, '{_AFTER_ASSIGNMENT}') "
    f"THEN left(data, {_ASSIGNMENT_AT} - 1) || "
    f"regexp_extract({_END}, '{_AFTER_ASSIGNMENT}', 1) || '}}' END"
)
"""An ``AssignmentCompleted``'s JSON text without its assignment, cut out of the text
(no JSON parsed): what comes before ``,"assignment":{`` and what comes after the
assignment, if that is the text's last few thousand characters and holds only the
other fields, each a string, number or literal. NULL otherwise (another layout: the
fields are then picked out of the parsed JSON). The cuts are where the assignment
starts and ends whatever its member and topic names: an unescaped ``"`` is always a
string's delimiter, so ``,"assignment":{`` is that field (a member's value is a list),
and the match starts at the one ``]}`` or ``{}`` outside strings, the assignment's end
(after a string inside the assignment comes ``:`` or ``,`` and a number, never
``,"field":``). DuckDB's JSON parse of a 10,000-partition decision, for its few small
fields, was two thirds of the replay's read of its source (and 50 MB of fresh memory
for 60 of them)."""
_LIGHT_DATA = (
    f"CASE WHEN {_LIGHT} THEN NULL WHEN type = 'AssignmentCompleted' "
    """THEN json_merge_patch(data, '{"assignment": null}') ELSE data END, """
    f"CASE WHEN {_LIGHT} THEN {_FIELDS_TEXT} END, "
    f"CASE WHEN {_LIGHT} AND ({_FIELDS_TEXT}) IS NULL THEN json_extract(data, [{_PATHS}]) END"
)
"""The ``data`` column as ``events(assignments=False)`` reads it, and the other fields
of an ``AssignmentCompleted`` of today's schema: as one JSON object cut out of its text
(``_FIELDS_TEXT``), else picked out of its parsed JSON (JSON each, NULL: absent); either
costs DuckDB a fraction of taking ``assignment`` out of the JSON text (that is left for
older schemas, which their upcast reads whole)."""


def _stored(row: Sequence[Any]) -> StoredEvent:
    position, event_id, cluster, group, timeline, version, kind, at, offset, schema, data = row[:11]
    envelope = {
        "event_id": event_id,
        "cluster": cluster,
        "group": group,
        "timeline": timeline,
        "at": _aware(at, offset),
    }
    if data is None:  # read by ``events(assignments=False)``: its fields (``_LIGHT_DATA``)
        if row[11] is not None:
            raw = from_json(row[11])
        else:
            fields = zip(_DECIDED, row[12], strict=True)
            raw = {name: from_json(value) for name, value in fields if value is not None}
    else:
        raw = from_json(data)  # pydantic's parser: several times json's speed on big data
    if kind == "AssignmentCompleted" and "assignment" not in raw:
        raw["assignment"] = {}  # read by ``events(assignments=False)``
    event = parse_stored_event(envelope, kind, raw, schema)
    return StoredEvent(position, version, event)


class _Conn:
    """A DuckDB connection in a window: bulk SQL and Arrow (``sa``: the SQLAlchemy
    connection over it, in the windows that run migrations)."""

    def __init__(self, db: Any, connection: sa.Connection | None = None) -> None:
        self._db = db
        self._sa = connection

    @property
    def sa(self) -> sa.Connection:
        assert self._sa is not None, "a window for migrations has the SQLAlchemy connection"
        return self._sa

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._db.execute(sql, list(params)).fetchall()
        return rows

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._db.execute(sql, list(params))

    @contextmanager
    def registered(self, name: str, data: pa.Table) -> Iterator[None]:
        """``data`` visible to SQL as the view ``name`` for the block, for one statement.

        Handed over as an Arrow C stream (a PyCapsule, which one scan consumes): given
        the table itself, DuckDB imports ``pyarrow.dataset`` (and with it
        ``pyarrow.compute``, 0.3 s of CPU) in every process, to scan it through a
        dataset."""
        self._db.register(name, data.__arrow_c_stream__())
        try:
            yield
        finally:
            self._db.unregister(name)

    def insert(self, table: str, data: pa.Table, verb: str = "INSERT") -> None:
        if data.num_rows == 0:
            return
        names = _cols(data.column_names)
        with self.registered("_kstore_batch", data):
            self.run(f"{verb} INTO {table} ({names}) SELECT {names} FROM _kstore_batch")


ROW_GROUP_ROWS = 8 * 1024
"""The row group size every window attaches the file with (``_STORAGE``)."""

_STORAGE = f"STORAGE_VERSION 'v1.5.0', ROW_GROUP_SIZE {ROW_GROUP_ROWS}"
"""How every window attaches the file. DuckDB rewrites a table's last row group whole
at each checkpoint (one per append, on closing) when rows were added to it, and merges
row groups it finds small: with its default of 122,880 rows a group, an append of
13,000 events rewrote up to ten appends' worth of rows in every table, more the longer
the store. Groups of 8,192 rows keep that rewrite small and the same at any size (with
16,384 the merges still made a later append of the write-path benchmark's small groups
cost 11% more instructions than the first, into an empty store; with 8,192 7%, with
4,096 4% but the file 47% larger, against 16% with 8,192); storage version 1.5 (which
``duckdb>=1.5`` reads) compresses and checkpoints faster. The version is written into
the file at its first checkpoint (an older store is upgraded in place); the row group
size holds for the groups made by the window that gives it."""


_KEPT: dict[str, str | bool | int | float | list[str]] = {
    "threads": 1,
    "checkpoint_threshold": "0b",
}
"""DuckDB's settings of the kept instance (``_Kept``). One thread: a write window's
statements scan Arrow streams (which one thread reads) and its checkpoint is small, so
more threads only added their own work (13,000 small events: 0.8 -> 0.7 CPU s; 40
events of 10,000 partitions in batches of 10, 1.4 -> 1.05) and left less of the machine
to the rest; the log's reads that share it are scans of one stream or one page.
The checkpoint at the commit, not at closing: the window's changes then go straight
into the file, not first into the write-ahead log as well (a commit and checkpoint of
13,000 small events 0.15-0.2 -> 0.13-0.16 CPU s)."""


class _Kept:
    """The process's DuckDB instance (``_KEPT``) for windows that write and for the log's
    own reads, kept between them: each window attaches the store's file to it (read-only
    to read) and detaches it as it closes (which lets the file go, as closing an instance
    of its own did). A new instance took 10-12 ms of CPU, and its memory was new pages
    again each window: 100 events of 10,000 partitions appended in batches of 10,
    1.8-2.15 -> 1.45-1.9 CPU s; the replay benchmark's read of its source, 78-117 ->
    39-74 ms at load 6 (a new instance's first query, on two threads, took two to three
    times its next one's). One window at a time uses it (another window of the process
    meanwhile gets an instance of its own); a window that fails ends it (the next makes
    a new one). A forked process starts without it (``forked``). One thread (``_KEPT``):
    DuckDB starts no thread for it."""

    _lock = threading.Lock()
    _held: Any | None = None
    _busy = False

    @classmethod
    def take(cls) -> Any | None:
        """The instance, now this window's (None: another window has it)."""
        with cls._lock:
            if cls._busy:
                return None
            if cls._held is None:
                cls._held = duckdb.connect(config=_KEPT)
            cls._busy = True
            return cls._held

    @classmethod
    def give_back(cls, instance: Any, failed: bool) -> None:
        """The window that took ``instance`` is over (its connection closed); the file
        is detached, or (``failed``) the instance closed and forgotten."""
        try:
            if failed:
                cls._held = None
                instance.close()
            else:
                instance.execute("DETACH DATABASE IF EXISTS kstore")
        except BaseException:
            cls._held = None
            if not failed:  # the file may still be attached: let it go with the instance
                with contextlib.suppress(Exception):
                    instance.close()
            raise
        finally:
            with cls._lock:
                cls._busy = False

    @classmethod
    def forked(cls) -> None:
        """In a forked copy of the process: none held, none in use. (A window another
        thread had open at the fork keeps its instance alive in the copy, never closed
        there: its connection lives on in that thread's frame, which the copy never
        ends.)"""
        cls._lock = threading.Lock()
        cls._held = None
        cls._busy = False


os.register_at_fork(after_in_child=_Kept.forked)


def _attached(path: str, read_only: bool, kept: bool) -> tuple[Any, Any | None]:
    """A DuckDB connection to the store's file, attached with ``_STORAGE`` as the
    connection's default database, and the instance it is of if shared (``_Kept``, if
    ``kept`` and free; None: its own). A window that writes runs DuckDB with ``_KEPT``."""
    shared = _Kept.take() if kept else None
    own = {} if read_only else _KEPT
    if shared is None:
        db = duckdb.connect(config=own)
    else:
        try:
            db = shared.cursor()
        except BaseException:
            _Kept.give_back(shared, failed=True)
            raise
    try:
        quoted = path.replace("'", "''")
        mode = "READ_ONLY, " if read_only else ""
        db.execute(f"ATTACH '{quoted}' AS kstore ({mode}{_STORAGE})")
        db.execute("USE kstore")
    except BaseException:
        _detached(db, shared, failed=True)
        raise
    return db, shared


def _detached(db: Any, shared: Any | None, failed: bool) -> None:
    """The window's connection closed (ending its transaction, if one is open) and the
    store's file let go (``_attached``)."""
    try:
        db.close()
    finally:
        if shared is not None:
            _Kept.give_back(shared, failed)


_STALE_WAL = re.compile(r"File checkpoint iteration: (\d+), WAL checkpoint iteration: (\d+)")


def _set_aside_stale_wal(path: Path, exc: BaseException) -> bool:
    """Move aside a write-ahead log the file's last checkpoint has already stored; whether
    the file may be opened again.

    A commit writes its changes to the log (``<store>.wal``), checkpoints them into the
    file (whose checkpoint iteration goes up by one) and then removes the log. A process
    killed between the last two leaves a log one iteration behind the file, every change
    of it in the file already; DuckDB (1.5.6 and 2.0.1) then refuses to open the file at
    all ("the WAL checkpoint iteration does not match"), so one kill left the whole store
    unreadable. Called under the store's lock, so no kstore writer is mid-commit; the log
    is kept beside the file (``<store>.wal.checkpointed-<time>``), not deleted."""
    found = _STALE_WAL.search(str(exc))
    if found is None or int(found[2]) + 1 != int(found[1]):
        return False
    wal = path.with_name(path.name + ".wal")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    aside = path.with_name(f"{path.name}.wal.checkpointed-{stamp}")
    try:
        wal.rename(aside)
    except FileNotFoundError:
        return True  # another reader of the store moved it first
    except OSError:
        return False
    print(
        f"kstore: note: {path}: its write-ahead log was already checkpointed into the file "
        f"(a process stopped between the two); kept as {aside.name}",
        file=sys.stderr,
    )
    return True


def _database_error(exc: BaseException) -> bool:
    """DuckDB's error, raised directly or wrapped by SQLAlchemy (migrations)."""
    return isinstance(exc, duckdb.Error) or isinstance(getattr(exc, "orig", None), duckdb.Error)


def _handed(
    batch: Sequence[Event], heads: Mapping[StreamId, StreamHead], folded: Mapping[StreamId, Folded]
) -> dict[StreamId, dict[str, Applied]]:
    """The producers' ``Applied`` records by event id, for each stream whose fold fits
    the events stored: it ends where they end, and holds a record at the right version
    for each event the projections read the fold for. The other streams are folded."""
    if not folded:
        return {}
    events: dict[StreamId, list[Event]] = {stream: [] for stream in folded}
    for event in batch:
        mine = events.get(event.stream)
        if mine is not None:
            mine.append(event)
    handed: dict[StreamId, dict[str, Applied]] = {}
    for stream, given in folded.items():
        start = heads[stream].state.version if stream in heads else None
        if start is None or given.state.version != start + len(events[stream]):
            continue
        records = {applied.event_id: applied for applied in given.applied}
        fits = all(
            (found := records.get(event.event_id)) is not None and found.version == start + i
            for i, event in enumerate(events[stream], 1)
            if isinstance(event.data, AssignmentCompleted | MemberReplaced | AssignmentNotTakenUp)
        )
        if fits and given.state.stream == stream:
            handed[stream] = records
    return handed


APART_EVENTS = 2000
"""A batch of at least this many events, of two streams or more, is projected on two
cores: the projections of some of its streams in a forked copy of the process
(``_projected_apart``) while this one makes the others' and the log's rows."""

APART_SHARE = 0.6
"""About this share of such a batch's events are projected in the copy: this process
makes the log's rows of all of them besides its own streams' projections. A chunk of
the write-path benchmark (150 streams, 13,087 events) counted in instructions: with
0.6 this process 5.25 G and the copy 4.19 (2.61 of each before the fork), with 0.65
5.14 and 4.35, with 0.7 5.03 and 4.45; 6.47 G in one process. In CPU seconds the
copy is slower than its instructions say (its pages copied as it touches them): at
0.65 its 0.33-0.41 s against this process's 0.28-0.38 s between the fork and the wait."""


class _Part(NamedTuple):
    """The projections of some streams of a batch, made in a forked copy."""

    tables: dict[str, pa.Table]
    """``PROJECTED``'s rows."""
    spans: list[Spans]
    heads: dict[StreamId, StreamHead]
    texts: list[str]
    """The data of their events as the log stores it, in the batch's order."""


def _core_idle() -> bool:
    """Whether a core this process may run on is idle now: fewer runnable tasks (this
    one among them) than cores (``/proc/loadavg``'s fourth field). With none, a copy
    only takes turns with this process and the others: the fork and its copied pages
    cost some 5% more CPU for no shorter wall (measured at load 4-5 on 2 cores)."""
    try:
        with open("/proc/loadavg", "rb") as loadavg:
            running = int(loadavg.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return True
    return running < len(os.sched_getaffinity(0))


def _apart_streams(of: Sequence[StreamId], streams: Sequence[StreamId]) -> set[StreamId]:
    """The streams whose projections a forked copy makes (none: all made here): the
    batch's last streams, about ``APART_SHARE`` of its events, when a core is idle."""
    if len(of) < APART_EVENTS or len(streams) < 2 or not FORKS or not _core_idle():
        return set()
    counts: dict[StreamId, int] = {}
    for stream in of:
        counts[stream] = counts.get(stream, 0) + 1
    apart: set[StreamId] = set()
    taken, want = 0, APART_SHARE * len(of)
    for stream in reversed(streams):
        if taken >= want or len(apart) == len(streams) - 1:
            break
        apart.add(stream)
        taken += counts[stream]
    return apart


def _project(
    projector: Projector,
    head: StreamHead,
    event: Event,
    at_utc: datetime,
    records: Mapping[str, Applied] | None,
) -> None:
    """``event``'s rows: folded here, or, where its producer handed its fold over
    (``records``), from what the fold recorded (an event it records nothing of has none)."""
    if records is None:
        projector.feed(head, event, at_utc)
    else:
        applied = records.get(event.event_id)
        if applied is not None:
            projector.project(head, event, at_utc, applied)


def _projected_apart(
    events: Sequence[tuple[Event, StreamId]],
    heads: Mapping[StreamId, StreamHead],
    handed: Mapping[StreamId, Mapping[str, Applied]],
) -> _Part:
    """The rows of ``events`` (all those of their streams in a batch), in a forked copy."""
    projector = Projector()
    texts = []
    mine: dict[StreamId, StreamHead] = {}
    for event, stream in events:
        head = mine.get(stream)
        if head is None:
            head = mine[stream] = heads[stream]
        _project(projector, head, event, _utc(event.at)[0], handed.get(stream))
        texts.append(projector.data_json(event))
    tables = {table: projector.arrow(table) for table in PROJECTED}
    return _Part(tables, projector.spans(), mine, texts)


def _merged_texts(
    of: Sequence[StreamId], apart: Set[StreamId], mine: list[str], theirs: list[str]
) -> list[str]:
    """The batch's data texts in its order, from those made here and those made apart."""
    here, there = iter(mine), iter(theirs)
    return [next(there) if stream in apart else next(here) for stream in of]


def _stream_where(stream: StreamId) -> tuple[str, list[Any]]:
    return "cluster = ? AND group_id = ? AND timeline = ?", list(stream)


_AFTER = (
    f"SELECT {_cols(_EVENT_COLUMNS)} FROM kstore_events WHERE position > ? "
    "ORDER BY position LIMIT ?"
)
"""The log's rows after a position (the first parameter), at most a number of them."""

_KEY_COLUMNS = (*_STREAM_COLUMNS, "version")


def _open_spans(spans: Spans) -> str:
    """The spans of ``spans``' table open before a batch, of the streams that have a
    decision in it (``_kstore_firsts``: the first one's version), each with the batch's
    span that starts at that decision and goes on with it (``_kstore_continuing``:
    ``run``, its index)."""
    stream = " AND ".join(f"{{0}}.{c} = s.{c}" for c in _STREAM_COLUMNS)
    same = " AND ".join(f"c.{_q(c)} IS NOT DISTINCT FROM s.{_q(c)}" for c in spans.listed)
    return (
        f"SELECT s.rowid AS rowid, c.run AS run, f.version AS version FROM {spans.name} s "
        f"JOIN _kstore_firsts f ON {stream.format('f')} "
        f"LEFT JOIN _kstore_continuing c ON {stream.format('c')} AND {same} "
        "WHERE s.to_version IS NULL"
    )


_Page = TypeVar("_Page", list[tuple[Any, ...]], pa.Table)


def _pages(fetch: Callable[[int], _Page], size: int) -> Iterator[_Page]:
    """The log in pages, in log order: ``fetch(after)`` reads at most ``size`` rows
    after log position ``after`` (the rows' first column), until a page comes short."""
    after = 0
    while True:
        page = fetch(after)
        if len(page):
            yield page
            after = page[-1][0] if isinstance(page, list) else page.column(0)[-1].as_py()
        if len(page) < size:
            return


class Store:
    """The log in the DuckDB file at ``path``; safe to use from several processes."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._url = f"duckdb:///{self.path}"
        # Stream heads this process wrote or loaded; used only while the stream's version
        # in the store still matches.
        self._heads: dict[StreamId, StreamHead] = {}

    # --- windows ------------------------------------------------------------------------

    @contextmanager
    def _window(
        self, *, write: bool, check: bool = True, migrations: bool = False, own: bool = False
    ) -> Iterator[_Conn]:
        """The store's file open for the block (``_opened``), locked and its schema checked.
        ``own``: a read in a DuckDB instance of its own (its threads, its settings: user
        SQL, whose sandbox changes them, and bulk reads), not the kept one (``_Kept``)."""
        if check and not self.path.exists():
            raise NotAStoreError(
                f"{self.path}: no store here; create it with `kstore --store {self.path} init`"
            )
        # Checked before the lock, which leaves its files beside the one given.
        foreign = _foreign(self.path, empty=False)
        if foreign is not None:
            raise foreign
        with store_lock(self.path, exclusive=write):
            try:
                with self._opened(write, migrations, own) as conn:
                    if check:
                        self._check_schema(conn)
                    if not write:
                        yield conn
                    elif conn._sa is not None:
                        with conn._sa.begin():
                            yield conn
                    else:
                        # No rollback on failure: closing the connection ends the
                        # transaction, and on a damaged file a failing rollback would
                        # only hide the error.
                        conn.run("BEGIN TRANSACTION")
                        yield conn
                        conn.run("COMMIT")
            except Exception as exc:
                damaged = corruption(self.path, exc) if _database_error(exc) else None
                if damaged is not None:
                    raise _foreign(self.path, empty=True) or damaged from None
                raise

    @contextmanager
    def _opened(self, write: bool, migrations: bool, own: bool) -> Iterator[_Conn]:
        """The file opened (and closed after the block, so that others may open it):
        DuckDB directly, or through SQLAlchemy for alembic (``NullPool``, so closing
        really closes). SQLAlchemy is imported only then: it is a fifth of the start-up
        of a command."""
        if not migrations:
            path, read_only = str(self.path), not write
            db, shared = self._connect(lambda: _attached(path, read_only, kept=not own))
            failed = True
            try:
                yield _Conn(db)
                failed = False
            finally:
                _detached(db, shared, failed)
            return
        import sqlalchemy as sa
        from sqlalchemy.pool import NullPool

        # No rollback on giving the connection back: the transaction has ended.
        engine = sa.create_engine(
            self._url,
            poolclass=NullPool,
            pool_reset_on_return=None,
            connect_args={"read_only": not write},
        )
        try:
            with self._connect(engine.connect) as connection:
                yield _Conn(connection.connection.driver_connection, connection)
        finally:
            engine.dispose()

    def _connect(self, opener: Callable[[], _T]) -> _T:
        # Another program (not kstore) may hold DuckDB's own lock: wait for it too.
        deadline = time.monotonic() + lock_timeout()
        set_aside = False
        while True:
            try:
                return opener()
            except Exception as exc:
                if not set_aside and _database_error(exc):
                    set_aside = _set_aside_stale_wal(self.path, exc)
                    if set_aside:
                        continue
                if not (_database_error(exc) and busy_elsewhere(exc)):
                    raise
                if time.monotonic() >= deadline:
                    raise StoreBusyError(
                        f"{self.path}: held by another process: {getattr(exc, 'orig', exc)}"
                    ) from None
                time.sleep(0.05)

    def _revision(self, conn: _Conn) -> str | None:
        found = conn.rows(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'alembic_version'"
        )
        if not found[0][0]:
            return None
        rows = conn.rows("SELECT version_num FROM alembic_version")
        return str(rows[0][0]) if rows else None

    def _check_schema(self, conn: _Conn) -> None:
        revision = self._revision(conn)
        if revision == HEAD:
            return
        if revision is None:
            raise NotAStoreError(
                f"{self.path}: not a kstore store (no schema); "
                f"create it with `kstore --store {self.path} init`"
            )
        if revision in REVISIONS:
            raise SchemaError(
                f"{self.path}: the store's schema ({revision}) is older than this kstore's "
                f"({HEAD}); upgrade it with `kstore --store {self.path} init`"
            )
        raise SchemaError(
            f"{self.path}: the store's schema ({revision}) is newer than this kstore knows "
            f"(newest: {HEAD}); use a newer kstore"
        )

    # --- schema -------------------------------------------------------------------------

    def check(self) -> None:
        """Raise ``SchemaError`` unless a store this kstore reads is here (before long
        work on its behalf, such as reading a big input)."""
        with self._window(write=False):
            pass

    def revision(self) -> str | None:
        """The store's schema revision (``None``: no store or no schema yet)."""
        if not self.path.exists():
            return None
        with self._window(write=False, check=False) as conn:
            return self._revision(conn)

    def init(self) -> tuple[str | None, str]:
        """Create the store or upgrade it to the newest schema: (revision before, after).

        After an upgrade the projections are rebuilt, as a migration may add or change
        derived tables that only the log can fill.
        """
        return self.migrate(HEAD)

    def _check_folder(self) -> None:
        """The store's folder is there, else one line naming it (exit 2). A store is
        never made in folders made for it: ``--store /nonexistent/dir/x.duckdb init``
        made both folders without a word (a user trial), where a typo in a path is the
        likelier cause; as sqlite3 and duckdb do, the folder is the user's to make."""
        folder = self.path.parent
        if folder.is_dir():
            return
        missing = folder
        while not missing.exists() and not missing.parent.exists():
            missing = missing.parent
        there = missing if missing.exists() else missing.parent
        if not there.is_dir():  # a file where a folder would be
            raise UsageError(f"{self.path}: cannot create the store: not a folder: {there}")
        raise UsageError(
            f"{self.path}: cannot create the store: no such folder: {missing} "
            f"(make it first: mkdir -p {shlex.quote(str(folder))})"
        )

    def migrate(self, target: str) -> tuple[str | None, str]:
        """Upgrade or downgrade the schema to revision ``target`` (``base``: none)."""
        from alembic import command
        from alembic.config import Config

        self._check_folder()
        with self._window(write=True, check=False, migrations=True) as conn:
            before = self._revision(conn)
            if before is not None and before not in REVISIONS:
                self._check_schema(conn)  # raises: newer than this code
            config = Config()
            config.set_main_option("script_location", MIGRATIONS)
            config.attributes["connection"] = conn.sa
            order = {None: -1, "base": -1} | {r: i for i, r in enumerate(REVISIONS)}
            if target not in order:
                raise UsageError(f"unknown schema revision {target!r}")
            if order[target] > order[before]:
                command.upgrade(config, target)
            elif order[target] < order[before]:
                command.downgrade(config, target)
            if before is not None and before != target and target == HEAD:
                self._rebuild(conn)
        self._heads.clear()
        return before, target

    # --- writing ------------------------------------------------------------------------

    def append(
        self,
        events: Iterable[Event],
        expected_version: int | Mapping[StreamId, int] | None = None,
        *,
        checkpoint: CheckpointWrite | None = None,
        folded: Mapping[StreamId, Folded] | None = None,
    ) -> AppendResult:
        """Store a batch atomically; events whose ``event_id`` is stored already are skipped
        (the same fact; another fact under a stored id is an ``EventError``).

        ``expected_version`` (per stream, or one number for a one-stream batch) is the
        version each stream must be at; if one has moved on, ``ConcurrencyError`` and
        nothing is stored. ``checkpoint`` is stored in the same transaction (also when
        the batch brings nothing new). ``folded``: the producer's folds of the batch's
        streams; the projections are made from them instead of folding again.
        """
        unique = by_id(events)
        if not unique and checkpoint is None:
            return AppendResult(0, 0)
        present: list[tuple[Any, ...]] = []
        with self._window(write=True) as conn:
            if checkpoint is not None:
                self._write_checkpoint(conn, checkpoint)
            if unique:
                present = self._stored_ids(conn, unique)
            for row in present:
                stored = _stored(row)
                given = unique.pop(stored.event.event_id)
                refused = conflict(stored.event, stored.position, stored.version, given)
                if refused is not None:
                    raise refused
            if unique:
                with cyclic_gc_paused():
                    heads = self._write_batch(
                        conn, list(unique.values()), expected_version, folded or {}
                    )
        if not unique:
            return AppendResult(0, len(present))
        self._heads.update(heads)
        versions = {stream: head.state.version for stream, head in heads.items()}
        return AppendResult(len(unique), len(present), versions)

    def _stored_ids(self, conn: _Conn, ids: Iterable[str]) -> list[tuple[Any, ...]]:
        """The log's rows of those of ``ids`` it holds, in log order. Their positions are
        looked up first: a join that returned whole rows read every event's ``data``
        (100 events of 10,000 partitions in batches of 10: 90 ms of CPU, where there were
        none). The rows then by a join on those positions, not ``list_contains`` of them
        (a scan of the list per row: 90,000 events appended again, 2.5-3 -> 0.2 CPU s)."""
        with conn.registered("_kstore_ids", pa.table({"event_id": list(ids)})):
            found = conn.rows(
                "SELECT position FROM kstore_events JOIN _kstore_ids USING (event_id)"
            )
        if not found:
            return []
        positions = [position for (position,) in found]
        with conn.registered("_kstore_found", pa.table({"position": positions})):
            return conn.rows(
                f"SELECT {_cols(_EVENT_COLUMNS)} FROM kstore_events "
                "SEMI JOIN _kstore_found USING (position) "
                "WHERE position BETWEEN ? AND ? ORDER BY position",
                [min(positions), max(positions)],
            )

    def _write_checkpoint(self, conn: _Conn, checkpoint: CheckpointWrite) -> None:
        found = conn.rows("SELECT position FROM kstore_checkpoints WHERE key = ?", [checkpoint.key])
        have = json.loads(found[0][0]) if found else None
        if have != json.loads(json.dumps(checkpoint.expected)):
            raise ConcurrencyError(
                f"checkpoint {checkpoint.key!r} was moved by another writer; nothing stored"
            )
        conn.run(
            "INSERT OR REPLACE INTO kstore_checkpoints (key, position, updated_at) "
            "VALUES (?, ?, ?)",
            [checkpoint.key, json.dumps(checkpoint.value), datetime.now(UTC).replace(tzinfo=None)],
        )

    def _write_batch(
        self,
        conn: _Conn,
        batch: list[Event],
        expected: int | Mapping[StreamId, int] | None,
        folded: Mapping[StreamId, Folded],
    ) -> dict[StreamId, StreamHead]:
        of = [event.stream for event in batch]
        streams = list(dict.fromkeys(of))
        if isinstance(expected, int):
            if len(streams) != 1:
                raise UsageError("an expected version needs a batch of one stream")
            expected = {streams[0]: expected}
        versions = self._versions(conn, streams)
        for stream, want in (expected or {}).items():
            have = versions.get(stream, _NEW).version
            if stream in streams and have != want:
                raise ConcurrencyError(
                    f"stream {stream} is at version {have}, not {want} as expected; nothing stored"
                )
        position = conn.rows("SELECT coalesce(max(last_position), 0) FROM kstore_streams")[0][0]
        heads = {s: self._head(conn, s, versions.get(s, _NEW).version).copy() for s in streams}
        handed = _handed(batch, heads, folded)
        version = {stream: head.state.version for stream, head in heads.items()}
        apart = _apart_streams(of, streams)
        child = None
        if apart:
            theirs = [
                (event, stream) for event, stream in zip(batch, of, strict=True) if stream in apart
            ]
            child = Apart(lambda: _projected_apart(theirs, heads, handed), "projecting a batch")
        try:
            projector = Projector()
            rows: list[tuple[Any, ...]] = []  # in the order of _EVENT_COLUMNS but data
            texts: list[str] = []  # the data (those of ``apart``'s events: the copy's)
            span: dict[StreamId, tuple[datetime, datetime, int]] = {}
            for event, stream in zip(batch, of, strict=True):
                position += 1
                at_utc, offset = _utc(event.at)
                if stream not in apart:
                    _project(projector, heads[stream], event, at_utc, handed.get(stream))
                    texts.append(projector.data_json(event))
                version[stream] += 1
                data = event.data
                rows.append(
                    (
                        position,
                        event.event_id,
                        *stream,
                        version[stream],
                        data.type_name(),
                        at_utc,
                        offset,
                        data.schema_version,
                    )
                )
                first, last, _ = span.get(stream, (at_utc, at_utc, 0))
                span[stream] = (min(first, at_utc), max(last, at_utc), position)
            earlier = {stream for stream in streams if versions.get(stream, _NEW).version}
            self._store_rows(conn, projector, earlier)
            part: _Part | None = child.result() if child is not None else None
        finally:
            if child is not None:
                child.kill()
        if part is not None:
            texts = _merged_texts(of, apart, texts, part.texts)
            heads.update(part.heads)
            self._store_part(conn, part, earlier)
        columns = [list(column) for column in zip(*rows, strict=True)]
        columns.append(texts)
        conn.insert("kstore_events", _arrow(dict(zip(_EVENT_COLUMNS, columns, strict=True))))
        for stream in handed:
            heads[stream].state = folded[stream].state.copy()
        self._store_heads(conn, heads, span, versions)
        return heads

    def _versions(self, conn: _Conn, streams: Sequence[StreamId]) -> dict[StreamId, _Known]:
        """What the log holds of the streams that exist (one query for the batch)."""
        keys = pa.table({name: [s[i] for s in streams] for i, name in enumerate(_STREAM_COLUMNS)})
        with conn.registered("_kstore_keys", keys):
            found = conn.rows(
                "SELECT s.cluster, s.group_id, s.timeline, s.version, "
                "(SELECT coalesce(max(n.version), 0) FROM kstore_snapshots n "
                " WHERE n.cluster = s.cluster AND n.group_id = s.group_id "
                " AND n.timeline = s.timeline), s.first_at, s.last_at "
                "FROM kstore_streams s JOIN _kstore_keys USING (cluster, group_id, timeline)"
            )
        return {StreamId(c, g, t): _Known(*known) for c, g, t, *known in found}

    def _head(self, conn: _Conn, stream: StreamId, version: int) -> StreamHead:
        """The stream's head at ``version``: cached, or a snapshot and the log after it."""
        cached = self._heads.get(stream)
        if cached is not None and cached.state.version == version:
            return cached
        if version == 0:  # a new stream: nothing to read
            return StreamHead()
        head = self._from_snapshot(conn, stream, version) or StreamHead()
        projector = Projector(keep=False)
        for stored in self._stream_events(conn, stream, head.state.version, version):
            projector.feed(head, stored.event, _utc(stored.event.at)[0])
        self._heads[stream] = head
        return head

    def _from_snapshot(self, conn: _Conn, stream: StreamId, version: int) -> StreamHead | None:
        where, params = _stream_where(stream)
        found = conn.rows(
            f"SELECT state FROM kstore_snapshots WHERE {where} AND version <= ? "
            "ORDER BY version DESC LIMIT 1",
            [*params, version],
        )
        return StreamHead.from_json(found[0][0]) if found else None

    def _stream_events(
        self, conn: _Conn, stream: StreamId, after: int, upto: int
    ) -> Iterator[StoredEvent]:
        where, params = _stream_where(stream)
        sql = (
            f"SELECT {_cols(_EVENT_COLUMNS)} FROM kstore_events WHERE {where} "
            "AND version > ? AND version <= ? ORDER BY version LIMIT ?"
        )
        while after < upto:
            page = conn.rows(sql, [*params, after, upto, _READ_PAGE])
            if not page:
                return
            for row in page:
                yield _stored(row)
            after = page[-1][5]

    def _store_rows(self, conn: _Conn, projector: Projector, earlier: Set[StreamId]) -> None:
        """The projector's rows; ``earlier``: the streams that may hold spans already
        (whose events before these are stored)."""
        for table in PROJECTED:
            conn.insert(table, projector.arrow(table))
        for spans in projector.spans():
            self._store_spans(conn, spans, earlier)

    def _store_part(self, conn: _Conn, part: _Part, earlier: Set[StreamId]) -> None:
        """The rows of a batch's streams projected apart (``_store_rows``)."""
        for table in PROJECTED:
            conn.insert(table, part.tables[table])
        for spans in part.spans:
            self._store_spans(conn, spans, earlier)

    def _store_spans(self, conn: _Conn, spans: Spans, earlier: Set[StreamId]) -> None:
        """A batch's spans (``Spans``) merged with those stored: a span open before the
        batch that its stream's first decision of the batch lists again goes on (the
        batch's span that starts there is not stored; the stored one ends where it
        ends), and one that decision does not list ends there."""
        keep = np.ones(len(spans), dtype=np.bool_)
        firsts = [key for key in spans.firsts if StreamId(*key[:3]) in earlier]
        if firsts:
            heads = np.flatnonzero(spans.head)
            starts = pa.table(
                {name: [key[i] for key in firsts] for i, name in enumerate(_KEY_COLUMNS)}
            )
            continuing = spans.table(heads).append_column("run", pa.array(heads))
            with (
                conn.registered("_kstore_firsts", starts),
                conn.registered("_kstore_continuing", continuing),
            ):
                found = conn._db.execute(_open_spans(spans)).fetchnumpy()
            run = np.ma.masked_array(found["run"])  # masked: no span of the batch goes on
            goes_on = ~np.ma.getmaskarray(run)
            runs = np.ma.getdata(run)[goes_on].astype(np.int64)
            keep[runs] = False
            ended = spans.to_version[runs]  # masked: it reaches the batch's end
            to = np.ma.getdata(found["version"]).astype(np.int64)  # the first decision
            to[goes_on] = np.ma.getdata(ended)
            closing = ~goes_on
            closing[goes_on] = ~np.ma.getmaskarray(ended)
            if closing.any():
                closed = pa.table(
                    {
                        "id": pa.array(np.ma.getdata(found["rowid"])[closing], type=pa.int64()),
                        "to_version": pa.array(to[closing], type=pa.int32()),
                    }
                )
                with conn.registered("_kstore_closed", closed):
                    conn.run(
                        f"UPDATE {spans.name} SET to_version = c.to_version "
                        f"FROM _kstore_closed c WHERE {spans.name}.rowid = c.id"
                    )
        conn.insert(spans.name, spans.table(None if keep.all() else np.flatnonzero(keep)))

    def _store_heads(
        self,
        conn: _Conn,
        heads: Mapping[StreamId, StreamHead],
        span: Mapping[StreamId, tuple[datetime, datetime, int]],
        versions: Mapping[StreamId, _Known],
    ) -> None:
        rows: dict[str, list[Any]] = {name: [] for name in _HEAD_COLUMNS}
        snapshots: dict[str, list[Any]] = {name: [] for name in (*_STREAM_COLUMNS, "version")}
        snapshots["state"] = []
        for stream, head in heads.items():
            first, last, position = span[stream]
            known = versions.get(stream)
            if known is not None and known.first_at is not None and known.last_at is not None:
                first, last = min(first, known.first_at), max(last, known.last_at)
            state = head.state
            for name, value in zip(_STREAM_COLUMNS, stream, strict=True):
                rows[name].append(value)
            rows["version"].append(state.version)
            rows["first_at"].append(first)
            rows["last_at"].append(last)
            rows["generation"].append(state.generation)
            rows["last_position"].append(position)
            if state.version - versions.get(stream, _NEW).snapshot >= SNAPSHOT_EVERY:
                for name, value in zip(_STREAM_COLUMNS, stream, strict=True):
                    snapshots[name].append(value)
                snapshots["version"].append(state.version)
                snapshots["state"].append(head.to_json())
        conn.insert("kstore_streams", _arrow(rows), verb="INSERT OR REPLACE")
        conn.insert("kstore_snapshots", _arrow(snapshots))

    # --- rebuilding ---------------------------------------------------------------------

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Drop every projection and snapshot and derive them again from the log;
        ``progress(events read, events in the log)`` after each page of it."""
        with self._window(write=True) as conn:
            self._rebuild(conn, progress)
        self._heads.clear()

    @cyclic_gc_paused()
    def _rebuild(self, conn: _Conn, progress: Callable[[int, int], None] | None = None) -> None:
        """The derived tables and snapshots again, from one pass over the log in log
        order (every stream's head kept as it goes), stored in big batches. The cyclic
        collector is paused (``cyclic_gc_paused``): its passes over the events, heads and
        decisions held were 40% of a rebuild's CPU (261,128 small events: 24.8 -> 14.0 s)."""
        for table in (*DERIVED, "kstore_snapshots"):
            conn.run(f"DELETE FROM {table}")
        heads: dict[StreamId, StreamHead] = {}
        projector = Projector()
        stored: set[StreamId] = set()  # the streams of the rows stored so far
        snaps: dict[str, list[Any]] = {n: [] for n in (*_STREAM_COLUMNS, "version", "state")}
        total = conn.rows("SELECT count(*) FROM kstore_events")[0][0] if progress else 0
        read = 0
        for page in _pages(lambda after: conn.rows(_AFTER, [after, _READ_PAGE]), _READ_PAGE):
            for row in page:
                event = _stored(row).event
                stream = event.stream
                head = heads.get(stream)
                if head is None:
                    head = heads[stream] = StreamHead()
                projector.feed(head, event, _utc(event.at)[0])
                if head.state.version % SNAPSHOT_EVERY == 0:
                    for name, value in zip(_STREAM_COLUMNS, stream, strict=True):
                        snaps[name].append(value)
                    snaps["version"].append(head.state.version)
                    snaps["state"].append(head.to_json())
                if projector.rows() >= REBUILD_ROWS:
                    self._store_rows(conn, projector, stored)
                    projector, stored = Projector(), set(heads)
            read += len(page)
            if progress is not None:
                progress(read, total)
        self._store_rows(conn, projector, stored)
        conn.insert("kstore_snapshots", _arrow(snaps))
        spans = conn.rows(
            'SELECT cluster, group_id, timeline, max(version), min("at"), max("at"), '
            "max(position) FROM kstore_events GROUP BY cluster, group_id, timeline"
        )
        rows: dict[str, list[Any]] = {name: [] for name in _HEAD_COLUMNS}
        for cluster, group, timeline, *span in spans:
            generation = heads[StreamId(cluster, group, timeline)].state.generation
            values = (cluster, group, timeline, *span[:3], generation, span[3])
            for name, value in zip(_HEAD_COLUMNS, values, strict=True):
                rows[name].append(value)
        conn.insert("kstore_streams", _arrow(rows))

    def delete_snapshots(self) -> None:
        """Drop every snapshot (they are a cache: answers stay the same, only slower)."""
        with self._window(write=True) as conn:
            conn.run("DELETE FROM kstore_snapshots")
        self._heads.clear()

    # --- reading ------------------------------------------------------------------------

    def query(
        self,
        sql: str,
        params: Mapping[str, Any] | Sequence[Any] = (),
        read_paths: Iterable[Path | str] = (),
        *,
        json_text: bool = False,
    ) -> QueryResult:
        """One read-only statement (``SELECT``), ``params`` bound (``?`` or ``$name``), in a
        sandbox that writes nothing and reads no file but the store and ``read_paths``;
        ``json_text``: the store's JSON text columns typed JSON (``run_sandboxed``)."""
        statement = checked_statement(sql)
        reads = readable(read_paths)
        with (
            tempfile.TemporaryDirectory(prefix="kstore-sql-") as spill,
            self._window(write=False, own=True) as conn,
            yielding_to_writers(self.path, conn._db.interrupt) as stepped_aside,
        ):
            try:
                return run_sandboxed(conn._db, statement, params, reads, Path(spill), json_text)
            except KstoreError:
                if not stepped_aside.is_set():
                    raise
        # A writer came while the query ran: it goes first, and the query runs again on
        # a copy of the store, taken in a read window of its own (as long as a copy).
        with self._snapshot() as copy:
            return Store(copy).query(statement, params, read_paths, json_text=json_text)

    @contextmanager
    def _snapshot(self) -> Iterator[Path]:
        folder = Path(tempfile.mkdtemp(prefix="kstore-snapshot-"))
        try:
            copy = folder / self.path.name
            with store_lock(self.path, exclusive=False):
                shutil.copyfile(self.path, copy)
                wal = self.path.with_name(self.path.name + ".wal")
                if wal.exists():
                    shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
            yield copy
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def events(
        self,
        *,
        cluster: str | None = None,
        group: str | None = None,
        timeline: str | None = None,
        from_version: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        assignments: bool = True,
    ) -> Iterator[StoredEvent]:
        """Stored events in log order, filtered; read in pages, each in its own window.

        ``since``/``until`` bound ``at`` (inclusive); ``from_version`` keeps events of
        that stream version and later. ``assignments=False`` reads every
        ``AssignmentCompleted`` with an empty ``assignment`` (its other fields as
        stored), for readers that need only when one happened, such as a replay: a
        big group's partitions are then neither fetched nor parsed.
        """
        where: list[str] = ["position > ?"]
        params: list[Any] = []
        for column, value in (("cluster", cluster), ("group_id", group), ("timeline", timeline)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if from_version is not None:
            where.append("version >= ?")
            params.append(from_version)
        if since is not None:
            where.append('"at" >= ?')
            params.append(_utc(since)[0])
        if until is not None:
            where.append('"at" <= ?')
            params.append(_utc(until)[0])
        columns = _cols(_EVENT_COLUMNS)
        if not assignments:
            columns = columns.removesuffix(_q("data")) + _LIGHT_DATA
        sql = (
            f"SELECT {columns} FROM kstore_events WHERE {' AND '.join(where)} "
            "ORDER BY position LIMIT ?"
        )

        def fetch(after: int) -> list[tuple[Any, ...]]:
            with self._window(write=False) as conn:
                return conn.rows(sql, [after, *params, _READ_PAGE])

        for page in _pages(fetch, _READ_PAGE):
            yield from (_stored(row) for row in page)

    def event_pages(self, size: int) -> Iterator[pa.Table]:
        """The log's rows as stored (``data`` JSON text, ``at`` naive UTC), in log order,
        ``size`` rows a page, each page read in a window of its own (bulk readers)."""

        def fetch(after: int) -> pa.Table:
            with self._window(write=False, own=True) as conn:
                page: pa.Table = conn._db.execute(_AFTER, [after, size]).to_arrow_table()
            return page

        return _pages(fetch, size)

    def assignment_batches(self, upto: int, size: int) -> Iterator[pa.RecordBatch]:
        """``kstore_assignments`` rows of the events up to log position ``upto``, in one
        read window, by stream and version, each event's rows by member and partition."""
        stream = "cluster, group_id, timeline"
        with self._window(write=False, own=True) as conn:
            yield from conn._db.execute(
                f"SELECT {_cols(_ASSIGNMENT_COLUMNS)} FROM kstore_assignments "
                f"WHERE ({stream}, version) IN "
                f"(SELECT {stream}, version FROM kstore_events WHERE position <= ?) "
                f'ORDER BY {stream}, version, member, topic, "partition"',
                [upto],
            ).to_arrow_reader(size)

    def page(self, after: int, limit: int) -> list[StoredEvent]:
        """At most ``limit`` events after log position ``after``, in log order."""
        with self._window(write=False) as conn:
            rows = conn.rows(_AFTER, [after, limit])
        return [_stored(row) for row in rows]

    def version(self, stream: StreamId) -> int:
        """The stream's version (0: no such stream)."""
        where, params = _stream_where(stream)
        with self._window(write=False) as conn:
            found = conn.rows(f"SELECT version FROM kstore_streams WHERE {where}", params)
        return int(found[0][0]) if found else 0

    def checkpoint(self, key: str) -> Any:
        """The position last stored under ``key`` (JSON), or None."""
        with self._window(write=False) as conn:
            found = conn.rows("SELECT position FROM kstore_checkpoints WHERE key = ?", [key])
        return json.loads(found[0][0]) if found else None

    def streams(self) -> list[StreamInfo]:
        with self._window(write=False) as conn:
            rows = conn.rows(
                "SELECT cluster, group_id, timeline, version, first_at, last_at, generation "
                "FROM kstore_streams ORDER BY cluster, group_id, timeline"
            )
        return [
            StreamInfo(
                StreamId(c, g, t), v, first.replace(tzinfo=UTC), last.replace(tzinfo=UTC), gen
            )
            for c, g, t, v, first, last, gen in rows
        ]

    def state(
        self,
        stream: StreamId,
        *,
        at_version: int | None = None,
        at_generation: int | None = None,
        at: datetime | None = None,
        snapshots: bool = True,
    ) -> GroupState:
        """The fold of ``stream`` after a version, a generation's completion or a time.

        At most one of the three may be given; none means the stream's end.
        ``at_generation``: right after the (last) ``AssignmentCompleted`` of that
        generation. ``at``: after the longest prefix of the stream whose last event
        happened at or before that time. ``snapshots=False`` folds from the first event.
        """
        if sum(x is not None for x in (at_version, at_generation, at)) > 1:
            raise UsageError("give at most one of a version, a generation and a time")
        with self._window(write=False) as conn:
            where, params = _stream_where(stream)
            head = conn.rows(f"SELECT version FROM kstore_streams WHERE {where}", params)
            if not head:
                raise KstoreError(f"no stream {stream} in {self.path}")
            target: int = head[0][0]
            if at_version is not None:
                target = max(0, min(target, at_version))
            elif at_generation is not None:
                found = conn.rows(
                    f"SELECT max(version) FROM kstore_events WHERE {where} "
                    "AND type = 'AssignmentCompleted' "
                    "AND CAST(json_extract(data, '$.generation') AS BIGINT) = ?",
                    [*params, at_generation],
                )[0][0]
                if found is None:
                    raise UsageError(
                        f"stream {stream} has no AssignmentCompleted of generation {at_generation}"
                    )
                target = found
            elif at is not None:
                found = conn.rows(
                    f'SELECT max(version) FROM kstore_events WHERE {where} AND "at" <= ?',
                    [*params, _utc(at)[0]],
                )[0][0]
                target = found or 0
            start = self._from_snapshot(conn, stream, target) if snapshots else None
            state = start.state if start is not None else GroupState()
            for stored in self._stream_events(conn, stream, state.version, target):
                state.apply(stored.event)
        return state
