"""The writer's cost, beside appending the same batches to the store directly.

- append: a simulated run's events (steady-churn, in memory first) go into a fresh DuckDB
  store in the simulator's batches, once by ``Store.append`` with the expected version
  counted by hand after reading what is stored (what the runner did before the
  writer), once through ``Writer.stored`` and ``Writer.add``. The limit: the writer adds
  at most 5% (CPU seconds, the best of three alternated runs).
- resume per poll: a recorder that diffs against the stream's fold asks for it at every
  poll. Before the writer, the store folded it each time (latest snapshot plus the
  events after it, ``Store.state``); the writer keeps its fold and only reads the
  stream's version. Both on the same stream, per poll.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._goals import verdict
from kstore.model.events import Event, StreamId
from kstore.simulate import generate, run_scenario
from kstore.store.log import Store
from kstore.store.writer import Writer

__all__ = ["main"]

BATCH = 2_000


def _cpu(run: Callable[[], object]) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def _events(members: int, steps: int) -> list[Event]:
    scenario = generate("steady-churn", members=members, steps=steps, seed=1, protocol="eager")
    return run_scenario(scenario, store=None, timeline="sim/bench", seed=1).sim.emitted


def _direct(store: Store, events: list[Event]) -> None:
    stream = events[0].stream
    list(store.events(cluster=stream.cluster, group=stream.group, timeline=stream.timeline))
    for lo in range(0, len(events), BATCH):
        store.append(events[lo : lo + BATCH], expected_version={stream: lo})


def _through_writer(store: Store, events: list[Event]) -> None:
    writer = Writer(store, batch_events=BATCH)
    list(writer.stored(events[0].stream))
    for lo in range(0, len(events), BATCH):
        writer.add(events[lo : lo + BATCH])
    writer.flush()


def main(quick: bool) -> None:
    members, steps, polls = (20, 1_000, 20) if quick else (50, 5_000, 200)
    events = _events(members, steps)
    with tempfile.TemporaryDirectory() as tmp:
        # Alternated, the best of three each on a fresh store: the first run pays warm-up.
        seconds = {"direct": float("inf"), "writer": float("inf")}
        for round_ in range(3):
            for name, write in (("direct", _direct), ("writer", _through_writer)):
                store = Store(Path(tmp) / f"{name}-{round_}.duckdb")
                store.init()
                spent = _cpu(lambda s=store, w=write: w(s, events))  # type: ignore[misc]
                seconds[name] = min(seconds[name], spent)
        ratio = seconds["writer"] / seconds["direct"]
        print(
            f"append {len(events):,} simulated events in batches of {BATCH:,}: writer "
            f"{seconds['writer']:.2f} s | Store.append {seconds['direct']:.2f} s (CPU) | "
            f"ratio {ratio:.2f} (limit <= 1.05: {verdict(ratio <= 1.05)})"
        )

        store = Store(Path(tmp) / "writer-0.duckdb")
        stream = StreamId(*events[0].stream)
        writer = Writer(store)
        writer.state(stream)
        folded = _cpu(lambda: [store.state(stream) for _ in range(polls)]) / polls
        kept = _cpu(lambda: [writer.state(stream) for _ in range(polls)]) / polls
        print(
            f"resume per poll ({len(events):,}-event stream, snapshot every 100): writer "
            f"{kept * 1000:.1f} ms | store fold {folded * 1000:.1f} ms (CPU) | "
            f"ratio {kept / folded:.2f}"
        )
