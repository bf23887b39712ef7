"""``python -m benchmarks._fleet_log OUT [GROUPS]``: the fleet of ``_fleet`` (GROUPS groups,
10,000 by default, x 50 rebalances) written straight to Parquet in ingest's layout, a
folder per cluster, 112 files each, each file's rows sorted by group then version: the
log of issue 16's Spark replay at 10,000 groups, in a minute instead of a store's load
and export."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks._fleet import fleet
from kstore.spark._schema import LogRow, events_to_arrow

__all__ = ["write_fleet_log"]

_FILES = 112
_REBALANCES = 50


def write_fleet_log(out: Path, groups: int) -> int:
    """The fleet under ``out/events``; the number of events written."""
    per_file = -(-groups // 2 // _FILES)
    pending: dict[str, list[LogRow]] = {}
    files: dict[str, int] = {}
    seen: dict[str, list[str]] = {}
    versions: dict[tuple[str, str, str], int] = {}

    def flush(cluster: str) -> None:
        if rows := pending.pop(cluster, []):
            folder = out / "events" / f"cluster={cluster}"
            folder.mkdir(parents=True, exist_ok=True)
            number = files[cluster] = files.get(cluster, -1) + 1
            table = events_to_arrow(rows).drop_columns(["cluster"])
            pq.write_table(table, folder / f"part-{number:05d}.parquet")

    position = 0
    for event in fleet(groups, _REBALANCES):
        cluster = event.cluster
        names = seen.setdefault(cluster, [])
        if not names or names[-1] != event.group:
            if names and len(names) % per_file == 0:
                flush(cluster)
            names.append(event.group)
        key = (cluster, event.group, event.timeline)
        versions[key] = versions.get(key, 0) + 1
        position += 1
        pending.setdefault(cluster, []).append(LogRow(position, versions[key], event))
    for cluster in list(pending):
        flush(cluster)
    return position


if __name__ == "__main__":
    written = write_fleet_log(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 10_000)
    print(f"{written:,} events")
