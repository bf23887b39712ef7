"""``optimal`` against exhaustive search on small groups, and its contract."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.assignors import AssignmentRequest, MemberSubscription, assign

Partition = tuple[str, int]


@st.composite
def requests(draw: st.DrawFn) -> AssignmentRequest:
    topics = {f"t{i}": draw(st.integers(1, 3)) for i in range(draw(st.integers(1, 3)))}
    names = list(topics)
    every = [(t, p) for t, c in topics.items() for p in range(c)]
    members = {}
    for i in range(draw(st.integers(1, 4))):
        subscribed = draw(st.lists(st.sampled_from([*names, "absent"]), unique=True))
        owned = draw(st.lists(st.sampled_from(every), unique=True, max_size=4))
        members[f"m{i}"] = MemberSubscription(topics=subscribed, owned=owned)
    return AssignmentRequest(strategy="optimal", topics=topics, members=members)


def _owners(request: AssignmentRequest) -> dict[Partition, str]:
    owners: dict[Partition, str] = {}
    for member, sub in request.members.items():
        for tp in sub.owned:
            if tp[0] in sub.topics:
                owners.setdefault(tp, member)
    return owners


def _score(request: AssignmentRequest, assignment: dict[str, list[Partition]]) -> tuple[int, int]:
    """(sum of squared loads, partitions not with their owner)."""
    owners = _owners(request)
    squares = sum(len(tps) ** 2 for tps in assignment.values())
    moves = sum(1 for m, tps in assignment.items() for tp in tps if owners.get(tp, m) != m)
    return squares, moves


def _best(request: AssignmentRequest) -> tuple[int, int]:
    choices = [
        ((t, p), [m for m, s in request.members.items() if t in s.topics])
        for t, count in request.topics.items()
        for p in range(count)
    ]
    choices = [(tp, ms) for tp, ms in choices if ms]
    best = None
    for picked in itertools.product(*(ms for _, ms in choices)):
        assignment: dict[str, list[Partition]] = {m: [] for m in request.members}
        for (tp, _), member in zip(choices, picked, strict=True):
            assignment[member].append(tp)
        score = _score(request, assignment)
        best = score if best is None or score < best else best
    assert best is not None
    return best


@settings(max_examples=150, deadline=None)
@given(request=requests())
def test_optimal_is_as_even_then_as_sticky_as_possible(request: AssignmentRequest) -> None:
    result = assign(request).assignment
    assert list(result) == list(request.members)
    given_out = [tp for tps in result.values() for tp in tps]
    assert len(given_out) == len(set(given_out))
    for member, tps in result.items():
        assert all(tp[0] in request.members[member].topics for tp in tps)
        assert tps == sorted(tps)
    wanted = {
        (t, p)
        for t, c in request.topics.items()
        for p in range(c)
        if any(t in s.topics for s in request.members.values())
    }
    assert set(given_out) == wanted
    if sum(request.topics.values()) <= 7:
        assert _score(request, result) == _best(request)


def test_a_new_member_takes_only_what_evens_the_loads() -> None:
    topics = {"t": 40}
    first = assign(
        AssignmentRequest(
            strategy="optimal",
            topics=topics,
            members={f"m{i}": MemberSubscription(topics=["t"]) for i in range(4)},
        )
    ).assignment
    members = {m: MemberSubscription(topics=["t"], owned=tps) for m, tps in first.items()}
    members["m4"] = MemberSubscription(topics=["t"])
    second = assign(AssignmentRequest(strategy="optimal", topics=topics, members=members))
    loads = sorted(len(tps) for tps in second.assignment.values())
    assert loads == [8] * 5
    moved = sum(
        1 for m, tps in second.assignment.items() for tp in tps if tp not in first.get(m, [])
    )
    assert moved == 8
