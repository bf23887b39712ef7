"""Decoder of the records of Kafka's ``__consumer_offsets`` topic.

The key starts with an int16 that tells the record type (Kafka's coordinator record
api key): 0/1 offset commit, 2 classic group metadata, 3-8 the KIP-848 consumer-group
records. The value (absent for a tombstone) starts with its own int16 schema version.
Layouts follow Kafka's message schemas (``group-coordinator/.../common/message`` and
``clients/.../ConsumerProtocol*.json``):

- ``GroupMetadataValue`` v0-4 (flexible from 4): each member's subscription and
  assignment bytes are decoded as the consumer protocol when the group's protocol type
  is ``consumer`` (``ConsumerProtocolSubscription``/``Assignment`` v0-3; a newer version
  reads as v3, as Kafka's own deserializer does, ignoring what follows).
- The user data of ``sticky`` members (``previous_assignment`` and, since Kafka 2.3, a
  trailing ``generation``; no version prefix) and of ``cooperative-sticky`` members (the
  generation) are decoded too.
- The KIP-848 values are flexible version 0; tagged fields are skipped.

Anything else raises ``OffsetsDecodeError`` naming the record and the field; key
versions past 8 (share groups, streams groups, regular expressions) decode to
``OtherKey`` without their value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from kstore._errors import KstoreError
from kstore.record._kafka_bytes import BytesError, Reader

__all__ = [
    "Assignment",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "CooperativeUserData",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "OffsetsDecodeError",
    "OffsetsRecord",
    "OtherKey",
    "PartitionRacks",
    "RecordKey",
    "RecordValue",
    "StickyUserData",
    "Subscription",
    "TopicIdPartitions",
    "TopicMetadata",
    "TopicPartitions",
    "decode_assignment",
    "decode_cooperative_user_data",
    "decode_key",
    "decode_record",
    "decode_sticky_user_data",
    "decode_subscription",
    "decode_value",
]


class OffsetsDecodeError(KstoreError):
    """A record that is not what Kafka writes: ``record`` says which, ``field`` where."""

    def __init__(self, record: str, field: str, reason: str) -> None:
        super().__init__(f"{record}: {field}: {reason}")
        self.record = record
        self.field = field
        self.reason = reason


# -- keys ----------


@dataclass(frozen=True)
class OffsetCommitKey:
    """Key versions 0 and 1 (both written by Kafka over the years)."""

    version: int
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataKey:
    group: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group: str
    member_id: str


@dataclass(frozen=True)
class OtherKey:
    """A record type this decoder does not read (share/streams groups, regexes, ...)."""

    version: int


RecordKey = (
    OffsetCommitKey
    | GroupMetadataKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | OtherKey
)

# -- classic values ----------


@dataclass(frozen=True)
class OffsetCommitValue:
    version: int
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class StickyUserData:
    """``StickyAssignor``'s user data; ``generation`` is None in the older form."""

    previous_assignment: tuple[TopicPartitions, ...]
    generation: int | None


@dataclass(frozen=True)
class CooperativeUserData:
    """``CooperativeStickyAssignor``'s user data: the generation the owned partitions are from."""

    generation: int


@dataclass(frozen=True)
class Subscription:
    """``ConsumerProtocolSubscription``; ``assignor_data`` is ``user_data`` decoded for the
    sticky assignors.
    """

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    assignor_data: StickyUserData | CooperativeUserData | None = None


@dataclass(frozen=True)
class Assignment:
    """``ConsumerProtocolAssignment``."""

    version: int
    partitions: tuple[TopicPartitions, ...]
    user_data: bytes | None


@dataclass(frozen=True)
class MemberMetadata:
    """One member of a classic group. ``subscription``/``assignment`` stay raw bytes in
    ``*_bytes``; they are decoded when the protocol type is ``consumer`` and not empty.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription_bytes: bytes
    assignment_bytes: bytes
    subscription: Subscription | None
    assignment: Assignment | None


@dataclass(frozen=True)
class GroupMetadataValue:
    version: int
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...]


# -- KIP-848 values ----------


@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True)
class PartitionRacks:
    partition: int
    racks: tuple[str, ...]


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: str
    topic_name: str
    num_partitions: int
    partition_racks: tuple[PartitionRacks, ...]


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataValue:
    epoch: int
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True)
class TopicIdPartitions:
    """Partitions of one topic named by its id (Kafka's base64 form of the UUID)."""

    topic_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberValue:
    partitions: tuple[TopicIdPartitions, ...]


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicIdPartitions, ...]
    partitions_pending_revocation: tuple[TopicIdPartitions, ...]


RecordValue = (
    OffsetCommitValue
    | GroupMetadataValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)


@dataclass(frozen=True)
class OffsetsRecord:
    """One decoded record; ``value`` is None for a tombstone (and for ``OtherKey``)."""

    key: RecordKey
    value: RecordValue | None

    @property
    def tombstone(self) -> bool:
        return self.value is None and not isinstance(self.key, OtherKey)


# -- shared pieces ----------


def _partition_ids(reader: Reader, field: str, *, compact: bool = False) -> tuple[int, ...]:
    partitions = reader.int32_array(field, compact=compact)
    for index, partition in enumerate(partitions):
        if partition < 0:
            raise reader.fail(f"{field}[{index}]", f"negative partition {partition}")
    return partitions


def _topic_partitions(reader: Reader, field: str) -> tuple[TopicPartitions, ...]:
    def one(name: str) -> TopicPartitions:
        with reader.scope(name):
            return TopicPartitions(reader.string("topic"), _partition_ids(reader, "partitions"))

    return reader.array(field, one)


def _topic_id_partitions(reader: Reader, field: str) -> tuple[TopicIdPartitions, ...]:
    def one(name: str) -> TopicIdPartitions:
        with reader.scope(name):
            item = TopicIdPartitions(
                reader.uuid("topic_id"), _partition_ids(reader, "partitions", compact=True)
            )
            reader.tagged_fields()
            return item

    return reader.array(field, one, compact=True)


def _non_negative(reader: Reader, field: str) -> int:
    """An int32 generation or epoch: Kafka never stores a negative one."""
    value = reader.int32(field)
    if value < 0:
        raise reader.fail(field, f"negative value {value}")
    return value


def _value_version(reader: Reader, valid: range) -> int:
    version = reader.int16("version")
    if version not in valid:
        raise reader.fail("version", f"unsupported version {version}")
    return version


# -- consumer protocol ----------

_CONSUMER_PROTOCOL_LATEST = 3


def decode_subscription(data: bytes, path: str = "subscription") -> Subscription:
    """``ConsumerProtocolSubscription``; versions past 3 are read as 3."""
    reader = Reader(data, path)
    version = reader.int16("version")
    if version < 0:
        raise reader.fail("version", f"unsupported version {version}")
    layout = min(version, _CONSUMER_PROTOCOL_LATEST)
    topics = reader.string_array("topics")
    user_data = reader.nullable_blob("user_data")
    owned = _topic_partitions(reader, "owned_partitions") if layout >= 1 else ()
    generation = reader.int32("generation_id") if layout >= 2 else -1
    rack = reader.nullable_string("rack_id") if layout >= 3 else None
    if version <= _CONSUMER_PROTOCOL_LATEST:
        reader.expect_end("subscription")
    return Subscription(version, topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes, path: str = "assignment") -> Assignment:
    """``ConsumerProtocolAssignment`` (the same layout in versions 0-3 and past)."""
    reader = Reader(data, path)
    version = reader.int16("version")
    if version < 0:
        raise reader.fail("version", f"unsupported version {version}")
    partitions = _topic_partitions(reader, "assigned_partitions")
    user_data = reader.nullable_blob("user_data")
    if version <= _CONSUMER_PROTOCOL_LATEST:
        reader.expect_end("assignment")
    return Assignment(version, partitions, user_data)


def decode_sticky_user_data(data: bytes, path: str = "user_data") -> StickyUserData:
    """``StickyAssignor``'s user data: the previous assignment, then (if present) the
    generation. Like Kafka, bytes after the generation are ignored.
    """
    reader = Reader(data, path)
    previous = _topic_partitions(reader, "previous_assignment")
    generation = reader.int32("generation") if reader.remaining else None
    return StickyUserData(previous, generation)


def decode_cooperative_user_data(data: bytes, path: str = "user_data") -> CooperativeUserData:
    """``CooperativeStickyAssignor``'s user data (a generation; later bytes ignored)."""
    return CooperativeUserData(Reader(data, path).int32("generation"))


_USER_DATA_DECODERS: dict[str, Callable[[bytes, str], StickyUserData | CooperativeUserData]] = {
    "sticky": decode_sticky_user_data,
    "cooperative-sticky": decode_cooperative_user_data,
}


# -- classic group metadata ----------


def _member(reader: Reader, version: int, decode_protocol: str | None) -> MemberMetadata:
    flexible = version >= 4
    member_id = reader.string("member_id", compact=flexible)
    instance_id = (
        reader.nullable_string("group_instance_id", compact=flexible) if version >= 3 else None
    )
    client_id = reader.string("client_id", compact=flexible)
    client_host = reader.string("client_host", compact=flexible)
    rebalance_timeout = reader.int32("rebalance_timeout") if version >= 1 else -1
    session_timeout = reader.int32("session_timeout")
    subscription_bytes = reader.blob("subscription", compact=flexible)
    assignment_bytes = reader.blob("assignment", compact=flexible)
    if flexible:
        reader.tagged_fields()
    subscription = assignment = None
    if decode_protocol is not None:
        if subscription_bytes:
            subscription = decode_subscription(subscription_bytes, reader.name("subscription"))
            user_data_decoder = _USER_DATA_DECODERS.get(decode_protocol)
            if user_data_decoder is not None and subscription.user_data:
                assignor_data = user_data_decoder(
                    subscription.user_data, reader.name("subscription.user_data")
                )
                subscription = replace(subscription, assignor_data=assignor_data)
        if assignment_bytes:
            assignment = decode_assignment(assignment_bytes, reader.name("assignment"))
    return MemberMetadata(
        member_id,
        instance_id,
        client_id,
        client_host,
        rebalance_timeout,
        session_timeout,
        subscription_bytes,
        assignment_bytes,
        subscription,
        assignment,
    )


def _group_metadata_value(reader: Reader) -> GroupMetadataValue:
    version = _value_version(reader, range(5))
    flexible = version >= 4
    protocol_type = reader.string("protocol_type", compact=flexible)
    generation = _non_negative(reader, "generation")
    protocol = reader.nullable_string("protocol", compact=flexible)
    leader = reader.nullable_string("leader", compact=flexible)
    timestamp = reader.int64("current_state_timestamp") if version >= 2 else -1
    # Only consumer groups carry the consumer protocol in their members' bytes.
    decode_protocol = (protocol or "") if protocol_type == "consumer" else None

    def member(name: str) -> MemberMetadata:
        with reader.scope(name):
            return _member(reader, version, decode_protocol)

    members = reader.array("members", member, compact=flexible)
    if flexible:
        reader.tagged_fields()
    return GroupMetadataValue(
        version, protocol_type, generation, protocol, leader, timestamp, members
    )


def _offset_commit_value(reader: Reader) -> OffsetCommitValue:
    version = _value_version(reader, range(5))
    flexible = version >= 4
    offset = reader.int64("offset")
    leader_epoch = reader.int32("leader_epoch") if version >= 3 else -1
    metadata = reader.string("metadata", compact=flexible)
    commit_timestamp = reader.int64("commit_timestamp")
    expire_timestamp = reader.int64("expire_timestamp") if version == 1 else -1
    if flexible:
        reader.tagged_fields()
    return OffsetCommitValue(
        version, offset, metadata, commit_timestamp, leader_epoch, expire_timestamp
    )


# -- KIP-848 values (all flexible, version 0) ------------------------------------------------


def _consumer_group_metadata_value(reader: Reader) -> ConsumerGroupMetadataValue:
    _value_version(reader, range(1))
    epoch = _non_negative(reader, "epoch")
    reader.tagged_fields()
    return ConsumerGroupMetadataValue(epoch)


def _partition_metadata_value(reader: Reader) -> ConsumerGroupPartitionMetadataValue:
    _value_version(reader, range(1))
    epoch = reader.int32("epoch")

    def racks(name: str) -> PartitionRacks:
        with reader.scope(name):
            partition = reader.int32("partition")
            if partition < 0:
                raise reader.fail("partition", f"negative partition {partition}")
            item = PartitionRacks(partition, reader.string_array("racks", compact=True))
            reader.tagged_fields()
            return item

    def topic(name: str) -> TopicMetadata:
        with reader.scope(name):
            topic_id = reader.uuid("topic_id")
            topic_name = reader.string("topic_name", compact=True)
            count = reader.int32("num_partitions")
            if count < 0:
                raise reader.fail("num_partitions", f"negative partition count {count}")
            item = TopicMetadata(
                topic_id, topic_name, count, reader.array("partition_racks", racks, compact=True)
            )
            reader.tagged_fields()
            return item

    topics = reader.array("topics", topic, compact=True)
    reader.tagged_fields()
    return ConsumerGroupPartitionMetadataValue(epoch, topics)


def _member_metadata_value(reader: Reader) -> ConsumerGroupMemberMetadataValue:
    _value_version(reader, range(1))
    value = ConsumerGroupMemberMetadataValue(
        instance_id=reader.nullable_string("instance_id", compact=True),
        rack_id=reader.nullable_string("rack_id", compact=True),
        client_id=reader.string("client_id", compact=True),
        client_host=reader.string("client_host", compact=True),
        subscribed_topic_names=reader.string_array("subscribed_topic_names", compact=True),
        subscribed_topic_regex=reader.nullable_string("subscribed_topic_regex", compact=True),
        rebalance_timeout_ms=reader.int32("rebalance_timeout_ms"),
        server_assignor=reader.nullable_string("server_assignor", compact=True),
    )
    reader.tagged_fields()
    return value


def _target_assignment_metadata_value(
    reader: Reader,
) -> ConsumerGroupTargetAssignmentMetadataValue:
    _value_version(reader, range(1))
    epoch = _non_negative(reader, "assignment_epoch")
    reader.tagged_fields()
    return ConsumerGroupTargetAssignmentMetadataValue(epoch)


def _target_assignment_member_value(reader: Reader) -> ConsumerGroupTargetAssignmentMemberValue:
    _value_version(reader, range(1))
    partitions = _topic_id_partitions(reader, "topic_partitions")
    reader.tagged_fields()
    return ConsumerGroupTargetAssignmentMemberValue(partitions)


def _current_assignment_value(reader: Reader) -> ConsumerGroupCurrentMemberAssignmentValue:
    _value_version(reader, range(1))
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=reader.int32("member_epoch"),
        previous_member_epoch=reader.int32("previous_member_epoch"),
        state=reader.int8("state"),
        assigned_partitions=_topic_id_partitions(reader, "assigned_partitions"),
        partitions_pending_revocation=_topic_id_partitions(reader, "partitions_pending_revocation"),
    )
    reader.tagged_fields()
    return value


# -- records ----------


def _read_key(reader: Reader) -> RecordKey:
    version = reader.int16("version")
    if version in (0, 1):
        return OffsetCommitKey(
            version, reader.string("group"), reader.string("topic"), reader.int32("partition")
        )
    if version < 0:
        raise reader.fail("version", f"negative key version {version}")
    if version > 8:
        return OtherKey(version)
    group = reader.string("group")
    if version == 2:
        return GroupMetadataKey(group)
    if version == 3:
        return ConsumerGroupMetadataKey(group)
    if version == 4:
        return ConsumerGroupPartitionMetadataKey(group)
    if version == 6:
        return ConsumerGroupTargetAssignmentMetadataKey(group)
    member_id = reader.string("member_id")
    if version == 5:
        return ConsumerGroupMemberMetadataKey(group, member_id)
    if version == 7:
        return ConsumerGroupTargetAssignmentMemberKey(group, member_id)
    return ConsumerGroupCurrentMemberAssignmentKey(group, member_id)


_VALUE_READERS: dict[type, Callable[[Reader], RecordValue]] = {
    OffsetCommitKey: _offset_commit_value,
    GroupMetadataKey: _group_metadata_value,
    ConsumerGroupMetadataKey: _consumer_group_metadata_value,
    ConsumerGroupPartitionMetadataKey: _partition_metadata_value,
    ConsumerGroupMemberMetadataKey: _member_metadata_value,
    ConsumerGroupTargetAssignmentMetadataKey: _target_assignment_metadata_value,
    ConsumerGroupTargetAssignmentMemberKey: _target_assignment_member_value,
    ConsumerGroupCurrentMemberAssignmentKey: _current_assignment_value,
}


def decode_key(data: bytes, record: str = "record") -> RecordKey:
    """The record's key; ``record`` names the record in errors (e.g. ``offset 42``)."""
    try:
        reader = Reader(data, "key")
        key = _read_key(reader)
        if not isinstance(key, OtherKey):
            reader.expect_end("")
        return key
    except BytesError as exc:
        raise OffsetsDecodeError(record, exc.field, exc.reason) from None


def decode_value(key: RecordKey, data: bytes, record: str = "record") -> RecordValue | None:
    """The value that goes with ``key`` (None for ``OtherKey``, whose layout is not read)."""
    value_reader = _VALUE_READERS.get(type(key))
    if value_reader is None:
        return None
    try:
        reader = Reader(data, "value")
        value = value_reader(reader)
        reader.expect_end("")
        return value
    except BytesError as exc:
        raise OffsetsDecodeError(record, exc.field, exc.reason) from None


def decode_record(key: bytes | None, value: bytes | None, record: str = "record") -> OffsetsRecord:
    """Key and value bytes (value None for a tombstone) -> ``OffsetsRecord``."""
    if key is None:
        raise OffsetsDecodeError(record, "key", "null key")
    decoded_key = decode_key(key, record)
    if value is None:
        return OffsetsRecord(decoded_key, None)
    return OffsetsRecord(decoded_key, decode_value(decoded_key, value, record))
