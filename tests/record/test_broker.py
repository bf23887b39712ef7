"""Recorders against a live broker (Tansu): real consumers in their own processes.

Tansu has no ``__consumer_offsets`` and describes no members, so here the tailer reads
an ordinary topic filled with group-metadata records encoded per Kafka's schemas, and
the groups are recorded from the clients (kafka-python's assignor, confluent-kafka's
reports). Each test checks the record against what the consumers were actually given,
and that replaying the recorded history with the group's strategy gives it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kstore.analytics.replay import replay_events
from kstore.model import Event, StreamId, fold
from kstore.record.offsets_events import OffsetsEventBuilder, RawRecord
from kstore.store.log import Store
from tests.broker import Broker
from tests.record.test_offsets_events import CLASSIC

# One worker runs them all, one after the other, on one broker (the Spark group has the other).
pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.xdist_group("broker")]
ROOT = Path(__file__).resolve().parents[2]


def wait_until(
    check: Callable[[], bool], timeout: float, what: str, detail: Callable[[], object] = str
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {detail()}")


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
        self.strategy = strategy
        self.target = target
        self.workdir = workdir
        self.processes: list[subprocess.Popen[bytes]] = []
        self.outs: list[Path] = []

    def start(self, topics: str, following: str | None = None) -> int:
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
            *([following] if following else []),
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        with open(out.with_suffix(".log"), "wb") as log:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        self.outs.append(out)
        return len(self.outs) - 1

    def given(self, index: int) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.outs[index].read_text().splitlines()]

    def all_given(self) -> list[dict[str, Any]]:
        return [line for index in range(len(self.outs)) for line in self.given(index)]

    def report(self) -> str:
        """What each member was given, and where their logs are, for a timeout's message."""
        return f"{self.all_given()} (member logs: {self.workdir}/member-*.log)"

    def last_lines(self) -> list[dict[str, Any]]:
        """Each live member's last line."""
        out = []
        for index, process in enumerate(self.processes):
            lines = self.given(index)
            if process.poll() is None and lines:
                out.append(lines[-1])
        return out

    def latest(self) -> dict[str, list[list[Any]]]:
        """Each live member's last assignment, by member id."""
        return {line["member"]: line["partitions"] for line in self.last_lines()}

    def settled(self, partitions: int, count: int) -> Callable[[], bool]:
        """``count`` live members hold ``partitions`` partitions between them, once each,
        all in the same generation (a member may not have reported the newest yet)."""

        def check() -> bool:
            lines = self.last_lines()
            held = sorted(tuple(tp) for line in lines for tp in line["partitions"])
            generations = {line["generation"] for line in lines}
            return (
                len(lines) == count
                and len(generations) == 1
                and len(held) == partitions == len(set(held))
            )

        return check

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
    """``kstore replay``'s decisions on the recorded history are the recorded ones.

    A cooperative replay makes the follow-up round a withholding decision needs; the
    recorded history has that round too, as the group's next generation, and the replay
    takes it as that same rebalance (docs/analytics.md), so the two lists are equal
    rebalance for rebalance.
    """
    stream = events[0].stream
    target = StreamId(stream.cluster, stream.group, f"replay/{strategy}")
    replayed = [
        event.data.to_dict()["assignment"]
        for event in replay_events(events, target, strategy)
        if event.type == "AssignmentCompleted"
    ]
    assert replayed == [done["assignment"] for done in recorded_assignments(events)]


def assert_recorded_as_given(store: Store, members: Members) -> list[Event]:
    """What each member held in each generation is what the store recorded for it then;
    the last recorded generation is what the live members hold; the replay agrees."""
    events = events_of(store)
    by_generation = {
        done["generation"]: done["assignment"] for done in recorded_assignments(events)
    }
    given = members.all_given()
    assert given
    for line in given:
        assert by_generation[line["generation"]][line["member"]] == line["partitions"], line
    assert recorded_assignments(events)[-1]["assignment"] == members.latest()
    assert_replay_gives_back(events, members.strategy)
    return events


def last_recorded_is_latest(store: Store, members: Members) -> Callable[[], bool]:
    """Every generation a member reported is recorded (the leader writes on a thread of
    its own, after the members may have reported), and the last one is what they hold."""

    def check() -> bool:
        done = recorded_assignments(events_of(store))
        reported = {line["generation"] for line in members.all_given()}
        recorded = {d["generation"] for d in done}
        return bool(done) and reported <= recorded and done[-1]["assignment"] == members.latest()

    return check


def kafka_python_crash(broker: Broker, store: Store, workdir: Path) -> None:
    """Three range members; one is killed."""
    members = Members("kafka-python", broker, "kp-group", "range", store.path, workdir)
    try:
        for _ in range(3):
            members.start("kp-orders")
        wait_until(members.settled(4, 3), 60, "three members to settle", members.report)
        # Killed only once recorded: a leader killed before its write loses that generation.
        wait_until(last_recorded_is_latest(store, members), 60, "the record", members.report)
        members.processes[0].send_signal(signal.SIGKILL)  # a crash
        wait_until(members.settled(4, 2), 60, "the crash to be noticed", members.report)
        wait_until(last_recorded_is_latest(store, members), 60, "the record", members.report)
        events = assert_recorded_as_given(store, members)
        assert [e.type for e in events].count("MemberLeft") == 1
    finally:
        members.stop_all()


def kafka_python_growing_topic(broker: Broker, store: Store, workdir: Path) -> None:
    """Two range members; their topic goes from 2 partitions to 4.

    Tansu has no CreatePartitions: the topic is deleted and created again with 4
    partitions (or auto-created with Tansu's default of 4 when a consumer's metadata
    request comes first). The consumers see the same topic with more partitions.
    """
    from kafka.admin import KafkaAdminClient
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics({"kp-grow": {"num_partitions": 2, "replication_factor": 1}})
    members = Members("kafka-python", broker, "kp-grow-group", "range", store.path, workdir)
    try:
        members.start("kp-grow")
        members.start("kp-grow")
        wait_until(members.settled(2, 2), 60, "two members on two partitions", members.report)
        admin.delete_topics(["kp-grow"])
        with contextlib.suppress(TopicAlreadyExistsError):
            admin.create_topics({"kp-grow": {"num_partitions": 4, "replication_factor": 1}})
        wait_until(
            members.settled(4, 2), 60, "the new partitions to be assigned", members.all_given
        )
        wait_until(last_recorded_is_latest(store, members), 60, "the record", members.report)
        events = assert_recorded_as_given(store, members)
        counts = [e.data.to_dict()["partitions"] for e in events if e.type == "TopicChanged"]
        assert counts == [2, 4]
    finally:
        members.stop_all()
        admin.close()


def kafka_python_subscription_change(broker: Broker, store: Store, workdir: Path) -> None:
    """Two roundrobin members on one topic; one subscribes to a second topic too.

    The changing member starts first, so it leads the group. A kafka-python leader that
    is not subscribed to a topic another member takes up never settles: each rejoin
    resets its metadata interest to its own topics, so it assigns without the new
    topic's partitions, then sees them arrive and rebalances again (Java's leader
    fetches the metadata before assigning).
    """
    create_topic(broker, "kp-sub-a")
    create_topic(broker, "kp-sub-b")
    members = Members("kafka-python", broker, "kp-sub-group", "roundrobin", store.path, workdir)
    try:
        changing = members.start("kp-sub-a", following="kp-sub-a,kp-sub-b")
        wait_until(members.settled(4, 1), 60, "the first member alone", members.report)
        members.start("kp-sub-a")
        wait_until(members.settled(4, 2), 60, "two members on one topic", members.report)
        members.processes[changing].send_signal(signal.SIGUSR1)
        wait_until(members.settled(8, 2), 60, "the second topic to be assigned", members.report)
        wait_until(last_recorded_is_latest(store, members), 60, "the record", members.report)
        events = assert_recorded_as_given(store, members)
        changed = [e.data.to_dict() for e in events if e.type == "SubscriptionChanged"]
        member = members.given(changing)[-1]["member"]
        assert changed == [{"member_id": member, "topics": ["kp-sub-a", "kp-sub-b"]}]
    finally:
        members.stop_all()


def kafka_python_cooperative(broker: Broker, store: Store, workdir: Path) -> None:
    """cooperative-sticky: two members, a third joins, the first leaves cleanly."""
    create_topic(broker, "kp-coop")
    members = Members(
        "kafka-python", broker, "kp-coop-group", "cooperative-sticky", store.path, workdir
    )
    try:
        members.start("kp-coop")
        members.start("kp-coop")
        wait_until(members.settled(4, 2), 60, "two members", members.report)
        members.start("kp-coop")
        wait_until(members.settled(4, 3), 90, "the third member (two rounds)", members.report)
        members.processes[0].terminate()
        wait_until(members.settled(4, 2), 90, "the first member's leaving", members.report)
        wait_until(last_recorded_is_latest(store, members), 60, "the record", members.report)
        events = assert_recorded_as_given(store, members)
        done = recorded_assignments(events)
        assert {d["protocol"] for d in done} == {"cooperative"}
        # Partitions moved in two rounds: one generation took them away, the next gave them.
        assert any(sum(map(len, d["assignment"].values())) < 4 for d in done[1:]), (
            "no cooperative round withheld a partition"
        )
    finally:
        members.stop_all()


def test_kafka_python_groups_recorded_by_their_leaders(broker: Broker, tmp_path: Path) -> None:
    """Four groups at once: a crash, a topic gaining partitions, a subscription change,
    a cooperative-sticky group; each recorded into a store of its own by its leader."""
    scenarios = [
        kafka_python_crash,
        kafka_python_growing_topic,
        kafka_python_subscription_change,
        kafka_python_cooperative,
    ]
    with ThreadPoolExecutor(len(scenarios)) as pool:
        running = []
        for scenario in scenarios:
            workdir = tmp_path / scenario.__name__
            workdir.mkdir()
            store = Store(workdir / "kstore.duckdb")
            store.init()
            running.append(pool.submit(scenario, broker, store, workdir))
        for future in running:
            future.result()


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_members_reports_merge_into_the_group_history(
    broker: Broker, store: Store, tmp_path: Path, strategy: str
) -> None:
    reports = tmp_path / "reports"
    group, topic = f"ck-group-{strategy}", f"ck-orders-{strategy}"
    members = Members("confluent", broker, group, strategy, reports, tmp_path)
    create_topic(broker, topic)  # librdkafka consumers do not create topics
    try:
        members.start(topic)
        members.start(topic)
        wait_until(members.settled(4, 2), 60, "two members to settle", members.report)
        members.start(topic)
        wait_until(members.settled(4, 3), 60, "three members to settle", members.report)
        members.processes[1].send_signal(signal.SIGKILL)
        wait_until(members.settled(4, 2), 60, "the crash to be noticed", members.report)
        latest = members.latest()
        (settled_generation,) = {line["generation"] for line in members.last_lines()}
    finally:
        members.stop_all()
    merge = kstore(store.path, "record", "merge", "--reports", str(reports), "--settle", "0")
    run: dict[str, Any] = dict(capture_output=True, text=True, check=True, cwd=ROOT, timeout=120)
    first = subprocess.run(merge, **run)
    again = subprocess.run(merge, **run)
    assert "(0 new" in again.stdout, (first.stdout, again.stdout)
    events = events_of(store)
    done = recorded_assignments(events)
    by_generation = {d["generation"]: d["assignment"] for d in done}
    for line in members.all_given():
        assert by_generation[line["generation"]][line["member"]] == line["partitions"], line
    # Members leaving at the end may make one more generation: the settled one is checked.
    assert by_generation[settled_generation] == latest
    left = [e.data.to_dict() for e in events if e.type == "MemberLeft"]
    assert sorted(d["reason"] for d in left) == ["leave", "leave", "other"]
    assert fold(events).members == {}  # everyone left in the end
    if strategy != "cooperative-sticky":  # gap: cooperative replay vs recorded interim generations
        assert_replay_gives_back(events, strategy)
