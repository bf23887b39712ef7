"""The live ``__consumer_offsets`` recorder: tail the topic, decode, append, checkpoint.

``OffsetsTailer.run`` loops until asked to stop: poll a batch of raw records from a
``RecordSource``, turn them into events with the decoder's ``OffsetsEventBuilder``,
append them to the store, then save the checkpoint (each partition's next offset and
the builder's per-group state). A lost broker is retried with backoff and the source
reopened at the checkpoint. A stop request (SIGINT/SIGTERM) is seen between batches, so
the batch in flight is always stored and checkpointed first.

The checkpoint lives in the store (``kstore_checkpoints``, key ``offsets/<cluster>/<topic>``)
and is written in the same transaction as the batch's events: both are stored or
neither, whatever happens to the process. Each write names the checkpoint it started
from, so a second tailer of the same cluster and topic on the same store is refused at
its first batch instead of interleaving positions.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Protocol

from kstore._errors import KstoreError, UsageError
from kstore.model.events import Event, parse_event
from kstore.record._failures import (
    AUTHORIZATION,
    CONFIGURATION,
    MISSING_TOPIC,
    UNAVAILABLE,
    ClientError,
    FirstAnswer,
    Retries,
    Stopped,
    classify,
    close_within,
    interruptible,
    raise_permanent,
)
from kstore.record.config import KafkaSettings
from kstore.record.offsets_codec import OffsetsDecodeError
from kstore.record.offsets_events import OffsetsEventBuilder, RawRecord
from kstore.store.interface import ConcurrencyError, EventStore
from kstore.store.writer import Writer

__all__ = [
    "OFFSETS_TOPIC",
    "KafkaTopicSource",
    "OffsetsTailer",
    "RecordSource",
    "SourceError",
    "TailStats",
    "TailerPosition",
    "checkpoint_key",
]

OFFSETS_TOPIC = "__consumer_offsets"
log = logging.getLogger("kstore.record")

StartAt = Literal["beginning", "now"]


class SourceError(ClientError):
    """The broker could not be read; the tailer retries."""

    def __init__(self, detail: str) -> None:
        super().__init__(UNAVAILABLE, detail)


class RecordSource(Protocol):
    """Where raw records come from, in log order per partition."""

    def poll(self, timeout: float) -> list[RawRecord]: ...

    def close(self) -> None: ...


SourceFactory = Callable[[dict[int, int]], RecordSource]
"""Opens a source positioned at the given next offsets (partition -> offset)."""


def checkpoint_key(cluster: str, topic: str) -> str:
    """The tailer's key among the store's checkpoints."""
    return f"offsets/{cluster}/{topic}"


@dataclass
class TailerPosition:
    """Where a tailer stopped: each partition's next offset and the builder's state."""

    positions: dict[int, int] = field(default_factory=dict)
    builder: dict[str, Any] = field(default_factory=dict)
    groups: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "positions": {str(p): o for p, o in self.positions.items()},
            "builder": self.builder,
            "groups": self.groups,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> TailerPosition:
        return cls(
            {int(p): int(o) for p, o in raw["positions"].items()}, raw["builder"], raw["groups"]
        )


@dataclass
class TailStats:
    records: int = 0
    events: int = 0
    stored: int = 0
    bad: int = 0
    retries: int = 0


class OffsetsTailer:
    """Feeds a source's records through the decoder into the store, batch by batch."""

    def __init__(
        self,
        store: EventStore,
        open_source: SourceFactory,
        *,
        cluster: str = "default",
        topic: str = OFFSETS_TOPIC,
        groups: Collection[str] | None = None,
        stop: threading.Event | None = None,
        backoff: tuple[float, float] = (0.5, 30.0),
        max_retries: int = -1,
        first: FirstAnswer | None = None,
    ) -> None:
        self.open_source = open_source
        self.first = first
        self.topic = topic
        self.max_retries = max_retries
        self.stop = stop or threading.Event()
        self.backoff = backoff
        self.stats = TailStats()
        self.key = checkpoint_key(cluster, topic)
        self.writer = Writer(store, checkpoint=self.key)
        saved = self.writer.saved
        self.position = TailerPosition.from_json(saved) if saved else TailerPosition()
        wanted = None if groups is None else sorted(groups)
        if saved is not None and self.position.groups != wanted:
            raise UsageError(
                f"{self.key} was recorded into this store for groups "
                f"{self.position.groups or 'all'}, not {wanted or 'all'}: "
                "use the same selection, or another store"
            )
        self.position.groups = wanted
        self.builder = OffsetsEventBuilder(cluster, groups, self.position.builder)

    def run(self, *, until_idle: bool = False) -> TailStats:
        """Tail until ``stop`` is set (or, with ``until_idle``, a poll finds nothing).

        A lost broker is retried (``_failures.Retries``: ``max_retries`` in a row, then
        ``GaveUp``, with ``stats`` still telling what was stored); a permanent failure
        (configuration, authentication, authorization, missing topic) raises at once.
        """
        retries = Retries(self.max_retries, self.stop, self.backoff, self.first)
        source: RecordSource | None = None
        try:
            while not self.stop.is_set():
                try:
                    if source is None:
                        source = interruptible(
                            partial(self.open_source, dict(self.position.positions)),
                            self.stop,
                            retries.remaining(),
                        )
                    records = source.poll(0.5)
                except Stopped:
                    if self.stop.is_set():
                        break
                    raise retries.unanswered(f"tailing {self.topic}") from None
                except Exception as exc:
                    if source is not None:
                        close_within(source.close)
                        source = None
                    try:
                        retries.failed(exc, f"tailing {self.topic}")
                    finally:
                        self.stats.retries = retries.total
                    continue
                retries.succeeded()
                if records:
                    self._record(records)
                elif until_idle:
                    break
        finally:
            if source is not None:
                close_within(source.close)
        return self.stats

    def _record(self, records: list[RawRecord]) -> None:
        """Decode one batch; store its events and the new position in one transaction."""
        events: list[Event] = []
        for raw in records:
            try:
                events.extend(parse_event(event) for event in self.builder.feed(raw))
            except OffsetsDecodeError as exc:
                self.stats.bad += 1
                log.warning("skipped a bad record: %s", exc)
            self.position.positions[raw.partition] = raw.offset + 1
        self.position.builder = self.builder.state()
        try:
            result = self.writer.write(events, self.position.to_json())
        except ConcurrencyError:
            raise KstoreError(
                f"the position of {self.key}, or a stream of its groups, was moved by another "
                "recorder (a second tailer of this topic on this store?); stopped, "
                "this batch not stored"
            ) from None
        self.stats.records += len(records)
        self.stats.events += len(events)
        self.stats.stored += result.stored
        for event in events:
            log.info("recorded %s %s %s", event.group, event.type, event.data.to_dict())
        log.info(
            "batch of %d records: %d events, %d new, %d already stored",
            len(records),
            len(events),
            result.stored,
            result.already,
        )


class KafkaTopicSource:
    """Reads a topic's partitions with confluent-kafka, assigned by hand (no group).

    Before reading it checks that the topic exists and that this principal may describe
    and read it, and says what is missing (``ClientError``: missing topic, or
    authorization naming the ACL). Partitions with no position start at the beginning
    or at the end (``start``).
    """

    def __init__(
        self,
        settings: KafkaSettings,
        topic: str,
        positions: dict[int, int],
        start: StartAt = "beginning",
        timeout: float = 5.0,
    ) -> None:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

        # librdkafka logs every failed connection attempt (hundreds a second with a
        # broker down): critical ones only, unless -X log_level says otherwise; the
        # recorder says what failed itself, one line per retry.
        self._errors: list[Any] = []
        config = {"log_level": 2} | settings.confluent(
            **{
                "group.id": "kstore-recorder",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "allow.auto.create.topics": False,
                "logger": logging.getLogger("kstore.record.librdkafka"),
                # librdkafka retries a failed login by itself and tells only error_cb:
                # kept, so that a wrong password is an authentication failure, not a
                # broker that seems down.
                "error_cb": self._errors.append,
            }
        )
        try:
            self._consumer = Consumer(config)
        except (ValueError, TypeError) as exc:  # confluent-kafka's own check of the config
            raise ClientError(CONFIGURATION, str(exc)) from None
        try:
            partitions = self._readable_partitions(settings, topic, timeout)
        except BaseException:
            self._consumer.close()
            raise
        default = OFFSET_BEGINNING if start == "beginning" else OFFSET_END
        self._consumer.assign(
            [
                TopicPartition(topic, partition, positions.get(partition, default))
                for partition in partitions
            ]
        )

    def _readable_partitions(
        self, settings: KafkaSettings, topic: str, timeout: float
    ) -> list[int]:
        from confluent_kafka import KafkaError, TopicCollection
        from confluent_kafka.admin import AdminClient

        try:
            metadata = self._consumer.list_topics(topic, timeout=timeout)
        except Exception:
            self._consumer.poll(0)  # serves error_cb
            self._raise_permanent()
            raise
        found = metadata.topics.get(topic)
        error = found.error if found is not None else None
        if found is None or (
            error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        ):
            raise ClientError(MISSING_TOPIC, f"topic {topic} does not exist on this cluster")
        if error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise ClientError(AUTHORIZATION, f"no Describe on topic {topic}")
        if error is not None:
            raise self._kafka_exception(error)
        if not found.partitions:
            raise ClientError(MISSING_TOPIC, f"topic {topic} has no partitions")
        # Read is not checked by a metadata request: ask for the authorized operations.
        admin = AdminClient(settings.confluent())
        described = admin.describe_topics(
            TopicCollection([topic]), include_authorized_operations=True
        )[topic].result(timeout)
        allowed = described.authorized_operations
        if allowed is not None and not {"READ", "ALL"} & {op.name for op in allowed}:
            raise ClientError(AUTHORIZATION, f"no Read on topic {topic}")
        return sorted(found.partitions)

    def poll(self, timeout: float) -> list[RawRecord]:
        from confluent_kafka import KafkaError

        messages = self._consumer.consume(num_messages=500, timeout=timeout)
        self._raise_permanent()
        records = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if error.code() == KafkaError._ALL_BROKERS_DOWN:
                    raise SourceError(error.str())
                failure = classify(self._kafka_exception(error))
                if failure is not None and (failure.permanent or error.fatal()):
                    raise ClientError(failure.kind, failure.detail)
                log.warning("kafka: %s", error.str())
                continue
            offset, partition = message.offset(), message.partition()
            if offset is None or partition is None:
                continue
            _, timestamp = message.timestamp()
            records.append(
                RawRecord(
                    offset=offset,
                    partition=partition,
                    timestamp=max(timestamp, 0),
                    key=message.key(),
                    value=message.value(),
                )
            )
        return records

    def _raise_permanent(self) -> None:
        """Raise the first permanent error librdkafka reported to error_cb, if any."""
        errors, self._errors[:] = list(self._errors), []
        raise_permanent(errors)

    @staticmethod
    def _kafka_exception(error: Any) -> BaseException:
        from confluent_kafka import KafkaException

        return KafkaException(error)

    def close(self) -> None:
        self._consumer.close()
