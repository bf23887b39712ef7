"""kafka-python 3.0.12's own range and round-robin (``kafka-python:*``): where they part
from Java's. Exactness against kafka-python itself: tests/golden/kafka-python-*.jsonl."""

from __future__ import annotations

from typing import Any

from kstore.assignors import assign, validate_request
from tests.oracle import golden

INTERLEAVED: dict[str, Any] = {
    "topics": {"t": 8},
    "members": {
        "m-1": {"topics": ["t"], "instance_id": "static-1"},
        "m-2": {"topics": ["t"]},
        "m-3": {"topics": ["t"], "instance_id": "static-3"},
        "m-4": {"topics": ["t"]},
    },
}


def counts(strategy: str, raw: dict[str, Any]) -> dict[str, int]:
    result = assign(validate_request({**raw, "strategy": strategy}))
    return {m: len(tps) for m, tps in result.assignment.items()}


def test_interleaved_static_and_dynamic_members_lose_all_but_the_last_of_each_kind() -> None:
    assert counts("kafka-python:range", INTERLEAVED) == {"m-1": 0, "m-2": 0, "m-3": 4, "m-4": 4}
    assert counts("kafka-python:roundrobin", INTERLEAVED) == counts(
        "kafka-python:range", INTERLEAVED
    )
    assert set(counts("range", INTERLEAVED).values()) == {2}


def test_roundrobin_where_kafka_python_raises_is_javas_with_a_warning() -> None:
    raw = {
        "strategy": "kafka-python:roundrobin",
        "topics": {"a": 2, "b": 2},
        "members": {"x": {"topics": ["a"]}, "y": {"topics": ["b"]}},
    }
    result = assign(validate_request(raw))
    assert result.warnings and "raises KeyError" in result.warnings[0]
    assert (
        result.assignment == assign(validate_request({**raw, "strategy": "roundrobin"})).assignment
    )


def test_the_raising_rows_are_there_and_answered_with_a_warning() -> None:
    raising = [row for row in golden("kafka-python:roundrobin") if "kafka_python_error" in row.raw]
    assert len(raising) > 100
    for row in raising:
        assert assign(validate_request(row.raw["request"])).warnings


def test_sticky_where_kafka_python_raises_is_javas_with_a_warning() -> None:
    raising = [row for row in golden("kafka-python:sticky") if "kafka_python_error" in row.raw]
    assert len(raising) == 11
    for row in raising:
        result = assign(validate_request(row.raw["request"]))
        error = row.raw["kafka_python_error"]
        assert result.warnings and f"raises {error}" in result.warnings[0]
        java = assign(validate_request({**row.raw["request"], "strategy": "sticky"}))
        assert result.assignment == java.assignment


def test_sticky_a_member_subscribed_to_nothing_with_a_partition_of_the_latest_generation() -> None:
    # "x" subscribes to nothing, so it is left out of the reassignment; it held t-0 the
    # generation before "y", so kafka-python moves t-0 back to "x", which is no longer in
    # its ranking of members: KeyError (checked against kafka-python 3.0.12).
    raw = {
        "strategy": "kafka-python:sticky",
        "topics": {"t": 3},
        "members": {
            "x": {"topics": [], "owned": [["t", 0]], "generation": 2},
            "y": {"topics": ["t"], "owned": [["t", 0], ["t", 1], ["t", 2]], "generation": 3},
            "z": {"topics": ["t"], "owned": [["t", 0]], "generation": 1},
        },
    }
    result = assign(validate_request(raw))
    assert result.warnings and "raises KeyError" in result.warnings[0]
