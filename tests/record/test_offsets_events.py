"""From __consumer_offsets records to events: classic and KIP-848 groups, dumps, state."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore._errors import UsageError
from kstore.model import fold, parse_event
from kstore.record.offsets_codec import (
    Assignment,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    OffsetsDecodeError,
    PartitionRacks,
    Subscription,
    TopicIdPartitions,
    TopicMetadata,
    TopicPartitions,
)
from kstore.record.offsets_events import (
    DumpFormatError,
    OffsetsEventBuilder,
    RawRecord,
    client_of_id,
    events_from_dump,
    read_dump,
)
from tests.record import kafka_encode as enc

FIXTURES = Path(__file__).parent.parent / "fixtures" / "consumer-offsets"
T0 = 1_700_000_000_000


def member(
    member_id: str,
    topics: Sequence[str],
    assigned: Sequence[tuple[str, int]],
    instance_id: str | None = None,
) -> MemberMetadata:
    sub = Subscription(1, tuple(topics), None)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned:
        by_topic.setdefault(topic, []).append(partition)
    assignment = Assignment(
        0, tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items()), None
    )
    return MemberMetadata(
        member_id,
        instance_id,
        "client",
        "/10.0.0.1",
        30000,
        10000,
        enc.subscription(sub),
        enc.assignment(assignment),
        sub,
        assignment,
    )


def group_record(
    generation: int, members: Sequence[MemberMetadata], protocol: str = "range"
) -> bytes:
    return enc.group_metadata(
        GroupMetadataValue(
            3,
            "consumer",
            generation,
            protocol if members else None,
            members[0].member_id if members else None,
            T0,
            tuple(members),
        )
    )


def records(pairs: Sequence[tuple[bytes, bytes | None]], start: int = 0) -> list[RawRecord]:
    return [
        RawRecord(offset, 7, T0 + offset * 1000, key, value)
        for offset, (key, value) in enumerate(pairs, start=start)
    ]


def run(
    raws: Sequence[RawRecord], builder: OffsetsEventBuilder | None = None
) -> list[dict[str, Any]]:
    builder = builder or OffsetsEventBuilder("prod")
    events = [event for raw in raws for event in builder.feed(raw)]
    return events + builder.finish()


def kinds(events: Sequence[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


CLASSIC = records(
    [
        (enc.key(2, "g"), group_record(1, [member("a", ["t"], [("t", 0), ("t", 1)])])),
        (enc.key(1, "g", "t", partition=0), enc.offset_commit(OffsetCommitValue(3, 10, "", T0))),
        (
            enc.key(2, "g"),
            group_record(
                2, [member("a", ["t"], [("t", 0)]), member("b", ["t"], [("t", 1)], "i-b")]
            ),
        ),
        (
            enc.key(2, "g"),
            group_record(
                2, [member("a", ["t"], [("t", 0)]), member("b2", ["t"], [("t", 1)], "i-b")]
            ),
        ),
        (
            enc.key(2, "g"),
            group_record(3, [member("a", ["t", "u"], [("t", 0), ("t", 1), ("u", 2)])]),
        ),
        (enc.key(2, "g"), group_record(4, [])),
    ]
)


def test_classic_group_history_becomes_events() -> None:
    events = run(CLASSIC)
    assert kinds(events) == [
        "RebalanceStarted", "MemberJoined", "TopicChanged", "AssignmentCompleted",
        "RebalanceStarted", "MemberJoined", "AssignmentCompleted",
        "MemberReplaced",
        "RebalanceStarted", "MemberLeft", "SubscriptionChanged", "TopicChanged",
        "AssignmentCompleted",
        "MemberLeft",
    ]  # fmt: skip
    assert {e["timeline"] for e in events} == {"recorded"}
    assert {e["cluster"] for e in events} == {"prod"} and {e["group"] for e in events} == {"g"}
    replaced = events[7]["data"]
    assert replaced == {"old_member_id": "b", "new_member_id": "b2", "instance_id": "i-b"}
    completed = [e["data"] for e in events if e["type"] == "AssignmentCompleted"]
    assert [c["generation"] for c in completed] == [1, 2, 3]
    assert completed[1]["assignment"] == {"a": [["t", 0]], "b": [["t", 1]]}
    assert completed[2]["assignment"] == {"a": [["t", 0], ["t", 1], ["u", 2]]}
    assert events[11]["data"] == {"topic": "u", "partitions": 3}  # a lower bound
    assert completed[0]["strategy"] == "range" and completed[0]["protocol"] == "eager"
    assert completed[0]["leader"] == "a"
    assert events[-1]["data"] == {"member_id": "a", "reason": "other"}
    joined = events[1]["data"]
    assert joined["member_id"] == "a" and joined["topics"] == ["t"]
    assert joined["session_timeout_ms"] == 10000 and joined["host"] == "/10.0.0.1"
    assert [e["at"] for e in events[:2]] == ["2023-11-14T22:13:20Z"] * 2


def test_every_event_is_well_formed_and_the_fold_follows_the_group() -> None:
    events = [parse_event(raw) for raw in run(CLASSIC[:4])]
    state = fold(events)
    assert state.generation == 2
    assert set(state.members) == {"a", "b2"}
    assert dict(state.assignment) == {"a": (("t", 0),), "b2": (("t", 1),)}


def test_cooperative_sticky_groups_record_the_cooperative_protocol() -> None:
    raws = records(
        [(enc.key(2, "g"), group_record(1, [member("a", ["t"], [("t", 0)])], "cooperative-sticky"))]
    )
    completed = run(raws)[-1]
    assert completed["data"]["protocol"] == "cooperative"
    assert completed["data"]["strategy"] == "cooperative-sticky"


def test_event_ids_are_deterministic_and_unique() -> None:
    first, second = run(CLASSIC), run(CLASSIC)
    assert [e["event_id"] for e in first] == [e["event_id"] for e in second]
    assert len({e["event_id"] for e in first}) == len(first)
    other_cluster = run(CLASSIC, OffsetsEventBuilder("staging"))
    assert not {e["event_id"] for e in first} & {e["event_id"] for e in other_cluster}


@pytest.mark.parametrize("cut", range(1, len(CLASSIC)))
def test_saved_state_resumes_where_it_stopped(cut: int) -> None:
    builder = OffsetsEventBuilder("prod")
    before = [event for raw in CLASSIC[:cut] for event in builder.feed(raw)]
    saved = json.loads(json.dumps(builder.state()))
    after = run(CLASSIC[cut:], OffsetsEventBuilder.from_state("prod", saved))
    assert before + after == run(CLASSIC)


def test_a_bad_record_raises_and_leaves_the_state_untouched() -> None:
    bad = RawRecord(99, 7, T0, enc.key(2, "g"), CLASSIC[2].value[:-5])  # type: ignore[index]
    builder = OffsetsEventBuilder("prod")
    builder.feed(CLASSIC[0])
    with pytest.raises(OffsetsDecodeError, match=r"^partition 7 offset 99: value\.members"):
        builder.feed(bad)
    assert [e for raw in CLASSIC[1:] for e in builder.feed(raw)] == run(CLASSIC)[4:]


def test_only_the_groups_asked_for_are_followed() -> None:
    other = records(
        [(enc.key(2, "h"), group_record(1, [member("x", ["t"], [("t", 0)])]))], start=50
    )
    builder = OffsetsEventBuilder("prod", groups=["h"])
    events = run(CLASSIC + other, builder)
    assert {e["group"] for e in events} == {"h"}
    assert builder.ignored == len(CLASSIC)


def test_the_real_records_of_a_group_become_its_history() -> None:
    names = ["02", "04", "01", "05"]  # generations 3, 6, 7, 8 (gone empty)
    raws = [
        RawRecord(offset, 0, T0, (FIXTURES / "group_metadata" / f"{n}.key").read_bytes(),
                  (FIXTURES / "group_metadata" / f"{n}.payload").read_bytes())
        for offset, n in enumerate(names)
    ]  # fmt: skip
    events = run(raws)
    completed = [e["data"] for e in events if e["type"] == "AssignmentCompleted"]
    assert [c["generation"] for c in completed] == [3, 6, 7]
    leader = "rdkafka-9f4fc1b0-1d7d-4471-90e8-e0f64f3c9d9f"
    assert completed[1]["assignment"] == {
        leader: [["t01", 2]],
        "rdkafka-6fdc40ae-296b-4ce4-8a8b-6b3fa4c9a932": [["t01", 0], ["t01", 1]],
    }
    assert kinds(events)[-1] == "MemberLeft" and events[-1]["data"]["member_id"] == leader
    for event in events:
        parse_event(event)
    # Their leader's client id is librdkafka's default: replayed with librdkafka's range.
    assert {c["client"] for c in completed} == {"librdkafka"}


def test_the_leaders_client_is_named_only_where_its_client_id_tells(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert client_of_id("rdkafka", "g") == "librdkafka"
    assert client_of_id("kafka-python-3.0.12", "g") == "kafka-python 3.0.12"
    assert client_of_id("consumer-g-1", "g") == "java"
    for chosen in ("consumer-other-1", "orders-service", "kafka-python", "", "rdkafka-1"):
        assert client_of_id(chosen, "g") is None, chosen
    with caplog.at_level(logging.INFO, logger="kstore.record"):
        events = run(CLASSIC)  # every member's client id is "client"
    completed = [e["data"] for e in events if e["type"] == "AssignmentCompleted"]
    assert completed and all("client" not in c for c in completed)
    said = [r.getMessage() for r in caplog.records if "cannot be told" in r.getMessage()]
    assert said == [
        "group g: the leader's client library cannot be told from its client id 'client': "
        "AssignmentCompleted.client left out (a replay uses Kafka's Java assignors)"
    ]


# -- KIP-848 ------------------------------------------------------------------------------

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def kip848_member(instance_id: str | None, topics: Sequence[str] = ("orders",)) -> bytes:
    return enc.member_metadata(
        ConsumerGroupMemberMetadataValue(
            instance_id, "r1", "client", "/10.0.0.2", tuple(topics), None, 45000, "range"
        )
    )


def target(*partitions: int) -> bytes:
    return enc.target_member([TopicIdPartitions(TOPIC_ID, partitions)])


PARTITIONS = ConsumerGroupPartitionMetadataValue(
    1,
    (
        TopicMetadata(
            TOPIC_ID, "orders", 2, (PartitionRacks(0, ("r1",)), PartitionRacks(1, ("r2",)))
        ),
    ),
)

KIP848 = records(
    [
        (enc.key(5, "g", "m1"), kip848_member("i1")),
        (enc.key(4, "g"), enc.partition_metadata(PARTITIONS)),
        (enc.key(3, "g"), enc.epoch_value(1)),
        (enc.key(7, "g", "m1"), target(0, 1)),
        (enc.key(6, "g"), enc.epoch_value(1)),
        # m1 (static, instance i1) comes back as m2: its records go, m2's come.
        (enc.key(8, "g", "m1"), None),
        (enc.key(7, "g", "m1"), None),
        (enc.key(5, "g", "m1"), None),
        (enc.key(5, "g", "m2"), kip848_member("i1")),
        (enc.key(7, "g", "m2"), target(0, 1)),
        # a dynamic member joins
        (enc.key(5, "g", "m3"), kip848_member(None, ["orders", "audit"])),
        (enc.key(3, "g"), enc.epoch_value(2)),
        (enc.key(7, "g", "m2"), target(0)),
        (enc.key(7, "g", "m3"), target(1)),
        (enc.key(6, "g"), enc.epoch_value(2)),
        # m3 leaves, then static m2 leaves for good
        (enc.key(5, "g", "m3"), None),
        (enc.key(5, "g", "m2"), None),
        (enc.key(3, "g"), enc.epoch_value(3)),
    ]
)


def test_kip848_records_become_events() -> None:
    events = run(KIP848)
    assert kinds(events) == [
        "MemberJoined", "TopicChanged", "RebalanceStarted", "AssignmentCompleted",
        "MemberReplaced",
        "MemberJoined", "RebalanceStarted", "AssignmentCompleted",
        "MemberLeft", "MemberLeft", "RebalanceStarted",
    ]  # fmt: skip
    data = [e["data"] for e in events]
    assert data[1] == {"topic": "orders", "partitions": 2, "racks": [["r1"], ["r2"]]}
    assert data[3]["assignment"] == {"m1": [["orders", 0], ["orders", 1]]}
    assert data[3]["protocol"] == "consumer" and data[3]["strategy"] == "range"
    assert data[4] == {"old_member_id": "m1", "new_member_id": "m2", "instance_id": "i1"}
    assert data[7]["generation"] == 2
    assert data[7]["assignment"] == {"m2": [["orders", 0]], "m3": [["orders", 1]]}
    assert [d["member_id"] for d in data[8:10]] == ["m3", "m2"]
    # The held-back leave of m2 keeps the id and time of its own tombstone.
    assert events[9]["at"] == run(KIP848[:17])[-1]["at"]
    assert events[9]["event_id"] == run(KIP848[:17])[-1]["event_id"]
    for event in events:
        parse_event(event)


def test_a_static_leave_still_pending_at_the_end_is_flushed() -> None:
    builder = OffsetsEventBuilder("prod")
    held = [event for raw in KIP848[:8] for event in builder.feed(raw)]
    assert kinds(held)[-1] == "AssignmentCompleted"
    flushed = builder.finish()
    assert kinds(flushed) == ["MemberLeft"] and flushed[0]["data"]["member_id"] == "m1"


# -- dumps --------------------------------------------------------------------------------


def _dump_line(raw: RawRecord, hex_form: bool = False) -> str:
    line: dict[str, Any] = {
        "offset": raw.offset,
        "partition": raw.partition,
        "timestamp": raw.timestamp,
    }
    for name, data in (("key", raw.key), ("value", raw.value)):
        if hex_form:
            line[f"{name}_hex"] = None if data is None else data.hex()
        else:
            line[name] = None if data is None else base64.b64encode(data).decode()
    return json.dumps(line)


def test_a_dump_gives_the_events_the_skipped_count_and_the_errors(tmp_path: Path) -> None:
    bad = RawRecord(100, 7, T0, enc.key(2, "g"), b"\x00\x03\x00")
    lines = [_dump_line(raw, hex_form=i % 2 == 1) for i, raw in enumerate(CLASSIC[:3])]
    lines += ["", _dump_line(bad)] + [_dump_line(raw) for raw in CLASSIC[3:]]
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    assert list(read_dump(dump)) == [*CLASSIC[:3], bad, *CLASSIC[3:]]
    events, skipped, errors = events_from_dump(dump, "prod")
    assert events == run(CLASSIC)
    assert skipped == 2  # the offset commit and the bad record
    assert [(e.record, e.field) for e in errors] == [
        ("partition 7 offset 100", "value.protocol_type")
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"dump\.jsonl:1: not JSON"),
        ('{"offset": 1, "partition": 0, "timestamp": 5, "value": null}', "key: missing"),
        (
            '{"offset": "1", "partition": 0, "timestamp": 5, "key": "", "value": null}',
            "offset: must be an integer",
        ),
        ('{"offset": 1, "partition": 0, "timestamp": 5, "key": "@@", "value": null}', "key:"),
        (
            '{"offset": 1, "partition": 0, "timestamp": 5, "key_hex": "zz", "value": null}',
            "key_hex:",
        ),
        ("[1]", "must be a JSON object"),
    ],
)
def test_a_malformed_dump_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text(line + "\n")
    with pytest.raises(DumpFormatError, match=message):
        list(read_dump(dump))


def test_a_dump_that_is_not_text_or_not_there_is_one_line(tmp_path: Path) -> None:
    # `kstore record offsets --file` said "UnicodeDecodeError: 'utf-8' codec can't decode
    # byte 0xdc ..." of a binary file, "FileNotFoundError: ..." of a missing one, exit 1.
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(_dump_line(CLASSIC[0]).encode() + b"\n\n\xff\x80\n")
    with pytest.raises(UsageError) as refused:
        list(read_dump(dump))
    assert str(refused.value) == f"{dump}: line 3: not UTF-8 text (byte 0xff)"
    with pytest.raises(UsageError) as refused:
        list(read_dump(tmp_path / "nope.jsonl"))
    assert (
        str(refused.value) == f"{tmp_path / 'nope.jsonl'}: cannot read: No such file or directory"
    )


# -- fuzz: bad records never give an exception of another type, nor a bogus event ---------------

_STREAMS = [CLASSIC, KIP848]


@st.composite
def damaged_streams(draw: st.DrawFn) -> list[RawRecord]:
    stream = list(draw(st.sampled_from(_STREAMS)))
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(stream) - 1))
        raw = stream[index]
        part = draw(st.sampled_from(["key", "value"]))
        data = bytearray(getattr(raw, part) or b"")
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        how = draw(st.sampled_from(["truncate", "flip", "insert"]))
        if how == "truncate":
            del data[at:]
        elif how == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=3))
        changed = {"key": raw.key, "value": raw.value, part: bytes(data)}
        stream[index] = RawRecord(
            raw.offset, raw.partition, raw.timestamp, changed["key"], changed["value"]
        )
    return stream


@settings(max_examples=150)
@given(damaged_streams())
def test_damaged_streams_give_well_formed_events_or_decode_errors(stream: list[RawRecord]) -> None:
    builder = OffsetsEventBuilder("prod")
    events: list[dict[str, Any]] = []
    for raw in stream:
        try:
            events.extend(builder.feed(raw))
        except OffsetsDecodeError as exc:
            assert exc.record == raw.label and exc.field
    events.extend(builder.finish())
    for event in events:
        parse_event(event)
    assert len({e["event_id"] for e in events}) == len(events)


def test_the_documented_dump_example_reads(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "recording.md").read_text()
    example = doc.split("```json\n", 1)[1].split("```", 1)[0]
    dump = tmp_path / "example.jsonl"
    dump.write_text(example)
    raws = list(read_dump(dump))
    assert [raw.value is None for raw in raws] == [False, True]
    assert raws[0].key == raws[1].key == (FIXTURES / "group_metadata" / "05.key").read_bytes()
    events, skipped, errors = events_from_dump(dump)
    assert (events, skipped, errors) == ([], 0, [])


def test_racks_are_given_only_when_every_partition_is_placed() -> None:
    huge = ConsumerGroupPartitionMetadataValue(
        1, (TopicMetadata(TOPIC_ID, "orders", 2**31 - 1, PARTITIONS.topics[0].partition_racks),)
    )
    events = run(records([(enc.key(4, "g"), enc.partition_metadata(huge))]))
    assert [e["data"] for e in events] == [{"topic": "orders", "partitions": 2**31 - 1}]
