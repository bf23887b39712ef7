"""A consumer-group member for the broker tests, run as its own process.

    python -m tests.record._members kafka-python BOOTSTRAP GROUP STRATEGY TOPICS STORE OUT [NEXT]
    python -m tests.record._members confluent BOOTSTRAP GROUP STRATEGY TOPICS REPORTS OUT [NEXT]

It joins GROUP subscribed to TOPICS (comma-separated) and, for every generation it
completes, writes what it then holds as one JSON line to OUT:
{"member": id, "generation": g, "partitions": [[t, p], ...]}. SIGUSR1 switches its
subscription to NEXT; SIGTERM makes it leave the group cleanly (close); SIGKILL is a
crash. Metadata is refreshed every second, so a topic gaining partitions is noticed
quickly. A confluent-kafka member writes its lines from outside the callbacks (see
``confluent``), and notes in OUT with the suffix ``.calls`` any client call made while a
rebalance callback runs; ``KSTORE_TEST_RDKAFKA_DEBUG`` (``cgrp,assignor`` ...) turns
librdkafka's debug log on in its log; ``KSTORE_TEST_LEADER_DECISIONS`` has the listener
read its leader's decisions from that log (``RecordingListener.configure``), which is
still written to its log; ``KSTORE_TEST_SESSION_TIMEOUT_MS`` sets ``session.timeout.ms``
(6000 unless set).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

SESSION_TIMEOUT_MS = int(os.environ.get("KSTORE_TEST_SESSION_TIMEOUT_MS", "6000"))


def _writer(out: Path) -> Any:
    def write(member: str, generation: int | None, partitions: list[tuple[str, int]]) -> None:
        line = {"member": member, "generation": generation, "partitions": sorted(partitions)}
        with open(out, "a", encoding="utf-8") as lines:
            lines.write(json.dumps(line) + "\n")

    return write


def _finish_joins_in_flight(consumer: Any) -> None:
    """Make kafka-python 3.0.12 finish every rebalance it starts, as Java's client does.

    Its ``poll()`` leaves a JoinGroup/SyncGroup attempt in flight when it times out, and
    loses it in two ways: (1) when only the consumer itself asked for the rebalance (its
    subscription changed, or as leader it saw a topic's partitions change),
    ``need_rejoin()`` turns false once the JoinGroup is sent (or the leader has
    assigned), so later polls never collect the answer; (2) an attempt that finished
    between two polls is dropped and a new JoinGroup sent. In (1) the member keeps its
    heartbeats off and is expelled a session timeout later; in (2) the leader's second
    SyncGroup may be ignored by a group already stable, so what it recorded is not what
    the members got. Java counts a join in flight as still needing one
    (``rejoinNeededOrPending``) and applies a finished attempt's answer; so does this.
    """
    coordinator = consumer._coordinator
    needs_rejoin = coordinator.need_rejoin
    join_and_sync = coordinator._do_join_and_sync_async
    join_complete = coordinator._on_join_complete_async
    uncollected: list[Any] = []

    async def join_and_sync_once() -> Any:
        if uncollected:
            return uncollected.pop()
        answer = await join_and_sync()
        uncollected.append(answer)
        return answer

    async def collected(*args: Any) -> None:
        uncollected.clear()
        await join_complete(*args)

    coordinator.need_rejoin = lambda: coordinator.rejoining or needs_rejoin()
    coordinator._do_join_and_sync_async = join_and_sync_once
    coordinator._on_join_complete_async = collected


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

    from kstore.record.kafka_python import recording_assignor

    write = _writer(out)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[recording_assignor(strategy, store, group)],
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=max(20000, SESSION_TIMEOUT_MS),
        metadata_max_age_ms=1000,
        enable_auto_commit=False,
    )
    _finish_joins_in_flight(consumer)

    coordinator = consumer._coordinator
    join_complete = coordinator._on_join_complete_async

    async def reported(*args: Any) -> None:
        # Every completed generation, also one that left this member's partitions alone
        # (a cooperative rebalance calls no listener then).
        await join_complete(*args)
        generation = coordinator._generation
        held = [(tp.topic, tp.partition) for tp in consumer.assignment()]
        write(generation.member_id, generation.generation_id, held)

    coordinator._on_join_complete_async = reported
    consumer.subscribe(topics)
    while not stop.is_set():
        if switch.is_set():
            switch.clear()
            consumer.subscribe(following)
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

    from kstore.record.confluent import RecordingListener, group_generation

    write = _writer(out)
    inside: list[str] = []  # the callback running, on any thread
    calls = out.with_suffix(".calls")

    class Watched(Consumer):  # type: ignore[misc]
        """The real consumer; a client call made while a rebalance callback runs is noted."""

        def __getattribute__(self, name: str) -> Any:
            if inside and not name.startswith("__"):
                with open(calls, "a", encoding="utf-8") as noted:
                    noted.write(f"{inside[-1]}: {name}\n")
            return super().__getattribute__(name)

    listener = RecordingListener(reports, group, strategy)
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "partition.assignment.strategy": strategy,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 500,
        "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if "KSTORE_TEST_RDKAFKA_DEBUG" in os.environ:
        settings["debug"] = os.environ["KSTORE_TEST_RDKAFKA_DEBUG"]
    if os.environ.get("KSTORE_TEST_LEADER_DECISIONS"):
        settings = listener.configure({**settings, "logger": _as_librdkafka_logs()})
    consumer = Watched(settings)

    called: list[str] = []  # callbacks since the last poll

    def watched(name: str, callback: Any) -> Any:
        def run(c: Any, partitions: list[Any]) -> None:
            inside.append(name)
            called.append(name)
            try:
                callback(c, partitions)
            finally:
                inside.pop()

        return run

    for name in ("on_assign", "on_revoke", "on_lost"):
        setattr(listener, name, watched(name, getattr(listener, name)))
    listener.subscribe(consumer, topics)
    written: tuple[int, list[tuple[str, int]]] | None = None
    eager = strategy != "cooperative-sticky"
    synced: set[int] = set()
    while not stop.is_set():
        if switch.is_set():
            switch.clear()
            listener.subscribe(consumer, following)
        listener.poll(consumer, 0.2)
        # What the member holds in each generation it was given an assignment in (its
        # SyncGroup answered: librdkafka then calls it back, with nothing if nothing
        # changes), read outside the callbacks; not the nothing an eager member holds
        # while it joins again. A generation whose SyncGroup failed (Tansu fails a
        # follower's at times) is none the member had.
        now = (
            group_generation(consumer),
            sorted((tp.topic, tp.partition) for tp in consumer.assignment()),
        )
        if called:
            called.clear()
            synced.add(now[0])
        rejoining = eager and not now[1] and written is not None and written[0] == now[0]
        if now[0] in synced and now != written and not rejoining:
            write(consumer.memberid(), *now)
            written = now
    listener.close(consumer)


def _as_librdkafka_logs() -> logging.Logger:
    """A logger writing librdkafka's lines to standard error as librdkafka itself does
    (``%7|time|FAC|name| [thread]: text``, the time when the line reached Python), so the
    tests read a member's log whether or not the listener takes it
    (``KSTORE_TEST_LEADER_DECISIONS``)."""

    class AsLibrdkafka(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            facility, _, rest = record.getMessage().partition(" ")
            name, _, text = rest.partition("] ")
            line = f"%7|{record.created:.3f}|{facility}|{name.lstrip('[')}| {text}"
            print(line, file=sys.stderr, flush=True)

    logger = logging.getLogger("librdkafka")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(AsLibrdkafka())
    return logger


def main() -> None:
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"
    )
    for name in ("kafka.coordinator", "kstore.record"):
        logging.getLogger(name).setLevel(logging.INFO)
    kind, bootstrap, group, strategy, topics, target, out = sys.argv[1:8]
    following = sys.argv[8].split(",") if len(sys.argv) > 8 else []
    stop, switch = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: switch.set())
    run = kafka_python if kind == "kafka-python" else confluent
    run(bootstrap, group, strategy, topics.split(","), target, Path(out), stop, switch, following)


if __name__ == "__main__":
    main()
