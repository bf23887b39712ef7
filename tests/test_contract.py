"""The assignment contract's form: results, JSON Lines and bad input (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kstore.assignors import ContractError, assign, parse_request, strategies

GOOD = {
    "strategy": "range",
    "topics": {"orders": 6, "payments": 3},
    "members": {
        "consumer-a": {"topics": ["orders", "payments"], "owned": [["orders", 0]], "generation": 7},
        "consumer-b": {"topics": ["orders"]},
    },
}


def _kstore(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def _with(**changes: object) -> str:
    request = json.loads(json.dumps(GOOD))
    request.update(changes)
    return json.dumps(request)


@pytest.mark.parametrize(
    "strategy", ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range"]
)
def test_every_member_appears_and_lists_are_sorted(strategy: str) -> None:
    request = json.loads(json.dumps(GOOD))
    request["strategy"] = strategy
    request["members"]["idle"] = {"topics": ["missing-topic"]}
    result = assign(parse_request(json.dumps(request))).assignment
    assert list(result) == ["consumer-a", "consumer-b", "idle"]
    assert result["idle"] == []
    for partitions in result.values():
        assert partitions == sorted(partitions)
    assigned = sorted(tp for tps in result.values() for tp in tps)
    expected = sorted([("orders", p) for p in range(6)] + [("payments", p) for p in range(3)])
    if strategy != "cooperative-sticky":
        assert assigned == expected


def test_cli_answers_one_request_and_json_lines() -> None:
    one = _kstore("assign", stdin=json.dumps(GOOD, indent=2))
    assert one.returncode == 0, one.stderr
    assert list(json.loads(one.stdout)["assignment"]) == ["consumer-a", "consumer-b"]
    many = _kstore("assign", stdin=_with(strategy="roundrobin") + "\n" + _with() + "\n")
    assert many.returncode == 0, many.stderr
    lines = many.stdout.splitlines()
    assert len(lines) == 2
    assert json.loads(lines[1]) == json.loads(one.stdout)


def test_owned_partition_that_no_longer_exists_is_dropped_not_an_error() -> None:
    request = json.loads(json.dumps(GOOD))
    request["members"]["consumer-a"]["owned"] = [["orders", 99], ["gone", 0]]
    out = _kstore("assign", stdin=json.dumps(request))
    assert out.returncode == 0, out.stderr


def test_normalise_drops_each_members_missing_and_repeated_owned_partitions_only() -> None:
    """One claim over the request is checked at once; where it finds a repeat (here two
    members claiming one partition, which stays) each member is checked on its own."""
    from kstore.assignors import normalise, validate_request

    request = normalise(
        validate_request(
            {
                "strategy": "sticky",
                "topics": {"orders": 4},
                "members": {
                    "a": {"topics": ["orders"], "owned": [["orders", 0], ["orders", 1]]},
                    "b": {"topics": ["orders"], "owned": [["orders", 1], ["orders", 9]]},
                    "c": {"topics": ["orders"], "owned": [["orders", 2], ["orders", 2]]},
                    "d": {"topics": ["orders", "orders"], "owned": [["orders", 3]]},
                },
            }
        )
    )
    assert {m: (s.topics, s.owned) for m, s in request.members.items()} == {
        "a": (["orders"], [("orders", 0), ("orders", 1)]),
        "b": (["orders"], [("orders", 1)]),
        "c": (["orders"], [("orders", 2)]),
        "d": (["orders"], [("orders", 3)]),
    }
    clean = normalise(validate_request({**GOOD, "strategy": "sticky"}))
    assert clean.members == validate_request({**GOOD, "strategy": "sticky"}).members


BAD = [
    ("{not json", "not JSON"),
    ('["a list"]', "request"),
    (_with(strategy="nope"), "strategy"),
    (_with(topics={"orders": 0}), "topics.orders"),
    (_with(topics={"orders": "6"}), "topics.orders"),
    (_with(members={"b": {"owned": []}}), "members.b.topics"),
    (_with(members={"b": {"topics": ["orders"], "owned": [["orders", -1]]}}), "members.b.owned"),
    (_with(members={"b": {"topics": ["orders"], "owned": [["orders"]]}}), "members.b.owned"),
    (_with(members={"b": {"topics": ["orders"], "owned": [[1, 2]]}}), "members.b.owned"),
    (_with(members={"b": {"topics": ["orders"], "owned": [["orders", "1"]]}}), "members.b.owned"),
    (_with(members={"b": {"topics": ["orders"], "owned": [["orders", 1.5]]}}), "members.b.owned"),
    (_with(members={"b": {"topics": ["orders"], "owned": [["orders", True]]}}), "members.b.owned"),
]


@pytest.mark.parametrize(("text", "field"), BAD)
def test_bad_request_is_one_line_naming_the_field_exit_2(text: str, field: str) -> None:
    out = _kstore("assign", stdin=text)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert field in lines[0]


def test_bad_line_fails_the_whole_call_naming_the_line() -> None:
    out = _kstore("assign", stdin=_with() + "\n" + _with(topics={"orders": -2}) + "\n")
    assert out.returncode == 2
    assert out.stdout == ""
    assert "line 2" in out.stderr and "topics.orders" in out.stderr


def test_parse_request_raises_contract_error() -> None:
    with pytest.raises(ContractError, match="members"):
        parse_request('{"strategy": "range", "topics": {}}')


def test_registry_names_kafka_strategies() -> None:
    assert {
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
        "uniform",
        "server-range",
    } <= set(strategies())
