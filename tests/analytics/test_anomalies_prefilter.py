"""The anomalies query looks for partitions given to nobody only in the rebalances whose
``kstore_topic_stats`` row counts some (``unassigned``): the report's anomalies of a
9,180-event history took 4.2 CPU s looking in every partition of every rebalance, 1.5
with it. Here the rows it keeps are those of the look in every partition."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstore.analytics import run_query
from kstore.store.log import Store
from tests.analytics.test_golden_queries import GOLDEN, load_log
from tests.report.test_pages import _big
from tests.store._stores import initialised_store

EVERY_PARTITION = """
SELECT x.cluster, x.group_id, x.timeline, x.version, x.topic, CAST(p.range AS INTEGER)
FROM (SELECT DISTINCT x.cluster, x.group_id, x.timeline, x.version, x.topic, x.partitions
      FROM kstore_topics_at x
      JOIN kstore_members_at m USING (cluster, group_id, timeline, version, topic)) x,
     range(x.partitions) p
WHERE NOT EXISTS (
    SELECT 1 FROM kstore_assignments a
    WHERE a.cluster = x.cluster AND a.group_id = x.group_id AND a.timeline = x.timeline
      AND a.version = x.version AND a.topic = x.topic AND a."partition" = p.range)
ORDER BY ALL
"""


@pytest.mark.parametrize("log", sorted(p.stem for p in (GOLDEN / "logs").glob("*.yaml")))
def test_golden_logs(log: str, tmp_path: Path) -> None:
    store = initialised_store(tmp_path / "kstore.duckdb")
    store.append(load_log(log))
    _same(store)


def test_a_long_cooperative_history(tmp_path: Path) -> None:
    store = initialised_store(tmp_path / "kstore.duckdb")
    _big(store, "g", rebalances=200, partitions=30, members=12)
    assert _same(store) > 100  # a cooperative round's withheld partitions


def _same(store: Store) -> int:
    """How many rows of partitions given to nobody, the same either way."""
    found = sorted(
        (r["cluster"], r["group"], r["timeline"], r["version"], r["topic"], r["partition"])
        for r in run_query(store, "anomalies", {}).records()
        if r["kind"] in ("unassigned", "withheld")
    )
    assert found == [tuple(row) for row in store.query(EVERY_PARTITION, [], []).rows]
    return len(found)
