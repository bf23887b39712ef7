"""From ``__consumer_offsets`` records to events (``docs/spec/events.md``, timeline ``recorded``).

``OffsetsEventBuilder`` takes the records of the topic in log order and keeps, per
group, what the events so far say (members, subscriptions, generation, known topics).
Its state is a plain JSON-able dict (``state()`` / ``from_state``) so a live recorder
can persist it with its position and resume.

Classic groups (``GroupMetadataValue``, each record the whole group after a change):

- a new generation with members -> ``RebalanceStarted``, then the member diffs, topics
  the assignments reveal, and one ``AssignmentCompleted`` (protocol ``eager``, or
  ``cooperative`` for ``cooperative-sticky``);
- a record with the generation already seen (a static member replaced) is not a new
  rebalance: an instance id under a new member id gives ``MemberReplaced``;
- a record with no members (the group went empty) -> ``MemberLeft`` for everyone.

KIP-848 groups (protocol ``consumer``): ``ConsumerGroupMemberMetadata`` ->
``MemberJoined`` / ``SubscriptionChanged`` / ``MemberLeft`` (tombstone), a group epoch
bump -> ``RebalanceStarted``, ``ConsumerGroupPartitionMetadata`` -> ``TopicChanged``,
and ``ConsumerGroupTargetAssignmentMetadata`` -> ``AssignmentCompleted`` with the
target assignment of every member. A static member's tombstone is held back until the
group's next epoch or assignment record: if a member with the same instance id appears
first, that is a ``MemberReplaced``.

Event ids are UUIDs derived from (cluster, group, partition, offset, index of the event
among those of its record), so reading the same records again yields the same ids.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from kstore._errors import UsageError, error_message, field_path
from kstore._files import text_lines
from kstore.model.events import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
)
from kstore.model.ids import event_id
from kstore.model.strategies import wire_protocol
from kstore.record.offsets_codec import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetsDecodeError,
    OffsetsRecord,
    RecordKey,
    TopicPartitions,
    decode_key,
    decode_value,
)

__all__ = [
    "DumpFormatError",
    "OffsetsEventBuilder",
    "RawRecord",
    "client_of_id",
    "events_from_dump",
    "read_dump",
]

log = logging.getLogger("kstore.record")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The coordinator's first configured assignor (group.consumer.assignors) by default.
_DEFAULT_SERVER_ASSIGNOR = "uniform"


@dataclass(frozen=True)
class RawRecord:
    """One record of ``__consumer_offsets`` as read from the log or a dump."""

    offset: int
    partition: int
    timestamp: int
    """Milliseconds since the Unix epoch (the record's timestamp)."""
    key: bytes | None
    value: bytes | None

    @property
    def label(self) -> str:
        return f"partition {self.partition} offset {self.offset}"


# -- per-group state (JSON-able, so a recorder can persist it) --------------------------


class _Member(BaseModel):
    topics: list[str]
    instance_id: str | None = None
    server_assignor: str | None = None


class _PendingLeave(BaseModel):
    """A static KIP-848 member's tombstone, held back to tell a leave from a replacement."""

    member_id: str
    topics: list[str]
    partition: int
    offset: int
    timestamp: int


class _Group(BaseModel):
    generation: int | None = None
    completed: int | None = None
    """The generation (or assignment epoch) of the last ``AssignmentCompleted``."""
    members: dict[str, _Member] = Field(default_factory=dict)
    partitions: dict[str, int] = Field(default_factory=dict)
    """Topic -> partition count as last stated in a ``TopicChanged``."""
    racks: dict[str, list[list[str]]] = Field(default_factory=dict)
    topic_names: dict[str, str] = Field(default_factory=dict)
    """KIP-848: topic id -> name, from the partition metadata records."""
    targets: dict[str, list[tuple[str, int]]] = Field(default_factory=dict)
    """KIP-848: member id -> its target partitions as (topic id, partition)."""
    pending_leaves: dict[str, _PendingLeave] = Field(default_factory=dict)
    """KIP-848: instance id -> a held-back tombstone of the member that had it."""


class _State(BaseModel):
    groups: dict[str, _Group] = Field(default_factory=dict)


# -- the builder ----------


def _sorted_pairs(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    return sorted(set(partitions))


def _pairs(topics: tuple[TopicPartitions, ...]) -> list[tuple[str, int]]:
    return [(entry.topic, partition) for entry in topics for partition in entry.partitions]


class _Emitter:
    """Collects the events of one record, numbering them for their ids."""

    def __init__(
        self,
        cluster: str,
        group: str,
        raw: RawRecord,
        said: set[tuple[str, str | None]] | None = None,
    ) -> None:
        self.cluster = cluster
        self.group = group
        self.raw = raw
        self.said = set() if said is None else said
        """What the builder has said already (groups and client ids it cannot tell)."""
        self.events: list[dict[str, Any]] = []

    def emit(self, data: EventData, *, at: RawRecord | None = None) -> None:
        """One event; ``at`` is the record it belongs to when not the current one."""
        source = at or self.raw
        index = len(self.events) if at is None else 0
        name = f"{self.cluster}/{self.group}/{source.partition}/{source.offset}/{index}"
        try:
            event = Event(
                event_id=event_id("offsets", name),
                cluster=self.cluster,
                group=self.group,
                timeline="recorded",
                at=_EPOCH + timedelta(milliseconds=source.timestamp),
                data=data,
            )
        except (ValidationError, OverflowError) as exc:
            raise OffsetsDecodeError(self.raw.label, data.type_name(), str(exc)) from None
        self.events.append(event.to_dict())


def _data(model: type[EventData], **fields: Any) -> EventData:
    """An event's data, with a decoded value that breaks the event's rules reported."""
    try:
        return model(**{name: value for name, value in fields.items() if value is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = field_path((model.type_name(), *first["loc"]))
        raise _BadEvent(field, error_message(first)) from None


class _BadEvent(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(field, reason)
        self.field = field
        self.reason = reason


class OffsetsEventBuilder:
    """Turns records of ``__consumer_offsets`` (in log order) into events.

    ``feed`` returns the events of one record, or raises ``OffsetsDecodeError`` for a
    bad one (the state is then left as it was). ``ignored`` counts records that carry
    nothing for the event log (offset commits, other record types, groups that are not
    consumer groups or not asked for).
    """

    def __init__(
        self,
        cluster: str = "default",
        groups: Collection[str] | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        self.cluster = cluster
        self.groups = None if groups is None else frozenset(groups)
        self._state = _State.model_validate(state or {})
        self.ignored = 0
        self._said: set[tuple[str, str | None]] = set()

    def state(self) -> dict[str, Any]:
        """The per-group state to persist with the recorder's position."""
        return self._state.model_dump(mode="json")

    @classmethod
    def from_state(
        cls, cluster: str, state: dict[str, Any], groups: Collection[str] | None = None
    ) -> OffsetsEventBuilder:
        return cls(cluster, groups, state)

    # -- entry points -----------------------------------------------------------------------

    def feed(self, raw: RawRecord) -> list[dict[str, Any]]:
        """The events of one raw record; ``OffsetsDecodeError`` if it cannot be read."""
        if raw.key is None:
            raise OffsetsDecodeError(raw.label, "key", "null key")
        key = decode_key(raw.key, raw.label)
        if self._group_of(key) is None:
            self.ignored += 1
            return []
        value = None if raw.value is None else decode_value(key, raw.value, raw.label)
        return self.feed_decoded(OffsetsRecord(key, value), raw)

    def feed_decoded(self, record: OffsetsRecord, raw: RawRecord) -> list[dict[str, Any]]:
        """The events of an already decoded record (``raw`` gives its position and time)."""
        group = self._group_of(record.key)
        if group is None:
            self.ignored += 1
            return []
        current = self._state.groups.get(group)
        working = current.model_copy(deep=True) if current is not None else _Group()
        out = _Emitter(self.cluster, group, raw, self._said)
        try:
            keep = self._apply(record, working, out)
        except _BadEvent as exc:
            raise OffsetsDecodeError(raw.label, exc.field, exc.reason) from None
        if keep is None:
            self.ignored += 1
            return []
        if keep:
            self._state.groups[group] = working
        else:
            self._state.groups.pop(group, None)
        return out.events

    def finish(self) -> list[dict[str, Any]]:
        """Events still held back (static members' leaves) at the end of the input."""
        events: list[dict[str, Any]] = []
        for group, track in self._state.groups.items():
            if track.pending_leaves:
                out = _Emitter(self.cluster, group, RawRecord(0, 0, 0, None, None))
                _flush_leaves(track, out)
                events.extend(out.events)
        return events

    def _group_of(self, key: RecordKey) -> str | None:
        """The group a record is about, if it is one this builder follows."""
        group = getattr(key, "group", None)
        if not isinstance(group, str) or (self.groups is not None and group not in self.groups):
            return None
        return group

    # -- dispatch -----------------------------------------------------------------------------

    def _apply(self, record: OffsetsRecord, track: _Group, out: _Emitter) -> bool | None:
        """Update ``track`` and emit; False drops the group, None means "nothing here"."""
        key, value = record.key, record.value
        if isinstance(key, GroupMetadataKey):
            if value is None:
                _leave_all(track, out)
                return False
            assert isinstance(value, GroupMetadataValue)
            if value.protocol_type != "consumer":
                return None
            _classic(value, track, out)
            return True
        if isinstance(key, ConsumerGroupMemberMetadataKey):
            assert value is None or isinstance(value, ConsumerGroupMemberMetadataValue)
            _kip848_member(key.member_id, value, track, out)
            return True
        if isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            assert value is None or isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
            if value is None:
                track.targets.pop(key.member_id, None)
            else:
                track.targets[key.member_id] = [
                    (entry.topic_id, partition)
                    for entry in value.partitions
                    for partition in entry.partitions
                ]
            return True
        if isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
            # The member's reconciliation progress: no event type of events.md says it.
            return True
        if isinstance(
            key,
            ConsumerGroupMetadataKey
            | ConsumerGroupPartitionMetadataKey
            | ConsumerGroupTargetAssignmentMetadataKey,
        ):
            _flush_leaves(track, out)
            if isinstance(key, ConsumerGroupMetadataKey):
                if value is None:
                    _leave_all(track, out)
                    return False
                assert isinstance(value, ConsumerGroupMetadataValue)
                _kip848_epoch(value.epoch, track, out)
            elif isinstance(value, ConsumerGroupPartitionMetadataValue):
                _kip848_topics(value, track, out)
            elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
                _kip848_assignment(value.assignment_epoch, track, out)
            return True
        return None


# -- shared steps ----------


def _leave_all(track: _Group, out: _Emitter) -> None:
    _flush_leaves(track, out)
    for member_id in track.members:
        out.emit(_data(MemberLeft, member_id=member_id, reason="other"))
    track.members.clear()


def _joined(member_id: str, member: _Member, **details: Any) -> EventData:
    return _data(
        MemberJoined,
        member_id=member_id,
        topics=member.topics,
        instance_id=member.instance_id,
        **details,
    )


def _topic_changed(
    track: _Group, out: _Emitter, topic: str, partitions: int, racks: list[list[str]] | None
) -> None:
    if partitions < 1:
        return
    if track.partitions.get(topic) == partitions and track.racks.get(topic) == racks:
        return
    out.emit(_data(TopicChanged, topic=topic, partitions=partitions, racks=racks))
    track.partitions[topic] = partitions
    if racks is None:
        track.racks.pop(topic, None)
    else:
        track.racks[topic] = racks


def _non_negative(value: int) -> int | None:
    return value if value >= 0 else None


# -- classic groups ----------


_JAVA_CLIENT_ID = re.compile(r"consumer-(?P<group>.*)-\d+")
_KAFKA_PYTHON_CLIENT_ID = re.compile(r"kafka-python-(?P<version>\d[\w.+-]*)")


def client_of_id(client_id: str, group: str) -> str | None:
    """The client library a consumer's client id names, where it is its library's default
    (``rdkafka``: librdkafka; ``kafka-python-3.0.12``: kafka-python 3.0.12;
    ``consumer-<group>-<n>``: Kafka's Java client); None where it cannot be told (any
    id the application chose). A coordinator's records carry no library or version, so
    this is all the offsets recorder can see; librdkafka's and Java's versions are not
    in their default ids."""
    if client_id == "rdkafka":
        return "librdkafka"
    found = _KAFKA_PYTHON_CLIENT_ID.fullmatch(client_id)
    if found is not None:
        return f"kafka-python {found.group('version')}"
    found = _JAVA_CLIENT_ID.fullmatch(client_id)
    if found is not None and found.group("group") == group:
        return "java"
    return None


def _say_unknown_client(out: _Emitter, client_id: str | None) -> None:
    """Said once per group and leader's client id by a builder, however many generations
    follow."""
    if (out.group, client_id) in out.said:
        return
    out.said.add((out.group, client_id))
    log.info(
        "group %s: the leader's client library cannot be told from its client id %r: "
        "AssignmentCompleted.client left out (a replay uses Kafka's Java assignors)",
        out.group,
        client_id,
    )


def _classic_member(member: MemberMetadata) -> _Member:
    topics = list(member.subscription.topics) if member.subscription else []
    return _Member(topics=topics, instance_id=member.group_instance_id)


def _classic(value: GroupMetadataValue, track: _Group, out: _Emitter) -> None:
    members = {member.member_id: member for member in value.members}
    new_generation = track.generation is None or value.generation != track.generation
    if new_generation and members:
        out.emit(
            _data(
                RebalanceStarted,
                generation=value.generation,
                reason=f"__consumer_offsets: generation {value.generation}",
            )
        )
    track.generation = value.generation

    if not new_generation:
        by_instance = {
            member.group_instance_id: member_id
            for member_id, member in members.items()
            if member.group_instance_id is not None and member_id not in track.members
        }
        for old_id, old in list(track.members.items()):
            new_id = by_instance.get(old.instance_id) if old.instance_id else None
            if old_id in members or new_id is None:
                continue
            assert old.instance_id is not None
            out.emit(
                _data(
                    MemberReplaced,
                    old_member_id=old_id,
                    new_member_id=new_id,
                    instance_id=old.instance_id,
                )
            )
            track.members[new_id] = track.members.pop(old_id)

    for member_id in [member_id for member_id in track.members if member_id not in members]:
        out.emit(_data(MemberLeft, member_id=member_id, reason="other"))
        del track.members[member_id]

    for member_id, member in members.items():
        seen = _classic_member(member)
        known = track.members.get(member_id)
        if known is None:
            rack = member.subscription.rack_id if member.subscription else None
            out.emit(
                _joined(
                    member_id,
                    seen,
                    client_id=member.client_id,
                    host=member.client_host,
                    rack=rack,
                    session_timeout_ms=_non_negative(member.session_timeout),
                    rebalance_timeout_ms=_non_negative(member.rebalance_timeout),
                )
            )
        elif sorted(set(known.topics)) != sorted(set(seen.topics)):
            out.emit(_data(SubscriptionChanged, member_id=member_id, topics=seen.topics))
        track.members[member_id] = seen

    if not (new_generation and members):
        return
    assignment = {
        member_id: _sorted_pairs(_pairs(member.assignment.partitions) if member.assignment else [])
        for member_id, member in members.items()
    }
    revealed: dict[str, int] = {}
    for pairs in assignment.values():
        for topic, partition in pairs:
            revealed[topic] = max(revealed.get(topic, 0), partition + 1)
    for topic, count in revealed.items():
        if count > track.partitions.get(topic, 0):
            _topic_changed(track, out, topic, count, track.racks.get(topic))
    strategy = value.protocol or "unknown"
    protocol = wire_protocol(strategy)
    leader = members.get(value.leader or "")
    client = client_of_id(leader.client_id, out.group) if leader is not None else None
    if client is None:
        _say_unknown_client(out, leader.client_id if leader is not None else None)
    out.emit(
        _data(
            AssignmentCompleted,
            generation=value.generation,
            strategy=strategy,
            assignment=assignment,
            leader=value.leader,
            protocol=protocol,
            client=client,
        )
    )
    track.completed = value.generation


# -- KIP-848 groups ----------


def _flush_leaves(track: _Group, out: _Emitter) -> None:
    for pending in track.pending_leaves.values():
        source = RawRecord(pending.offset, pending.partition, pending.timestamp, None, None)
        out.emit(_data(MemberLeft, member_id=pending.member_id, reason="other"), at=source)
    track.pending_leaves.clear()


def _kip848_member(
    member_id: str,
    value: ConsumerGroupMemberMetadataValue | None,
    track: _Group,
    out: _Emitter,
) -> None:
    known = track.members.get(member_id)
    if value is None:
        if known is None:
            return
        del track.members[member_id]
        track.targets.pop(member_id, None)
        if known.instance_id is not None:
            raw = out.raw
            track.pending_leaves[known.instance_id] = _PendingLeave(
                member_id=member_id,
                topics=known.topics,
                partition=raw.partition,
                offset=raw.offset,
                timestamp=raw.timestamp,
            )
        else:
            out.emit(_data(MemberLeft, member_id=member_id, reason="other"))
        return
    seen = _Member(
        topics=list(value.subscribed_topic_names),
        instance_id=value.instance_id,
        server_assignor=value.server_assignor,
    )
    if known is None:
        pending = track.pending_leaves.pop(value.instance_id, None) if value.instance_id else None
        if pending is not None and pending.member_id != member_id:
            assert value.instance_id is not None
            out.emit(
                _data(
                    MemberReplaced,
                    old_member_id=pending.member_id,
                    new_member_id=member_id,
                    instance_id=value.instance_id,
                )
            )
            if sorted(set(pending.topics)) != sorted(set(seen.topics)):
                out.emit(_data(SubscriptionChanged, member_id=member_id, topics=seen.topics))
        else:
            if pending is not None:
                out.emit(_data(MemberLeft, member_id=pending.member_id, reason="other"))
            out.emit(
                _joined(
                    member_id,
                    seen,
                    client_id=value.client_id,
                    host=value.client_host,
                    rack=value.rack_id,
                    protocols=[value.server_assignor] if value.server_assignor else None,
                    rebalance_timeout_ms=_non_negative(value.rebalance_timeout_ms),
                )
            )
    elif sorted(set(known.topics)) != sorted(set(seen.topics)):
        out.emit(_data(SubscriptionChanged, member_id=member_id, topics=seen.topics))
    track.members[member_id] = seen


def _kip848_epoch(epoch: int, track: _Group, out: _Emitter) -> None:
    if track.generation is None or epoch > track.generation:
        out.emit(_data(RebalanceStarted, generation=epoch, reason=f"group epoch bumped to {epoch}"))
    track.generation = epoch


def _kip848_topics(
    value: ConsumerGroupPartitionMetadataValue, track: _Group, out: _Emitter
) -> None:
    for topic in value.topics:
        track.topic_names[topic.topic_id] = topic.topic_name
        by_partition = {entry.partition: list(entry.racks) for entry in topic.partition_racks}
        # Racks only when the record places every partition (comparing sizes first keeps a
        # bogus partition count from building a huge list).
        count = topic.num_partitions
        racks = None
        placed = len(by_partition) == count and sorted(by_partition) == list(range(count))
        if placed and any(by_partition.values()):
            racks = [by_partition[partition] for partition in range(count)]
        _topic_changed(track, out, topic.topic_name, topic.num_partitions, racks)


def _kip848_assignment(epoch: int, track: _Group, out: _Emitter) -> None:
    if epoch == track.completed or not track.members:
        return
    assignment = {
        member_id: _sorted_pairs(
            [
                (track.topic_names.get(topic_id, topic_id), partition)
                for topic_id, partition in track.targets.get(member_id, [])
            ]
        )
        for member_id in track.members
    }
    wanted = Counter(
        member.server_assignor for member in track.members.values() if member.server_assignor
    )
    strategy = wanted.most_common(1)[0][0] if wanted else _DEFAULT_SERVER_ASSIGNOR
    out.emit(
        _data(
            AssignmentCompleted,
            generation=epoch,
            strategy=strategy,
            assignment=assignment,
            protocol="consumer",
        )
    )
    track.completed = epoch


# -- dumps ----------


class DumpFormatError(UsageError):
    """A dump line that is not of the documented form (docs/recording.md)."""


def _dump_int(line: dict[str, Any], field: str, where: str) -> int:
    value = line.get(field)
    if not isinstance(value, int) or isinstance(value, bool):
        raise DumpFormatError(f"{where}: {field}: must be an integer")
    return value


def _dump_bytes(line: dict[str, Any], field: str, where: str) -> bytes | None:
    """``field`` in base64, or ``field_hex`` in hex; null stays None."""
    for name, decode in ((field, base64.b64decode), (f"{field}_hex", bytes.fromhex)):
        if name not in line:
            continue
        text = line[name]
        if text is None:
            return None
        if not isinstance(text, str):
            raise DumpFormatError(f"{where}: {name}: must be a string or null")
        try:
            if decode is base64.b64decode:
                return base64.b64decode(text, validate=True)
            return bytes.fromhex(text)
        except (binascii.Error, ValueError) as exc:
            raise DumpFormatError(f"{where}: {name}: {exc}") from None
    raise DumpFormatError(f"{where}: {field}: missing (give {field} or {field}_hex)")


def read_dump(path: str | Path) -> Iterator[RawRecord]:
    """The records of a dump file (JSON Lines, see docs/recording.md), blank lines skipped.

    A line that is not of the dump's form raises ``DumpFormatError`` naming it.
    """
    for number, text in enumerate(text_lines(path), start=1):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DumpFormatError(f"{where}: not JSON: {exc.msg}") from None
        if not isinstance(line, dict):
            raise DumpFormatError(f"{where}: must be a JSON object")
        yield RawRecord(
            offset=_dump_int(line, "offset", where),
            partition=_dump_int(line, "partition", where),
            timestamp=_dump_int(line, "timestamp", where),
            key=_dump_bytes(line, "key", where),
            value=_dump_bytes(line, "value", where),
        )


def events_from_dump(
    path: str | Path, cluster: str = "default", groups: Collection[str] | None = None
) -> tuple[list[dict[str, Any]], int, list[OffsetsDecodeError]]:
    """Events of a dump file, the number of records skipped, and the decode errors.

    Skipped records are the bad ones (one ``OffsetsDecodeError`` each, naming the record
    and the field) and those that carry nothing for the event log (offset commits, other
    record types and groups).
    """
    builder = OffsetsEventBuilder(cluster, groups)
    events: list[dict[str, Any]] = []
    errors: list[OffsetsDecodeError] = []
    for raw in read_dump(path):
        try:
            events.extend(builder.feed(raw))
        except OffsetsDecodeError as exc:
            errors.append(exc)
    events.extend(builder.finish())
    return events, builder.ignored + len(errors), errors
