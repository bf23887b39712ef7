"""``python -m benchmarks assignors --quick`` runs and compares kstore with kafka-python."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kstore.assignors import get_assignor

ROOT = Path(__file__).resolve().parent.parent
KAFKA_PYTHON_STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _built(strategy: str) -> bool:
    try:
        get_assignor(strategy)
    except ModuleNotFoundError:
        return False
    return True


def _cells(line: str, separator: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip(separator).split(separator)]


def _quick_table(name: str) -> tuple[list[str], list[list[str]]]:
    """``python -m benchmarks NAME --quick``'s table, wide enough for whole cells: its
    header and its rows' cells."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", name, "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = _cells(next(line for line in lines if line.startswith("┃")), "┃")
    return header, [_cells(line, "│") for line in lines if line.startswith("│")]


@pytest.mark.slow
def test_quick_assignor_benchmark_prints_ratios() -> None:
    header, rows = _quick_table("assignors")
    assert "ratio" in header and "same result" in header
    by_key = {(row[0], row[1]): dict(zip(header, row, strict=True)) for row in rows if row[0]}
    assert {case for case, _ in by_key} == {"S", "M", "D'"}

    compared = [s for s in KAFKA_PYTHON_STRATEGIES if _built(s)]
    assert compared, "no kstore strategy that kafka-python also has is built"
    for strategy in compared:
        row = by_key[("S", strategy)]
        assert re.fullmatch(r"[\d,.]+×", row["ratio"]), row
        assert row["same result"] in ("identical", "differs"), row


@pytest.mark.slow
def test_the_write_path_benchmark_runs_the_parts_named_only() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "benchmarks.write_path", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )

    done = run("--quick", "append")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "kstore append",
        "kstore rebuild of those 450 streams",
    ]
    wrong = run("--quick", "rebuild")
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines()[-1].endswith(
        "unknown part rebuild (known: replay, append, big)"
    )


@pytest.mark.slow
def test_the_simulation_benchmark_says_each_case_against_its_goal() -> None:
    header, cells = _quick_table("simulate")
    rows = [dict(zip(header, row, strict=True)) for row in cells]
    assert len(rows) == 3
    for row in rows:
        ratio = float(row["run / assignor"].rstrip("x"))
        assert row["<= 2x"] in ("met", "NOT met"), row
        if ratio != 2.0:  # printed rounded: 2.0x may be either side of the limit
            assert row["<= 2x"] == ("met" if ratio < 2 else "NOT met"), row


def test_the_replay_task_measure_replays_as_the_spark_task_does(tmp_path: Path) -> None:
    """``benchmarks._replay_task`` (the Spark replay's Python work in one process, for
    counting instructions) gives the rows ``replay_events`` gives for the same groups."""
    import pyarrow.ipc as ipc

    from benchmarks._replay_task import prepare, run
    from kstore.analytics.replay import replay_events
    from kstore.model.events import Event, StreamId
    from kstore.spark._schema import LogRow, arrow_to_events, events_to_arrow

    source, out = tmp_path / "in.arrow", tmp_path / "out.arrow"
    assert prepare(4, source) > 100
    run(source, ["sticky"], 3, out)  # the first three groups by name
    streams: dict[tuple[str, str], list[Event]] = {}
    for row in arrow_to_events(ipc.open_file(source).read_all()):
        event = row.event
        streams.setdefault((event.cluster, event.group), []).append(event)
    first = sorted(group for _, group in streams)[:3]
    rows: list[LogRow] = []
    for cluster, group in sorted(key for key in streams if key[1] in first):
        target = StreamId(cluster, group, "replay/sticky")
        replayed = replay_events(streams[cluster, group], target, "sticky")
        rows += [LogRow(None, version, e) for version, e in enumerate(replayed, start=1)]
    want = events_to_arrow(rows).select(["event_id", "version", "data"]).to_pylist()
    got = ipc.open_file(out).read_all().select(["event_id", "version", "data"]).to_pylist()
    assert len(got) > 100
    assert got == want


def test_the_fleet_log_holds_the_fleet_a_group_to_a_file(tmp_path: Path) -> None:
    import duckdb

    from benchmarks._fleet import fleet
    from benchmarks._fleet_log import write_fleet_log

    events = list(fleet(30, 50))
    assert write_fleet_log(tmp_path, 30) == len(events)
    rows = duckdb.sql(
        f"SELECT cluster, group_id, version, event_id, filename FROM read_parquet("
        f"'{tmp_path}/events/**/*.parquet', hive_partitioning = true, filename = true)"
    ).fetchall()
    # (the fleet's event ids are new each run: its groups and their sizes are the same)
    assert len(rows) == len({r[3] for r in rows}) == len(events)
    sizes = {(e.cluster, e.group): 0 for e in events}
    for e in events:
        sizes[e.cluster, e.group] += 1
    assert {(c, g): n for (c, g), n in sizes.items()} == {
        key: sum(1 for r in rows if (r[0], r[1]) == key) for key in sizes
    }
    files = {(r[0], r[1]): set() for r in rows}
    for cluster, group, _, _, name in rows:
        files[cluster, group].add(name)
    assert all(len(names) == 1 for names in files.values())
    by_stream: dict[tuple[str, str], list[int]] = {}
    for cluster, group, version, _, _ in rows:
        by_stream.setdefault((cluster, group), []).append(version)
    assert all(v == list(range(1, len(v) + 1)) for v in by_stream.values())
