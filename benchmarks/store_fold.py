"""Folding the end of a stream of 10,000 rebalances of a 1,000-partition group.

kstore's figures: ``Store.state`` of the stream at its worst version for snapshots (the
one just before a snapshot, so the longest tail is folded) and at its end, against the
limit of 0.5 s; the same without snapshots beside it; and the store's size on disk per
rebalance (a rebalance = ``RebalanceStarted`` + ``AssignmentCompleted``).
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks._goals import verdict
from kstore.model import AssignmentCompleted, Event, RebalanceStarted, StreamId
from kstore.store.log import SNAPSHOT_EVERY, Store

__all__ = ["main"]

REBALANCES = 10_000
PARTITIONS = 1_000
MEMBERS = 20
LIMIT_S = 0.5
BATCH = 500


def _stream() -> list[Event]:
    start = datetime(2026, 11, 21, tzinfo=UTC)
    events: list[Event] = []
    for generation in range(1, REBALANCES + 1):
        at = start + timedelta(seconds=10 * generation)
        events.append(
            Event(group="g", at=at, data=RebalanceStarted(generation=generation, reason="x"))
        )
        owners: dict[str, list[tuple[str, int]]] = {f"c-{m}": [] for m in range(MEMBERS)}
        for p in range(PARTITIONS):
            # One partition in fifty moves per rebalance.
            shift = generation if p % 50 == generation % 50 else 0
            owners[f"c-{(p + shift) % MEMBERS}"].append(("t", p))
        data = AssignmentCompleted(generation=generation, strategy="sticky", assignment=owners)
        events.append(Event(group="g", at=at + timedelta(seconds=1), data=data))
    return events


def _timed(store: Store, stream: StreamId, version: int, snapshots: bool) -> float:
    started = time.perf_counter()
    state = store.state(stream, at_version=version, snapshots=snapshots)
    elapsed = time.perf_counter() - started
    assert state.version == version
    return elapsed


def main(quick: bool = False) -> None:
    """``quick`` changes nothing: the one case takes seconds (``python -m benchmarks``
    passes it to every benchmark)."""
    events = _stream()
    stream = events[0].stream
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kstore.duckdb"
        store = Store(path)
        store.init()
        for lo in range(0, len(events), BATCH):
            store.append(events[lo : lo + BATCH])
        end = len(events)
        worst = (end // SNAPSHOT_EVERY) * SNAPSHOT_EVERY - 1
        with_snapshots = max(_timed(store, stream, v, True) for v in (worst, end))
        without = _timed(store, stream, end, False)
        size = sum(f.stat().st_size for f in Path(tmp).glob("kstore.duckdb*"))
    print(
        f"store fold ({REBALANCES:,} rebalances of {PARTITIONS:,} partitions, {end:,} events): "
        f"kstore {with_snapshots:.3f} s with snapshots | limit < {LIMIT_S} s | ratio "
        f"{with_snapshots / LIMIT_S:.2f} ({verdict(with_snapshots < LIMIT_S)}) | "
        f"without snapshots {without:.2f} s"
    )
    print(
        f"store size: {size / REBALANCES / 1024:.1f} KiB per rebalance "
        f"({size / 2**20:.0f} MiB for {REBALANCES:,}; no limit set)"
    )


if __name__ == "__main__":
    main()
