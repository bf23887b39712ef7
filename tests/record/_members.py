"""A consumer-group member for the broker tests, run as its own process.

    python -m tests.record._members kafka-python BOOTSTRAP GROUP STRATEGY TOPICS STORE OUT
    python -m tests.record._members confluent BOOTSTRAP GROUP STRATEGY TOPICS REPORTS OUT

It joins GROUP subscribed to TOPICS (comma-separated) and, after every rebalance, writes
what it was given as one JSON line to OUT: {"member": id, "partitions": [[t, p], ...]}.
SIGTERM makes it leave the group cleanly (close); SIGKILL is a crash.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any


def _writer(out: Path) -> Any:
    def write(member: str, partitions: list[tuple[str, int]]) -> None:
        with open(out, "a", encoding="utf-8") as lines:
            lines.write(json.dumps({"member": member, "partitions": sorted(partitions)}) + "\n")

    return write


def kafka_python(
    bootstrap: str,
    group: str,
    strategy: str,
    topics: list[str],
    store: str,
    out: Path,
    stop: threading.Event,
) -> None:
    from kafka import KafkaConsumer
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    from kstore.record.kafka_python import recording_assignor

    write = _writer(out)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[recording_assignor(strategy, store, group)],
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=20000,
        enable_auto_commit=False,
    )

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            pass

        def on_partitions_assigned(self, assigned: Any) -> None:
            member = consumer._coordinator._generation.member_id
            write(member, [(tp.topic, tp.partition) for tp in consumer.assignment()])

    consumer.subscribe(topics, listener=Listener())
    while not stop.is_set():
        consumer.poll(timeout_ms=200)
    consumer.close()


def confluent(
    bootstrap: str,
    group: str,
    strategy: str,
    topics: list[str],
    reports: str,
    out: Path,
    stop: threading.Event,
) -> None:
    from confluent_kafka import Consumer

    from kstore.record.confluent import RecordingListener

    write = _writer(out)
    listener = RecordingListener(reports, group, strategy)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "enable.auto.commit": False,
        }
    )
    on_assign = listener.on_assign

    def assigned(c: Any, partitions: list[Any]) -> None:
        on_assign(c, partitions)
        write(c.memberid(), sorted(listener.holds))

    listener.on_assign = assigned  # type: ignore[method-assign]
    listener.subscribe(consumer, topics)
    while not stop.is_set():
        consumer.poll(0.2)
    listener.close(consumer)


def main() -> None:
    kind, bootstrap, group, strategy, topics, target, out = sys.argv[1:8]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    run = kafka_python if kind == "kafka-python" else confluent
    run(bootstrap, group, strategy, topics.split(","), target, Path(out), stop)


if __name__ == "__main__":
    main()
