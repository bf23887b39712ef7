"""A recorded stream whose generations or times go backwards is odd (issue 13): the
anomalies list it, beside double-assigned and unknown members. Before, a stream appended
with ``kstore append`` whose generation fell from 3 to 2, or whose clock went back a
minute, showed nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.processes import kstore_cli


def _line(at: str, kind: str, data: dict[str, Any], group: str) -> str:
    return json.dumps({"group": group, "type": kind, "at": f"2026-11-27T10:{at}Z", "data": data})


def _stream(group: str, generations: list[int], times: list[str]) -> list[str]:
    """A recorder's stream: a topic, two members, then a rebalance per generation (its
    RebalanceStarted and AssignmentCompleted at the next two ``times``)."""
    every = [["t", 0], ["t", 1]]
    lines = [
        _line(times[0], "TopicChanged", {"topic": "t", "partitions": 2}, group),
        _line(times[0], "MemberJoined", {"member_id": "a", "topics": ["t"]}, group),
    ]
    for i, generation in enumerate(generations):
        started, done = times[1 + 2 * i], times[2 + 2 * i]
        lines.append(
            _line(started, "RebalanceStarted", {"generation": generation, "reason": "r"}, group)
        )
        decided = {"generation": generation, "strategy": "range", "assignment": {"a": every}}
        lines.append(_line(done, "AssignmentCompleted", decided, group))
    return lines


def _anomalies(store: Path, group: str) -> list[dict[str, Any]]:
    shown = kstore_cli(store, "query", "anomalies", "--param", f"group={group}", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    rows: list[dict[str, Any]] = json.loads(shown.stdout)
    return rows


def test_generations_and_times_going_backwards_are_listed(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    assert kstore_cli(store, "init").returncode == 0
    times = ["00:00", "00:01", "00:02", "01:00", "01:01", "02:00", "00:30"]
    odd = _stream("odd", [1, 3, 2], times)  # generation 3, then 2; the last event a minute back
    clean = _stream("clean", [1, 2, 3], sorted(times))
    source = tmp_path / "events.jsonl"
    source.write_text("\n".join(odd + clean) + "\n")
    appended = kstore_cli(store, "append", str(source))
    assert appended.returncode == 0, appended.stderr
    found = [(a["version"], a["generation"], a["kind"]) for a in _anomalies(store, "odd")]
    assert found == [(8, 2, "generation-backwards"), (8, 2, "time-backwards")]
    (late,) = [a for a in _anomalies(store, "odd") if a["kind"] == "time-backwards"]
    assert late["at"].startswith("2026-11-27T10:00:30") and late["expected"] is False
    assert _anomalies(store, "clean") == []


def test_a_member_event_back_in_time_is_listed_at_its_own_time(tmp_path: Path) -> None:
    """Not only rebalances: any event of the stream earlier than the one before it (the
    member's join here, recorded by a recorder whose clock was behind)."""
    store = tmp_path / "s.duckdb"
    assert kstore_cli(store, "init").returncode == 0
    lines = _stream("g", [1], ["00:10", "00:11", "00:12"])
    lines.insert(1, _line("00:05", "MemberJoined", {"member_id": "b", "topics": ["t"]}, "g"))
    source = tmp_path / "events.jsonl"
    source.write_text("\n".join(lines) + "\n")
    assert kstore_cli(store, "append", str(source)).returncode == 0
    found = [(a["version"], a["generation"], a["kind"], a["at"]) for a in _anomalies(store, "g")]
    assert found == [(2, None, "time-backwards", "2026-11-27T10:00:05Z")]
