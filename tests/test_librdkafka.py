"""librdkafka's assignors (``librdkafka:*``): where they part from Kafka's Java ones,
what they answer where librdkafka crashes, and their properties on any request.

Exactness against librdkafka's own answers is checked with the golden files
(tests/test_oracle.py, ``tests/golden/librdkafka-*.jsonl``).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.assignors import AssignmentResult, assign, validate_request
from kstore.assignors._librdkafka_common import merge_sort, sorted_members
from kstore.model.strategies import CATALOGUE
from tests.oracle import golden

LIBRDKAFKA = ("librdkafka:range", "librdkafka:roundrobin", "librdkafka:sticky")
ALL = (*LIBRDKAFKA, "librdkafka:cooperative-sticky")

Request = dict[str, Any]


def run(raw: Request, strategy: str) -> AssignmentResult:
    return assign(validate_request({**raw, "strategy": strategy}))


def numbers(result: AssignmentResult) -> dict[str, list[int]]:
    return {m: [p for _, p in tps] for m, tps in result.assignment.items()}


def joining(owner: str, newcomer: str) -> Request:
    owned = [["t", p] for p in range(12)]
    return {
        "strategy": "sticky",
        "topics": {"t": 12},
        "members": {
            owner: {"topics": ["t"], "owned": owned, "generation": 1},
            newcomer: {"topics": ["t"]},
        },
    }


@pytest.mark.parametrize(("owner", "newcomer"), [("m1", "m2"), ("rdkafka-b", "rdkafka-a")])
def test_an_owner_keeps_its_last_partitions_where_java_keeps_the_first(
    owner: str, newcomer: str
) -> None:
    # Seen live (issue 17): a confluent-kafka group gave the joining member 0-5.
    raw = joining(owner, newcomer)
    assert numbers(run(raw, "librdkafka:sticky")) == {
        owner: [6, 7, 8, 9, 10, 11],
        newcomer: [0, 1, 2, 3, 4, 5],
    }
    assert numbers(run(raw, "librdkafka:cooperative-sticky")) == {
        owner: [6, 7, 8, 9, 10, 11],
        newcomer: [],
    }
    assert numbers(run(raw, "cooperative-sticky"))[owner] == [0, 1, 2, 3, 4, 5]


def test_cooperative_hands_owned_partitions_of_a_deleted_topic_back() -> None:
    raw = {
        "strategy": "sticky",
        "topics": {"t": 2},
        "members": {
            "a": {"topics": ["t", "gone"], "owned": [["gone", 0], ["t", 0]], "generation": 3},
            "b": {"topics": ["t"], "owned": [["t", 1], ["t", 7]], "generation": 3},
        },
    }
    assert run(raw, "librdkafka:cooperative-sticky").assignment == {
        "a": [("gone", 0), ("t", 0)],
        "b": [("t", 1), ("t", 7)],
    }
    assert run(raw, "cooperative-sticky").assignment == {"a": [("t", 0)], "b": [("t", 1)]}


def test_mixed_static_members_are_ordered_as_glibc_sorts_them() -> None:
    # Instance ids compare only when both members have one: s2 < s1 (instance ids
    # "b" < "z"), s1 < d and d < s2 (member ids): a cycle, so the order depends on the
    # input order and on the sort (glibc's merge sort).
    members = validate_request(
        {
            "strategy": "range",
            "topics": {"t": 3},
            "members": {
                "a": {"topics": ["t"], "instance_id": "z"},
                "c": {"topics": ["t"], "instance_id": "b"},
                "b": {"topics": ["t"]},
            },
        }
    ).members
    assert sorted_members(["a", "c", "b"], members) == ["a", "b", "c"]
    assert sorted_members(["b", "a", "c"], members) == ["b", "c", "a"]
    assert merge_sort([3, 1, 2, 1], lambda a, b: a - b) == [1, 1, 2, 3]


CRASHES = [
    row
    for s in ("librdkafka:sticky", "librdkafka:cooperative-sticky")
    for row in golden(s)
    if "librdkafka_abort" in row.raw
]


def test_there_are_crash_vectors() -> None:
    assert len(CRASHES) >= 20


@pytest.mark.parametrize("row", CRASHES, ids=lambda row: row.id)
def test_where_librdkafka_crashes_the_answer_is_javas_with_a_warning(row: Any) -> None:
    raw = row.raw["request"]
    result = assign(validate_request(raw))
    assert len(result.warnings) >= 1
    assert "librdkafka 2.16 aborts" in result.warnings[0]
    # The same kind of failure as librdkafka's: a signal, or its assertion.
    crashed = "signal" in row.raw["librdkafka_abort"]
    assert crashed == ("SIGSEGV" in result.warnings[0] or "NULL" in result.warnings[0])
    assert crashed != ("assertion" in result.warnings[0])
    assert "\n" not in result.warnings[0]
    java = raw["strategy"].split(":", 1)[1]
    assert result.assignment == assign(validate_request({**raw, "strategy": java})).assignment


def test_the_catalogue_holds_each_flavour_with_its_protocol() -> None:
    assert {name: (CATALOGUE[name].protocol, CATALOGUE[name].base) for name in ALL} == {
        "librdkafka:range": ("eager", "range"),
        "librdkafka:roundrobin": ("eager", "roundrobin"),
        "librdkafka:sticky": ("eager", "sticky"),
        "librdkafka:cooperative-sticky": ("cooperative", "cooperative-sticky"),
    }


# -- properties -----------------------------------------------------------------------

TOPIC_POOL = ("a", "b", "orders", "t1", "x.y")
MEMBER_POOL = ("c0", "c1", "c2", "c10", "m7", "z", "consumer-1", "b9")
RACKS = ("r1", "r2", "r3")


@st.composite
def requests(draw: st.DrawFn, *, same: bool, racks: bool) -> Request:
    """Requests whose owned partitions are claimed once each (as a real group's are)."""
    topics = draw(
        st.dictionaries(st.sampled_from(TOPIC_POOL), st.integers(1, 9), min_size=1, max_size=3)
    )
    names = sorted(topics)
    ids = draw(st.lists(st.sampled_from(MEMBER_POOL), min_size=1, max_size=6, unique=True))
    shared = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    free = [(t, p) for t in names for p in range(topics[t])]
    free = draw(st.permutations(free))
    members: dict[str, Any] = {}
    for member in ids:
        subscribed = shared if same else draw(st.lists(st.sampled_from(names), unique=True))
        take = draw(st.integers(0, min(4, len(free))))
        owned, free = free[:take], free[take:]
        members[member] = {
            "topics": list(subscribed),
            "owned": [list(tp) for tp in owned],
            "generation": draw(st.sampled_from([None, 4])) if owned else None,
            "rack": draw(st.sampled_from(RACKS)) if racks and draw(st.booleans()) else None,
            "instance_id": draw(st.sampled_from([None, f"i-{member}"])),
        }
    raw: Request = {"strategy": "range", "topics": topics, "members": members}
    if racks:
        raw["partition_racks"] = {
            t: [draw(st.lists(st.sampled_from(RACKS), min_size=1, unique=True)) for _ in range(n)]
            for t, n in topics.items()
        }
    return raw


def owners(result: AssignmentResult) -> dict[tuple[str, int], list[str]]:
    found: dict[tuple[str, int], list[str]] = {}
    for member, tps in result.assignment.items():
        for tp in tps:
            found.setdefault(tp, []).append(member)
    return found


def assert_valid(raw: Request, result: AssignmentResult) -> None:
    """Every partition of a subscribed topic to exactly one of its subscribers."""
    members = raw["members"]
    assert set(result.assignment) == set(members)
    expected = {
        (t, p) for sub in members.values() for t in sub["topics"] for p in range(raw["topics"][t])
    }
    got = owners(result)
    assert set(got) == expected
    for tp, holders in got.items():
        assert len(holders) == 1, (tp, holders)
        assert tp[0] in members[holders[0]]["topics"]


@settings(max_examples=150, deadline=None)
@given(requests(same=False, racks=True), st.sampled_from(LIBRDKAFKA))
def test_every_subscribed_partition_goes_to_one_subscriber(raw: Request, strategy: str) -> None:
    assert_valid(raw, run(raw, strategy))


@settings(max_examples=150, deadline=None)
@given(
    requests(same=True, racks=False),
    st.sampled_from(("librdkafka:roundrobin", "librdkafka:sticky")),
)
def test_identical_subscriptions_are_balanced(raw: Request, strategy: str) -> None:
    counts = [len(tps) for tps in run(raw, strategy).assignment.values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(requests(same=False, racks=True))
def test_range_balances_each_topic_over_its_subscribers(raw: Request) -> None:
    result = run(raw, "librdkafka:range")
    for topic in raw["topics"]:
        subscribers = [m for m, sub in raw["members"].items() if topic in sub["topics"]]
        counts = [sum(t == topic for t, _ in result.assignment[m]) for m in subscribers]
        if counts:
            assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(requests(same=False, racks=True))
def test_cooperative_never_gives_a_partition_another_member_still_owns(raw: Request) -> None:
    target = run(raw, "librdkafka:sticky")
    result = run(raw, "librdkafka:cooperative-sticky")
    owner = {tuple(tp): member for member, sub in raw["members"].items() for tp in sub["owned"]}
    for member, tps in result.assignment.items():
        for tp in tps:
            assert owner.get(tp, member) == member
            assert tp in target.assignment[member] or owner.get(tp) == member
    # What is withheld is exactly what changes owner.
    for member, tps in target.assignment.items():
        for tp in tps:
            kept = tp in result.assignment[member]
            assert kept == (owner.get(tp, member) == member)
