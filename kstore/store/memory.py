"""The in-memory ``EventStore``: the log, versions, folds and checkpoints in Python objects.

It keeps the DuckDB store's rules (``kstore.store.interface``; the contract suite
``kstore.store.testing`` checks both) and is safe to share between threads. Tables and
views for ``query`` are not kept twice: on the first query the log is fed, in log order,
to a DuckDB store in a temporary directory (the same projection code as the DuckDB
``Store``), and each later query first feeds it what was appended since.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kstore._errors import KstoreError, UsageError
from kstore.model.events import AssignmentCompleted, Event, StreamId, by_id, conflict
from kstore.model.fold import GroupState, fold
from kstore.store.interface import (
    AppendResult,
    CheckpointWrite,
    ConcurrencyError,
    Folded,
    QueryResult,
    StoredEvent,
    StreamInfo,
)

if TYPE_CHECKING:
    from kstore.store.log import Store

__all__ = ["MemoryStore"]


def _json(value: Any) -> str:
    return json.dumps(value)


class MemoryStore:
    """An ``EventStore`` in this process's memory (tests, simulations kept in memory)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._log: list[StoredEvent] = []
        self._ids: dict[str, StoredEvent] = {}
        self._streams: dict[StreamId, list[StoredEvent]] = {}
        self._heads: dict[StreamId, GroupState] = {}
        self._checkpoints: dict[str, str] = {}
        self._mirror: Store | None = None
        self._mirror_dir: tempfile.TemporaryDirectory[str] | None = None
        self._mirrored = 0
        self._mirrored_checkpoints: dict[str, Any] = {}

    # --- writing ------------------------------------------------------------------------

    def append(
        self,
        events: Iterable[Event],
        expected_version: int | Mapping[StreamId, int] | None = None,
        *,
        checkpoint: CheckpointWrite | None = None,
        folded: Mapping[StreamId, Folded] | None = None,
    ) -> AppendResult:
        unique = by_id(events)
        if not unique and checkpoint is None:
            return AppendResult(0, 0)
        with self._lock:
            if checkpoint is not None:
                have = self._checkpoints.get(checkpoint.key)
                if json.loads(have or "null") != json.loads(_json(checkpoint.expected)):
                    raise ConcurrencyError(
                        f"checkpoint {checkpoint.key!r} was moved by another writer; nothing stored"
                    )
            for event in unique.values():
                stored = self._ids.get(event.event_id)
                if stored is not None:
                    refused = conflict(stored.event, stored.position, stored.version, event)
                    if refused is not None:
                        raise refused
            new = [event for event_id, event in unique.items() if event_id not in self._ids]
            heads = self._fold_batch(new, expected_version, folded or {})
            for event in new:
                stored = StoredEvent(len(self._log) + 1, self._version(event.stream) + 1, event)
                self._log.append(stored)
                self._streams.setdefault(event.stream, []).append(stored)
                self._ids[event.event_id] = stored
            self._heads.update(heads)
            if checkpoint is not None:
                self._checkpoints[checkpoint.key] = _json(checkpoint.value)
        versions = {stream: head.version for stream, head in heads.items()}
        return AppendResult(len(new), len(unique) - len(new), versions)

    def _fold_batch(
        self,
        batch: list[Event],
        expected: int | Mapping[StreamId, int] | None,
        folded: Mapping[StreamId, Folded],
    ) -> dict[StreamId, GroupState]:
        """The new heads of the batch's streams, after checking the expected versions
        (a producer's fold taken as it is where it ends where the batch does)."""
        if not batch:
            return {}
        streams = list(dict.fromkeys(event.stream for event in batch))
        if isinstance(expected, int):
            if len(streams) != 1:
                raise UsageError("an expected version needs a batch of one stream")
            expected = {streams[0]: expected}
        for stream, want in (expected or {}).items():
            have = self._version(stream)
            if stream in streams and have != want:
                raise ConcurrencyError(
                    f"stream {stream} is at version {have}, not {want} as expected; nothing stored"
                )
        counts = Counter(event.stream for event in batch)
        taken = {
            s: given.state.copy()
            for s, given in folded.items()
            if given.state.stream == s and given.state.version == self._version(s) + counts[s]
        }
        heads = {s: taken.get(s) or self._heads.get(s, GroupState()).copy() for s in streams}
        for event in batch:
            if event.stream not in taken:
                heads[event.stream].apply(event)
        return heads

    def _version(self, stream: StreamId) -> int:
        return len(self._streams.get(stream, ()))

    # --- reading ------------------------------------------------------------------------

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
        with self._lock:
            log = list(self._log)
        for stored in log:
            event = stored.event
            if (
                (cluster is not None and event.cluster != cluster)
                or (group is not None and event.group != group)
                or (timeline is not None and event.timeline != timeline)
                or (from_version is not None and stored.version < from_version)
                or (since is not None and event.at < since)
                or (until is not None and event.at > until)
            ):
                continue
            if not assignments and isinstance(event.data, AssignmentCompleted):
                data = event.data.model_copy(update={"assignment": {}})
                stored = StoredEvent(
                    stored.position, stored.version, event.model_copy(update={"data": data})
                )
            yield stored

    def page(self, after: int, limit: int) -> list[StoredEvent]:
        with self._lock:
            return self._log[max(after, 0) : max(after, 0) + max(limit, 0)]

    def version(self, stream: StreamId) -> int:
        with self._lock:
            return self._version(stream)

    def state(
        self,
        stream: StreamId,
        *,
        at_version: int | None = None,
        at_generation: int | None = None,
        at: datetime | None = None,
        snapshots: bool = True,
    ) -> GroupState:
        if sum(x is not None for x in (at_version, at_generation, at)) > 1:
            raise UsageError("give at most one of a version, a generation and a time")
        with self._lock:
            if stream not in self._streams:
                raise KstoreError(f"no stream {stream} in memory")
            events = list(self._streams[stream])
            head = self._heads[stream]
        target = len(events)
        if at_version is not None:
            target = max(0, min(target, at_version))
        elif at_generation is not None:
            found = [
                s.version
                for s in events
                if isinstance(s.event.data, AssignmentCompleted)
                and s.event.data.generation == at_generation
            ]
            if not found:
                raise UsageError(
                    f"stream {stream} has no AssignmentCompleted of generation {at_generation}"
                )
            target = found[-1]
        elif at is not None:
            target = max((s.version for s in events if s.event.at <= at), default=0)
        if target == len(events) and snapshots:
            return head.copy()
        return fold(s.event for s in events[:target])

    def streams(self) -> list[StreamInfo]:
        with self._lock:
            found = [(stream, list(events)) for stream, events in self._streams.items()]
            generations = {stream: head.generation for stream, head in self._heads.items()}
        return [
            StreamInfo(
                stream,
                len(events),
                min(s.event.at for s in events).astimezone(UTC),
                max(s.event.at for s in events).astimezone(UTC),
                generations[stream],
            )
            for stream, events in sorted(found)
        ]

    def checkpoint(self, key: str) -> Any:
        with self._lock:
            have = self._checkpoints.get(key)
        return None if have is None else json.loads(have)

    def query(
        self,
        sql: str,
        params: Sequence[Any] | Mapping[str, Any] = (),
        read_paths: Iterable[Path | str] = (),
    ) -> QueryResult:
        with self._lock:
            mirror = self._mirror_store()
            batch = [stored.event for stored in self._log[self._mirrored :]]
            if batch:
                mirror.append(batch)
                self._mirrored += len(batch)
            for key, text in self._checkpoints.items():
                value = json.loads(text)
                if self._mirrored_checkpoints.get(key) != value:
                    before = self._mirrored_checkpoints.get(key)
                    mirror.append((), checkpoint=CheckpointWrite(key, value, expected=before))
                    self._mirrored_checkpoints[key] = value
        return mirror.query(sql, params, read_paths)

    def _mirror_store(self) -> Store:
        if self._mirror is None:
            from kstore.store.log import Store

            self._mirror_dir = tempfile.TemporaryDirectory(prefix="kstore-memory-")
            mirror = Store(Path(self._mirror_dir.name) / "kstore.duckdb")
            mirror.init()
            self._mirror = mirror
        return self._mirror
