"""The projections' value coding: the distinct values in order of first appearance,
each value's index among them (None coded -1)."""

from __future__ import annotations

import random

import pytest

from kstore.store.analytics_rows import _encoded


@pytest.mark.parametrize("size", [0, 1, 7, 999, 1000, 4321])
def test_values_coded_in_order_of_first_appearance(size: int) -> None:
    rng = random.Random(size)
    values = [rng.choice([None, "a", "b", "consumer-1", "é"]) for _ in range(size)]
    names, codes = _encoded(values)
    assert names == list(dict.fromkeys(v for v in values if v is not None))
    assert [None if c < 0 else names[c] for c in codes.tolist()] == values
