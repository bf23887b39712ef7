"""The __consumer_offsets decoder: real records, every schema version, and bad bytes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.record.offsets_codec import (
    Assignment,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
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
    CooperativeUserData,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsDecodeError,
    OffsetsRecord,
    OtherKey,
    PartitionRacks,
    RecordKey,
    RecordValue,
    StickyUserData,
    Subscription,
    TopicIdPartitions,
    TopicMetadata,
    TopicPartitions,
    decode_assignment,
    decode_record,
    decode_sticky_user_data,
    decode_subscription,
)
from tests.record import kafka_encode as enc

FIXTURES = Path(__file__).parent.parent / "fixtures" / "consumer-offsets"
FIXTURE_KEYS = sorted(FIXTURES.glob("*/*.key"))


# -- the fixtures' debug dumps --------------------------------------------------------

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<int>-?\d+)|(?P<word>\w+)|(?P<sym>[{}\[\]:,]))'
)


def parse_debug_dump(text: str) -> Any:
    """The Rust ``{:#?}`` form the fixtures were printed in -> dicts, lists, scalars."""
    tokens = []
    position = 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        assert match, f"unreadable dump at {position}: {text[position : position + 20]!r}"
        tokens.append((match.lastgroup, match.group(match.lastgroup or "")))
        position = match.end()
    tokens.reverse()

    def value() -> Any:
        kind, token = tokens.pop()
        if kind == "str":
            return bytes(token[1:-1], "utf-8").decode("unicode_escape")
        if kind == "int":
            return int(token)
        if kind == "word" and token in ("true", "false"):
            return token == "true"
        if token == "[":
            items = []
            while tokens[-1][1] != "]":
                items.append(value())
                if tokens[-1][1] == ",":
                    tokens.pop()
            tokens.pop()
            return items
        assert kind == "word" and tokens.pop()[1] == "{", f"unexpected {token!r}"
        fields: dict[str, Any] = {"__type__": token}
        while tokens[-1][1] != "}":
            name = tokens.pop()[1]
            assert tokens.pop()[1] == ":"
            fields[name] = value()
            if tokens[-1][1] == ",":
                tokens.pop()
        tokens.pop()
        return fields

    result = value()
    assert not tokens
    return result


def _text(value: str | None) -> str:
    return value or ""


def _partitions(items: tuple[TopicPartitions, ...]) -> list[dict[str, Any]]:
    return [
        {"__type__": "TopicPartitions", "topic": item.topic, "partitions": list(item.partitions)}
        for item in items
    ]


def _member_shape(member: MemberMetadata) -> dict[str, Any]:
    sub, assigned = member.subscription, member.assignment
    assert sub is not None and assigned is not None
    return {
        "__type__": "MemberMetadata",
        "id": member.member_id,
        "group_instance_id": _text(member.group_instance_id),
        "client_id": member.client_id,
        "client_host": member.client_host,
        "rebalance_timeout": member.rebalance_timeout,
        "session_timeout": member.session_timeout,
        "subscription": {
            "__type__": "ConsumerProtocolSubscription",
            "schema_version": sub.version,
            "subscribed_topics": list(sub.topics),
            "user_data": list(sub.user_data or b""),
            "owned_topic_partitions": _partitions(sub.owned_partitions),
            "generation_id": sub.generation_id,
            "rack_id": _text(sub.rack_id),
        },
        "assignment": {
            "__type__": "ConsumerProtocolAssignment",
            "schema_version": assigned.version,
            "assigned_topic_partitions": _partitions(assigned.partitions),
            "user_data": list(assigned.user_data or b""),
        },
    }


def dump_shape(record: OffsetsRecord, key_version: int) -> dict[str, Any]:
    """A decoded record in the fixtures' dump form (nulls printed as empty strings)."""
    key, value = record.key, record.value
    if isinstance(key, OffsetCommitKey):
        assert isinstance(value, OffsetCommitValue)
        return {
            "__type__": "OffsetCommit",
            "message_version": key.version,
            "group": key.group,
            "topic": key.topic,
            "partition": key.partition,
            "is_tombstone": record.tombstone,
            "schema_version": value.version,
            "offset": value.offset,
            "leader_epoch": value.leader_epoch,
            "metadata": value.metadata,
            "commit_timestamp": value.commit_timestamp,
            "expire_timestamp": value.expire_timestamp,
        }
    assert isinstance(key, GroupMetadataKey) and isinstance(value, GroupMetadataValue)
    return {
        "__type__": "GroupMetadata",
        "message_version": key_version,
        "group": key.group,
        "is_tombstone": record.tombstone,
        "schema_version": value.version,
        "protocol_type": value.protocol_type,
        "generation": value.generation,
        "protocol": _text(value.protocol),
        "leader": _text(value.leader),
        "current_state_timestamp": value.current_state_timestamp,
        "members": [_member_shape(member) for member in value.members],
    }


def _fixture(key_path: Path) -> tuple[bytes, bytes]:
    return key_path.read_bytes(), key_path.with_suffix(".payload").read_bytes()


def test_fixtures_are_present() -> None:
    assert len(FIXTURE_KEYS) == 10


@pytest.mark.parametrize("key_path", FIXTURE_KEYS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_records_decode_to_the_values_of_their_dump(key_path: Path) -> None:
    key, value = _fixture(key_path)
    expected = parse_debug_dump(key_path.with_name(f"{key_path.stem}.ts_int.fmt").read_text())
    record = decode_record(key, value, key_path.name)
    assert dump_shape(record, int.from_bytes(key[:2], "big")) == expected


def test_the_empty_group_fixture_has_no_members_and_no_protocol() -> None:
    record = decode_record(*_fixture(FIXTURES / "group_metadata" / "05.key"))
    assert isinstance(record.value, GroupMetadataValue)
    assert record.value.members == () and record.value.protocol is None


# -- every version, built per Kafka's schemas ----------------------------------------------

_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_ids = st.text("abcdefgh-0123456789", min_size=1, max_size=10)
_partition_lists = st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)
_topic_partitions = st.lists(st.builds(TopicPartitions, _names, _partition_lists), max_size=3).map(
    tuple
)
_user_data = st.none() | st.binary(max_size=8)


@st.composite
def subscriptions(draw: st.DrawFn, version: int | None = None) -> Subscription:
    v = draw(st.integers(0, 3)) if version is None else version
    return Subscription(
        version=v,
        topics=tuple(draw(st.lists(_names, max_size=3))),
        user_data=draw(_user_data),
        owned_partitions=draw(_topic_partitions) if v >= 1 else (),
        generation_id=draw(st.integers(-1, 2**31 - 1)) if v >= 2 else -1,
        rack_id=draw(st.none() | _names) if v >= 3 else None,
    )


assignments = st.builds(Assignment, st.integers(0, 3), _topic_partitions, _user_data)


@st.composite
def group_metadata_values(draw: st.DrawFn) -> GroupMetadataValue:
    version = draw(st.integers(0, 4))
    members = []
    for _ in range(draw(st.integers(0, 3))):
        sub = draw(subscriptions())
        assigned = draw(assignments)
        members.append(
            MemberMetadata(
                member_id=draw(_ids),
                group_instance_id=draw(st.none() | _ids) if version >= 3 else None,
                client_id=draw(_names),
                client_host=draw(_names),
                rebalance_timeout=draw(st.integers(0, 2**31 - 1)) if version >= 1 else -1,
                session_timeout=draw(st.integers(0, 2**31 - 1)),
                subscription_bytes=enc.subscription(sub),
                assignment_bytes=enc.assignment(assigned),
                subscription=sub,
                assignment=assigned,
            )
        )
    return GroupMetadataValue(
        version=version,
        protocol_type="consumer",
        generation=draw(st.integers(0, 2**31 - 1)),
        protocol=draw(st.none() | st.sampled_from(["range", "roundrobin", "custom"])),
        leader=draw(st.none() | _ids),
        current_state_timestamp=draw(st.integers(0, 2**62)) if version >= 2 else -1,
        members=tuple(members),
    )


@settings(max_examples=60)
@given(group_metadata_values(), _names)
def test_group_metadata_round_trips_in_every_version(value: GroupMetadataValue, group: str) -> None:
    record = decode_record(enc.key(2, group), enc.group_metadata(value))
    assert record == OffsetsRecord(GroupMetadataKey(group), value)


@settings(max_examples=40)
@given(subscriptions())
def test_subscription_round_trips(value: Subscription) -> None:
    assert decode_subscription(enc.subscription(value)) == value


def test_a_newer_subscription_version_reads_as_version_3() -> None:
    v3 = Subscription(3, ("a",), None, (TopicPartitions("a", (1,)),), 4, "r1")
    newer = enc.Writer()
    newer.out += enc.subscription(v3)
    newer.out[0:2] = (7).to_bytes(2, "big")
    newer.int32(123)  # a field of a future version
    decoded = decode_subscription(newer.done())
    assert (decoded.version, decoded.topics, decoded.owned_partitions) == (
        7,
        ("a",),
        v3.owned_partitions,
    )
    assert (decoded.generation_id, decoded.rack_id) == (4, "r1")


@settings(max_examples=40)
@given(assignments)
def test_assignment_round_trips(value: Assignment) -> None:
    assert decode_assignment(enc.assignment(value)) == value


@settings(max_examples=40)
@given(_topic_partitions, st.none() | st.integers(-1, 2**31 - 1))
def test_sticky_user_data_with_and_without_generation(
    previous: tuple[TopicPartitions, ...], generation: int | None
) -> None:
    raw = enc.sticky_user_data(previous, generation)
    assert decode_sticky_user_data(raw) == StickyUserData(previous, generation)


def _one_member_group(protocol: str, user_data: bytes) -> GroupMetadataValue:
    sub = Subscription(1, ("t",), user_data, (TopicPartitions("t", (0,)),))
    assigned = Assignment(0, (TopicPartitions("t", (0,)),), None)
    member = MemberMetadata(
        "m-1",
        None,
        "c",
        "/h",
        1000,
        1000,
        enc.subscription(sub),
        enc.assignment(assigned),
        sub,
        assigned,
    )
    return GroupMetadataValue(3, "consumer", 5, protocol, "m-1", 0, (member,))


@pytest.mark.parametrize(
    ("protocol", "user_data", "expected"),
    [
        (
            "sticky",
            enc.sticky_user_data([TopicPartitions("t", (0, 2))], 4),
            StickyUserData((TopicPartitions("t", (0, 2)),), 4),
        ),
        (
            "sticky",
            enc.sticky_user_data([TopicPartitions("t", (1,))], None),
            StickyUserData((TopicPartitions("t", (1,)),), None),
        ),
        ("cooperative-sticky", (9).to_bytes(4, "big"), CooperativeUserData(9)),
        ("range", b"\x00\x01", None),
    ],
)
def test_member_user_data_is_decoded_for_the_sticky_assignors(
    protocol: str, user_data: bytes, expected: object
) -> None:
    record = decode_record(
        enc.key(2, "g"), enc.group_metadata(_one_member_group(protocol, user_data))
    )
    assert isinstance(record.value, GroupMetadataValue)
    subscription = record.value.members[0].subscription
    assert subscription is not None and subscription.assignor_data == expected


def test_bad_sticky_user_data_names_the_member_field() -> None:
    raw = enc.group_metadata(_one_member_group("cooperative-sticky", b"\x00\x01"))
    with pytest.raises(OffsetsDecodeError) as caught:
        decode_record(enc.key(2, "g"), raw, "offset 7")
    assert caught.value.record == "offset 7"
    assert caught.value.field == "value.members[0].subscription.user_data.generation"


@pytest.mark.parametrize("version", range(5))
def test_offset_commit_values_in_every_version(version: int) -> None:
    value = OffsetCommitValue(
        version,
        offset=42,
        metadata="meta",
        commit_timestamp=1_700_000_000_000,
        leader_epoch=7 if version >= 3 else -1,
        expire_timestamp=1_700_000_100_000 if version == 1 else -1,
    )
    for key_version in (0, 1):
        record = decode_record(
            enc.key(key_version, "g", "orders", partition=3), enc.offset_commit(value)
        )
        assert record == OffsetsRecord(OffsetCommitKey(key_version, "g", "orders", 3), value)


_TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def test_kip848_records_round_trip() -> None:
    member = ConsumerGroupMemberMetadataValue(
        instance_id="i-1",
        rack_id=None,
        client_id="client",
        client_host="/10.0.0.1",
        subscribed_topic_names=("orders", "payments"),
        subscribed_topic_regex=None,
        rebalance_timeout_ms=30000,
        server_assignor="range",
    )
    metadata = ConsumerGroupPartitionMetadataValue(
        5,
        (
            TopicMetadata(
                _TOPIC_ID, "orders", 2, (PartitionRacks(0, ("r1",)), PartitionRacks(1, ()))
            ),
        ),
    )
    target = (TopicIdPartitions(_TOPIC_ID, (0, 1)),)
    current = ConsumerGroupCurrentMemberAssignmentValue(
        6, 5, 0, target, (TopicIdPartitions(_TOPIC_ID, (2,)),)
    )
    cases: list[tuple[bytes, bytes, RecordKey, RecordValue]] = [
        (
            enc.key(3, "g"),
            enc.epoch_value(5, {0: b"\x00" * 8}),
            ConsumerGroupMetadataKey("g"),
            ConsumerGroupMetadataValue(5),
        ),
        (
            enc.key(4, "g"),
            enc.partition_metadata(metadata),
            ConsumerGroupPartitionMetadataKey("g"),
            metadata,
        ),
        (
            enc.key(5, "g", "m"),
            enc.member_metadata(member),
            ConsumerGroupMemberMetadataKey("g", "m"),
            member,
        ),
        (
            enc.key(6, "g"),
            enc.epoch_value(6),
            ConsumerGroupTargetAssignmentMetadataKey("g"),
            ConsumerGroupTargetAssignmentMetadataValue(6),
        ),
        (
            enc.key(7, "g", "m"),
            enc.target_member(target),
            ConsumerGroupTargetAssignmentMemberKey("g", "m"),
            ConsumerGroupTargetAssignmentMemberValue(target),
        ),
        (
            enc.key(8, "g", "m"),
            enc.current_assignment(current),
            ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
            current,
        ),
    ]
    for key_bytes, value_bytes, key, value in cases:
        assert decode_record(key_bytes, value_bytes) == OffsetsRecord(key, value)
        tombstone = decode_record(key_bytes, None)
        assert tombstone == OffsetsRecord(key, None) and tombstone.tombstone


def test_later_record_types_are_recognised_without_their_value() -> None:
    record = decode_record(enc.key(11, "g"), b"\xff")
    assert record == OffsetsRecord(OtherKey(11), None) and not record.tombstone


# -- bad bytes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        (b"", None, "key.version"),
        (b"\xff\xff", None, "key.version"),
        (enc.key(2, "g") + b"\x00", None, "key"),
        (enc.key(2, "g"), b"\x00\x09", "value.version"),
        (enc.key(2, "g"), _fixture(FIXTURES / "group_metadata" / "01.key")[1][:40], "value.leader"),
        (
            enc.key(2, "g"),
            _fixture(FIXTURES / "group_metadata" / "01.key")[1][:-3],
            "value.members[0].assignment",
        ),
        (
            enc.key(1, "g", "t", partition=0),
            enc.offset_commit(OffsetCommitValue(3, 1, "", 0)) + b"!",
            "value",
        ),
    ],
)
def test_bad_bytes_name_the_record_and_the_field(
    key: bytes, value: bytes | None, field: str
) -> None:
    with pytest.raises(OffsetsDecodeError) as caught:
        decode_record(key, value, "partition 3 offset 99")
    assert caught.value.field == field
    assert str(caught.value).startswith(f"partition 3 offset 99: {field}: ")


_SAMPLES = [_fixture(path) for path in FIXTURE_KEYS] + [
    (
        enc.key(5, "g", "m"),
        enc.member_metadata(
            ConsumerGroupMemberMetadataValue("i", "r", "c", "h", ("t",), None, 1, "uniform")
        ),
    ),
    (
        enc.key(8, "g", "m"),
        enc.current_assignment(
            ConsumerGroupCurrentMemberAssignmentValue(
                1, 0, 0, (TopicIdPartitions(_TOPIC_ID, (0,)),), ()
            )
        ),
    ),
    (
        enc.key(2, "g"),
        enc.group_metadata(
            _one_member_group("sticky", enc.sticky_user_data([TopicPartitions("t", (0,))], 3))
        ),
    ),
]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, bytes]:
    key, value = draw(st.sampled_from(_SAMPLES))
    data = bytearray(value)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "truncate":
            del data[at:]
        elif how == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif data:
            del data[at]
    return key, bytes(data)


def _decodes_or_says_why(key: bytes, value: bytes | None) -> None:
    try:
        decode_record(key, value, "offset 1")
    except OffsetsDecodeError as exc:
        assert exc.record == "offset 1" and exc.field and exc.reason


@settings(max_examples=300)
@given(mutated())
def test_mutated_real_records_decode_or_raise_a_decode_error(sample: tuple[bytes, bytes]) -> None:
    _decodes_or_says_why(*sample)


@settings(max_examples=300)
@given(st.binary(max_size=64), st.none() | st.binary(max_size=256))
def test_random_bytes_decode_or_raise_a_decode_error(key: bytes, value: bytes | None) -> None:
    _decodes_or_says_why(key, value)


@settings(max_examples=200)
@given(st.sampled_from(range(9)), st.binary(max_size=200))
def test_random_values_under_every_known_key_decode_or_raise(version: int, value: bytes) -> None:
    key = enc.key(version, "g", "m") if version in (5, 7, 8) else enc.key(version, "g")
    if version in (0, 1):
        key = enc.key(version, "g", "t", partition=0)
    _decodes_or_says_why(key, value)
