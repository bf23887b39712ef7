"""Exactness: every request Kafka's own assignors answered, answered the same."""

from __future__ import annotations

import pytest

from kstore.assignors import strategies
from tests.oracle import golden_strategies, validate_all

GOLDEN_STRATEGIES = golden_strategies()


def test_every_kafka_strategy_has_golden_files() -> None:
    assert set(GOLDEN_STRATEGIES) <= set(strategies())


@pytest.mark.parametrize("strategy", GOLDEN_STRATEGIES)
def test_matches_kafka(strategy: str) -> None:
    failures = validate_all(strategy)
    assert not failures, f"{len(failures)} mismatches, first: " + "\n".join(failures[:5])
