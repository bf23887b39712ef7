"""The projections' value coding: dicts for few values, Arrow for many, the same answer
(None coded -1)."""

from __future__ import annotations

import random

import pytest

from kstore.store import analytics_rows
from kstore.store.analytics_rows import _encoded


@pytest.mark.parametrize("size", [0, 1, 7, 999, 1000, 4321])
def test_both_ways_code_alike(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(size)
    values = [rng.choice([None, "a", "b", "consumer-1", "é"]) for _ in range(size)]
    names, codes = _encoded(values)
    expected = list(dict.fromkeys(v for v in values if v is not None))
    assert names == expected
    assert [None if c < 0 else names[c] for c in codes.tolist()] == values
    for threshold in (0, 10**9):  # each way forced
        monkeypatch.setattr(analytics_rows, "_ARROW_FROM", threshold)
        other_names, other_codes = _encoded(values)
        assert other_names == names and other_codes.tolist() == codes.tolist()
