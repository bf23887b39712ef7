"""A kafka-python assignor that runs kstore's assignor and records what its group did.

Name it in a consumer's ``partition_assignment_strategy``::

    from kstore.record.kafka_python import recording_assignor
    consumer = KafkaConsumer(
        group_id="orders",
        partition_assignment_strategy=[recording_assignor("range", store="kstore.duckdb",
                                                          group="orders")],
    )

Every member sends its subscription with the partitions it owns and their generation
(``ConsumerProtocolSubscription`` v2, as Kafka's own clients do for cooperative
rebalancing), so kstore's sticky assignors see what they need. The member that leads a
rebalance answers it with kstore's assignor of the same Kafka name (never kafka-python's
own: its range and roundrobin drop members when static and dynamic members interleave)
and, once the coordinator tells it the generation (``on_assignment``), appends that
generation to the store: members that joined, left or changed their subscription, topic
partition counts, and the ``AssignmentCompleted``. Its events are diffed against the
store's fold of the group's ``recorded`` stream, so a new leader after a crash goes on
where the old one stopped, and ids are deterministic. A recording failure is logged and
never breaks the consumer.

The store is written on a thread of the assignor's own, in order, one generation after
another: ``on_assignment`` runs on kafka-python's network loop, which also sends the
heartbeats, and a slow or busy store (its lock is waited for up to
``KSTORE_LOCK_TIMEOUT``) would otherwise hold them back until the coordinator expels the
leader. ``flush()`` waits for what was handed over; a normal interpreter exit does too.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

import kstore
from kstore.assignors import AssignmentRequest, MemberSubscription, assign, strategies
from kstore.model.events import StreamId
from kstore.model.strategies import protocol_of, unknown_strategy
from kstore.record._clock import recorded_now
from kstore.record.offsets_codec import Assignment, Subscription, TopicPartitions
from kstore.record.poller import DescribedGroup, DescribedMember, diff
from kstore.store.interface import ConcurrencyError, EventStore
from kstore.store.writer import Writer

__all__ = ["RecordingAssignor", "recording_assignor"]

log = logging.getLogger("kstore.record")
_SUBSCRIPTION_VERSION = 2


def _by_topic(partitions: Sequence[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for topic, partition in partitions:
        grouped[topic].append(partition)
    return [(topic, sorted(grouped[topic])) for topic in sorted(grouped)]


class RecordingAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """kstore's assignor ``strategy`` for kafka-python, recording as the group's leader."""

    def __init__(
        self, strategy: str, store: EventStore | None, group: str, cluster: str = "default"
    ) -> None:
        if strategy not in strategies():
            raise ValueError(unknown_strategy(strategy, strategies()))
        self._name = strategy
        self.store = store
        self.group = group
        self.cluster = cluster
        self.owned: list[tuple[str, int]] = []
        self.generation = -1
        self._pending: DescribedGroup | None = None
        self._partition_counts: dict[str, int] = {}
        self._writer: ThreadPoolExecutor | None = None
        self._store_writer = Writer(store) if store is not None else None
        self._written: Future[None] | None = None

    @property
    def client(self) -> str:
        """The library that computes the group's assignments (``AssignmentCompleted.client``):
        kstore, whose assignors are Kafka's Java ones."""
        return f"kstore {kstore.__version__}"

    @property
    def name(self) -> str:
        return self._name

    def supported_protocols(self) -> list[RebalanceProtocol]:
        if protocol_of(self._name) == "cooperative":
            return [RebalanceProtocol.COOPERATIVE]
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: Any) -> Any:
        """This member's subscription, with what it owns and from which generation."""
        entry = ConsumerProtocolSubscription.TopicPartition
        return ConsumerProtocolSubscription(
            version=_SUBSCRIPTION_VERSION,
            topics=sorted(topics),
            user_data=b"",
            owned_partitions=[
                entry(topic=topic, partitions=partitions)
                for topic, partitions in _by_topic(self.owned)
            ],
            generation_id=self.generation,
        )

    def request(self, cluster: Any, members: Sequence[Any]) -> AssignmentRequest:
        """The kstore request for kafka-python's view of the group (JoinGroup's members)."""
        topics: dict[str, int] = {}
        subscriptions: dict[str, MemberSubscription] = {}
        for member in members:
            subscription = member.metadata
            for topic in subscription.topics:
                partitions = cluster.partitions_for_topic(topic)
                if partitions:
                    topics[topic] = max(partitions) + 1
                else:
                    log.warning("no partition metadata for topic %s", topic)
            owned = [
                (entry.topic, partition)
                for entry in getattr(subscription, "owned_partitions", None) or ()
                for partition in entry.partitions
            ]
            generation = getattr(subscription, "generation_id", -1)
            subscriptions[member.member_id] = MemberSubscription(
                topics=list(subscription.topics),
                owned=owned,
                generation=generation if generation >= 0 else None,
                rack=getattr(subscription, "rack_id", None),
                instance_id=member.group_instance_id,
            )
        return AssignmentRequest(strategy=self._name, topics=topics, members=subscriptions)

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, Any]:
        request = self.request(cluster, members)
        result = assign(request)
        for warning in result.warnings:
            log.warning("%s assignor: %s", self._name, warning)
        answer = {}
        described = []
        for member in members:
            partitions = list(result.assignment.get(member.member_id, []))
            answer[member.member_id] = ConsumerProtocolAssignment(
                version=0, assigned_partitions=_by_topic(partitions), user_data=b""
            )
            subscription = request.members[member.member_id]
            described.append(
                DescribedMember(
                    member_id=member.member_id,
                    client_id="",
                    client_host="",
                    instance_id=member.group_instance_id,
                    subscription=Subscription(
                        _SUBSCRIPTION_VERSION, tuple(subscription.topics), None
                    ),
                    assignment=Assignment(
                        0,
                        tuple(TopicPartitions(t, tuple(p)) for t, p in _by_topic(partitions)),
                        None,
                    ),
                )
            )
        self._pending = DescribedGroup(
            self.group, "Stable", "consumer", self._name, tuple(described)
        )
        self._partition_counts = dict(request.topics)
        return answer

    def on_assignment(self, assignment: Any, generation: int) -> None:
        self.owned = sorted(
            (topic, partition)
            for topic, partitions in assignment.assigned_partitions
            for partition in partitions
        )
        self.generation = generation
        pending, self._pending = self._pending, None
        if pending is None or self._store_writer is None:
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="kstore-record")
        self._written = self._writer.submit(
            self._record,
            self._store_writer,
            pending,
            self._partition_counts,
            generation,
            recorded_now(),
        )

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every generation handed over so far is recorded (or its failure logged)."""
        if self._written is not None:
            self._written.result(timeout)

    def _record(
        self,
        writer: Writer,
        group: DescribedGroup,
        partition_counts: dict[str, int],
        generation: int,
        at: datetime,
    ) -> None:
        stream = StreamId(self.cluster, self.group, "recorded")
        for attempt in range(3):
            try:
                state = writer.state(stream)
                events = diff(
                    group, state, partition_counts, at, self.cluster, generation, self.client
                )
                result = writer.write(events)
                break
            except ConcurrencyError:
                # Another recorder of the group moved the stream: diff again from it.
                writer.forget(stream)
                if attempt == 2:
                    log.exception("could not record generation %d of %s", generation, self.group)
                    return
            except Exception:
                writer.forget(stream)
                log.exception("could not record generation %d of %s", generation, self.group)
                return
        log.info(
            "recorded generation %d of %s: %d events (%d new)",
            generation,
            self.group,
            len(events),
            result.stored,
        )


def recording_assignor(
    strategy: str, store: EventStore | str | Path | None, group: str, cluster: str = "default"
) -> RecordingAssignor:
    """A ``RecordingAssignor`` for ``partition_assignment_strategy`` (store None: no record;
    a path: the DuckDB store there, which must be one this kstore writes: else
    ``NotAStoreError`` or ``SchemaError`` now, not a traceback in the consumer's log at
    each generation it leads while the group runs unrecorded, as a user trial found)."""
    if isinstance(store, str | Path):
        from kstore.store.log import Store

        store = Store(store)
        store.check()
    return RecordingAssignor(strategy, store, group, cluster)
