"""The strategy catalogue: one entry per assignor, each with its protocol."""

from __future__ import annotations

import pytest

from kstore.assignors import strategies
from kstore.model.strategies import CATALOGUE, UnknownStrategy, protocol_of, wire_protocol


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


def test_a_wire_name_is_classic_or_unknown() -> None:
    assert wire_protocol("cooperative-sticky") == "cooperative"
    assert wire_protocol("uniform") is None
    assert wire_protocol("my-own") is None
    assert wire_protocol(None) is None
