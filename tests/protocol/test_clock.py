"""The event queue: a batch of actions run as one step keeps the order of separate timers."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from kstore.protocol.clock import Due, EventQueue


def _log_run(
    seed: int, batched: bool, taken: bool = False, windowed: bool = False
) -> list[tuple[int, str]]:
    """Timers at random times, some of them rescheduling or cancelling others or adding
    new ones that come first; ``batched``: the ``b*`` timers through ``schedule_each``,
    ``taken``: their runs taken at once, those that change nothing logged in one pass;
    ``windowed``: the ``b*`` timers made by the caller (``numbering``, ``schedule_made``)
    and their runs gone through by it (``window``, ``consumed``)."""
    rng = random.Random(seed)
    queue = EventQueue()
    log: list[tuple[int, str]] = []

    def act(name: str) -> None:
        log.append((queue.now, name))
        roll = rng.random()
        changes(roll)

    def changes(roll: float) -> None:
        if roll < 0.1:
            queue.schedule(queue.now + rng.randrange(0, 5), f"x{len(log)}", lambda: act("new"))
        elif roll < 0.15:
            queue.cancel(f"b{rng.randrange(20)}")
        elif roll < 0.2:
            key = f"b{rng.randrange(20)}"
            queue.schedule(queue.now + rng.randrange(0, 5), key, lambda: act(f"again-{key}"))

    for i in range(10):
        queue.schedule(rng.randrange(0, 30), f"o{i}", lambda i=i: act(f"o{i}"))  # type: ignore[misc]
    entries = [(rng.randrange(0, 30), f"b{i}", f"b{i}") for i in range(20)]
    if windowed:

        def run(due: Due[str]) -> None:
            items, pos, stop, live = due.window()
            last = None
            for i in range(pos, stop):
                at, seq, key, name = items[i]
                if live.get(key) != seq:
                    continue
                del live[key]
                last = at
                roll = rng.random()
                if roll < 0.2:  # it changes what is due: the rest wait for a later run
                    due.consumed(i + 1, at)
                    log.append((queue.now, name))
                    changes(roll)
                    return
                log.append((at, name))
            due.consumed(stop, last)

        seq, live = queue.numbering()
        made = []
        for at, key, name in entries:
            seq += 1
            live[key] = seq
            made.append((at, seq, key, name))
        queue.schedule_made(made, seq, run)
    elif taken:

        def run(due: Due[str]) -> None:
            items = due.take()
            for n, (at, _, _, name) in enumerate(items):
                roll = rng.random()
                if roll < 0.2:  # it changes what is due: the rest are given back
                    due.keep(n + 1)
                    log.append((queue.now, name))
                    changes(roll)
                    return
                log.append((at, name))

        queue.schedule_each(entries, run)
    elif batched:

        def run(due: Due[str]) -> None:
            for name in due:
                act(name)

        queue.schedule_each(entries, run)
    else:
        for at, key, name in entries:
            queue.schedule(at, key, lambda name=name: act(name))  # type: ignore[misc]
    for i in range(10, 15):
        queue.schedule(rng.randrange(0, 30), f"o{i}", lambda i=i: act(f"o{i}"))  # type: ignore[misc]
    queue.run_until(20)
    log.append((queue.now, "paused"))
    queue.run_until(100)
    return log


@pytest.mark.parametrize("seed", range(40))
def test_a_batch_runs_as_separate_timers_would(seed: int) -> None:
    alone = _log_run(seed, batched=False)
    assert _log_run(seed, batched=True) == alone
    assert _log_run(seed, batched=True, taken=True) == alone
    assert _log_run(seed, batched=True, windowed=True) == alone


def test_what_a_run_does_not_take_runs_later() -> None:
    queue = EventQueue()
    seen: list[tuple[int, int]] = []

    def one_at_a_time(due: Due[int]) -> None:
        arg = next(iter(due))
        seen.append((queue.now, arg))

    queue.schedule_each([(5, "a", 1), (5, "b", 2), (7, "c", 3)], one_at_a_time)
    queue.run_until(10)
    assert seen == [(5, 1), (5, 2), (7, 3)]
    assert not queue.pending("a") and queue.next_time() is None


def test_entries_may_schedule_while_they_are_produced() -> None:
    queue = EventQueue()
    log: list[str] = []

    def entries() -> Iterator[tuple[int, str, str]]:
        yield 5, "a", "a"
        queue.schedule(5, "between", lambda: log.append("between"))
        yield 5, "b", "b"

    def run(due: Iterator[str]) -> None:
        log.extend(due)

    queue.schedule_each(entries(), run)
    queue.run_until(5)
    assert log == ["a", "between", "b"]
