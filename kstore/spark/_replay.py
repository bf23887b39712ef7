"""``kstore spark replay``: every stream replayed with other strategies, in parallel.

One Spark task walks a stream's events in version order through
``kstore.analytics.replay.replay_events``, the function behind ``kstore replay`` (so a
Spark replay equals it event for event), once per strategy. The new timelines
(``replay/<strategy>``) are written in the log's Parquet form, partitioned like
``export``; their ``position`` is NULL, as they belong to no store's log yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from kstore._errors import UsageError
from kstore.analytics.replay import replay_events
from kstore.assignors import get_assignor
from kstore.spark._export import fresh_folder
from kstore.spark._frames import map_streams, write_partitioned
from kstore.spark._schema import LogRow, event_schema, events_to_arrow
from kstore.store.events import StreamId

__all__ = ["replay_log", "write_replays"]


def _replayer(strategies: Sequence[str]) -> Any:
    def replay_stream(events: list[LogRow]) -> pa.Table:
        source = events[0].event.stream
        rows: list[LogRow] = []
        for strategy in strategies:
            target = StreamId(source.cluster, source.group, f"replay/{strategy}")
            replayed = replay_events((row.event for row in events), target, strategy)
            rows.extend(
                LogRow(None, version, event) for version, event in enumerate(replayed, start=1)
            )
        return events_to_arrow(rows)

    return replay_stream


def replay_log(log: Any, strategies: Sequence[str], source: str = "recorded") -> Any:
    """The replays of the log's ``source`` timelines with each strategy (a DataFrame)."""
    if not strategies:
        raise UsageError("--strategies: name at least one strategy")
    for strategy in strategies:
        get_assignor(strategy)  # an unknown name fails here, not in a task
    streams = log.where(log.timeline == source)
    return map_streams(streams, _replayer(list(strategies)), event_schema())


def write_replays(log: Any, strategies: Sequence[str], out: Path, source: str = "recorded") -> int:
    """Write the replays under ``out/events``; the number of events written."""
    fresh_folder(out)
    replays = replay_log(log, strategies, source).persist()
    try:
        write_partitioned(replays, out / "events", ["timeline", "version"])
        return int(replays.count())
    finally:
        replays.unpersist()
