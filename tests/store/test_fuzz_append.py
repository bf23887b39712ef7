"""Fuzzing ``append`` with generated JSON: nothing is stored unless the whole input is
valid, every refusal is one line naming a line and a field, and the analytics of the
store answer afterwards as before.

Inputs: valid events (``events_gen``) turned to JSON, with one value somewhere replaced by
any JSON value (huge and negative integers, floats, odd strings, nested lists and
objects), and JSON that is not an event at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore._errors import UsageError
from kstore.analytics import run_query
from kstore.model import AssignmentCompleted, MemberJoined, RebalanceStarted, TopicChanged
from kstore.model.events import parse_event_lines
from kstore.store.log import Store
from tests.store.events_gen import make_event, streams

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**31 - 1, 2**31, -(2**31) - 1, 2**63, 10**30, -1, 0])
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(["", ".", "..", "x" * 250, "0001-01-01T00:00:00+01:00", "a b"])
)
# Kafka's edges and what lies just past them, drawn as often as all other JSON.
_edges = st.sampled_from(
    [2**31 - 1, 2**31, 2**63, 10**30, -1, "..", "x" * 250, "a b", "\ud800", "",
     "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "1969-12-31T23:59:59Z"]
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value``, the leaves (where the edges matter) first."""
    found = [] if isinstance(value, dict | list) and value else [here]
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


@st.composite
def _inputs(draw: st.DrawFn) -> list[str]:
    events = draw(streams(max_size=6))
    raws: list[Any] = [e.to_dict() for e in events]
    if raws and draw(st.booleans()):
        i = draw(st.integers(0, len(raws) - 1))
        path = draw(st.sampled_from(_paths(raws[i])))
        raws[i] = _replaced(raws[i], path, draw(_edges | _json))
    if draw(st.booleans()):
        raws.insert(draw(st.integers(0, len(raws))), draw(_json))
    return [json.dumps(raw) for raw in raws]


def _counts(store: Store) -> tuple[int, int]:
    positions = [stored.position for stored in store.events()]
    return len(positions), max(positions, default=0)


_QUERIES = ("metrics", "timeline", "topics", "windows", "anomalies", "partition_history")


def _answers(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    return {name: run_query(store, name, {"group": "steady"}).rows for name in _QUERIES}


def test_generated_json_into_append(tmp_path: Path) -> None:
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    steady = [
        TopicChanged(topic="t1", partitions=4),
        MemberJoined(member_id="a", topics=["t1"]),
        MemberJoined(member_id="b", topics=["t1"]),
        RebalanceStarted(generation=1, reason="join"),
        AssignmentCompleted(
            generation=1,
            strategy="range",
            assignment={"a": [("t1", 0), ("t1", 1)], "b": [("t1", 2), ("t1", 3)]},
        ),
    ]
    store.append([make_event(d, i, group="steady") for i, d in enumerate(steady)])
    before = _answers(store)
    outcomes = {"stored": 0, "refused": 0}

    @settings(
        max_examples=250,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(lines=_inputs())
    def append(lines: list[str]) -> None:
        had = _counts(store)
        try:
            events = parse_event_lines(lines)
            result = store.append(events)
        except UsageError as exc:
            message = str(exc)
            assert message and "\n" not in message and "Traceback" not in message
            # a line and its field, or an id stored (or given twice) as another fact
            assert message.startswith(("line ", "event id ")), message
            assert _counts(store) == had  # a rejected batch stores nothing
            outcomes["refused"] += 1
            return
        assert result.stored + result.already == len({e.event_id for e in events})
        outcomes["stored"] += 1

    append()
    assert outcomes["refused"] > 0 and outcomes["stored"] > 0, outcomes
    # the analytics answer, for the fuzzed streams too, and the untouched stream's as before
    for name in _QUERIES:
        run_query(store, name, {})
    assert _answers(store) == before
