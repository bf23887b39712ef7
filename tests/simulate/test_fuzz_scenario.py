"""Fuzzing the scenario loader: any text, and valid scenarios with one value replaced by
any YAML value, give a ``Scenario`` or one ``ScenarioError`` line ``SOURCE:LINE: ...``
within a bound of time; never another exception."""

from __future__ import annotations

import time
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kstore.simulate.scenario import Scenario, ScenarioError, parse_scenario

BASE: dict[str, Any] = {
    "name": "s",
    "start": "2026-01-01T00:00:00Z",
    "topics": {"orders": 6, "audit": {"partitions": 2}},
    "members": [{"count": 3, "topics": ["orders"]}, {"name": "solo", "topics": ["audit"]}],
    "settings": {"session_timeout_ms": 10_000},
    "steps": [
        {"at": "1s", "join": {"name": "late", "topics": ["orders"]}},
        {"at": "5s", "partitions": {"topic": "orders", "count": 8}},
        {"at": "9s", "leave": "solo"},
    ],
}

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**31, 2**63, 10**30, -1, 0, "..", "x" * 250, "1h", "-5s", "0001-01-01"])
    | st.floats(allow_nan=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*here, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += _paths(inner, (*here, i))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


def _loads_or_says_where(text: str) -> None:
    started = time.monotonic()
    try:
        assert isinstance(parse_scenario(text, "fuzz.yaml"), Scenario)
    except ScenarioError as exc:
        message = str(exc)
        assert message.startswith("fuzz.yaml:") and "\n" not in message, message
        assert message.split(":")[1].isdigit(), message
    assert time.monotonic() - started < 5


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(data=st.data())
def test_a_valid_scenario_with_one_value_replaced(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_paths(BASE)))
    changed = _replaced(BASE, path, data.draw(_values))
    _loads_or_says_where(yaml.safe_dump(changed, allow_unicode=True))


@_SETTINGS
@given(text=st.text(max_size=200) | st.text(alphabet="[]{}:-&*!|>'\"#\n ab1", max_size=80))
@example(text="[]:")  # a list as a key: a TypeError from the loader (found by this test)
@example(text="a: 1\n{b: 2}: 3")
def test_any_text(text: str) -> None:
    _loads_or_says_where(text)
