"""The store's row groups (``log.ROW_GROUP_ROWS``): an append's checkpoint rewrites the
rows of a table's last, partly filled group and merges small ones, so the groups are
kept small enough that this stays a small, fixed share of an append at any size of the
store (issue 13: appends flat as the store grows)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb

from kstore.model import Event, TopicChanged
from kstore.store.log import Store

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _groups(store: Store, table: str) -> list[int]:
    connection = duckdb.connect(str(store.path), read_only=True)
    try:
        rows = connection.sql(
            f"SELECT row_group_id, max(count) FROM pragma_storage_info('{table}') "
            "WHERE column_name = 'position' GROUP BY ALL ORDER BY 1"
        ).fetchall()
    finally:
        connection.close()
    return [count for _, count in rows]


def test_an_append_of_ten_thousand_events_fills_groups_of_at_most_8192_rows(store: Store) -> None:
    events = [
        Event(
            group=f"g{i % 50}",
            at=T0 + timedelta(seconds=i),
            data=TopicChanged(topic="t", partitions=1 + i % 5),
        )
        for i in range(10_000)
    ]
    store.append(events)
    assert _groups(store, "kstore_events") == [8192, 1808]
