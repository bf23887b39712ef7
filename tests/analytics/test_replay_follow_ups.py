"""A replay with the source's own strategy gives back its history, every protocol."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstore.analytics.replay import replay
from kstore.commands.simulate import _override
from kstore.model import AssignmentCompleted
from kstore.simulate import load_scenario, run_scenario
from kstore.store.log import Store
from tests.store._stores import initialised_store

EXAMPLES = sorted(Path(__file__).parents[2].joinpath("examples").glob("*.yaml"))


def _decisions(store: Store, group: str, timeline: str) -> list[dict[str, list[object]]]:
    out = []
    for stored in store.events(group=group, timeline=timeline):
        data = stored.event.data
        if isinstance(data, AssignmentCompleted):
            out.append({m: sorted(tps) for m, tps in data.assignment.items() if tps})
    return out


PROTOCOLS = [
    ("range", "eager"),
    ("roundrobin", "eager"),
    ("sticky", "eager"),
    ("cooperative-sticky", "cooperative"),
    ("uniform", "consumer"),
    ("server-range", "consumer"),
]


@pytest.mark.parametrize("strategy,protocol", PROTOCOLS)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_replay_with_the_sources_strategy_gives_back_its_history(
    tmp_path: Path, example: Path, strategy: str, protocol: str
) -> None:
    scenario = _override(load_scenario(example), strategy, protocol)
    store = initialised_store(tmp_path / "s.duckdb")
    result = run_scenario(scenario, store=store, timeline="sim", seed=1)
    cluster, group, _ = result.stream
    replay(store, cluster=cluster, group=group, strategy=strategy, source="sim")
    assert _decisions(store, group, f"replay/{strategy}") == _decisions(store, group, "sim")
