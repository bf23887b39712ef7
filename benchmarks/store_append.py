"""Appending ``AssignmentCompleted`` events of a 10,000-partition group, against DuckDB.

kstore's figure: projection rows per second of ``Store.append`` (events parsed already;
the time covers the lock, opening the file, the idempotency check, the fold, building
the rows, the Arrow inserts, heads, snapshots and the commit). The limit: half the rate of
a bare ``INSERT INTO ... SELECT * FROM arrow_table`` of the same rows (already in
Arrow) into a fresh DuckDB file, connect and commit included. ``kstore_assignments`` is
a view over spans since migration 0007: its rows are those the store kept before spans,
one per decision and partition, so both figures count the rows as they were.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks._bare import bare_seconds
from benchmarks._goals import verdict
from kstore.model import AssignmentCompleted, Event
from kstore.store.log import Store

__all__ = ["main"]

PARTITIONS = 10_000
MEMBERS = 100
EVENTS = 40
BATCH = 40
_LOG = "kstore_events"
_PROJECTED = ("kstore_assignments", "kstore_ownership")


def _events() -> list[Event]:
    start = datetime(2026, 11, 21, tzinfo=UTC)
    events = []
    for generation in range(1, EVENTS + 1):
        owners: dict[str, list[tuple[str, int]]] = {f"consumer-{m}": [] for m in range(MEMBERS)}
        for p in range(PARTITIONS):
            # A tenth of the partitions move each generation: ownership rows too.
            shift = generation if p % 10 == 0 else 0
            owners[f"consumer-{(p + shift) % MEMBERS}"].append(("orders", p))
        data = AssignmentCompleted(generation=generation, strategy="range", assignment=owners)
        events.append(Event(group="big", at=start + timedelta(seconds=generation), data=data))
    return events


def main(quick: bool = False) -> None:
    """``quick`` changes nothing: the one case takes a few seconds."""
    events = _events()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kstore.duckdb"
        store = Store(path)
        store.init()
        started = time.perf_counter()
        for lo in range(0, len(events), BATCH):
            store.append(events[lo : lo + BATCH])
        kstore_s = time.perf_counter() - started
        bare_all_s, _ = bare_seconds(path, Path(tmp) / "bare1.duckdb", (_LOG, *_PROJECTED))
        bare_projected_s, rows = bare_seconds(path, Path(tmp) / "bare2.duckdb", _PROJECTED)
    what = (
        f"{EVENTS} AssignmentCompleted of {PARTITIONS:,} partitions = {rows:,} projection "
        f"rows, batches of {BATCH}"
    )
    # The limit: the same rows (event rows and projection rows) inserted bare from Arrow.
    # Beside it, bare inserts of the projection rows alone (without the log's own rows).
    for label, bare_s in (
        ("log + projections", bare_all_s),
        ("projections only", bare_projected_s),
    ):
        kstore_rate = rows / kstore_s
        limit = rows / bare_s / 2
        print(
            f"store append vs bare insert of {label} ({what}): kstore {kstore_rate:,.0f} "
            f"rows/s | limit >= {limit:,.0f} rows/s (half the bare rate) | ratio "
            f"{kstore_rate / limit:.2f} ({verdict(kstore_rate >= limit)})"
        )


if __name__ == "__main__":
    main()
