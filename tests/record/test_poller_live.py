"""The poller against the Tansu broker, whose DescribeGroups names the members but gives
no protocol and no assignment bytes: it records membership only, says so once, and
invents no generation (it used to store one "inferred" rebalance with empty assignments
per poll)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kstore.record.poller import visibility_key
from kstore.store.log import Store
from tests.broker import Broker

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("broker")]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_members(broker: Broker) -> Iterator[list[str]]:
    """Two confluent-kafka consumers of group ``polled`` holding their partitions."""
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("polled-topic", value=b"")  # creates it (Tansu: 4 partitions)
    assert producer.flush(10) == 0
    stop = threading.Event()
    ids: list[str] = []
    held = threading.Barrier(3, timeout=60)

    def member(number: int) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "polled",
                "client.id": f"member-{number}",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        consumer.subscribe(["polled-topic"])
        try:
            while not consumer.assignment():
                consumer.poll(0.2)
            ids.append(consumer.memberid() or "")
            held.wait()
            while not stop.is_set():
                consumer.poll(0.2)
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(n,), daemon=True) for n in (1, 2)]
    for thread in threads:
        thread.start()
    try:
        held.wait()
        # the group settles once both hold partitions (a second join may still follow)
        time.sleep(2)
        yield ids
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=15)


def _poll(broker: Broker, store: Store, group: str, polls: int) -> subprocess.CompletedProcess[str]:
    """``kstore record poll`` of ``group``, every 0.3 s, ``polls`` times."""
    command = [sys.executable, "-m", "kstore.cli", "--store", str(store.path), "record"]
    command += ["poll", "--bootstrap-server", broker.bootstrap, "--group", group]
    return subprocess.run(
        [*command, "--interval", "0.3s", "--polls", str(polls)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_the_poller_records_membership_only_on_a_broker_without_assignments(
    broker: Broker, store: Store, two_members: list[str]
) -> None:
    done = _poll(broker, store, "polled", polls=8)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("8 polls, ")
    said = [line for line in done.stderr.splitlines() if "membership only" in line]
    assert len(said) == 1, done.stderr
    assert "not their assignments (empty protocol, no assignment bytes)" in said[0]
    types = [s.event.type for s in store.events()]
    assert "AssignmentCompleted" not in types and "RebalanceStarted" not in types
    joined = {s.event.data.to_dict()["member_id"] for s in store.events()} - {None}
    assert set(two_members) <= joined
    assert store.checkpoint(visibility_key("default", "polled"))["sees"] == "membership"
    # Metrics have no row that says the group held nothing.
    kstore = [sys.executable, "-m", "kstore.cli", "--store", str(store.path)]
    metrics = subprocess.run(
        [*kstore, "query", "metrics", "--group", "polled", "--format", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert metrics.returncode in (0, 2), metrics.stderr
    assert metrics.returncode == 2 or json.loads(metrics.stdout) == []


def test_the_poller_summary_counts_in_words(broker: Broker, store: Store) -> None:
    """A user's trial: one answered poll ended '1 polls, 0 events stored, 0 retries'."""
    done = _poll(broker, store, "nobody", polls=1)
    assert (done.returncode, done.stdout) == (0, "1 poll, 0 events stored, 0 retries\n")
