"""``kstore replay --strategy same``: each generation decided again by the flavour that
decided it (the recorded strategy in its leader's client library)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kstore._errors import UsageError
from kstore.analytics.replay import replay
from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    RebalanceStarted,
    TopicChanged,
)
from kstore.store.log import Store
from tests.store._stores import initialised_store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
RDKAFKA = "librdkafka 2.16.0"


def _events(datas: list[EventData]) -> list[Event]:
    return [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]


def decided(generation: int, assignment: dict[str, list[int]]) -> AssignmentCompleted:
    """A librdkafka cooperative-sticky decision on topic ``t`` (partition numbers)."""
    return AssignmentCompleted(
        generation=generation,
        strategy="cooperative-sticky",
        protocol="cooperative",
        client=RDKAFKA,
        assignment={m: [("t", p) for p in ps] for m, ps in assignment.items()},
    )


def _librdkafka_join() -> list[Event]:
    """A confluent-kafka group as recorded on Tansu (issue 17): m2 joins m1, which owns
    t-0..11; librdkafka's cooperative-sticky gives m2 t-0..5 (in a follow-up round)."""
    return _events(
        [
            TopicChanged(topic="t", partitions=12),
            MemberJoined(member_id="m1", topics=["t"]),
            RebalanceStarted(generation=1, reason="join m1"),
            decided(1, {"m1": list(range(12))}),
            MemberJoined(member_id="m2", topics=["t"]),
            RebalanceStarted(generation=2, reason="join m2"),
            decided(2, {"m1": list(range(6, 12)), "m2": []}),
            RebalanceStarted(generation=3, reason="cooperative follow-up"),
            decided(3, {"m1": list(range(6, 12)), "m2": list(range(6))}),
        ]
    )


def _assignments(store: Store, timeline: str) -> list[dict[str, list[tuple[str, int]]]]:
    """The timeline's assignments in order, a repeated one once."""
    found: list[dict[str, list[tuple[str, int]]]] = []
    for stored in store.events(group="g", timeline=timeline):
        data = stored.event.data
        if isinstance(data, AssignmentCompleted) and (not found or found[-1] != data.assignment):
            found.append(data.assignment)
    return found


def test_same_replays_a_librdkafka_group_to_its_recorded_assignments(store: Store) -> None:
    store.append(_librdkafka_join())
    done = replay(store, group="g", strategy="same")
    assert done.stream.timeline == "replay/same"
    assert _assignments(store, "replay/same") == _assignments(store, "recorded")
    strategies = {
        s.event.data.strategy
        for s in store.events(group="g", timeline="replay/same")
        if isinstance(s.event.data, AssignmentCompleted)
    }
    assert strategies == {"librdkafka:cooperative-sticky"}
    # Kafka's Java assignor would have kept t-0..5 on m1: compare can show both.
    replay(store, group="g", strategy="cooperative-sticky")
    java = _assignments(store, "replay/cooperative-sticky")
    assert java[-1]["m1"] == [("t", p) for p in range(6)]


def test_same_follows_the_client_of_each_generation(store: Store) -> None:
    members = {"b": ["t"], "a": ["t"]}
    datas: list[EventData] = [TopicChanged(topic="t", partitions=3)]
    datas += [MemberJoined(member_id=m, topics=ts) for m, ts in members.items()]
    for generation, client in enumerate(["kafka-python 3.0.12", RDKAFKA, None], start=1):
        datas.append(RebalanceStarted(generation=generation, reason="r"))
        datas.append(
            AssignmentCompleted(
                generation=generation, strategy="range", assignment={}, client=client
            )
        )
    store.append(_events(datas))
    replay(store, group="g", strategy="same")
    decided = [
        s.event.data.strategy
        for s in store.events(group="g", timeline="replay/same")
        if isinstance(s.event.data, AssignmentCompleted)
    ]
    assert decided == ["kafka-python:range", "librdkafka:range", "range"]


def test_same_names_a_generation_whose_strategy_kstore_does_not_know(store: Store) -> None:
    datas: list[EventData] = [
        TopicChanged(topic="t", partitions=3),
        MemberJoined(member_id="a", topics=["t"]),
        RebalanceStarted(generation=1, reason="r"),
        AssignmentCompleted(generation=1, strategy="my-own", assignment={}, client=RDKAFKA),
    ]
    store.append(_events(datas))
    with pytest.raises(UsageError, match=r"^--strategy same: source generation 1: .*'my-own'"):
        replay(store, group="g", strategy="same")


def test_the_cli_replays_with_the_same_flavours_by_default(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    store = initialised_store(path)
    store.append(_librdkafka_join())
    done = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(path), "replay", "--group", "g"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "with same into timeline 'replay/same'" in done.stdout
    assert _assignments(store, "replay/same") == _assignments(store, "recorded")
