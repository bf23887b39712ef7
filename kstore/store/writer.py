"""The one way producers write: ids, resume, batches, expected versions, checkpoints.

Every producer (simulate, replay, the recorders, ``kstore append``) hands its events to
a ``Writer`` on any ``EventStore``; the writer imports no database. It

- makes events and their ids by the one recipe (``stamp``: ``kstore.model.ids.event_id``
  of the names the producer gives the fact, and with ``content`` a digest of its data);
- resumes from what is stored: ``stored(stream)`` gives the events a deterministic
  producer derives again and checks, ``state(stream)`` the stream's fold for a producer
  that diffs against it, ``saved`` the checkpoint it left;
- batches (``add`` flushes at ``batch_events`` events or about ``batch_entries``
  assigned partitions; ``None``: only when told) and appends every batch with the
  expected version of each of its streams that it knows (resumed, or seen after its own
  appends), so two writers of one stream never interleave (the second gets
  ``ConcurrencyError``, nothing stored);
- stores the producer's checkpoint in the transaction of the batch (``flush(position)``;
  a writer with a checkpoint flushes only when told, so no event goes in without it);
- made ``apart``, appends a batch in a forked copy of the process while the producer
  goes on (``flush_apart``; a store file's appends take as long as a simulation makes
  its events, so the two overlap on two cores).

Each appended event is folded once. A producer that folds its own events (the
simulator, replay) starts from the writer's ``fold``, which records what the
projections read of it (``GroupState.applied``) from its first event, and hands it to
``add`` with its events: the writer keeps it as the stream's fold and hands fold and
records to the store with the events (``Folded``), which projects from them (a fold
of the producer's own is switched to recording at its first ``add``: the store folds
that first batch itself). For the others the
writer keeps the fold itself once asked for it (``state``), advanced by what it appends
and handed over the same way, and asks the store to fold only when another writer moved
the stream; without a fold (``kstore append``) the store folds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any

from kstore._apart import FORKS, Apart
from kstore.model._construct import every_field, instance
from kstore.model.events import (
    AssignmentCompleted,
    Event,
    EventData,
    EventError,
    StreamId,
    content_digest,
)
from kstore.model.fold import GroupState
from kstore.model.ids import event_id, event_ids
from kstore.store.interface import (
    AppendResult,
    CheckpointWrite,
    ConcurrencyError,
    EventStore,
    Folded,
)

__all__ = ["Writer", "stamp", "stamper"]


def stamp(
    stream: StreamId,
    at: datetime,
    data: EventData,
    *name: object,
    content: bool = False,
    trusted: bool = False,
) -> Event:
    """A new event of ``stream``, its id ``event_id(*name)`` (``content``: the data's
    digest appended to the last name, as ``name/digest``). ``trusted``: built from values
    the producer made itself, not validated again (a hot path)."""
    if content:
        name = (*name[:-1], f"{name[-1]}/{content_digest(data)}")
    fields: dict[str, Any] = {
        "event_id": event_id(*name),
        "cluster": stream.cluster,
        "group": stream.group,
        "timeline": stream.timeline,
        "at": at,
        "data": data,
    }
    # Every field given, in the model's order: ``construct``'s template adds nothing.
    return instance(Event, fields, every_field(Event)) if trusted else Event(**fields)


def stamper(stream: StreamId, *name: object) -> Callable[[datetime, EventData, object], Event]:
    """``stamp(stream, at, data, *name, last, trusted=True)`` as a function of ``at``,
    ``data`` and ``last``, the rest made once: a simulation's every event (0.7 of its
    2.9 us)."""
    ids, (cluster, group, timeline), every = event_ids(*name), stream, every_field(Event)

    def made(at: datetime, data: EventData, last: object) -> Event:
        fields = {
            "event_id": ids(last),
            "cluster": cluster,
            "group": group,
            "timeline": timeline,
            "at": at,
            "data": data,
        }
        return instance(Event, fields, every)

    return made


class Writer:
    """A producer's events into ``store``, in batches, each at the versions it expects."""

    def __init__(
        self,
        store: EventStore,
        *,
        checkpoint: str | None = None,
        batch_events: int | None = 1000,
        batch_entries: int | None = 1_000_000,
        apart: bool = False,
    ) -> None:
        self.store = store
        self.apart = apart
        """``flush_apart`` appends in a forked process: for a store whose appends other
        processes see (a file), never one in this process's memory."""
        self.batch_events = batch_events
        self.batch_entries = batch_entries
        self.key = checkpoint
        self.saved: Any = store.checkpoint(checkpoint) if checkpoint is not None else None
        """The checkpoint as stored when the writer started or last flushed."""
        self.stored_count = 0
        self.already = 0
        self._versions: dict[StreamId, int] = {}
        self._folds: dict[StreamId, GroupState] = {}
        self._producer_folds: set[StreamId] = set()
        self._pending: list[Event] = []
        self._entries = 0
        self._apart: (
            tuple[Apart, Counter[StreamId], dict[StreamId, int], dict[StreamId, Folded]] | None
        ) = None

    # --- resuming -------------------------------------------------------------------------

    def version(self, stream: StreamId) -> int:
        """The stream's version as this writer knows it stored (read once, then kept and
        expected by the writer's appends)."""
        known = self._versions.get(stream)
        if known is None:
            known = self._versions[stream] = self.store.version(stream)
        return known

    def stored(self, stream: StreamId, version: int | None = None) -> Iterator[Event]:
        """The stream's stored events, in order, up to the version this writer resumes
        from (for a producer that derives them again and checks them). ``version``: the
        stream's version as the producer has just read it (``streams``), else read here."""
        if version is None:
            version = self.store.version(stream)
        self._versions[stream] = version
        if not version:
            return iter(())
        found = self.store.events(
            cluster=stream.cluster, group=stream.group, timeline=stream.timeline
        )
        return (s.event for s in islice(found, version))

    def state(self, stream: StreamId) -> GroupState:
        """The stream's fold at its stored version (do not change it): the writer's own
        while nobody else moved the stream, else the store's."""
        version = self._versions[stream] = self.store.version(stream)
        held = self._folds.get(stream)
        if held is None or held.version != version:
            held = self.store.state(stream) if version else GroupState()
            self._folds[stream] = held
            self._producer_folds.discard(stream)
            self._versions[stream] = held.version
        return held

    def fold(self) -> GroupState:
        """The fold a producer that folds its own events starts from (the stored events
        it derives again, then its new ones), to hand to ``add`` with them: it records
        what the store's projections read from its first event, so the store folds none
        of them."""
        return GroupState(applied=[])

    # --- writing --------------------------------------------------------------------------

    def add(self, events: Iterable[Event], fold: GroupState | None = None) -> None:
        """Queue ``events``; a full batch is flushed. ``fold``: the producer's fold of its
        stream, these events included (neither the writer nor the store folds them)."""
        for event in events:
            self._pending.append(event)
            if self.batch_entries is not None and isinstance(event.data, AssignmentCompleted):
                self._entries += sum(map(len, event.data.assignment.values()))
        if fold is not None and fold.stream is not None:
            if fold.applied is None:
                fold.applied = []
            self._folds[fold.stream] = fold
            self._producer_folds.add(fold.stream)
        if self.key is None and (
            (self.batch_events is not None and len(self._pending) >= self.batch_events)
            or (self.batch_entries is not None and self._entries >= self.batch_entries)
        ):
            self.flush()

    def write(self, events: Iterable[Event], position: Any = None) -> AppendResult:
        """``events``, after anything queued, appended now as one batch (with ``position``
        as the checkpoint), whatever their number."""
        self._pending.extend(events)
        return self.flush(position)

    def flush(self, position: Any = None) -> AppendResult:
        """Append what is queued, each stream at the version expected, and ``position``
        as the checkpoint (when the writer has a key) in the same transaction."""
        self.wait()
        batch, streams, counts, expected = self._taken()
        checkpoint = None
        if self.key is not None and position is not None:
            checkpoint = CheckpointWrite(self.key, position, expected=self.saved)
        if not batch and checkpoint is None:
            return AppendResult(0, 0)
        folded = self._folded(batch, streams)
        try:
            result = self._append(batch, expected, checkpoint, folded)
        except BaseException:
            self._unfold(folded)
            raise
        if checkpoint is not None:
            self.saved = json.loads(json.dumps(position))
        self._settle(counts, expected, result)
        return result

    def flush_apart(self) -> None:
        """``flush`` in a forked copy of this process (a writer made ``apart``), returning
        at once: the producer goes on while the store takes the batch, on another core.
        The writer waits for the copy at its next flush or ``wait``, which takes its
        result in (or raises its error, nothing of the batch stored), or ``abandon``.
        The copy ignores Ctrl-C and dies with the producer (SIGKILL: nothing of its
        batch is stored). Not ``apart``,
        without ``os.fork`` (not Linux) or with a checkpoint key, it is ``flush``."""
        self.wait()
        if not (self.apart and FORKS) or self.key is not None:
            self.flush()
            return
        batch, streams, counts, expected = self._taken()
        if not batch:
            return
        folded = self._folded(batch, streams)
        # A store file's append imports numpy's masked arrays at first use (20-30 ms of
        # CPU): imported here once, not anew in every forked copy (14 in the 10,000-step
        # simulation).
        import numpy.ma  # noqa: F401

        self._apart = (
            Apart(lambda: self._append(batch, expected, None, folded)),
            counts,
            expected,
            folded,
        )

    @property
    def appending(self) -> bool:
        """Whether a batch that ``flush_apart`` handed over is still being appended."""
        return self._apart is not None and not self._apart[0].done()

    def wait(self) -> None:
        """Wait for the batch ``flush_apart`` handed to a copy of this process, if any."""
        if self._apart is None:
            return
        apart, counts, expected, _ = self._apart
        try:
            result = apart.result()
        except BaseException:
            self.abandon()  # interrupted while waiting (Ctrl-C): the copy ends too
            raise
        self._apart = None
        self._settle(counts, expected, result)

    def abandon(self) -> None:
        """End the copy appending what ``flush_apart`` handed over, if any (SIGKILL:
        nothing of its batch is stored); for a producer that stops at once (Ctrl-C)."""
        if self._apart is not None:
            apart, _, _, folded = self._apart
            self._apart = None
            apart.kill()
            self._unfold(folded)

    def _taken(
        self,
    ) -> tuple[list[Event], list[StreamId], Counter[StreamId], dict[StreamId, int]]:
        """The queued events (the queue emptied), each one's stream, their count per
        stream, and the version this writer expects each stream it knows at."""
        batch, self._pending, self._entries = self._pending, [], 0
        streams = [event.stream for event in batch]
        counts = Counter(streams)
        expected = {s: self._versions[s] for s in counts if s in self._versions}
        return batch, streams, counts, expected

    def _unfold(self, folded: dict[StreamId, Folded]) -> None:
        for stream in folded.keys() - self._producer_folds:
            self._folds.pop(stream, None)  # advanced by what was not stored

    def _settle(
        self, counts: Counter[StreamId], expected: dict[StreamId, int], result: AppendResult
    ) -> None:
        """Take in an append's ``result``: the stored counts and the streams' versions."""
        self.stored_count += result.stored
        self.already += result.already
        for stream, count in counts.items():
            if stream in result.versions:
                self._versions[stream] = result.versions[stream]
            elif stream in expected:
                # Events skipped as stored already sit where this writer would have put
                # them (a second recorder of the same facts): the stream moved by them.
                self._versions[stream] = expected[stream] + count

    def _append(
        self,
        batch: list[Event],
        expected: dict[StreamId, int],
        checkpoint: CheckpointWrite | None,
        folded: dict[StreamId, Folded],
    ) -> AppendResult:
        try:
            return self.store.append(batch, expected, checkpoint=checkpoint, folded=folded)
        except EventError:
            # Another fact under one of these ids: when a stream moved past the version
            # this writer made its events from, another writer recorded the facts first
            # (a stale view, as a version conflict), else the events are at fault.
            for stream, version in expected.items():
                if self.store.version(stream) != version:
                    raise ConcurrencyError(
                        f"stream {stream} moved past version {version}, and holds other "
                        "facts under this batch's ids; nothing stored"
                    ) from None
            raise

    def _folded(self, batch: list[Event], streams: list[StreamId]) -> dict[StreamId, Folded]:
        """The folds of the batch's streams (``streams``: each event's) to hand to the
        store: a producer's as it is (its records taken), the writer's own advanced by
        the batch (the only fold of these events; events the store skips as stored
        already are folded as it would have put them, as the versions are)."""
        held = {s: self._folds[s] for s in dict.fromkeys(streams) if s in self._folds}
        own = {s: fold for s, fold in held.items() if s not in self._producer_folds}
        for fold in own.values():
            fold.applied = []
        for event, stream in zip(batch, streams, strict=True):
            mine = own.get(stream)
            if mine is not None:
                mine.apply(event)
        folded = {}
        for stream, fold in held.items():
            records, fold.applied = fold.applied or [], None if stream in own else []
            folded[stream] = Folded(fold, records)
        return folded

    def forget(self, stream: StreamId) -> None:
        """Drop what the writer knows of ``stream`` (after a ``ConcurrencyError``: the
        next ``state`` or ``version`` reads it from the store again)."""
        self._versions.pop(stream, None)
        self._folds.pop(stream, None)
        self._producer_folds.discard(stream)
