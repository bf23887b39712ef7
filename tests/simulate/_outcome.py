"""What a simulated run gives, to compare two ways of running the same scenario: every
event (``to_dict``), the refusals and the ownership figures."""

from __future__ import annotations

from kstore.simulate import run_scenario
from kstore.simulate.scenario import Scenario

Outcome = tuple[list[dict[str, object]], list[str], int, int, int]


def outcome(scenario: Scenario, seed: int, timeline: str) -> Outcome:
    """``scenario`` run in memory with ``seed``: its events, refusals and figures."""
    result = run_scenario(scenario, store=None, timeline=timeline, seed=seed)
    sim = result.sim
    events = [event.to_dict() for event in sim.emitted]
    ledger = sim.ledger
    return events, sim.refused, ledger.unowned_ms, ledger.longest_unowned_ms, ledger.moves
