"""The store's narrow interface: what every producer and reader may ask of an event log.

``EventStore`` is a ``typing.Protocol`` (as ``eventsourcing`` puts its recorders behind
``persistence.py``): the DuckDB ``Store`` (``kstore.store.log``) and the ``MemoryStore``
(``kstore.store.memory``) implement it, and ``kstore.store.testing.EventStoreContract``
is the test suite both pass. The value types it speaks are here too, so that code written
against the interface imports no implementation.

The rules every implementation keeps:

- ``append`` stores a batch wholly or not at all. An event whose ``event_id`` is stored
  already is skipped (counted in ``already``), so a retried or repeated batch is harmless;
  one whose id is stored (or twice in the batch) as another fact is refused, naming both.
- Each stream's events get versions 1, 2, ... in order; every event gets the next global
  ``position`` (log order). ``expected_version`` is checked for each stream the batch
  adds events to: if one is elsewhere, ``ConcurrencyError`` and nothing is stored.
- A ``CheckpointWrite`` is stored in the append's transaction, compare-and-set on its
  ``expected`` value (JSON); a mismatch is a ``ConcurrencyError`` and stores nothing.
- ``query`` runs one read-only ``SELECT`` over the documented tables and views, sandboxed:
  it can write nothing and read no file but those named in ``read_paths``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kstore._errors import KstoreError
from kstore.model.events import Event, StreamId
from kstore.model.fold import Applied, GroupState

__all__ = [
    "AppendResult",
    "CheckpointWrite",
    "ConcurrencyError",
    "EventStore",
    "Folded",
    "QueryResult",
    "StoredEvent",
    "StreamInfo",
]


class ConcurrencyError(KstoreError):
    """A stream moved past the version an append expected; nothing was stored."""

    exit_code = 4


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as the log holds it: with its global position and stream version."""

    position: int
    version: int
    event: Event


@dataclass(frozen=True, slots=True)
class AppendResult:
    """``stored`` new events, ``already`` skipped as stored before; ``versions``: each
    stream that got new events, at its version after the append."""

    stored: int
    already: int
    versions: Mapping[StreamId, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckpointWrite:
    """A recorder's new position, stored by ``append`` in the transaction of its events.

    ``value`` is JSON (dict keys come back as strings). ``expected`` is the value the
    recorder read or last wrote (None: it had none): when the stored one differs,
    another writer moved it, and the append raises ``ConcurrencyError``, storing nothing.
    """

    key: str
    value: Any
    expected: Any = None


@dataclass(frozen=True, slots=True)
class Folded:
    """A producer's fold of the events it appends to a stream, handed to ``append`` so
    the store does not fold them again: ``state`` after them, and the ``Applied``
    records its fold kept of them (``GroupState.applied``). The store keeps it only
    where it fits the events it stores (versions, every record there); else it folds
    them itself."""

    state: GroupState
    applied: Sequence[Applied]


@dataclass(frozen=True, slots=True)
class StreamInfo:
    stream: StreamId
    events: int
    first_at: datetime
    last_at: datetime
    generation: int | None


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    types: list[str] = field(default_factory=list)
    """DuckDB's type of each column (``JSON``, ``VARCHAR``, ...), where the store told."""

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@runtime_checkable
class EventStore(Protocol):
    """An append-only log of group events, the folds of its streams, and checkpoints."""

    def append(
        self,
        events: Iterable[Event],
        expected_version: int | Mapping[StreamId, int] | None = None,
        *,
        checkpoint: CheckpointWrite | None = None,
        folded: Mapping[StreamId, Folded] | None = None,
    ) -> AppendResult:
        """Store a batch atomically (see the module's rules); ``expected_version`` is
        one number for a one-stream batch, or a version per stream; ``folded``: the
        producer's folds of the batch's streams (``Folded``)."""
        ...

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
        """Stored events in log order, filtered (``since``/``until`` inclusive, on
        ``at``); ``assignments=False`` gives every ``AssignmentCompleted`` an empty
        ``assignment``."""
        ...

    def page(self, after: int, limit: int) -> list[StoredEvent]:
        """At most ``limit`` events after log position ``after``, in log order."""
        ...

    def version(self, stream: StreamId) -> int:
        """The stream's version: its number of events (0: no such stream)."""
        ...

    def state(
        self,
        stream: StreamId,
        *,
        at_version: int | None = None,
        at_generation: int | None = None,
        at: datetime | None = None,
        snapshots: bool = True,
    ) -> GroupState:
        """The fold of ``stream`` after a version, a generation's (last) completion or
        a time (the longest prefix at or before it); none given: the stream's end."""
        ...

    def streams(self) -> list[StreamInfo]:
        """Every stream, ordered by (cluster, group, timeline)."""
        ...

    def checkpoint(self, key: str) -> Any:
        """The value last stored under ``key`` (JSON), or None."""
        ...

    def query(
        self,
        sql: str,
        params: Sequence[Any] | Mapping[str, Any] = (),
        read_paths: Iterable[Path | str] = (),
    ) -> QueryResult:
        """One read-only ``SELECT`` over the store's tables and views, and no file but
        those of ``read_paths``; an error is a ``KstoreError``."""
        ...
