"""A simulated clock and its event queue: time jumps from one due action to the next."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from typing import Any, Generic, TypeVar

__all__ = ["Due", "EventQueue"]

T = TypeVar("T")

Action = Callable[[], None]


_at = itemgetter(0)
"""An entry's time."""


_when = itemgetter(0, 1)
"""An entry's time and sequence number."""


Item = tuple[int, int, str, Any]
"""A batch's action: its time, sequence number, key and argument."""


class _Batch:
    """Actions scheduled together (e.g. every member's rejoin after a rebalance starts),
    each with its own time and key, handled by one callable: one heap entry stands for
    all of them, at the time and sequence number of the first that is still live."""

    __slots__ = ("items", "pos", "run")

    def __init__(self, items: list[Item], run: Callable[[Due[Any]], None]) -> None:
        self.items = items
        self.pos = 0
        self.run = run


class Due(Generic[T]):
    """A batch's actions that are due, handed to its callable: the live ones that come
    before every other live entry (and the run's end), in order. Either iterated, one
    action at a time (each ``next`` advances the clock to that action's time, and an
    action that schedules something new ends the run only if that comes first), or
    taken at once (``take``, then ``keep``)."""

    __slots__ = ("_batch", "_queue", "_taken", "_until")

    def __init__(self, queue: EventQueue, batch: _Batch, until: int | None) -> None:
        self._queue, self._batch, self._until = queue, batch, until
        self._taken: list[Item] = []

    def __iter__(self) -> Iterator[T]:
        return self._queue._due(self._batch, self._until)

    def take(self) -> list[Item]:
        """Every due action at once, each consumed (its key no longer pending), the
        clock at the last one's time: what comes before every other live entry as they
        stand now, so a caller that schedules or cancels anything while going through
        them first gives back what it has not handled (``keep``)."""
        queue, batch = self._queue, self._batch
        items, live, pos = batch.items, queue._live, batch.pos
        stop = queue._stop(items, self._until, queue._first())
        taken = self._taken = [item for item in items[pos:stop] if live.get(item[2]) == item[1]]
        for _, _, key, _ in taken:
            del live[key]
        batch.pos = stop
        if taken:
            queue.now = taken[-1][0]
        return taken

    def window(self) -> tuple[list[tuple[int, int, str, T]], int, int, dict[str, int]]:
        """For a caller that goes through the due actions itself: the batch's items,
        where the due ones lie (``items[pos:stop]``, stale ones among them: those whose
        key is not pending with their number) and the pending keys. The caller drops
        the key of each live item it consumes, then says where it stopped
        (``consumed``); what it did not reach stays pending."""
        queue, batch = self._queue, self._batch
        items = batch.items
        return items, batch.pos, queue._stop(items, self._until, queue._first()), queue._live

    def consumed(self, end: int, at: int | None) -> None:
        """The caller of ``window`` went through ``items[:end]``; ``at``: the last
        consumed action's time, where the clock stands (``None``: none was)."""
        self._batch.pos = end
        if at is not None:
            self._queue.now = at

    def keep(self, n: int) -> None:
        """Of what ``take`` gave, only the first ``n`` (at least one) are consumed: the
        others are pending again, the clock at the ``n``-th's time."""
        queue, batch, taken = self._queue, self._batch, self._taken
        queue._live.update((key, seq) for _, seq, key, _ in taken[n:])
        last = taken[n - 1]
        batch.pos = bisect.bisect_right(batch.items, _when(last), key=_when)
        queue.now = last[0]
        self._taken = []


class EventQueue:
    """Actions due at simulated times (ms), run in (time, scheduling order).

    Each action has a key; scheduling a key again replaces the earlier action, and
    ``cancel`` drops it, so a timer that is reset (a heartbeat deadline, a join timeout)
    fires once, at its latest time.
    """

    __slots__ = ("_heap", "_live", "_seq", "now")

    def __init__(self) -> None:
        self.now = 0
        # (time, sequence, key, action), or (time, sequence, None, batch) for a batch.
        self._heap: list[tuple[int, int, str | None, Any]] = []
        self._live: dict[str, int] = {}
        self._seq = 0

    def schedule(self, at: int, key: str, action: Action) -> None:
        if at < self.now:
            raise ValueError(f"cannot schedule {key} at {at} ms, before now ({self.now} ms)")
        self._seq += 1
        self._live[key] = self._seq
        heapq.heappush(self._heap, (at, self._seq, key, action))

    def schedule_each(
        self, entries: Iterable[tuple[int, str, Any]], run: Callable[[Due[Any]], None]
    ) -> None:
        """Schedule an action at ``at`` under ``key`` for each ``(at, key, arg)`` in turn,
        with one heap entry for them all; ``run`` handles a run of them at once.

        When the first of them is due, ``run`` gets those that are due (``Due``): each
        runs at its own time and in the order separate ``schedule`` calls would give;
        what is left waits for a later ``run``. ``entries`` may schedule other actions
        while they are produced: each entry takes the next sequence number when it is
        produced.
        """
        now, live = self.now, self._live
        items: list[Item] = []
        append = items.append
        for at, key, arg in entries:
            if at < now:
                raise ValueError(f"cannot schedule {key} at {at} ms, before now ({now} ms)")
            self._seq = seq = self._seq + 1
            live[key] = seq
            append((at, seq, key, arg))
        self.schedule_made(items, self._seq, run)

    def numbering(self) -> tuple[int, dict[str, int]]:
        """For a caller that makes a batch's items itself (``schedule_made``): the last
        sequence number given, and the pending keys (each with its live number)."""
        return self._seq, self._live

    def schedule_made(self, items: list[Item], seq: int, run: Callable[[Due[Any]], None]) -> None:
        """``schedule_each`` of items the caller made in one pass of its own: each
        ``(at, seq, key, arg)`` numbered in list order from ``numbering``'s number on,
        its key given that number among the pending keys; ``seq`` is the last number
        given (one pass over the members instead of two, for every rebalance)."""
        self._seq = seq
        if items:
            # By time alone: the sort is stable and the sequence numbers rise in list order.
            items.sort(key=_at)
            first = items[0]
            if first[0] < self.now:
                raise ValueError(
                    f"cannot schedule {first[2]} at {first[0]} ms, before now ({self.now} ms)"
                )
            heapq.heappush(self._heap, (first[0], first[1], None, _Batch(items, run)))

    def cancel(self, key: str) -> None:
        self._live.pop(key, None)

    def pending(self, key: str) -> bool:
        return key in self._live

    def next_time(self) -> int | None:
        """When the next live action is due, or ``None`` if nothing is."""
        heap, live = self._heap, self._live
        while heap:
            at, seq, key, action = heap[0]
            if key is not None:
                if live.get(key) == seq:
                    return at
                heapq.heappop(heap)
                continue
            items, pos = action.items, action.pos
            while pos < len(items) and live.get(items[pos][2]) != items[pos][1]:
                pos += 1
            action.pos = pos
            if pos == len(items):
                heapq.heappop(heap)
            elif items[pos][1] != seq:
                heapq.heapreplace(heap, (items[pos][0], items[pos][1], None, action))
            else:
                return at
        return None

    def run_next(self, until: int | None = None) -> bool:
        """Advance to the next live action and run it; ``False`` if there is none (due
        at or before ``until``, when given)."""
        due = self.next_time()
        if due is None or (until is not None and due > until):
            return False
        heap = self._heap
        at, _, key, action = heap[0]
        if key is not None:
            heapq.heappop(heap)
            del self._live[key]
            self.now = at
            action()
            return True
        heapq.heappop(heap)
        action.run(Due(self, action, until))
        # What the run left (not due yet, behind another action, or not taken) waits.
        items, live, pos = action.items, self._live, action.pos
        while pos < len(items) and live.get(items[pos][2]) != items[pos][1]:
            pos += 1
        action.pos = pos
        if pos < len(items):
            heapq.heappush(heap, (items[pos][0], items[pos][1], None, action))
        return True

    def _due(self, batch: _Batch, until: int | None) -> Iterator[Any]:
        """The batch's live actions, in order, while each comes before every other live
        entry (and ``until``): its first is due now. An action that schedules something
        new only ends the run if that comes first."""
        items, live = batch.items, self._live
        end = len(items)
        limit = self._first()
        stop = self._stop(items, until, limit)
        pos = batch.pos
        while pos < end:
            at, seq, key, arg = items[pos]
            if live.get(key) != seq:
                pos += 1
                continue
            if pos >= stop:
                break
            pos += 1
            batch.pos = pos
            del live[key]
            self.now = at
            mark = self._seq
            yield arg
            if self._seq != mark:
                stop = self._stop(items, until, self._first())
        batch.pos = pos

    @staticmethod
    def _stop(
        items: list[tuple[int, int, str, Any]], until: int | None, limit: tuple[int, int] | None
    ) -> int:
        """Where a batch's run ends: its first item after ``until`` or after ``limit``
        (the time and sequence number of the first other live entry)."""
        stop = len(items)
        if until is not None:
            stop = bisect.bisect_right(items, until, key=_at)
        if limit is not None:
            stop = min(stop, bisect.bisect_left(items, limit, key=_when))
        return stop

    def _first(self) -> tuple[int, int] | None:
        """Time and sequence number of the first live entry, or ``None``."""
        if self.next_time() is None:
            return None
        at, seq, _, _ = self._heap[0]
        return at, seq

    def run_until(self, until: int) -> None:
        """Run every action due at or before ``until``, then stand at ``until``."""
        while self.run_next(until):
            pass
        self.now = max(self.now, until)
