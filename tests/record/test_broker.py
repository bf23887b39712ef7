"""Recorders against a live broker (Tansu): real consumers in their own processes.

Tansu has no ``__consumer_offsets`` and describes no members, so here the tailer reads
an ordinary topic filled with group-metadata records encoded per Kafka's schemas, and
the groups are recorded from the clients (kafka-python's assignor, confluent-kafka's
reports). Each test checks the record against what the consumers were actually given,
and that replaying the recorded history with the group's strategy gives it back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kstore.assignors import assign
from kstore.record.offsets_events import OffsetsEventBuilder, RawRecord
from kstore.store import Event, fold
from kstore.store.log import Store
from tests.broker import Broker
from tests.record.test_offsets_events import CLASSIC

pytestmark = [pytest.mark.broker, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def kstore(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "kstore.cli", "--store", str(store), *args]


def produce(broker: Broker, topic: str, records: list[RawRecord]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for raw in records:
        producer.produce(topic, key=raw.key, value=raw.value, partition=0, timestamp=raw.timestamp)
    assert producer.flush(10) == 0


def create_topic(broker: Broker, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, value=b"")
    assert producer.flush(10) == 0


def events_of(store: Store) -> list[Event]:
    return [s.event for s in store.events()]


def test_the_tailer_records_a_topic_stops_on_sigterm_and_resumes(
    broker: Broker, store: Store
) -> None:
    topic = "offsets-copy"
    produce(broker, topic, CLASSIC[:3])
    command = kstore(store.path, "record", "offsets", "--bootstrap-servers", broker.bootstrap)
    command += ["--topic", topic, "--all-groups", "--cluster", "prod"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    builder = OffsetsEventBuilder("prod")
    expected = [
        [event for event in builder.feed(RawRecord(offset, 0, raw.timestamp, raw.key, raw.value))]
        for offset, raw in enumerate(CLASSIC)
    ]
    first_part = sum(len(events) for events in expected[:3])
    expected_all = [event for events in expected for event in events]

    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_until(lambda: len(events_of(store)) >= first_part, 30, "the first records")
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "SIGTERM: finishing the batch in flight" in err
    assert "recorded g MemberJoined" in err  # what it records, logged at INFO
    assert out.startswith("3 records")

    produce(broker, topic, CLASSIC[3:])
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_until(lambda: len(events_of(store)) >= len(expected_all), 30, "the rest")
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out.startswith(f"{len(CLASSIC) - 3} records")  # resumed, nothing read twice
    assert [e.to_dict() for e in events_of(store)] == expected_all


class Members:
    """Member processes of one group, and what each was given."""

    def __init__(
        self, kind: str, broker: Broker, group: str, strategy: str, target: Path, workdir: Path
    ) -> None:
        self.args = [kind, broker.bootstrap, group, strategy]
        self.target = target
        self.workdir = workdir
        self.processes: list[subprocess.Popen[bytes]] = []
        self.outs: list[Path] = []

    def start(self, topics: str) -> int:
        out = self.workdir / f"member-{len(self.outs)}.jsonl"
        out.touch()
        command = [
            sys.executable,
            "-m",
            "tests.record._members",
            *self.args,
            topics,
            str(self.target),
            str(out),
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.processes.append(subprocess.Popen(command, cwd=ROOT, env=env))
        self.outs.append(out)
        return len(self.outs) - 1

    def given(self, index: int) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.outs[index].read_text().splitlines()]

    def latest(self) -> dict[str, list[list[Any]]]:
        """Each live member's last assignment, by member id."""
        out = {}
        for index, process in enumerate(self.processes):
            lines = self.given(index)
            if process.poll() is None and lines:
                out[lines[-1]["member"]] = lines[-1]["partitions"]
        return out

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def recorded_assignments(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]


def assert_replay_gives_back(events: list[Event], strategy: str) -> None:
    for index, event in enumerate(events):
        if event.type != "AssignmentCompleted":
            continue
        request = fold(events[:index]).to_request(strategy)
        replayed = assign(request).assignment
        recorded = event.data.to_dict()["assignment"]
        assert {m: [list(tp) for tp in sorted(tps)] for m, tps in replayed.items()} == recorded


def settled(members: Members, partitions: int, count: int) -> Callable[[], bool]:
    def check() -> bool:
        latest = members.latest()
        held = sorted(tuple(tp) for tps in latest.values() for tp in tps)
        return len(latest) == count and len(held) == partitions == len(set(held))

    return check


def test_kafka_python_members_recorded_by_their_leader(
    broker: Broker, store: Store, tmp_path: Path
) -> None:
    members = Members("kafka-python", broker, "kp-group", "range", store.path, tmp_path)
    try:
        for _ in range(3):
            members.start("kp-orders")
        wait_until(settled(members, 4, 3), 60, "three members to settle")
        members.processes[0].send_signal(signal.SIGKILL)  # a crash
        wait_until(settled(members, 4, 2), 60, "the crash to be noticed")
        time.sleep(1)
        events = events_of(store)
        final = recorded_assignments(events)[-1]["assignment"]
        assert final == members.latest()
        # Every assignment a member was given is the one recorded for it.
        given = {
            (line["member"], json.dumps(line["partitions"]))
            for index in range(3)
            for line in members.given(index)
        }
        recorded = {
            (member, json.dumps(tps))
            for done in recorded_assignments(events)
            for member, tps in done["assignment"].items()
        }
        assert given <= recorded
        assert_replay_gives_back(events, "range")
    finally:
        members.stop_all()


def test_confluent_members_reports_merge_into_the_group_history(
    broker: Broker, store: Store, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    members = Members("confluent", broker, "ck-group", "range", reports, tmp_path)
    create_topic(broker, "ck-orders")  # librdkafka consumers do not create topics
    try:
        members.start("ck-orders")
        members.start("ck-orders")
        wait_until(settled(members, 4, 2), 60, "two members to settle")
        members.start("ck-orders")
        wait_until(settled(members, 4, 3), 60, "three members to settle")
        members.processes[1].send_signal(signal.SIGKILL)
        wait_until(settled(members, 4, 2), 60, "the crash to be noticed")
        time.sleep(1.5)
        latest = members.latest()
    finally:
        members.stop_all()
    # A wide gap: under load one round's callbacks can be more than a second apart.
    merge = kstore(store.path, "record", "merge", "--reports", str(reports), "--settle", "0")
    merge += ["--gap", "2.5"]
    first = subprocess.run(merge, capture_output=True, text=True, check=True, cwd=ROOT)
    again = subprocess.run(merge, capture_output=True, text=True, check=True, cwd=ROOT)
    assert "(0 new" in again.stdout, (first.stdout, again.stdout)
    events = events_of(store)
    done = recorded_assignments(events)
    assert latest in [d["assignment"] for d in done]
    given = {
        (line["member"], json.dumps(line["partitions"]))
        for index in range(3)
        for line in members.given(index)
    }
    recorded = {(m, json.dumps(tps)) for d in done for m, tps in d["assignment"].items()}
    assert given <= recorded
    assert fold(events).members == {}  # everyone left in the end
    assert_replay_gives_back(
        events[
            : events.index(
                next(
                    e
                    for e in events
                    if e.type == "AssignmentCompleted" and e.data.to_dict()["assignment"] == latest
                )
            )
            + 1
        ],
        "range",
    )
