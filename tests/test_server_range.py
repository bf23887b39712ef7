"""``server-range``: the coordinator's range assignor (KIP-848)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.assignors import AssignmentRequest, validate_request
from tests._range_requests import check_valid, permuted, requests, run, without

FAST = settings(max_examples=50, deadline=None)


@FAST
@given(requests("server-range"))
def test_valid_and_balanced_per_topic(request: AssignmentRequest) -> None:
    got = run(request)
    check_valid(request, got)
    for topic in request.topics:
        loads = [
            sum(1 for t, _ in got[m] if t == topic)
            for m, sub in request.members.items()
            if topic in sub.topics
        ]
        if loads:
            assert max(loads) - min(loads) <= 1


@FAST
@given(requests("server-range"))
def test_ignores_owned_partitions_and_generations(request: AssignmentRequest) -> None:
    assert run(request) == run(without(request, "owned", "generation"))


@FAST
@given(requests("server-range"))
def test_ignores_racks(request: AssignmentRequest) -> None:
    plain = without(request, "rack").model_copy(update={"partition_racks": None})
    assert run(request) == run(plain)


@FAST
@given(requests("server-range"), st.integers(0, 2**32))
def test_deterministic_and_independent_of_member_order(
    request: AssignmentRequest, seed: int
) -> None:
    got = run(request)
    assert run(request) == got
    shuffled = run(permuted(request, seed))
    assert {m: shuffled[m] for m in got} == got


@FAST
@given(requests("server-range", racks=False))
def test_same_ranges_as_the_client_range_assignor_without_racks(
    request: AssignmentRequest,
) -> None:
    client = request.model_copy(update={"strategy": "range"})
    assert run(request) == run(client)


def test_a_member_subscribed_to_a_missing_topic_changes_nothing() -> None:
    # The extra missing topic makes Kafka take its heterogeneous path; the ranges of
    # the existing topic are those of the homogeneous one.
    def request(b_topics: list[str]) -> AssignmentRequest:
        members = {"a": {"topics": ["t"]}, "b": {"topics": b_topics}, "c": {"topics": ["t"]}}
        return validate_request(
            {"strategy": "server-range", "topics": {"t": 7}, "members": members}
        )

    expected = {
        "a": [("t", 0), ("t", 1), ("t", 2)],
        "b": [("t", 3), ("t", 4)],
        "c": [("t", 5), ("t", 6)],
    }
    assert run(request(["t"])) == expected
    assert run(request(["t", "gone"])) == expected


def test_owned_partitions_do_not_stick() -> None:
    request = validate_request(
        {
            "strategy": "server-range",
            "topics": {"t": 4},
            "members": {
                "a": {"topics": ["t"], "owned": [["t", 3], ["t", 2]], "generation": 5},
                "b": {"topics": ["t"], "owned": [["t", 0]], "generation": 5},
            },
        }
    )
    assert run(request) == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}
