"""The assignor benchmark's cases, as assignment-contract requests (raw JSON objects).

Every case is deterministic. A, A' and B are the 1M-partition groups of Kafka's
``AbstractStickyAssignorTest.testLargeAssignmentAndGroupWithUniformSubscription``, built
exactly as the oracle's request generator builds them; D and D' are the oracle's own
heterogeneous request files, kept in ``benchmarks/data`` (D' holds the stable assignment
that the named strategy itself reached, so it differs per strategy).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CASES", "STRATEGIES", "Case", "RawRequest", "get_case"]

RawRequest = dict[str, Any]

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range")

_DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Case:
    """One benchmark case: a group, built for any strategy.

    ``runs`` is how many timed calls the median is taken over (fewer for big cases);
    ``quick`` says whether ``--quick`` includes it.
    """

    key: str
    title: str
    runs: int
    quick: bool
    build: Callable[[str], RawRequest]

    def request(self, strategy: str) -> RawRequest:
        return self.build(strategy)


def _names(prefix: str, count: int) -> list[str]:
    width = len(str(count - 1))
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


def _fresh(members: int, topics: int, partitions: int) -> Callable[[str], RawRequest]:
    """Every member subscribed to every topic, nothing owned."""

    def build(strategy: str) -> RawRequest:
        topic_names = _names("t", topics)
        return {
            "strategy": strategy,
            "topics": dict.fromkeys(topic_names, partitions),
            "members": {m: {"topics": topic_names} for m in _names("c", members)},
        }

    return build


# Kafka's large test: 2,000 consumers on 500 topics of 2,000 partitions each.
_LARGE_MEMBERS, _LARGE_TOPICS, _LARGE_PARTITIONS = 2000, 500, 2000


def _large(first_owner: int, last_owner: int) -> Callable[[str], RawRequest]:
    """The large group where member i (first_owner <= i < last_owner) owns partition i of
    every topic at generation 1; members past ``last_owner`` have left the group."""

    def build(strategy: str) -> RawRequest:
        topic_names = _names("t", _LARGE_TOPICS)
        members: dict[str, dict[str, Any]] = {}
        for i, member in enumerate(_names("c", _LARGE_MEMBERS)[:last_owner]):
            spec: dict[str, Any] = {"topics": topic_names}
            if i >= first_owner:
                spec["owned"] = [[t, i] for t in topic_names]
                spec["generation"] = 1
            members[member] = spec
        return {
            "strategy": strategy,
            "topics": dict.fromkeys(topic_names, _LARGE_PARTITIONS),
            "members": members,
        }

    return build


def _from_file(kind: str) -> Callable[[str], RawRequest]:
    def build(strategy: str) -> RawRequest:
        raw: RawRequest = json.loads((_DATA / f"hetero-{kind}-{strategy}.json").read_text())
        return raw

    return build


CASES: tuple[Case, ...] = (
    Case("S", "10 members, 10 topics x 10 partitions, fresh", 21, True, _fresh(10, 10, 10)),
    Case("M", "100 members, 100 topics x 100 partitions, fresh", 7, True, _fresh(100, 100, 100)),
    Case(
        "A",
        "2,000 members, 500 topics x 2,000 partitions (1M), fresh",
        3,
        False,
        _fresh(_LARGE_MEMBERS, _LARGE_TOPICS, _LARGE_PARTITIONS),
    ),
    Case(
        "A'",
        "A's second round: c0000 owns nothing, c0001..c1999 own partition i of every topic",
        3,
        False,
        _large(1, _LARGE_MEMBERS),
    ),
    Case(
        "B",
        "stable 1M-partition group (member i owns partition i of every topic), c1999 left",
        3,
        False,
        _large(0, _LARGE_MEMBERS - 1),
    ),
    Case(
        "D",
        "500 members, 100 topics x 100 partitions, 10-50 random topics each, fresh",
        5,
        False,
        _from_file("fresh"),
    ),
    Case(
        "D'",
        "D after a stable assignment by the same strategy, m000 left",
        7,
        True,
        _from_file("leave"),
    ),
)


def get_case(key: str) -> Case:
    for case in CASES:
        if case.key == key:
            return case
    raise KeyError(key)
