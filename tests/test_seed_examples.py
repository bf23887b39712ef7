"""The worked examples of seeds 003 and 004, as Kafka gives them (seed typos corrected).

Seed 000's examples are in tests/test_range_roundrobin.py. Where a seed's text is wrong
(004 names a consumer c3 that does not exist and repeats t1-p1; 003 numbers C0, C2, C3),
the expected values below are what Kafka's algorithm gives, worked out by hand from it.
"""

from __future__ import annotations

import pytest

from kstore.assignors import AssignmentRequest, MemberSubscription, assign


def _assign(
    strategy: str, topics: dict[str, int], subscriptions: dict[str, list[str]]
) -> dict[str, list[tuple[str, int]]]:
    request = AssignmentRequest(
        strategy=strategy,
        topics=topics,
        members={m: MemberSubscription(topics=t) for m, t in subscriptions.items()},
    )
    return assign(request).assignment


def test_seed_004_range_four_topics_two_partitions_three_consumers() -> None:
    topics = {f"t{i}": 2 for i in range(4)}
    got = _assign("range", topics, {c: list(topics) for c in ("c0", "c1", "c2")})
    # Per topic: 2 // 3 = 0 each, the first 2 % 3 = 2 consumers get one more; c2 idles.
    assert got == {
        "c0": [(t, 0) for t in topics],
        "c1": [(t, 1) for t in topics],
        "c2": [],
    }


def test_seed_004_roundrobin_identical_subscriptions() -> None:
    got = _assign("roundrobin", {"t0": 3, "t1": 3}, {"c0": ["t0", "t1"], "c1": ["t0", "t1"]})
    # t0p0 t0p1 t0p2 t1p0 t1p1 t1p2 dealt c0 c1 c0 c1 c0 c1 (the seed prints t1-p1 twice).
    assert got == {
        "c0": [("t0", 0), ("t0", 2), ("t1", 1)],
        "c1": [("t0", 1), ("t1", 0), ("t1", 2)],
    }


NESTED = {"c0": ["t0"], "c1": ["t0", "t1"], "c2": ["t0", "t1", "t2"]}  # seed 004
CHAINED = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t1", "t2"]}  # seed 003
SIZES = {"t0": 1, "t1": 2, "t2": 3}


@pytest.mark.parametrize(("subscriptions", "names"), [(NESTED, "c"), (CHAINED, "C")])
def test_seed_roundrobin_unequal_subscriptions_is_unbalanced(
    subscriptions: dict[str, list[str]], names: str
) -> None:
    got = _assign("roundrobin", SIZES, subscriptions)
    assert got == {
        f"{names}0": [("t0", 0)],
        f"{names}1": [("t1", 0)],
        f"{names}2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)],
    }


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize(("subscriptions", "names"), [(NESTED, "c"), (CHAINED, "C")])
def test_seed_sticky_balances_what_roundrobin_does_not(
    strategy: str, subscriptions: dict[str, list[str]], names: str
) -> None:
    got = _assign(strategy, SIZES, subscriptions)
    assert got == {
        f"{names}0": [("t0", 0)],
        f"{names}1": [("t1", 0), ("t1", 1)],
        f"{names}2": [("t2", 0), ("t2", 1), ("t2", 2)],
    }
