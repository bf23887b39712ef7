"""Scenario YAML is loaded safely, and Kafka's bounds hold in scenarios too.

Before: a 209-byte scenario of nested aliases (``*a`` nine deep) kept ``simulate``
busy for over a minute expanding billions of nodes; any size was read.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kstore.simulate.scenario import MAX_SCENARIO_CHARS, ScenarioError, parse_scenario

LAUGHS = """name: laughs
topics: {t: 1}
members: [{name: a, topics: [t]}]
x0: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
x1: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
x2: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
x3: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
x4: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
x5: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
x6: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
x7: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
x8: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""

GOOD = "name: s\ntopics: {t: 3}\nmembers: [{name: a, topics: [t]}]\n"


def test_nested_aliases_are_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(tmp_path / "s.duckdb"),
         "simulate", str(path)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert time.monotonic() - started < 20
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"kstore: error: {path}:5: YAML aliases")
    assert out.stderr.count("\n") == 1


def test_one_alias_is_refused_too() -> None:
    text = GOOD + "steps:\n  - at: 1s\n    subscribe: &s {member: a, topics: [t]}\n"
    text += "  - at: 2s\n    subscribe: *s\n"
    with pytest.raises(ScenarioError, match=r"^s:8: YAML aliases"):
        parse_scenario(text, "s")


def test_size_and_depth_are_bounded() -> None:
    big = GOOD + "# " + "x" * MAX_SCENARIO_CHARS + "\n"
    with pytest.raises(ScenarioError, match=r"^s:1: .* characters; a scenario has at most"):
        parse_scenario(big, "s")
    deep = GOOD + "extra: " + "[" * 100 + "]" * 100 + "\n"
    with pytest.raises(ScenarioError, match=r"^s:\d+: nested more than 64 deep"):
        parse_scenario(deep, "s")
    deeper = GOOD + "extra: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ScenarioError, match="nested more than"):
        parse_scenario(deeper, "s")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("name: s\ntopics: {t: 2147483648}\nmembers: [{name: a, topics: [t]}]\n", "s:2: topics.t"),
        (
            "name: s\ntopics: {t: 2000000000}\nmembers: [{name: a, topics: [t]}]\n",
            "s:1: scenario: topics: 2,000,000,000 partitions in all",
        ),
        ("name: s\ntopics: {'a b': 1}\nmembers: [{name: a, topics: [t]}]\n", 's:2: topics."a b"'),
        ("name: s\ntopics: {t: 1}\nmembers: [{name: a, topics: ['..']}]\n", "s:3: members[0]"),
        (
            "name: s\ntopics: {a: 6000000, b: 6000000}\nmembers: [{name: a, topics: [a]}]\n",
            "s:1: scenario: topics: 12,000,000 partitions in all",
        ),
        ("name: s\ntopics: {t: 1}\nmembers: [{count: 2000000000, topics: [t]}]\n", "s:3: members"),
        (GOOD + "start: 0001-01-01T00:00:00+01:00\n", "s:4: start"),
        (GOOD + "until: 99999999999999999999\n", "s:4: until"),
        (GOOD + "settings: {session_timeout_ms: 2147483648}\n", "s:4: settings.session_timeout_ms"),
        (GOOD + "steps: [{at: 1s, partitions: {topic: t, count: 2147483648}}]\n", "s:4: steps[0]"),
        # more than kstore can simulate (10,000,000 ran out of 4 GB at the first rebalance)
        (
            "name: s\ntopics: {t: 10000000}\nmembers: [{name: a, topics: [t]}]\n",
            "s:1: scenario: topics: 10,000,000 partitions in all; kstore simulates at most 200,000",
        ),
        (
            GOOD + "steps: [{at: 1s, partitions: {topic: t, count: 5000000}}]\n",
            "s:4: steps[0].partitions.count: 5,000,000 partitions in all; kstore simulates at "
            "most 200,000",
        ),
        (
            "name: s\ntopics: {t: 1}\nmembers: [{count: 100001, topics: [t]}]\n",
            "s:3: members[0].count: Input should be less than or equal to 100,000",
        ),
    ],
)
def test_scenario_bounds_name_the_line_and_field(text: str, where: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text, "s")
    assert str(refused.value).startswith(where), str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_key_with_a_line_break_stays_one_line() -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario('"a\\nb": 1\n' + GOOD, "s")
    assert str(refused.value) == 's:1: "a\\nb": unknown key'


def test_a_subscription_to_a_topic_the_scenario_never_has_is_named() -> None:
    # A typo in a member's topics ran a group that never got a partition, exit 0.
    with pytest.raises(ScenarioError) as refused:
        parse_scenario("name: s\ntopics: {orders: 4}\nmembers: [{count: 2, topics: [order]}]\n")
    assert str(refused.value) == (
        "<scenario>:3: members[0].topics[0]: topic 'order' is not one of the scenario's "
        "topics and no partitions step makes it; did you mean orders?"
    )
    subscribes = (
        "name: s\ntopics: {orders: 4}\nmembers: [{count: 2, topics: [orders]}]\nsteps:\n"
        "  - at: 1m\n    subscribe: {member: c-000, topics: [orders, payments]}\n"
    )
    with pytest.raises(ScenarioError, match=r"^s:6: steps\[0\]\.subscribe\.topics\[1\]: "):
        parse_scenario(subscribes, "s")
    # A topic a step makes later may be subscribed to before it exists, as in Kafka.
    made = subscribes + "  - at: 2m\n    partitions: {topic: payments, count: 3}\n"
    assert "payments" in parse_scenario(made).steps[0].subscribe.topics  # type: ignore[union-attr]


def test_a_partitions_step_that_shrinks_a_topic_is_named() -> None:
    # The run stopped at that step: "topic a: Kafka cannot reduce partitions (4 -> 2)",
    # exit 1, no line.
    text = (
        "name: s\ntopics: {a: 2}\nmembers: [{count: 2, topics: [a]}]\nsteps:\n"
        "  - at: 2m\n    partitions: {topic: a, count: 3}\n"
        "  - at: 1m\n    partitions: {topic: a, count: 4}\n"
    )
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text, "s")
    assert str(refused.value) == (
        "s:6: steps[0].partitions.count: topic 'a' has 4 partitions then; "
        "Kafka cannot reduce them (to 3)"
    )
    assert parse_scenario(text.replace("count: 3", "count: 5"), "s").steps[0].at == 120_000
