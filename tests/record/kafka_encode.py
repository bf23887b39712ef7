"""Bytes built per Kafka's message schemas, for round trips through the decoder.

Written from the schemas (not from the decoder): each function lays out the fields of
one record type in the order and widths its JSON schema gives for ``version``.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

from kstore.record.offsets_codec import (
    Assignment,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    PartitionRacks,
    Subscription,
    TopicIdPartitions,
    TopicMetadata,
    TopicPartitions,
)

T = TypeVar("T")


class Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def done(self) -> bytes:
        return bytes(self.out)

    def int8(self, value: int) -> None:
        self.out += struct.pack(">b", value)

    def int16(self, value: int) -> None:
        self.out += struct.pack(">h", value)

    def int32(self, value: int) -> None:
        self.out += struct.pack(">i", value)

    def int64(self, value: int) -> None:
        self.out += struct.pack(">q", value)

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)

    def string(self, value: str | None, compact: bool = False) -> None:
        raw = None if value is None else value.encode()
        if compact:
            self.uvarint(0 if raw is None else len(raw) + 1)
        else:
            self.int16(-1 if raw is None else len(raw))
        self.out += raw or b""

    def blob(self, value: bytes | None, compact: bool = False) -> None:
        if compact:
            self.uvarint(0 if value is None else len(value) + 1)
        else:
            self.int32(-1 if value is None else len(value))
        self.out += value or b""

    def array(self, items: Sequence[T], write: Callable[[T], None], compact: bool = False) -> None:
        if compact:
            self.uvarint(len(items) + 1)
        else:
            self.int32(len(items))
        for item in items:
            write(item)

    def uuid(self, text: str) -> None:
        self.out += base64.urlsafe_b64decode(text + "==")

    def tags(self, tags: dict[int, bytes] | None = None) -> None:
        tags = tags or {}
        self.uvarint(len(tags))
        for tag, raw in sorted(tags.items()):
            self.uvarint(tag)
            self.uvarint(len(raw))
            self.out += raw


def _topic_partitions(w: Writer, items: Sequence[TopicPartitions]) -> None:
    def one(item: TopicPartitions) -> None:
        w.string(item.topic)
        w.array(item.partitions, w.int32)

    w.array(items, one)


def key(version: int, *strings: str, partition: int | None = None) -> bytes:
    w = Writer()
    w.int16(version)
    for text in strings:
        w.string(text)
    if partition is not None:
        w.int32(partition)
    return w.done()


def subscription(value: Subscription) -> bytes:
    w = Writer()
    w.int16(value.version)
    w.array(value.topics, w.string)
    w.blob(value.user_data)
    if value.version >= 1:
        _topic_partitions(w, value.owned_partitions)
    if value.version >= 2:
        w.int32(value.generation_id)
    if value.version >= 3:
        w.string(value.rack_id)
    return w.done()


def assignment(value: Assignment) -> bytes:
    w = Writer()
    w.int16(value.version)
    _topic_partitions(w, value.partitions)
    w.blob(value.user_data)
    return w.done()


def sticky_user_data(previous: Sequence[TopicPartitions], generation: int | None) -> bytes:
    w = Writer()
    _topic_partitions(w, previous)
    if generation is not None:
        w.int32(generation)
    return w.done()


def group_metadata(value: GroupMetadataValue) -> bytes:
    version = value.version
    flexible = version >= 4
    w = Writer()
    w.int16(version)
    w.string(value.protocol_type, flexible)
    w.int32(value.generation)
    w.string(value.protocol, flexible)
    w.string(value.leader, flexible)
    if version >= 2:
        w.int64(value.current_state_timestamp)

    def member(m: MemberMetadata) -> None:
        w.string(m.member_id, flexible)
        if version >= 3:
            w.string(m.group_instance_id, flexible)
        w.string(m.client_id, flexible)
        w.string(m.client_host, flexible)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.blob(m.subscription_bytes, flexible)
        w.blob(m.assignment_bytes, flexible)
        if flexible:
            w.tags({7: b"unknown"})

    w.array(value.members, member, flexible)
    if flexible:
        w.tags()
    return w.done()


def offset_commit(value: OffsetCommitValue) -> bytes:
    version = value.version
    w = Writer()
    w.int16(version)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata, version >= 4)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(value.expire_timestamp)
    if version >= 4:
        w.tags()
    return w.done()


def _id_partitions(w: Writer, items: Sequence[TopicIdPartitions]) -> None:
    def one(item: TopicIdPartitions) -> None:
        w.uuid(item.topic_id)
        w.array(item.partitions, w.int32, compact=True)
        w.tags()

    w.array(items, one, compact=True)


def epoch_value(epoch: int, tags: dict[int, bytes] | None = None) -> bytes:
    """ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue (v0)."""
    w = Writer()
    w.int16(0)
    w.int32(epoch)
    w.tags(tags)
    return w.done()


def partition_metadata(value: ConsumerGroupPartitionMetadataValue) -> bytes:
    w = Writer()
    w.int16(0)
    w.int32(value.epoch)

    def racks(entry: PartitionRacks) -> None:
        w.int32(entry.partition)
        w.array(entry.racks, lambda rack: w.string(rack, True), compact=True)
        w.tags()

    def topic(item: TopicMetadata) -> None:
        w.uuid(item.topic_id)
        w.string(item.topic_name, True)
        w.int32(item.num_partitions)
        w.array(item.partition_racks, racks, compact=True)
        w.tags()

    w.array(value.topics, topic, compact=True)
    w.tags()
    return w.done()


def member_metadata(value: ConsumerGroupMemberMetadataValue) -> bytes:
    w = Writer()
    w.int16(0)
    w.string(value.instance_id, True)
    w.string(value.rack_id, True)
    w.string(value.client_id, True)
    w.string(value.client_host, True)
    w.array(value.subscribed_topic_names, lambda t: w.string(t, True), compact=True)
    w.string(value.subscribed_topic_regex, True)
    w.int32(value.rebalance_timeout_ms)
    w.string(value.server_assignor, True)
    w.tags({0: b"\x01\x01\x00"})  # a ClassicMemberMetadata tagged field, skipped by the reader
    return w.done()


def target_member(partitions: Sequence[TopicIdPartitions]) -> bytes:
    w = Writer()
    w.int16(0)
    _id_partitions(w, partitions)
    w.tags()
    return w.done()


def current_assignment(value: ConsumerGroupCurrentMemberAssignmentValue) -> bytes:
    w = Writer()
    w.int16(0)
    w.int32(value.member_epoch)
    w.int32(value.previous_member_epoch)
    w.int8(value.state)
    _id_partitions(w, value.assigned_partitions)
    _id_partitions(w, value.partitions_pending_revocation)
    w.tags()
    return w.done()
