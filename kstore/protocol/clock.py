"""A simulated clock and its event queue: time jumps from one due action to the next."""

from __future__ import annotations

import heapq
from collections.abc import Callable

__all__ = ["EventQueue"]

Action = Callable[[], None]


class EventQueue:
    """Actions due at simulated times (ms), run in (time, scheduling order).

    Each action has a key; scheduling a key again replaces the earlier action, and
    ``cancel`` drops it, so a timer that is reset (a heartbeat deadline, a join timeout)
    fires once, at its latest time.
    """

    __slots__ = ("_heap", "_live", "_seq", "now")

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, str, Action]] = []
        self._live: dict[str, int] = {}
        self._seq = 0

    def schedule(self, at: int, key: str, action: Action) -> None:
        if at < self.now:
            raise ValueError(f"cannot schedule {key} at {at} ms, before now ({self.now} ms)")
        self._seq += 1
        self._live[key] = self._seq
        heapq.heappush(self._heap, (at, self._seq, key, action))

    def cancel(self, key: str) -> None:
        self._live.pop(key, None)

    def pending(self, key: str) -> bool:
        return key in self._live

    def next_time(self) -> int | None:
        """When the next live action is due, or ``None`` if nothing is."""
        heap = self._heap
        while heap and self._live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def run_next(self) -> bool:
        """Advance to the next live action and run it; ``False`` if there is none."""
        if self.next_time() is None:
            return False
        at, _, key, action = heapq.heappop(self._heap)
        del self._live[key]
        self.now = at
        action()
        return True

    def run_until(self, until: int) -> None:
        """Run every action due at or before ``until``, then stand at ``until``."""
        while True:
            due = self.next_time()
            if due is None or due > until:
                break
            self.run_next()
        self.now = max(self.now, until)
