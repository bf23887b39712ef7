"""A simulated clock and its event queue: time jumps from one due action to the next."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["EventQueue"]

Action = Callable[[], None]


class _Batch:
    """Actions that share one callable, scheduled together (e.g. every member's rejoin
    after a rebalance starts): one heap entry stands for all of them, at the time and
    sequence number of the first that is still live."""

    __slots__ = ("items", "pos", "run")

    def __init__(self, items: list[tuple[int, int, str, Any]], run: Callable[[Any], None]) -> None:
        self.items = items
        self.pos = 0
        self.run = run


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
        self, entries: Iterable[tuple[int, str, Any]], run: Callable[[Any], None]
    ) -> None:
        """``schedule(at, key, lambda: run(arg))`` for each ``(at, key, arg)`` in turn,
        with one heap entry for them all."""
        now, live, seq = self.now, self._live, self._seq
        items = []
        for at, key, arg in entries:
            if at < now:
                raise ValueError(f"cannot schedule {key} at {at} ms, before now ({now} ms)")
            seq += 1
            live[key] = seq
            items.append((at, seq, key, arg))
        self._seq = seq
        if items:
            items.sort()
            heapq.heappush(self._heap, (items[0][0], items[0][1], None, _Batch(items, run)))

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
        # A run of the batch's actions: while its next live action comes before every
        # other live entry (and ``until``), it runs without a trip through the heap. The
        # order is the one the heap would give; an action that schedules something new
        # only ends the run if that comes first.
        heapq.heappop(heap)
        items, live, run = action.items, self._live, action.run
        pos, end = action.pos, len(items)
        limit = self._first()
        while True:
            at, _, key, arg = items[pos]
            pos += 1
            action.pos = pos
            del live[key]
            self.now = at
            mark = self._seq
            run(arg)
            if self._seq != mark:
                limit = self._first()
            while pos < end and live.get(items[pos][2]) != items[pos][1]:
                pos += 1
            action.pos = pos
            if pos == end:
                return True
            follower = items[pos]
            if (until is not None and follower[0] > until) or (
                limit is not None and (follower[0], follower[1]) > limit
            ):
                heapq.heappush(heap, (follower[0], follower[1], None, action))
                return True

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
