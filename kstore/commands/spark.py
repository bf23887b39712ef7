"""``kstore export`` and ``kstore spark ingest|replay|metrics``."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kstore._errors import UsageError
from kstore._text import counted
from kstore.spark._session import (
    JvmFit,
    build_session,
    finish_archive,
    fit_jvm,
    parse_conf,
    progress_line,
)

__all__ = ["export_parquet", "spark_ingest", "spark_metrics", "spark_replay"]

_WINDOWS = ("hour", "day")


def export_parquet(store: Path, out: Path) -> None:
    from kstore.spark._export import export_store
    from kstore.store.log import Store

    started = time.perf_counter()
    result = export_store(Store(store), out)
    print(
        f"exported {counted(result.events, 'event')} of {counted(result.streams, 'stream')} and "
        f"{counted(result.assignments, 'assignment row')} to {out} "
        f"({time.perf_counter() - started:.1f} s)"
    )


@contextmanager
def _session(master: str | None, conf: Sequence[str], inputs: Sequence[str]) -> Iterator[Any]:
    """A session for one command reading ``inputs``; one that was running already (a
    notebook's, a test's) is used and left running."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    fit = fit_jvm(master, parse_conf(conf), inputs)
    if SparkContext._gateway is not None:  # a JVM runs already: its options stand
        fit = JvmFit(fit.conf)
    running = SparkSession.getActiveSession()
    spark = build_session(master, fit.conf)
    try:
        with progress_line(spark):
            yield spark
    finally:
        if running is None:
            spark.stop()
            finish_archive(fit)


def spark_ingest(dumps: Sequence[str], out: Path, master: str | None, conf: Sequence[str]) -> None:
    from kstore.spark._ingest import ingest_dumps

    if not dumps:
        raise UsageError("--in: name at least one dump file or folder")
    with _session(master, conf, dumps) as spark:
        result = ingest_dumps(spark, list(dumps), out)
    print(
        f"ingested {counted(result.events, 'event')} into {out / 'events'}; "
        f"quarantined {counted(result.quarantined, 'line')} ({out / 'quarantine'}); "
        f"dropped {counted(result.duplicates, 'duplicate')}"
    )


def _strategies(text: str) -> list[str]:
    """The names of ``--strategies``, each one kstore knows (a typo was said only after
    Spark had started, 8 s and its banner later: a user trial)."""
    from kstore.analytics.replay import check_strategy

    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError("--strategies: name at least one strategy")
    for name in names:
        check_strategy(name)
    return list(dict.fromkeys(names))


def spark_replay(
    folders: Sequence[str],
    strategies: str,
    out: Path,
    source: str,
    master: str | None,
    conf: Sequence[str],
) -> None:
    import pyspark  # noqa: F401  (a missing extra is said first)

    from kstore.spark._frames import log_paths, read_log
    from kstore.spark._replay import write_replays

    names = _strategies(strategies)
    log_paths(folders)  # before Spark starts
    warnings: list[str] = []
    with _session(master, conf, folders) as spark:
        count = write_replays(read_log(spark, folders), names, out, source, warnings)
    replayed = counted(count, "event")
    print(f"replayed {source} with {', '.join(names)}: {replayed} in {out / 'events'}")
    for warning in warnings:
        print(f"kstore: warning: {warning}", file=sys.stderr)


def spark_metrics(
    folders: Sequence[str], out: Path, window: str, master: str | None, conf: Sequence[str]
) -> None:
    import pyspark  # noqa: F401  (a missing extra is said first)

    from kstore.spark._export import fresh_folder
    from kstore.spark._frames import log_paths, read_log
    from kstore.spark._metrics import write_metrics

    if window not in _WINDOWS:
        raise UsageError(f"--window: must be one of {', '.join(_WINDOWS)}, not {window!r}")
    log_paths(folders)  # before Spark starts
    fresh_folder(out)
    with _session(master, conf, folders) as spark:
        count = write_metrics(spark, read_log(spark, folders), out, window)
    print(
        f"metrics of {counted(count, 'rebalance')} in {out / 'metrics'}, "
        f"summaries in {out / 'windows'}"
    )
