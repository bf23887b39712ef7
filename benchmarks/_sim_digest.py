"""Digests of simulated runs, one line each, to compare the simulator before and after a
speed change: ``PYTHONPATH=<checkout> python benchmarks/_sim_digest.py [--quick] > out``
for each checkout, then ``diff`` the two outputs.

Each line: the run's name, how many events it emitted, a digest of every event (its
whole ``to_dict``, in order), and its ownership figures and refusals. The runs: the
generated kinds under every protocol and the strategies that go with it, several seeds
and sizes, and the examples/*.yaml scenarios.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from kstore.simulate import generate, load_scenario, run_scenario
from kstore.simulate.generate import KINDS
from kstore.simulate.scenario import Scenario

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

STRATEGIES = {
    "eager": ("range", "roundrobin", "sticky", "cooperative-sticky"),
    "cooperative": ("cooperative-sticky",),
    "consumer": ("uniform", "server-range"),
}


def _runs(quick: bool) -> Iterator[tuple[str, Scenario, int]]:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for seed in (0, 1, 5):
            yield f"{path.stem}/seed={seed}", load_scenario(path), seed
    sizes = ((3, 40), (12, 120), (40, 200))
    if not quick:
        sizes = ((3, 60), (12, 200), (40, 400), (100, 150))
    seeds = (1, 2) if quick else (1, 2, 3)
    for kind in KINDS:
        for protocol, strategies in STRATEGIES.items():
            for strategy in strategies:
                for members, steps in sizes:
                    for seed in seeds:
                        scenario = generate(
                            kind,
                            members=members,
                            steps=steps,
                            seed=seed,
                            protocol=protocol,  # type: ignore[arg-type]
                        ).model_copy(update={"strategy": strategy})
                        name = f"{kind}/{protocol}/{strategy}/{members}x{steps}/seed={seed}"
                        yield name, scenario, seed


def main() -> None:
    for name, scenario, seed in _runs("--quick" in sys.argv):
        result = run_scenario(scenario, store=None, timeline="sim/digest", seed=seed)
        digest = hashlib.sha256()
        for event in result.sim.emitted:
            digest.update(json.dumps(event.to_dict(), sort_keys=True).encode())
        ledger = result.sim.ledger
        figures = (ledger.unowned_ms, ledger.longest_unowned_ms, ledger.moves)
        print(
            name,
            len(result.sim.emitted),
            digest.hexdigest()[:16],
            figures,
            result.sim.rebalances,
            hashlib.sha256(repr(result.sim.refused).encode()).hexdigest()[:8],
            flush=True,
        )


if __name__ == "__main__":
    main()
