"""Digests of every ``kstore_*`` table and view of stores filled several ways, to compare
two versions of kstore: a change to how projections are stored (not what they hold) must
leave every relation both versions have with the same rows.

    PYTHONPATH=OLD python benchmarks/_tables_digest.py old.json   # OLD: a checkout
    PYTHONPATH=NEW python benchmarks/_tables_digest.py new.json
    PYTHONPATH=NEW python benchmarks/_tables_digest.py --compare old.json new.json

(run as a file, it takes ``kstore`` and the other benchmarks from ``PYTHONPATH``).

The stores: examples simulated (several strategies and protocols) and a generated
scenario, replays of four of their groups with two strategies, then ``kstore rebuild``;
twelve ``AssignmentCompleted`` of 10,000 partitions appended in batches of five and
through the ``Writer``; the write path's replay benchmark on a smaller group, then
``kstore rebuild``. Each relation's rows are sorted and hashed (``kstore_events`` but its
``event_id``: the benchmark's events get new ids each run). The spans tables, which only
the newer version has, are left out (their views are compared).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from benchmarks.analytics import _stream
from benchmarks.write_path import _big_events
from kstore.analytics.replay import replay
from kstore.store.log import Store
from kstore.store.writer import Writer

__all__ = ["digests"]

_EXAMPLES = Path(__file__).parents[1] / "examples"
_LEFT_OUT = ("kstore_assignment_spans", "kstore_member_spans", "kstore_checkpoints")
_SIMULATED = (
    ("autoscaling-10-40-10", "cooperative-sticky", "cooperative"),
    ("flapping-member", "range", "eager"),
    ("mixed-subscriptions", "sticky", "eager"),
    ("static-restart", "range", "eager"),
)


def _kstore(store: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "kstore", "--store", str(store), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env=os.environ,
    )


def _digest(path: Path) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    with duckdb.connect(str(path), read_only=True) as connection:
        names = connection.sql(
            "SELECT table_name FROM duckdb_tables() UNION "
            "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1"
        ).fetchall()
        for (name,) in names:
            if not name.startswith("kstore_") or name in _LEFT_OUT:
                continue
            some = "* EXCLUDE (event_id)" if name == "kstore_events" else "*"
            rows = sorted(map(repr, connection.sql(f"SELECT {some} FROM {name}").fetchall()))
            digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
            out[name] = (len(rows), digest)
    return out


def digests(tmp: Path) -> dict[str, dict[str, tuple[int, str]]]:
    """Per way of filling a store, per relation: (rows, digest)."""
    found: dict[str, dict[str, tuple[int, str]]] = {}
    simulated = tmp / "simulated.duckdb"
    _kstore(simulated, "init")
    for example, strategy, protocol in _SIMULATED:
        scenario = str(_EXAMPLES / f"{example}.yaml")
        _kstore(simulated, "simulate", scenario, "--strategy", strategy, "--protocol", protocol)
    _kstore(simulated, "simulate", str(_EXAMPLES / "consumer-protocol.yaml"))
    generated = ("--generate", "steady-churn", "--members", "30", "--steps", "60", "--seed", "3")
    _kstore(simulated, "simulate", *generated)
    with duckdb.connect(str(simulated), read_only=True) as connection:
        groups = connection.sql(
            "SELECT DISTINCT group_id FROM kstore_streams ORDER BY 1 LIMIT 4"
        ).fetchall()
    for (group,) in groups:
        for strategy in ("sticky", "range"):
            _kstore(simulated, "replay", "--group", group, "--strategy", strategy)
    found["simulated and replayed"] = _digest(simulated)
    _kstore(simulated, "rebuild")
    found["simulated and replayed, rebuilt"] = _digest(simulated)
    events = _big_events(12)
    batches = Store(tmp / "big-batches.duckdb")
    batches.init()
    for lo in range(0, len(events), 5):
        batches.append(events[lo : lo + 5])
    found["big events in batches of 5"] = _digest(batches.path)
    written = Store(tmp / "big-writer.duckdb")
    written.init()
    writer = Writer(written)
    writer.add(events)
    writer.flush()
    found["big events through the Writer"] = _digest(written.path)
    replayed = Store(tmp / "replayed.duckdb")
    replayed.init()
    replayed.append(_stream(15, 2_000, 100))
    replay(replayed, group="big", strategy="sticky")
    found["replay benchmark, 15 x 2,000"] = _digest(replayed.path)
    _kstore(replayed.path, "rebuild")
    found["replay benchmark, rebuilt"] = _digest(replayed.path)
    return found


def _compare(old: Path, new: Path) -> int:
    before, after = json.loads(old.read_text()), json.loads(new.read_text())
    differ = 0
    for way, relations in before.items():
        for name, value in relations.items():
            if after[way].get(name) != value:
                differ += 1
                print(f"{way}: {name} differs: {value} -> {after[way].get(name)}")
    compared = sum(len(relations) for relations in before.values())
    print(f"{compared} relations compared, {differ} differ")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"]:
        return _compare(Path(argv[1]), Path(argv[2]))
    with tempfile.TemporaryDirectory() as folder:
        Path(argv[0]).write_text(json.dumps(digests(Path(folder)), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
