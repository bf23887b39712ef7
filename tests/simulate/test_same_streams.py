"""Speed work must not change a single simulated event: the streams of the examples and of
a few generated scenarios, digested, are those of the simulator before it was made faster.

A change that is meant to alter simulated histories updates these digests, saying why.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kstore.simulate import generate, load_scenario, run_scenario
from kstore.simulate.scenario import Scenario

EXAMPLES = Path(__file__).parents[2] / "examples"

DIGESTS = {
    "autoscaling-10-40-10": "c183a3620d04fedc",
    "consumer-protocol": "837f79f6e70ecaac",
    "eager-vs-cooperative": "3db01d65ca939673",
    "flapping-member": "c9938dd0cd6ad402",
    "mixed-subscriptions": "c8be57ba76562ab4",
    "partition-expansion": "8641d598e2bf956c",
    "rolling-deploy-30": "35d3f6cb51ce3623",
    "static-restart": "1bd57f34144352e7",
    "steady-churn/cooperative": "d3bff9511c4c81b6",
    "autoscaling/eager": "d2af16c71ba3ca47",
    "flapping-member/consumer": "0cb77a0ab1545d57",
}


def _scenario(name: str) -> tuple[Scenario, int]:
    if "/" not in name:
        return load_scenario(EXAMPLES / f"{name}.yaml"), 0
    kind, protocol = name.split("/")
    return generate(kind, members=12, steps=60, seed=1, protocol=protocol), 1  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_stream_is_unchanged(name: str) -> None:
    scenario, seed = _scenario(name)
    result = run_scenario(scenario, store=None, timeline="sim/check", seed=seed)
    digest = hashlib.sha256()
    for event in result.sim.emitted:
        digest.update(json.dumps(event.to_dict(), sort_keys=True).encode())
    assert digest.hexdigest()[:16] == DIGESTS[name]
