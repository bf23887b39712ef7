"""A replay with the source's own strategy gives back its history, every protocol."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstore.analytics.replay import replay
from kstore.commands.simulate import _override
from kstore.model import AssignmentCompleted
from kstore.simulate import load_scenario, run_scenario
from kstore.simulate.generate import generate
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


GENERATED = ["steady-churn", "autoscaling", "flapping-member", "rolling-deploy"]
"""Generated scenarios (``kstore simulate --generate``): under cooperative-sticky, 6 of 8
of them came back with rebalances added (rolling-deploy of 20 members: 549 recorded, 585
replayed): a member left while the source's follow-up round ran, and the replay decided
its follow-up before that event, then the source's round as one more."""


@pytest.mark.parametrize("strategy,protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "scenario",
    [*EXAMPLES, *GENERATED],
    ids=lambda s: f"generated-{s}" if isinstance(s, str) else s.stem,
)
def test_a_replay_with_the_sources_strategy_gives_back_its_history(
    tmp_path: Path, scenario: Path | str, strategy: str, protocol: str
) -> None:
    if isinstance(scenario, str):
        made = generate(scenario, members=5, steps=40, seed=0, protocol=protocol)
    else:
        made = load_scenario(scenario)
    store = initialised_store(tmp_path / "s.duckdb")
    result = run_scenario(_override(made, strategy, protocol), store=store, timeline="sim", seed=1)
    cluster, group, _ = result.stream
    replay(store, cluster=cluster, group=group, strategy=strategy, source="sim")
    assert _decisions(store, group, f"replay/{strategy}") == _decisions(store, group, "sim")
