"""The write path, each figure beside its limit (issue 13's speed goals).

- replay: 60 rebalances (10 quick) of a 10,000-partition group (10 topics, 500 members,
  a member leaving or joining before each) replayed with ``sticky``; the wall time of
  ``replay`` against twice the assignor's own time for the same decisions (limit <= 2x,
  the median of five runs), and the wall split into the store's part (reading the source,
  appending) and the rest.
- append: ``kstore append`` as a user runs it (a process of its own, start-up
  included), one file per chunk of ``CHUNK_GROUPS`` small generated groups
  (``_fleet.group_events``, ``REBALANCES`` rebalances each, ~14,000 events a chunk), into
  one store growing to 3,000 streams (450 quick); events per second of the whole run (limit >=
  10,000) and of the last chunks against the first (limit: no slower than 1.2x).
- big appends: ``AssignmentCompleted`` of a 10,000-partition group (100; 10 quick)
  appended through the ``Writer`` (its batches: about 1,000,000 assigned partitions, as
  every producer appends), and in batches of ``BIG_BATCH``, each against a bare DuckDB
  load of the same rows (every table, the spans spread out by their views as they were
  stored before spans; from Arrow, into a fresh file; connect and commit included):
  kstore's rows per second over the bare rate (limit >= 0.5); beside it the bare load
  of the rows kstore keeps.
- rebuild: ``kstore rebuild`` (a process) of the appended store, in events per second,
  against the appends' own rate (limit: at least as fast).

``--quick``: a few chunks and fewer rebalances, seconds. ``python -m
benchmarks.write_path [--quick] [PART ...]`` runs only the parts named (``PARTS``:
``replay``, ``append`` with the rebuild, ``big``).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import kstore
from benchmarks._bare import bare_seconds
from benchmarks._fleet import group_events
from benchmarks._goals import verdict
from benchmarks.analytics import _stream
from kstore.analytics.replay import replay
from kstore.model import AssignmentCompleted, Event
from kstore.store.catalogue import TABLES, VIEWS
from kstore.store.log import Store
from kstore.store.projections import SPANNED
from kstore.store.writer import Writer

__all__ = ["main"]

PARTITIONS = 10_000
MEMBERS = 500
CHUNK_GROUPS = 150
REBALANCES = 30
LAST_CHUNKS = 3
BIG_BATCH = 10
_FLAT = [*(t for t in TABLES if t not in SPANNED), *VIEWS]
"""The rows the big appends are measured by: every table's, the spans as the views
spread them out (one row per decision and partition, per decision and member and topic,
as the store kept them before spans)."""


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _kstore(store: Path, *args: str) -> tuple[float, float]:
    """Seconds of one ``kstore`` command in a process of its own, wall and CPU (on a
    shared machine the CPU seconds move less)."""
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(
        [sys.executable, "-m", "kstore", "--store", str(store), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env=os.environ,
    )
    return time.perf_counter() - started, _children_cpu() - cpu


def _compile_kstore() -> None:
    """kstore's bytecode written beside its sources, as installing a wheel writes it: where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it) a checkout's ``kstore`` process
    would compile its sources each time, some 4% of a small-stream append."""
    package = Path(kstore.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def _replay(tmp: Path, rebalances: int, runs: int) -> None:
    """``runs`` replays of one source, each into a copy of the store that holds only the
    source; the verdict is the median ratio's: the assignor's own time moves by a
    quarter from run to run on this machine, and with it a single run's ratio."""
    source = tmp / "source.duckdb"
    store = Store(source)
    store.init()
    store.append(_stream(rebalances, PARTITIONS, MEMBERS))
    ratios, cpu_ratios = [], []
    for run in range(1, runs + 1):
        copy = tmp / f"replay-{run}.duckdb"
        shutil.copyfile(source, copy)
        done = replay(Store(copy), group="big", strategy="sticky")
        ratio = done.seconds / done.assignor_seconds
        ratios.append(ratio)
        cpu_ratios.append(done.cpu_seconds / done.assignor_cpu_seconds)
        own = done.seconds - done.assignor_seconds - done.store_seconds
        print(
            f"replay {run}/{runs} ({done.rebalances} rebalances x {PARTITIONS:,} partitions, "
            f"sticky): {done.seconds:.2f} s wall | assignor {done.assignor_seconds:.2f} s | "
            f"ratio {ratio:.2f}x | of the wall: store (reading the source, appending) "
            f"{done.store_seconds:.2f} s, the rest (fold, requests, events) {own:.2f} s = "
            f"{own / done.assignor_seconds:.2f}x the assignor | CPU {done.cpu_seconds:.2f} s, "
            f"the assignor's {done.assignor_cpu_seconds:.2f} s: {cpu_ratios[-1]:.2f}x"
        )
        copy.unlink()
    median = statistics.median(ratios)
    print(
        f"replay: median ratio {median:.2f}x of {runs} runs (limit <= 2x: "
        f"{verdict(median <= 2)}); {sum(r <= 2 for r in ratios)} of {runs} within 2x; "
        f"CPU over the assignor's CPU: median {statistics.median(cpu_ratios):.2f}x "
        f"(the load moves it less than the walls)"
    )


def _chunks(tmp: Path, groups: int) -> list[tuple[Path, int]]:
    files = []
    for first in range(0, groups, CHUNK_GROUPS):
        path = tmp / f"chunk-{first // CHUNK_GROUPS:03d}.jsonl"
        count = 0
        with path.open("w") as out:
            for index in range(first, first + CHUNK_GROUPS):
                cluster = "eu" if index % 2 else "us"
                for event in group_events(f"g{index:05d}", REBALANCES, 7, cluster):
                    out.write(event.to_json() + "\n")
                    count += 1
        files.append((path, count))
    return files


def _append(tmp: Path, groups: int) -> float:
    """The appends' rate (events/s), for the rebuild to be compared with."""
    store = tmp / "append.duckdb"
    Store(store).init()
    chunks = _chunks(tmp, groups)
    took = [_kstore(store, "append", str(path)) for path, _ in chunks]
    rates = [count / wall for (_, count), (wall, _) in zip(chunks, took, strict=True)]
    cpu = [seconds for _, seconds in took]
    firsts, first_cpu = [rates[0]], [cpu[0]]
    events = sum(count for _, count in chunks)
    rate = events / sum(count / r for (_, count), r in zip(chunks, rates, strict=True))
    # The first chunk into an empty store as many times as the last chunks are averaged:
    # one sample of it moved the ratio as much as the code does (1.09x and 1.24x in two
    # quiet runs of one tree, 1.094x in instructions: docs/performance.md, write path).
    for again in range(1, LAST_CHUNKS):
        empty = tmp / f"first-{again}.duckdb"
        Store(empty).init()
        wall, seconds = _kstore(empty, "append", str(chunks[0][0]))
        firsts.append(chunks[0][1] / wall)
        first_cpu.append(seconds)
    last = rates[-LAST_CHUNKS:]
    first = sum(firsts) / len(firsts)
    slower = first / (sum(last) / len(last))
    startup, _ = _kstore(store, "--help")
    print(
        f"kstore append ({len(chunks)} chunks of {CHUNK_GROUPS} streams x {REBALANCES} "
        f"rebalances, {events / len(chunks):,.0f} events a chunk, to {groups:,} streams): "
        f"{rate:,.0f} events/s | limit >= 10,000 ({verdict(rate >= 10_000)}) | first chunk "
        f"{first:,.0f}/s (mean of {len(firsts)} into empty stores), last {len(last)} "
        f"{sum(last) / len(last):,.0f}/s: "
        f"{slower:.2f}x slower (limit <= 1.2x: {verdict(slower <= 1.2)}) | "
        f"kstore --help {startup:.2f} s | CPU: {events / sum(cpu):,.0f} events per CPU second, "
        f"a chunk {sum(first_cpu) / len(first_cpu):.2f} s first, "
        f"{sum(cpu[-LAST_CHUNKS:]) / LAST_CHUNKS:.2f} s last "
        f"{LAST_CHUNKS}; load average {os.getloadavg()[0]:.1f}"
    )
    seconds, cpu_seconds = _kstore(store, "rebuild")
    rebuilt = events / seconds
    print(
        f"kstore rebuild of those {groups:,} streams ({events:,} events): {seconds:.2f} s, "
        f"{rebuilt:,.0f} events/s | limit >= the appends' {rate:,.0f}/s "
        f"({verdict(rebuilt >= rate)}) | CPU {cpu_seconds:.2f} s, "
        f"{events / cpu_seconds:,.0f} events per CPU second"
    )
    return rate


def _big_events(count: int) -> list[Event]:
    start = datetime(2026, 11, 21, tzinfo=UTC)
    events = []
    for generation in range(1, count + 1):
        owners: dict[str, list[tuple[str, int]]] = {f"consumer-{m}": [] for m in range(100)}
        for p in range(PARTITIONS):
            shift = generation if p % 10 == 0 else 0  # a tenth move each generation
            owners[f"consumer-{(p + shift) % 100}"].append(("orders", p))
        data = AssignmentCompleted(generation=generation, strategy="range", assignment=owners)
        events.append(Event(group="big", at=start + timedelta(seconds=generation), data=data))
    return events


def _big(tmp: Path, count: int) -> None:
    events = _big_events(count)
    for name, batch in (("the writer's batches", None), ("batches of", BIG_BATCH)):
        store = Store(tmp / f"big-{batch}.duckdb")
        store.init()
        started, cpu = time.perf_counter(), time.process_time()
        if batch is None:  # as producers append: about 1,000,000 entries a batch
            writer = Writer(store)
            writer.add(events)
            writer.flush()
        else:
            for lo in range(0, len(events), batch):
                store.append(events[lo : lo + batch])
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        bare, rows = bare_seconds(store.path, tmp / f"bare-{batch}.duckdb", _FLAT)
        ratio = bare / seconds
        how = name if batch is None else f"{name} {batch}"
        same = ""
        if batch is not None:  # the same rows in as many commits: DuckDB's own cost of them
            commits = -(-len(events) // batch)
            split, _ = bare_seconds(store.path, tmp / "bare-split.duckdb", _FLAT, commits)
            same = f" | bare DuckDB in the same {commits} commits: ratio {split / seconds:.2f}"
        stored, kept = bare_seconds(store.path, tmp / f"bare-kept-{batch}.duckdb", list(TABLES))
        print(
            f"append {count} AssignmentCompleted of {PARTITIONS:,} partitions in {how} "
            f"({rows:,} rows in all tables and views): kstore {rows / seconds:,.0f} rows/s | "
            f"bare DuckDB load {rows / bare:,.0f} rows/s | ratio {ratio:.2f} (limit >= 0.5: "
            f"{verdict(ratio >= 0.5)}){same} | the {kept:,} rows kept (spans): bare "
            f"{stored:.2f} s | kstore {seconds:.2f} s wall, {cpu:.2f} s CPU; "
            f"load average {os.getloadavg()[0]:.1f}"
        )


PARTS = ("replay", "append", "big")
"""The benchmark's parts, in the order ``main`` runs them (``append``: the appends and
the rebuild of their store)."""


def main(quick: bool, parts: Sequence[str] = PARTS) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if "replay" in parts:
            _replay(tmp, 10 if quick else 60, 1 if quick else 5)
        if "append" in parts:
            _compile_kstore()
            _append(tmp, CHUNK_GROUPS * 3 if quick else 3_000)
        if "big" in parts:
            _big(tmp, 10 if quick else 100)


if __name__ == "__main__":  # python -m benchmarks.write_path [--quick] [PART ...]
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.write_path",
        description="The write path's figures, some parts only (python -m benchmarks "
        "write_path runs them all).",
    )
    parser.add_argument(
        "parts", nargs="*", metavar="PART", help=f"of {', '.join(PARTS)} (default: all)"
    )
    parser.add_argument("--quick", action="store_true", help="small cases only, seconds")
    args = parser.parse_args()
    unknown = [part for part in args.parts if part not in PARTS]
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)} (known: {', '.join(PARTS)})")
    main(args.quick, args.parts or PARTS)
