"""A simulation's memory is bounded by its group's size, not by its run's length."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from kstore.simulate import generate, run_scenario, runner
from tests.store._stores import initialised_store


def _peak_mb(tmp_path: Path, steps: int) -> float:
    """The most Python memory a run of ``steps`` steps of 300 members held at once
    beyond what was held before it, into a store file, its batches appended in-process."""
    scenario = generate("steady-churn", members=300, steps=steps, seed=0)
    store = initialised_store(tmp_path / f"run-{steps}.duckdb")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = run_scenario(scenario, store=store, timeline="sim/x", seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.complete and result.appended > 3 * steps
    return (peak - before) / 1e6


def test_a_run_twice_as_long_holds_no_more_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The events were kept until a batch of 2,000 (growing to 16,000) was appended:
    # 1,000 members' rebalances, each a 3,000-entry assignment, held the whole run of
    # 4,000 steps (3.3 GB); twice the steps, twice the memory. Now a batch is appended
    # once its assignments hold FLUSH_HEAVY entries, whatever the run's length (here
    # 100,000: 111 rebalances of 300 members over 600 partitions, a few seconds' run).
    monkeypatch.setattr(runner, "FLUSH_HEAVY", 100_000, raising=False)
    monkeypatch.setenv("KSTORE_APPEND_APART", "0")  # one process: all its memory traced
    short, long = _peak_mb(tmp_path, 300), _peak_mb(tmp_path, 600)
    assert long < short * 1.15, f"{short:.0f} MB for 300 steps, {long:.0f} MB for 600"
