"""The metrics contract run against Spark, and Spark against DuckDB row for row."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from benchmarks._fleet import fleet
from kstore.analytics import run_query
from kstore.analytics.replay import replay
from kstore.model import Event
from kstore.spark._export import export_store
from kstore.spark._frames import read_log
from kstore.spark._metrics import METRIC_COLUMNS, WINDOW_COLUMNS, metrics_of, summarise
from kstore.store.log import Store
from tests.spark.metrics_contract import MetricsContract, comparable
from tests.store._stores import initialised_store

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


class TestSparkMetrics(MetricsContract):
    @pytest.fixture(autouse=True)
    def _session(self, spark: Any) -> None:
        self.spark = spark

    def engine_metrics(self, events: list[Event]) -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            store = initialised_store(Path(tmp) / "kstore.duckdb")
            store.append(events)
            export_store(store, Path(tmp) / "out")
            with metrics_of(self.spark, read_log(self.spark, [Path(tmp) / "out"])) as frame:
                return [row.asDict() for row in frame.collect()]


def test_spark_equals_duckdb_row_for_row(spark: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(8, 25, seed=11))
    export_store(store, tmp_path / "out")
    with metrics_of(spark, read_log(spark, [tmp_path / "out"])) as computed:
        metrics = computed.persist()
        _check_against_duckdb(store, metrics)
        metrics.unpersist()


def _check_against_duckdb(store: Store, metrics: Any) -> None:
    from pyspark.sql import functions as F

    duck = run_query(store, "metrics", {})
    assert duck.columns == list(METRIC_COLUMNS) == metrics.columns
    ours = [row.asDict() for row in metrics.collect()]
    assert len(ours) == len(duck.rows) > 150
    assert comparable(ours) == comparable(duck.records())

    # The windowed summaries add up the same rows as queries/windows.sql, to the last
    # digit: the average stickiness sums a window's rebalances in stream order in both,
    # whatever the partitioning (F.avg's sum followed the partitions: the same
    # timelines, partitioned otherwise, differed from DuckDB in the last digits).
    theirs = run_query(store, "windows", {"window": "day"})
    assert [c for c in theirs.columns] == list(WINDOW_COLUMNS)

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*row[:3], row[3].replace(tzinfo=None) if row[3].tzinfo else row[3], *row[4:])

    expected = sorted(map(key, theirs.rows), key=str)
    # several rebalances with a stickiness each in some windows, so the order can tell
    assert max(row[4] for row in expected) > 5
    backwards = metrics.orderBy(*(F.col(c).desc() for c in ("group", "version"))).coalesce(1)
    for partitioned in (metrics, metrics.repartition(7, "version"), backwards):
        windows = summarise(partitioned, "day").collect()
        assert list(windows[0].asDict()) == list(WINDOW_COLUMNS)
        assert sorted((key(tuple(r)) for r in windows), key=str) == expected


def test_an_event_in_two_inputs_is_counted_once(spark: Any, tmp_path: Path) -> None:
    """The README's pipeline after a ``kstore replay`` in the store (user trial): ``export``
    wrote replay/sticky into the log, ``spark replay`` wrote the same events again, and
    ``spark metrics --in LOG --in REPLAYS`` had each of its rebalances twice (24 rows for
    12). Each event is read once; the metrics are DuckDB's, row for row."""
    from kstore.spark._replay import write_replays

    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    store.append(fleet(2, 8, seed=3))
    for info in list(store.streams()):
        replay(store, cluster=info.stream.cluster, group=info.stream.group, strategy="sticky")
    export_store(store, tmp_path / "log")
    write_replays(read_log(spark, [tmp_path / "log"]), ["sticky"], tmp_path / "replays")
    both = read_log(spark, [tmp_path / "log", tmp_path / "replays"])
    with metrics_of(spark, both) as computed:
        ours = [row.asDict() for row in computed.collect()]
    duck = run_query(store, "metrics", {})
    assert {row["timeline"] for row in ours} == {"recorded", "replay/sticky"}
    assert len(ours) == len(duck.rows) > 10
    assert comparable(ours) == comparable(duck.records())


def test_two_histories_under_one_name_are_refused(spark: Any, tmp_path: Path) -> None:
    """Two stores whose groups have the same names, exported apart, then read as one:
    each stream's versions are different events in each, which the reading kept both of
    (one history made of two). Now a usage error names the inputs and the first
    version; the same history in both is still read once."""
    from kstore._errors import UsageError

    for name, seed in (("a", 3), ("b", 4)):
        store = Store(tmp_path / f"{name}.duckdb")
        store.init()
        store.append(fleet(2, 8, seed=seed))
        export_store(store, tmp_path / name)
    with pytest.raises(UsageError) as refused:
        read_log(spark, [tmp_path / "a", tmp_path / "b"])
    message = str(refused.value)
    assert message.startswith(f"--in {tmp_path / 'a'} and --in {tmp_path / 'b'}: ")
    assert " recorded version 1 is a different event in each" in message
    assert "\n" not in message
    assert read_log(spark, [tmp_path / "a", tmp_path / "a"]).count() == (
        read_log(spark, [tmp_path / "a"]).count()
    )
