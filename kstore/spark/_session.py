"""The Spark session: ``--master`` (default ``local[*]``) and ``--conf k=v`` pass through."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from kstore._errors import UsageError

__all__ = ["DEFAULTS", "build_session", "parse_conf"]

DEFAULTS: dict[str, str] = {
    # Times are UTC everywhere in kstore; Spark's session zone would otherwise be the
    # machine's and shift every `at` it renders.
    "spark.sql.session.timeZone": "UTC",
    # A group or cluster named "007" must stay a string when read back from a path.
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # The per-stream tasks turn each Arrow batch into Python objects: small batches keep
    # a Python worker's memory to a few streams' worth, whatever a partition holds.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "2000",
    "spark.ui.showConsoleProgress": "true",
}
"""kstore's settings; a ``--conf`` of the same key wins."""


def parse_conf(items: Iterable[str]) -> dict[str, str]:
    """``k=v`` strings (``--conf``) as a dict; a malformed one is a usage error."""
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf: expected KEY=VALUE, not {item!r}")
        conf[key.strip()] = value
    return conf


def build_session(
    master: str | None = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "kstore",
) -> Any:
    """A ``SparkSession`` (a running one is reused, with ``conf`` applied where it can be).

    ``master=None`` leaves the master to ``spark-submit`` (``--master`` there). Python
    workers run this interpreter unless ``PYSPARK_PYTHON`` says otherwise, so they see
    kstore and its dependencies.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is not None and master.startswith("local"):
        # Local mode: bind to the loopback, not to the machine's outward address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in (DEFAULTS | dict(conf or {})).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
