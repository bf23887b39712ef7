"""Spark ingest and replay, and the commands end to end (one local session for the module)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.dataset as ds
import pytest
import yaml

from benchmarks._fleet import fleet, group_events
from kstore.analytics import run_query, run_sql
from kstore.analytics.replay import replay
from kstore.analytics.scope import sources_of
from kstore.cli import main
from kstore.model import Event, EventError, StreamId, parse_event_line
from kstore.simulate import run_scenario
from kstore.simulate.scenario import parse_scenario
from kstore.spark._export import export_store
from kstore.spark._frames import read_log
from kstore.spark._ingest import ingest_dumps
from kstore.spark._replay import replay_log, write_replays
from kstore.spark._schema import LogRow, arrow_to_events
from kstore.spark._session import fit_jvm
from kstore.store.log import Store
from tests.analytics.test_replay_not_taken_up import _said_twice
from tests.analytics.test_replay_random import random_scenario
from tests.spark.metrics_contract import comparable
from tests.spark.processes import kstore_process, process_env

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_JAVA = "spark.driver.extraJavaOptions"


def _log(folder: Path) -> list[LogRow]:
    table = ds.dataset(folder / "events", format="parquet", partitioning="hive").to_table()
    return list(arrow_to_events(table))


def _streams(rows: list[LogRow]) -> dict[StreamId, list[LogRow]]:
    out: dict[StreamId, list[LogRow]] = defaultdict(list)
    for row in rows:
        out[row.event.stream].append(row)
    return {s: sorted(r, key=lambda x: x.version) for s, r in out.items()}


def test_ingest_validates_quarantines_and_deduplicates(spark: Any, tmp_path: Path) -> None:
    events = list(fleet(3, 6))
    lines = [e.to_json() for e in events]
    no_id = json.loads(lines[4])
    del no_id["event_id"]
    bad = [
        '{"group": "g", "type": "MemberLeft", "at": "2026-11-21T10:00:00Z", '
        '"data": {"member_id": "m", "reason": "bored"}}',
        "not json",
        '{"group": "g", "type": "Nope", "at": "2026-11-21T10:00:00Z", "data": {}}',
        '{"group": "g", "type": "TopicChanged", "at": "2026-11-21T10:00:00Z", '
        '"data": {"topic": "t", "partitions": 0}}',
    ]
    dumps = tmp_path / "dumps"
    (dumps / "more").mkdir(parents=True)
    half = len(lines) // 2
    # a.jsonl: first half, a bad line, a blank line, a duplicate of line 1.
    a = [*lines[:half], bad[0], "", lines[0]]
    (dumps / "a.jsonl").write_text("\n".join(a) + "\n")
    b = [*lines[half:], *bad[1:], json.dumps(no_id)]
    (dumps / "more" / "b.jsonl").write_text("\n".join(b) + "\n")

    result = ingest_dumps(spark, [str(dumps)], tmp_path / "out")
    assert (result.events, result.quarantined, result.duplicates) == (len(lines) + 1, 4, 1)

    rows = _log(tmp_path / "out")
    by_stream = _streams(rows)
    wanted: dict[StreamId, list[Event]] = defaultdict(list)
    for event in events:
        wanted[event.stream].append(event)
    # The line without an id comes last (file more/b.jsonl) and gets a new id.
    copied = events[4].stream
    assert set(by_stream) == set(wanted)
    for stream, expected in wanted.items():
        got = [r.event for r in by_stream[stream]]
        assert [r.version for r in by_stream[stream]] == list(range(1, len(got) + 1))
        if stream == copied:
            last = got.pop()
            assert last.event_id not in {e.event_id for e in events}
            assert last.model_copy(update={"event_id": events[4].event_id}) == events[4]
        assert got == expected
    positions = [r.position for r in sorted(rows, key=lambda r: r.position or 0)]
    assert len(set(positions)) == len(rows)

    quarantine = [
        json.loads(line)
        for path in sorted((tmp_path / "out" / "quarantine").glob("*.json"))
        for line in path.read_text().splitlines()
    ]
    assert len(quarantine) == 4
    for item in quarantine:
        source = a if item["file"].endswith("a.jsonl") else b
        assert source[item["line"] - 1] == item["text"]
        with pytest.raises(EventError) as exc:
            parse_event_line(item["text"], item["line"])
        assert item["reason"] == str(exc.value)  # the reason `kstore append` gives
    assert {q["reason"].split(": ", 2)[1] for q in quarantine} == {
        "data.reason",
        "not JSON",
        "type",
        "data.partitions",
    }

    # Ingesting the same dumps again gives the same events, ids included.
    again = ingest_dumps(spark, [str(dumps)], tmp_path / "again")
    assert again == result
    key = lambda r: r.event.event_id  # noqa: E731
    assert sorted(_log(tmp_path / "again"), key=key) == sorted(rows, key=key)


def test_replay_equals_kstore_replay(spark: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(4, 12, seed=5))
    store.append(_said_twice())  # group g: members that did not take a round up
    # Group random: the source's own follow-up rounds, one 45 s late (its member cut off):
    # a cooperative replay reads the source's assignments to see them due.
    scenario = parse_scenario(yaml.safe_dump(random_scenario(53)), "random.yaml")
    run_scenario(scenario, store=store, timeline="recorded", seed=53)
    export_store(store, tmp_path / "log")
    strategies = ["sticky", "cooperative-sticky", "optimal", "same"]
    count = write_replays(read_log(spark, [tmp_path / "log"]), strategies, tmp_path / "out")
    replayed = _streams(_log(tmp_path / "out"))
    assert count == sum(len(r) for r in replayed.values())
    sources = [info.stream for info in store.streams()]
    assert len(replayed) == len(sources) * len(strategies)
    for source in sources:
        for strategy in strategies:
            replay(store, cluster=source.cluster, group=source.group, strategy=strategy)
            target = StreamId(source.cluster, source.group, f"replay/{strategy}")
            theirs = list(
                store.events(cluster=target.cluster, group=target.group, timeline=target.timeline)
            )
            ours = replayed[target]
            assert [(r.version, r.event) for r in ours] == [(s.version, s.event) for s in theirs]
            assert any(r.event.type == "AssignmentCompleted" for r in ours)
            if source.group == "g":
                assert any(r.event.type == "AssignmentNotTakenUp" for r in ours)
    # A folder per cluster, not per group (a file, a checksum and chmods per group cost
    # more than replaying it); each group's replays whole in one file.
    files: dict[str, set[Path]] = defaultdict(set)
    for file in (tmp_path / "out" / "events").rglob("*.parquet"):
        assert file.parent.parent == tmp_path / "out" / "events"
        assert file.parent.name.startswith("cluster=")
        for group in ds.dataset(file).to_table(columns=["group_id"]).column(0).unique():
            files[group.as_py()].add(file)
    assert {len(found) for found in files.values()} == {1}


def test_a_replay_of_another_source_is_named_after_it(spark: Any, tmp_path: Path) -> None:
    """Replays are tied to their source (docs/analytics.md, "Replay timelines"): a
    ``--from`` other than ``recorded`` replays into ``replay/<source>/<strategy>``, the
    name ``kstore replay`` and ``advise`` give it, and equals their replay; it was
    ``replay/<strategy>`` whatever the source, the name of the recorded history's."""
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(2, 6, seed=5))  # recorded
    flapping = Path(__file__).parents[2] / "examples" / "flapping-member.yaml"
    scenario = parse_scenario(flapping.read_text(), flapping.name)
    for timeline in ("sim/a", "sim/b"):
        run_scenario(scenario, store=store, timeline=timeline, seed=1)
    export_store(store, tmp_path / "log")
    write_replays(read_log(spark, [tmp_path / "log"]), ["range"], tmp_path / "out", "sim/b")
    replayed = _streams(_log(tmp_path / "out"))
    group = scenario.group_id
    named = sources_of(store, "default", group).replay_timeline("sim/b", "range")
    assert (
        set(replayed)
        == {StreamId("default", group, named)}
        == {StreamId("default", group, "replay/sim/b/range")}
    )
    replay(store, group=group, strategy="range", source="sim/b", timeline=named)
    theirs = list(store.events(cluster="default", group=group, timeline=named))
    ours = replayed[StreamId("default", group, named)]
    assert [(r.version, r.event) for r in ours] == [(s.version, s.event) for s in theirs]


def test_an_eager_replay_of_a_cooperative_log_reads_its_assignments(
    spark: Any, tmp_path: Path
) -> None:
    """An eager replay has none of a cooperative source's follow-up rounds (issue 13), so
    it reads the source's assignments where the log has a cooperative decision, as
    ``kstore replay`` does: read without them, the rounds were replayed as rebalances."""
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(2, 6, seed=5))
    autoscaling = Path(__file__).parents[2] / "examples" / "autoscaling-10-40-10.yaml"
    scenario = parse_scenario(autoscaling.read_text(), autoscaling.name)
    run_scenario(scenario, store=store, timeline="recorded", seed=1)
    export_store(store, tmp_path / "log")
    write_replays(read_log(spark, [tmp_path / "log"]), ["sticky"], tmp_path / "out")
    replayed = _streams(_log(tmp_path / "out"))
    for info in store.streams():
        replay(store, cluster=info.stream.cluster, group=info.stream.group, strategy="sticky")
        target = StreamId(info.stream.cluster, info.stream.group, "replay/sticky")
        theirs = list(
            store.events(cluster=target.cluster, group=target.group, timeline="replay/sticky")
        )
        assert [(r.version, r.event) for r in replayed[target]] == [
            (s.version, s.event) for s in theirs
        ]
    decided = replayed[StreamId("default", "autoscaling-10-40-10", "replay/sticky")]
    assert sum(r.event.type == "AssignmentCompleted" for r in decided) == 5  # of 7


def test_replay_reads_no_recorded_assignment(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay decides every assignment itself: the recorded ones, most of a log's
    bytes, are not read from the Parquet files at all (``withField`` read them whole)."""
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(2, 3))
    export_store(store, tmp_path / "log")
    replay_log(read_log(spark, [tmp_path / "log"]), ["sticky"]).explain("formatted")
    plan = capsys.readouterr().out.splitlines()
    [scanned] = [line for line in plan if line.startswith("ReadSchema:")]
    assert "data:struct<" in scanned and "generation:" in scanned
    assert "assignment" not in scanned


def test_the_stream_tasks_are_as_many_as_the_shuffle_partitions(spark: Any, tmp_path: Path) -> None:
    """Each shuffle partition stays a task of its own: adaptive execution merged them
    into about one per core, so a replay's last long task ran on one core alone."""
    from pyspark.sql import functions as F

    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(24, 3))
    export_store(store, tmp_path / "log")
    log = read_log(spark, [tmp_path / "log"])
    spark.conf.set("spark.sql.shuffle.partitions", "4")  # as fit_partitions sets it
    try:
        tasks = replay_log(log, ["sticky"]).select(F.spark_partition_id()).distinct().count()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    assert tasks == 4


def test_replay_reports_the_assignors_warnings(spark: Any, tmp_path: Path) -> None:
    """Fleet group g00815 leads sticky to a request Kafka never returns from (quirk 4)."""
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(group_events("g00815", 50, seed=7, cluster="eu"))
    export_store(store, tmp_path / "log")
    warnings: list[str] = []
    log = read_log(spark, [tmp_path / "log"])
    write_replays(log, ["sticky", "roundrobin"], tmp_path / "out", warnings=warnings)
    [warning] = warnings
    assert warning.startswith("eu/g00815 replay/sticky generation ")
    assert "never returns" in warning


def _cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["kstore", *args])
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_commands_end_to_end(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(tmp_path / "kstore.duckdb")
    dumps = tmp_path / "dump.jsonl"
    # One group's name needs escaping in a folder name.
    events = [
        e.model_copy(update={"group": "a/b=c %d"}) if e.group == "g00001" else e
        for e in fleet(3, 8, seed=9)
    ]
    dumps.write_text("".join(e.to_json() + "\n" for e in events))
    assert _cli(monkeypatch, "--store", path, "init") == 0
    assert _cli(monkeypatch, "--store", path, "append", str(dumps)) == 0
    assert _cli(monkeypatch, "--store", path, "export", "--out", str(tmp_path / "exp")) == 0
    conf = ["--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2"]
    steps = [
        ["spark", "ingest", "--in", str(dumps), "--out", str(tmp_path / "ing")],
        [
            "spark",
            "replay",
            "--in",
            str(tmp_path / "ing"),
            "--strategies",
            "sticky,optimal",
            "--out",
            str(tmp_path / "rep"),
        ],
        [
            "spark",
            "metrics",
            "--in",
            str(tmp_path / "ing"),
            "--in",
            str(tmp_path / "rep"),
            "--out",
            str(tmp_path / "met"),
            "--window",
            "day",
        ],
    ]
    for step in steps:
        assert _cli(monkeypatch, *step, *conf) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "quarantined 0 lines" in out and "metrics of" in out
    assert spark.sparkContext._jsc is not None  # the test's session was left running

    # `kstore sql` reads the results; the recorded timeline's rows are the metrics query's.
    files = tmp_path / "met" / "metrics" / "**" / "*.parquet"
    sql = (
        'SELECT cluster, "group", timeline, version, generation, "at", members, assigned, '
        "moved, new, revoked, unassigned, retainable, kept, stickiness, imbalance, excess, "
        "double_assigned, duration_ms FROM read_parquet("
        f"'{files}', hive_partitioning = true, hive_types_autocast = false)"
    )
    store = Store(path)
    result = run_sql(store, sql, read_paths=[tmp_path / "met"])
    recorded = [r for r in result.records() if r["timeline"] == "recorded"]
    assert comparable(recorded) == comparable(run_query(store, "metrics", {}).records())
    timelines = {r["timeline"] for r in result.records()}
    assert timelines == {"recorded", "replay/sticky", "replay/optimal"}
    assert {r["group"] for r in result.records()} == {"g00000", "a/b=c %d", "g00002"}
    read = ("--read", str(tmp_path / "met"))
    assert (
        _cli(monkeypatch, "--store", path, "sql", *read, f"{sql} LIMIT 1", "--format", "json") == 0
    )
    assert json.loads(capsys.readouterr().out)[0]["timeline"] in timelines
    windows = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{tmp_path / 'met' / 'windows' / '**' / '*.parquet'}')"
    ).fetchone()
    assert windows is not None and windows[0] > 0

    # A bad option is one line and status 2, before any Spark work.
    assert (
        _cli(
            monkeypatch,
            "spark",
            "metrics",
            "--in",
            str(tmp_path / "ing"),
            "--out",
            str(tmp_path / "w"),
            "--window",
            "week",
        )
        == 2
    )
    assert capsys.readouterr().err.startswith("kstore: error: --window")


def test_a_small_local_input_runs_the_first_jit_tier_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    small = tmp_path / "dump.jsonl"
    small.write_text("".join(e.to_json() + "\n" for e in fleet(2, 3)))
    option = "spark.driver.extraJavaOptions"
    c1 = "-XX:TieredStopAtLevel=1"

    def options(master: str | None, conf: dict[str, str], inputs: list[str]) -> list[str]:
        return fit_jvm(master, conf, inputs).conf.get(option, "").split()

    assert c1 in options("local[2]", {}, [str(tmp_path)])
    # ... with the tiered JVM's code cache: C1 alone reserves 48 MB, which a session of a
    # few hundred jobs filled (the JIT off, then a task's InternalError shut Spark down).
    flags = subprocess.run(
        ["java", *options("local[2]", {}, [str(tmp_path)]), "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    reserved = re.search(r"\bReservedCodeCacheSize\s+=\s+(\d+)", flags)
    assert reserved is not None and int(reserved[1]) >= 240 << 20
    # The throughput collector for every local run, small or large.
    assert "-XX:+UseParallelGC" in options("local[2]", {}, [str(tmp_path)])
    assert "-XX:+UseParallelGC" in options("local[2]", {}, ["hdfs://h/log"])
    assert fit_jvm("local[2]", {option: "-Da=b"}, [str(small)]).conf == {option: "-Da=b"}
    assert fit_jvm("spark://h:7077", {}, [str(small)]).conf == {}  # executors elsewhere
    assert fit_jvm(None, {}, [str(small)]).conf == {}  # spark-submit's choice
    assert c1 not in options("local[2]", {}, ["hdfs://h/log"])  # size unknown
    with small.open("r+b") as grown:
        grown.truncate(65 << 20)  # past 64 MiB: C2 pays back
    assert c1 not in options("local[2]", {"k": "v"}, [str(small)])


def test_a_local_command_writes_spark_classes_archive_once_then_shares_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(e.to_json() + "\n" for e in fleet(2, 3)))
    first = fit_jvm("local[2]", {}, [str(dump)])
    assert first.archive is not None and first.making is not None
    assert first.archive.parent == cache / "kstore"
    assert f"-XX:ArchiveClassesAtExit={first.making}" in first.conf[_JAVA].split()
    assert first.making != first.archive  # written aside, renamed once whole

    printed = kstore_process("spark", "ingest", "--in", str(dump), "--out", str(tmp_path / "a"))
    assert printed.startswith("ingested ") and printed.count("\n") == 1
    assert [p.name for p in (cache / "kstore").iterdir()] == [first.archive.name]
    again = fit_jvm("local[2]", {}, [str(dump)])
    assert (again.archive, again.making) == (first.archive, None)
    assert f"-XX:SharedArchiveFile={first.archive}" in again.conf[_JAVA].split()

    # One the JVM cannot use (here: not an archive at all) is skipped without a word.
    first.archive.chmod(0o644)
    first.archive.write_bytes(b"not an archive" * 1000)
    printed = kstore_process("spark", "ingest", "--in", str(dump), "--out", str(tmp_path / "b"))
    assert printed.startswith("ingested ") and printed.count("\n") == 1


def test_the_python_tasks_get_batches_cut_by_rows_only(spark: Any) -> None:
    # A byte limit makes the JVM size the batch's nested vectors after each row it adds
    # (Int.MaxValue is Spark's "no limit"); the row limit keeps the batches small.
    assert spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch") == str(2**31 - 1)
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "2000"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["replay", "--strategies", "sticky,stiky", "--in", "nope"],
            "strategy: unknown strategy 'stiky'; did you mean sticky?",
        ),
        (["replay", "--strategies", "sticky", "--in", "nope"], "nope: no events/ folder here"),
        (["metrics", "--in", "nope"], "nope: no events/ folder here"),
    ],
)
def test_a_bad_name_or_folder_is_said_before_spark_starts(
    tmp_path: Path, args: list[str], said: str
) -> None:
    """``kstore spark replay --strategies stiky`` said so only after Spark had started (8 s,
    and Spark's banner on standard error before the line: a user trial)."""
    done = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "spark", *args, "--out", str(tmp_path / "x")],
        env=process_env(),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 2 and done.stderr.startswith(f"kstore: error: {said}"), done
    assert len(done.stderr.splitlines()) == 1, done.stderr  # no Spark banner before it
