"""What a ``kstore spark replay --strategies sticky`` task does, in one process.

``python -m benchmarks._replay_task prepare GROUPS FILE`` writes the first GROUPS groups
of ``_fleet``'s fleet (50 rebalances each) as a task receives them: the log's Arrow form
without ``position``, each ``AssignmentCompleted``'s assignment empty (``_replay._source``
for an eager replay of an eager log), sorted by stream then version.

``python -m benchmarks._replay_task run FILE [OUT] [--strategies S,...]`` reads it in
batches of Spark's size (``maxRecordsPerBatch``), cuts the streams (``_frames._streams_of``),
replays each (``_replay._replayer``), turns them into Arrow (``events_to_arrow``) and
prints the output's rows and a digest of them (the same digest: the same replay), and
the seconds of each part. With OUT the output is written as Arrow IPC to compare.

``python -m benchmarks._replay_task requests FILE N REQS`` keeps the assignor's requests
of the first N groups' replay (pickled); ``assign REQS [--count K]`` answers the first K
of them (0: the setup only), the assignor's part alone.

Made to be counted in instructions (valgrind ``--tool=cachegrind --cache-sim=no``; the
imports and setup: ``run FILE --groups 0``, subtracted) or profiled (``--profile``).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pickle
import pstats
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from benchmarks._fleet import fleet
from kstore._gc import cyclic_gc_paused
from kstore.assignors import AssignmentRequest, AssignmentResult
from kstore.model.events import AssignmentCompleted
from kstore.spark._frames import _streams_of
from kstore.spark._replay import _replayer
from kstore.spark._schema import LogRow, events_to_arrow

__all__ = ["prepare", "run"]

_REBALANCES = 50
_BATCH = 2000  # ``spark.sql.execution.arrow.maxRecordsPerBatch`` of kstore's sessions


def prepare(groups: int, path: Path) -> int:
    """Write the task's input for ``groups`` groups to ``path``; its rows."""
    versions: dict[tuple[str, str, str], int] = {}
    rows = []
    for event in fleet(groups, _REBALANCES):
        key = (event.cluster, event.group, event.timeline)
        versions[key] = versions.get(key, 0) + 1
        rows.append(LogRow(None, versions[key], event))
    table = events_to_arrow(rows).drop_columns(["position"])
    data = table.column("data").combine_chunks()
    decided = pc.equal(table.column("type"), AssignmentCompleted.type_name())
    kind = data.type.field("assignment").type
    empty = pa.array([{} if ok else None for ok in decided.to_pylist()], type=kind)
    fields = [data.field(i) for i in range(data.type.num_fields)]
    names = [field.name for field in data.type]
    fields[names.index("assignment")] = empty
    table = table.set_column(
        table.schema.get_field_index("data"), "data", pa.StructArray.from_arrays(fields, names)
    )
    table = table.sort_by(
        [(name, "ascending") for name in ("cluster", "group_id", "timeline", "version")]
    )
    with ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    return table.num_rows


def run(path: Path, strategies: list[str], groups: int | None, out: Path | None) -> str:
    """The task's work over the input at ``path``; the output's digest."""
    table = ipc.open_file(path).read_all()
    if groups is not None:
        keys = table.column("group_id").to_pylist()
        wanted = sorted(set(keys))[:groups]
        table = table.filter(pc.is_in(table.column("group_id"), pa.array(wanted)))
    batches = table.combine_chunks().to_batches(max_chunksize=_BATCH)
    replay_stream = _replayer(strategies, None)
    started = time.process_time()
    outputs = []
    for events in _streams_of(iter(batches)):
        with cyclic_gc_paused():  # as ``map_streams`` runs it
            outputs.append(replay_stream(events))
    seconds = time.process_time() - started
    result = pa.concat_tables(outputs) if outputs else None
    digest = hashlib.sha256()
    if result is not None:
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, result.schema) as writer:
            writer.write_table(result.combine_chunks())
        digest.update(sink.getvalue().to_pybytes())
        if out is not None:
            with ipc.new_file(out, result.schema) as writer:
                writer.write_table(result)
    rows = 0 if result is None else result.num_rows
    print(f"{table.num_rows:,} events in, {rows:,} out, {seconds:.2f} CPU s, {digest.hexdigest()}")
    return digest.hexdigest()


def requests(path: Path, groups: int, out: Path) -> int:
    """Keep the sticky replay's assignor requests of ``groups`` groups in ``out``."""
    import kstore.analytics.replay as replay

    kept: list[bytes] = []
    answer = replay.assign

    def keep(request: AssignmentRequest) -> AssignmentResult:
        # Pickled now: the fold changes its members' subscriptions in place as it goes
        # on (``GroupState.to_request``), so a request kept whole would later hold
        # another decision's owned partitions.
        kept.append(pickle.dumps(request))
        return answer(request)

    replay.assign = keep  # type: ignore[assignment]
    try:
        run(path, ["sticky"], groups, None)
    finally:
        replay.assign = answer  # type: ignore[assignment]
    out.write_bytes(pickle.dumps([pickle.loads(request) for request in kept]))
    return len(kept)


def assign_all(path: Path, count: int | None) -> str:
    """Answer the kept requests (the first ``count``); a digest of the answers."""
    from kstore.assignors import assign

    kept: list[AssignmentRequest] = pickle.loads(path.read_bytes())[:count]
    digest = hashlib.sha256()
    started = time.process_time()
    for request in kept:
        result = assign(request)
        digest.update(repr((result.assignment, result.warnings)).encode())
    seconds = time.process_time() - started
    print(f"{len(kept):,} requests, {seconds:.2f} CPU s, {digest.hexdigest()}")
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._replay_task")
    sub = parser.add_subparsers(dest="command", required=True)
    made = sub.add_parser("prepare")
    made.add_argument("groups", type=int)
    made.add_argument("file", type=Path)
    ran = sub.add_parser("run")
    ran.add_argument("file", type=Path)
    ran.add_argument("out", type=Path, nargs="?")
    ran.add_argument("--strategies", default="sticky")
    ran.add_argument("--groups", type=int, help="the first GROUPS groups only (0: setup only)")
    ran.add_argument("--profile", type=Path, help="write cProfile's stats here, print the top")
    kept = sub.add_parser("requests")
    kept.add_argument("file", type=Path)
    kept.add_argument("groups", type=int)
    kept.add_argument("out", type=Path)
    answered = sub.add_parser("assign")
    answered.add_argument("file", type=Path)
    answered.add_argument("--count", type=int)
    args = parser.parse_args(argv)
    if args.command == "requests":
        print(f"{requests(args.file, args.groups, args.out):,} requests")
        return
    if args.command == "assign":
        assign_all(args.file, args.count)
        return
    if args.command == "prepare":
        print(f"{prepare(args.groups, args.file):,} events")
        return
    strategies = args.strategies.split(",")
    if args.profile is None:
        run(args.file, strategies, args.groups, args.out)
        return
    profile = cProfile.Profile()
    profile.runcall(run, args.file, strategies, args.groups, args.out)
    profile.dump_stats(args.profile)
    pstats.Stats(str(args.profile), stream=sys.stdout).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
