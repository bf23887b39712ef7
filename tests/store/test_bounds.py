"""Kafka's own bounds at every edge, the field named: append, assign, replay, Spark ingest.

Before: a generation of 2^31 went into the log and broke every int32 projection of the
store for good; 10^30 partitions made every later assignment of the stream and the
export fail; 2,000,000,000 partitions (Kafka's int32 allows them, and the log keeps the fact) ran
``assign`` and ``replay`` out of memory; dates
out of range and 2^63 integers ended in errors that named no field.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kstore._limits import INT32_MAX, MAX_PARTITIONS
from kstore.assignors import ContractError, parse_request
from kstore.model import AssignmentCompleted, MemberJoined, RebalanceStarted, TopicChanged
from kstore.model.events import Event, EventError, parse_event
from kstore.spark._ingest import _parse
from kstore.store.log import Store
from tests.processes import kstore_cli

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _kstore(store: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return kstore_cli(store, *args, stdin=stdin, timeout=120)


def _raw(kind: str, data: dict[str, object], at: str = "2026-11-21T10:00:00Z") -> dict[str, object]:
    return {"type": kind, "group": "g", "at": at, "data": data}


BAD_EVENTS = [
    (_raw("RebalanceStarted", {"generation": 2**31, "reason": "x"}), "data.generation"),
    (_raw("RebalanceStarted", {"generation": 2**63, "reason": "x"}), "data.generation"),
    (_raw("RebalanceStarted", {"generation": -1, "reason": "x"}), "data.generation"),
    (_raw("TopicChanged", {"topic": "t", "partitions": 10**30}), "data.partitions"),
    (_raw("TopicChanged", {"topic": "t", "partitions": 2**31}), "data.partitions"),
    (_raw("TopicChanged", {"topic": "x" * 250, "partitions": 1}), "data.topic"),
    (_raw("TopicChanged", {"topic": "a b", "partitions": 1}), "data.topic"),
    (_raw("TopicChanged", {"topic": "..", "partitions": 1}), "data.topic"),
    (_raw("TopicDeleted", {"topic": "."}), "data.topic"),
    (_raw("MemberJoined", {"member_id": "m", "topics": ["ok", "caf\u00e9"]}), "data.topics[1]"),
    (
        _raw("MemberJoined", {"member_id": "m", "topics": ["t"], "session_timeout_ms": 2**31}),
        "data.session_timeout_ms",
    ),
    (
        _raw(
            "AssignmentCompleted",
            {"generation": 1, "strategy": "range", "assignment": {"m": [["t", 2**31]]}},
        ),
        "data.assignment.m[0][1]",
    ),
    (
        _raw(
            "AssignmentCompleted",
            {"generation": 1, "strategy": "range", "assignment": {"m": [["bad topic", 0]]}},
        ),
        "data.assignment.m[0][0]",
    ),
    (_raw("MemberLeft", {"member_id": "m", "reason": "leave"}, "0001-01-01T00:00:00+01:00"), "at"),
    (_raw("MemberLeft", {"member_id": "m", "reason": "leave"}, "9999-12-31T23:59:59-01:00"), "at"),
    (_raw("MemberLeft", {"member_id": "m", "reason": "leave"}, "1969-12-31T23:59:59Z"), "at"),
]


@pytest.mark.parametrize(("raw", "field"), BAD_EVENTS)
def test_the_model_names_the_field(raw: dict[str, object], field: str) -> None:
    with pytest.raises(EventError) as refused:
        parse_event(raw)
    assert str(refused.value).startswith(f"{field}: "), str(refused.value)
    row, reason = _parse(7, json.dumps(raw))  # Spark ingest: quarantined
    assert row is None and reason is not None and reason.startswith(f"line 7: {field}: ")


def test_the_edges_themselves_are_taken() -> None:
    for raw in (
        _raw("RebalanceStarted", {"generation": INT32_MAX, "reason": "x"}),
        _raw("TopicChanged", {"topic": "a." + "x" * 247, "partitions": INT32_MAX}),
        _raw("TopicChanged", {"topic": "...", "partitions": 1}),
        _raw("MemberJoined", {"member_id": "m", "topics": ["A-z_0.9"], "session_timeout_ms": 0}),
        _raw("MemberLeft", {"member_id": "m", "reason": "leave"}, "1970-01-01T00:00:00Z"),
        _raw("MemberLeft", {"member_id": "m", "reason": "leave"}, "9999-12-30T00:00:00Z"),
    ):
        parse_event(raw)


def test_append_refuses_with_line_and_field_and_stores_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    good = json.dumps(_raw("TopicChanged", {"topic": "t", "partitions": 3}))
    for raw, field in BAD_EVENTS:
        out = _kstore(store.path, "append", "-", stdin=good + "\n" + json.dumps(raw) + "\n")
        assert out.returncode == 2, (raw, out.stderr)
        assert out.stderr.startswith(f"kstore: error: standard input: line 2: {field}: "), (
            out.stderr
        )
        assert out.stderr.count("\n") == 1 and out.stdout == ""
    assert store.streams() == []


def test_assign_refuses_an_absurd_request_at_once() -> None:
    request = {
        "strategy": "range",
        "topics": {"t": 2_000_000_000},
        "members": {"a": {"topics": ["t"]}},
    }
    out = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "assign", "-"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "topics: 2,000,000,000 partitions in all" in out.stderr
    too_many = {**request, "topics": {f"t{i}": MAX_PARTITIONS for i in range(3)}}
    with pytest.raises(ContractError, match=r"^topics: 30,000,000 partitions in all"):
        parse_request(json.dumps(too_many))
    generation = {**request, "topics": {"t": 1}}
    generation["members"] = {"a": {"topics": ["t"], "generation": 2**31}}
    with pytest.raises(ContractError, match=r"^members\.a\.generation: "):
        parse_request(json.dumps(generation))


def test_replay_of_a_group_too_big_to_assign_is_one_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    datas = [
        TopicChanged(topic="a", partitions=2_000_000_000),
        MemberJoined(member_id="m", topics=["a"]),
        RebalanceStarted(generation=1, reason="join"),
        AssignmentCompleted(generation=1, strategy="range", assignment={"m": []}),
    ]
    store.append(
        [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]
    )
    out = _kstore(store.path, "replay", "--group", "g", "--strategy", "sticky")
    assert out.returncode == 2, out.stderr
    assert "topics: 2,000,000,000 partitions in all" in out.stderr
    assert out.stderr.count("\n") == 1


def test_deep_nesting_and_lone_surrogates_name_the_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    deep = "[" * 100_000 + "]" * 100_000
    lone = json.dumps(_raw("MemberLeft", {"member_id": "\ud800", "reason": "leave"}))
    good = json.dumps(_raw("TopicChanged", {"topic": "t", "partitions": 3}))
    for line, message in (
        (deep, "line 2: not JSON kstore reads: nested too deeply"),
        (lone, "line 2: data.member_id: a lone surrogate is not Unicode text"),
    ):
        out = _kstore(store.path, "append", "-", stdin=f"{good}\n{line}\n")
        assert out.returncode == 2, out.stderr
        assert out.stderr == f"kstore: error: standard input: {message}\n", out.stderr
        assert _parse(2, line) == (None, message)  # Spark ingest quarantines it
    assert store.streams() == []
    request = '{"strategy": "range", "topics": {"t": 1}, "members": {}, "x": ' + deep + "}"
    out = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "assign", "-"],
        input=request,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2 and "nested too deeply" in out.stderr
    assert out.stderr.count("\n") == 1
