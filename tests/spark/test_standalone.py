"""The pipeline on a real Spark standalone cluster: a master and a worker on loopback.

The commands run as ``kstore`` processes with ``--master spark://127.0.0.1:PORT`` (the
tasks run in the worker's executor, not in the driver), and their results must equal
local mode's (the test session's ``local[2]``) and DuckDB's (``kstore replay`` and the
``metrics`` query over the store). Small heaps everywhere; the master and the worker are
stopped at the end whatever happens.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from benchmarks._fleet import fleet
from kstore.analytics import run_query
from kstore.analytics.replay import replay
from kstore.spark._frames import read_log
from kstore.spark._ingest import ingest_dumps
from kstore.spark._metrics import METRIC_COLUMNS, metrics_of
from kstore.spark._replay import write_replays
from kstore.spark._schema import arrow_to_events
from kstore.spark._session import C1_ONLY
from kstore.store.log import Store
from tests.spark.metrics_contract import comparable
from tests.spark.processes import SPARK_HOME, kstore_process, process_env

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_HEAP = "512m"
_C1 = C1_ONLY
"""Every JVM here (master, worker, each command's driver and executor) compiles with C1
only, as ``fit_jvm`` has a small local run do: a command's few seconds of tasks never
pay back C2's compiling. The three commands: 195 s wall and 90 CPU s with C2, 128 s and
56 CPU s with C1 (load 4-5)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _daemon(name: str, args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), f"org.apache.spark.deploy.{name}", *args],
            env={**process_env(), "SPARK_DAEMON_JAVA_OPTS": _C1},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except (OSError, ValueError):  # not up yet; another Spark UI's page is no JSON
        return 0


def _bound(log: Path, service: str, daemon: subprocess.Popen[bytes], deadline: float) -> int:
    """The port ``service`` of a daemon logging to ``log`` is bound to: Spark moves to
    the next port when the one given is taken (another test's Spark UI took the master's
    between ``_free_port`` and its start, and the worker was pointed at a port nobody
    served: the clean-clone CI of 2026-11-27 21:40)."""
    pattern = re.compile(rf"Successfully started service '{service}' on port (\d+)")
    while (found := pattern.search(log.read_text(errors="replace"))) is None:
        if time.monotonic() > deadline or daemon.poll() is not None:
            pytest.fail(f"{service} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    return int(found.group(1))


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` of a master with one worker (2 cores, 1 GiB)."""
    folder = tmp_path_factory.mktemp("standalone")
    deadline = time.monotonic() + 120
    daemons = [
        _daemon(
            "master.Master",
            ["--host", "127.0.0.1", "--port", str(_free_port()), "--webui-port",
             str(_free_port())],
            folder / "master.log",
        )
    ]  # fmt: skip
    try:
        port = _bound(folder / "master.log", "sparkMaster", daemons[0], deadline)
        ui = _bound(folder / "master.log", "MasterUI", daemons[0], deadline)
        url = f"spark://127.0.0.1:{port}"
        daemons.append(
            _daemon(
                "worker.Worker",
                [
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "2",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(folder / "work"),
                    url,
                ],
                folder / "worker.log",
            )
        )
        while _alive_workers(ui) < 1:
            if time.monotonic() > deadline or any(d.poll() is not None for d in daemons):
                logs = [(folder / f).read_text()[-2000:] for f in ("master.log", "worker.log")]
                pytest.fail(f"the standalone cluster did not come up: {logs}")
            time.sleep(0.5)
        yield url
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
        for daemon in daemons:
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


def _rows(folder: Path) -> list[tuple[Any, ...]]:
    table = ds.dataset(folder, format="parquet", partitioning="hive").to_table()
    return sorted(
        (r.event.stream, r.version, r.position, r.event.to_json()) for r in arrow_to_events(table)
    )


def _metrics(folder: Path) -> list[tuple[Any, ...]]:
    table = ds.dataset(folder, format="parquet", partitioning="hive").to_table()
    return comparable(table.select(list(METRIC_COLUMNS)).to_pylist())


def test_standalone_cluster_equals_local_and_duckdb(
    master: str, spark: Any, tmp_path: Path
) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    events = list(fleet(4, 10, seed=3))
    store.append(events)
    dumps = tmp_path / "dump.jsonl"
    dumps.write_text("".join(e.to_json() + "\n" for e in events))
    conf = ["--master", master]
    for key, value in (
        ("spark.driver.memory", _HEAP),
        ("spark.executor.memory", _HEAP),
        ("spark.driver.extraJavaOptions", _C1),
        ("spark.executor.extraJavaOptions", _C1),
    ):
        conf += ["--conf", f"{key}={value}"]
    cluster = tmp_path / "cluster"

    out = kstore_process(
        "spark", "ingest", "--in", str(dumps), "--out", str(cluster / "log"), *conf
    )
    assert f"ingested {len(events):,} events" in out
    kstore_process(
        "spark",
        "replay",
        "--in",
        str(cluster / "log"),
        "--strategies",
        "sticky,range",
        "--out",
        str(cluster / "replays"),
        *conf,
    )
    kstore_process(
        "spark",
        "metrics",
        "--in",
        str(cluster / "log"),
        "--in",
        str(cluster / "replays"),
        "--out",
        str(cluster / "metrics"),
        *conf,
    )

    # Local mode, the same steps on the test session.
    local = tmp_path / "local"
    ingest_dumps(spark, [str(dumps)], local / "log")
    write_replays(read_log(spark, [local / "log"]), ["sticky", "range"], local / "replays")
    assert _rows(cluster / "log" / "events") == _rows(local / "log" / "events")
    assert _rows(cluster / "replays" / "events") == _rows(local / "replays" / "events")
    with metrics_of(spark, read_log(spark, [local / "log", local / "replays"])) as computed:
        local_metrics = comparable([r.asDict() for r in computed.collect()])
    cluster_metrics = _metrics(cluster / "metrics" / "metrics")
    assert cluster_metrics == local_metrics

    # DuckDB: the store's own replays and metrics query.
    for info in list(store.streams()):
        for strategy in ("sticky", "range"):
            replay(store, cluster=info.stream.cluster, group=info.stream.group, strategy=strategy)
    duckdb_metrics = comparable(run_query(store, "metrics", {}).records())
    assert cluster_metrics == duckdb_metrics
    replayed = {(r[0], r[1], r[3]) for r in _rows(cluster / "replays" / "events")}
    stored = {
        (s.event.stream, s.version, s.event.to_json())
        for info in store.streams()
        if info.stream.timeline != "recorded"
        for s in store.events(
            cluster=info.stream.cluster, group=info.stream.group, timeline=info.stream.timeline
        )
    }
    assert replayed == stored and len(stored) > len(events)
