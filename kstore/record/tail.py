"""The live ``__consumer_offsets`` recorder: tail the topic, decode, append, checkpoint.

``OffsetsTailer.run`` loops until asked to stop: poll a batch of raw records from a
``RecordSource``, turn them into events with the decoder's ``OffsetsEventBuilder``,
append them to the store, then save the checkpoint (each partition's next offset and
the builder's per-group state). A lost broker is retried with backoff and the source
reopened at the checkpoint. A stop request (SIGINT/SIGTERM) is seen between batches, so
the batch in flight is always stored and checkpointed first.

The checkpoint is a JSON file beside the store (``<store>.offsets-<cluster>-<topic>.json``,
replaced atomically). It is written after the append, so a crash between the two
replays a few records on restart; their events have the same deterministic ids, so the
store keeps them once. A side lock on the checkpoint keeps a second tailer of the same
cluster and topic away.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from kstore._errors import KstoreError, UsageError
from kstore.record.config import KafkaSettings
from kstore.record.offsets_codec import OffsetsDecodeError
from kstore.record.offsets_events import OffsetsEventBuilder, RawRecord
from kstore.store.events import Event, parse_event
from kstore.store.log import Store

__all__ = [
    "OFFSETS_TOPIC",
    "Checkpoint",
    "KafkaTopicSource",
    "OffsetsTailer",
    "RecordSource",
    "SourceError",
    "TailStats",
]

OFFSETS_TOPIC = "__consumer_offsets"
log = logging.getLogger("kstore.record")

StartAt = Literal["beginning", "now"]


class SourceError(Exception):
    """The broker could not be read; the tailer retries."""


class RecordSource(Protocol):
    """Where raw records come from, in log order per partition."""

    def poll(self, timeout: float) -> list[RawRecord]: ...

    def close(self) -> None: ...


SourceFactory = Callable[[dict[int, int]], RecordSource]
"""Opens a source positioned at the given next offsets (partition -> offset)."""


@dataclass
class Checkpoint:
    """The tailer's position and the builder's state, kept beside the store."""

    path: Path
    positions: dict[int, int] = field(default_factory=dict)
    builder: dict[str, Any] = field(default_factory=dict)
    groups: list[str] | None = None

    @classmethod
    def for_store(cls, store: Path, cluster: str, topic: str) -> Checkpoint:
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{cluster}-{topic}")
        return cls(store.with_name(f"{store.name}.offsets-{safe}.json"))

    def load(self) -> bool:
        """Read the saved checkpoint; False when there is none yet."""
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as exc:
            raise KstoreError(f"{self.path}: unreadable checkpoint: {exc}") from None
        self.positions = {int(p): int(o) for p, o in raw["positions"].items()}
        self.builder = raw["builder"]
        self.groups = raw["groups"]
        return True

    def save(self) -> None:
        raw = {"positions": self.positions, "builder": self.builder, "groups": self.groups}
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(raw, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.path)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Exclusive use of this checkpoint for the life of one tailer."""
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise KstoreError(
                    f"{self.path}: another recorder is tailing this topic into this store"
                ) from None
            yield
        finally:
            os.close(fd)


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
        store: Store,
        checkpoint: Checkpoint,
        open_source: SourceFactory,
        *,
        cluster: str = "default",
        groups: Collection[str] | None = None,
        stop: threading.Event | None = None,
        backoff: tuple[float, float] = (0.5, 30.0),
    ) -> None:
        self.store = store
        self.checkpoint = checkpoint
        self.open_source = open_source
        self.stop = stop or threading.Event()
        self.backoff = backoff
        self.stats = TailStats()
        wanted = None if groups is None else sorted(groups)
        if checkpoint.load() and checkpoint.groups != wanted:
            raise UsageError(
                f"{checkpoint.path} was recorded for groups {checkpoint.groups or 'all'}, "
                f"not {wanted or 'all'}: use the same selection, or another store"
            )
        checkpoint.groups = wanted
        self.builder = OffsetsEventBuilder(cluster, groups, checkpoint.builder)

    def run(self, *, until_idle: bool = False) -> TailStats:
        """Tail until ``stop`` is set (or, with ``until_idle``, a poll finds nothing)."""
        with self.checkpoint.held():
            pause = self.backoff[0]
            source: RecordSource | None = None
            try:
                while not self.stop.is_set():
                    try:
                        if source is None:
                            source = self.open_source(dict(self.checkpoint.positions))
                        records = source.poll(0.5)
                    except SourceError as exc:
                        self.stats.retries += 1
                        log.warning("broker unavailable (%s); retrying in %.1f s", exc, pause)
                        if source is not None:
                            source.close()
                            source = None
                        self.stop.wait(pause)
                        pause = min(pause * 2, self.backoff[1])
                        continue
                    pause = self.backoff[0]
                    if records:
                        self._record(records)
                    elif until_idle:
                        break
            finally:
                if source is not None:
                    source.close()
        return self.stats

    def _record(self, records: list[RawRecord]) -> None:
        """Decode, store and checkpoint one batch: stored before the position moves."""
        events: list[Event] = []
        for raw in records:
            try:
                events.extend(parse_event(event) for event in self.builder.feed(raw))
            except OffsetsDecodeError as exc:
                self.stats.bad += 1
                log.warning("skipped a bad record: %s", exc)
            self.checkpoint.positions[raw.partition] = raw.offset + 1
        result = self.store.append(events)
        self.checkpoint.builder = self.builder.state()
        self.checkpoint.save()
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

    Partitions with no position start at the beginning or at the end (``start``).
    """

    def __init__(
        self,
        settings: KafkaSettings,
        topic: str,
        positions: dict[int, int],
        start: StartAt = "beginning",
        timeout: float = 10.0,
    ) -> None:
        from confluent_kafka import (
            OFFSET_BEGINNING,
            OFFSET_END,
            Consumer,
            KafkaException,
            TopicPartition,
        )

        self._kafka_exception = KafkaException
        config = settings.confluent(
            **{
                "group.id": "kstore-recorder",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "logger": logging.getLogger("kstore.record.librdkafka"),
            }
        )
        try:
            self._consumer = Consumer(config)
            metadata = self._consumer.list_topics(topic, timeout=timeout)
        except KafkaException as exc:
            raise SourceError(settings.redact(str(exc))) from None
        found = metadata.topics.get(topic)
        if found is None or found.error is not None or not found.partitions:
            self._consumer.close()
            raise SourceError(f"topic {topic}: not available ({found and found.error})")
        default = OFFSET_BEGINNING if start == "beginning" else OFFSET_END
        self._consumer.assign(
            [
                TopicPartition(topic, partition, positions.get(partition, default))
                for partition in sorted(found.partitions)
            ]
        )
        self._settings = settings

    def poll(self, timeout: float) -> list[RawRecord]:
        from confluent_kafka import KafkaError

        try:
            messages = self._consumer.consume(num_messages=500, timeout=timeout)
        except self._kafka_exception as exc:
            raise SourceError(self._settings.redact(str(exc))) from None
        records = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if error.retriable() or not error.fatal():
                    log.warning("kafka: %s", self._settings.redact(error.str()))
                    continue
                raise SourceError(self._settings.redact(error.str()))
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

    def close(self) -> None:
        self._consumer.close()
