"""A consumer-group member for the broker tests, run as its own process.

    python -m tests.record._members kafka-python BOOTSTRAP GROUP STRATEGY TOPICS STORE OUT [NEXT]
    python -m tests.record._members confluent BOOTSTRAP GROUP STRATEGY TOPICS REPORTS OUT [NEXT]

It joins GROUP subscribed to TOPICS (comma-separated) and, whenever its assignment is
settled for a generation, writes what it holds as one JSON line to OUT:
{"member": id, "generation": g, "partitions": [[t, p], ...]}. SIGUSR1 switches its
subscription to NEXT; SIGTERM makes it leave the group cleanly (close); SIGKILL is a
crash. Metadata is refreshed every second, so a topic gaining partitions is noticed
quickly.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any


def _writer(out: Path) -> Any:
    def write(member: str, generation: int | None, partitions: list[tuple[str, int]]) -> None:
        line = {"member": member, "generation": generation, "partitions": sorted(partitions)}
        with open(out, "a", encoding="utf-8") as lines:
            lines.write(json.dumps(line) + "\n")

    return write


def kafka_python(
    bootstrap: str,
    group: str,
    strategy: str,
    topics: list[str],
    store: str,
    out: Path,
    stop: threading.Event,
    switch: threading.Event,
    following: list[str],
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
        metadata_max_age_ms=1000,
        enable_auto_commit=False,
    )

    def settled() -> None:
        generation = consumer._coordinator._generation
        if generation.generation_id < 0:  # leaving: out of the group already
            return
        held = [(tp.topic, tp.partition) for tp in consumer.assignment()]
        write(generation.member_id, generation.generation_id, held)

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            # Settled only when the revoked partitions are gone already (a cooperative
            # generation's revocation); before a join they are still held.
            if not set(revoked) & set(consumer.assignment()):
                settled()

        def on_partitions_assigned(self, assigned: Any) -> None:
            settled()

    listener = Listener()
    consumer.subscribe(topics, listener=listener)
    while not stop.is_set():
        if switch.is_set():
            switch.clear()
            consumer.subscribe(following, listener=listener)
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
    switch: threading.Event,
    following: list[str],
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
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    on_assign = listener.on_assign

    def assigned(c: Any, partitions: list[Any]) -> None:
        on_assign(c, partitions)
        write(c.memberid(), listener.generation, sorted(listener.holds))

    listener.on_assign = assigned  # type: ignore[method-assign,assignment]
    listener.subscribe(consumer, topics)
    while not stop.is_set():
        if switch.is_set():
            switch.clear()
            listener.subscribe(consumer, following)
        consumer.poll(0.2)
    listener.close(consumer)


def main() -> None:
    kind, bootstrap, group, strategy, topics, target, out = sys.argv[1:8]
    following = sys.argv[8].split(",") if len(sys.argv) > 8 else []
    stop, switch = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: switch.set())
    run = kafka_python if kind == "kafka-python" else confluent
    run(bootstrap, group, strategy, topics.split(","), target, Path(out), stop, switch, following)


if __name__ == "__main__":
    main()
