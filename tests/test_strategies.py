"""The strategy catalogue: one entry per assignor, each with its protocol."""

from __future__ import annotations

import pytest

from kstore._errors import did_you_mean
from kstore.assignors import strategies
from kstore.model.strategies import (
    CATALOGUE,
    UnknownStrategy,
    flavour_of,
    protocol_of,
    wire_protocol,
)


def test_the_catalogue_names_every_assignor_and_nothing_else() -> None:
    assert sorted(CATALOGUE) == sorted(strategies())


@pytest.mark.parametrize(
    ("name", "protocol"),
    [
        ("range", "eager"),
        ("sticky", "eager"),
        ("cooperative-sticky", "cooperative"),
        ("uniform", "consumer"),
        ("server-range", "consumer"),
    ],
)
def test_each_strategy_states_its_protocol(name: str, protocol: str) -> None:
    assert protocol_of(name) == protocol


def test_an_unknown_name_is_an_error_with_the_nearest_names() -> None:
    with pytest.raises(UnknownStrategy, match="did you mean cooperative-sticky"):
        protocol_of("cooperative-stiky")


def test_several_near_names_are_said_as_a_reader_says_them() -> None:
    with pytest.raises(UnknownStrategy) as said:
        protocol_of("rang")
    # was "did you mean range, server-range?"
    assert str(said.value).endswith("unknown strategy 'rang'; did you mean range or server-range?")
    assert did_you_mean(["a", "b", "c"]) == "did you mean a, b or c?"


def test_a_wire_name_is_classic_or_unknown() -> None:
    assert wire_protocol("cooperative-sticky") == "cooperative"
    assert wire_protocol("uniform") is None
    assert wire_protocol("my-own") is None
    assert wire_protocol(None) is None


@pytest.mark.parametrize(
    ("recorded", "client", "flavour"),
    [
        ("cooperative-sticky", "librdkafka 2.16.0", "librdkafka:cooperative-sticky"),
        ("range", "librdkafka", "librdkafka:range"),
        ("range", "kafka-python 3.0.12", "kafka-python:range"),
        ("sticky", "kafka-python 3.0.12", "kafka-python:sticky"),
        ("cooperative-sticky", "kafka-python 3.0.12", "cooperative-sticky"),
        ("range", "kstore 0.1.0", "range"),
        ("sticky", None, "sticky"),
        ("librdkafka:sticky", None, "librdkafka:sticky"),
        ("uniform", "librdkafka 2.16.0", "uniform"),
    ],
)
def test_a_recorded_decision_names_its_flavour(
    recorded: str, client: str | None, flavour: str
) -> None:
    assert flavour_of(recorded, client).name == flavour


def test_a_recorded_strategy_kstore_does_not_know_is_an_error() -> None:
    with pytest.raises(UnknownStrategy, match="'my-own'"):
        flavour_of("my-own", "librdkafka 2.16.0")
