"""Simulation speed: 10,000 steps of a 100-member group, beside the assignor time alone.

The assignor time is the limit: the same requests (each decision's request from the
fold, as the run made it) answered again without the protocol around them.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from kstore.assignors import assign
from kstore.simulate import generate, run_scenario
from kstore.store.events import AssignmentCompleted
from kstore.store.fold import GroupState

__all__ = ["main"]


def _case(kind: str, protocol: str, members: int, steps: int) -> tuple[str, float, float, int]:
    scenario = generate(kind, members=members, steps=steps, seed=1, protocol=protocol)  # type: ignore[arg-type]
    began = time.perf_counter()
    result = run_scenario(scenario, store=None, timeline="sim/bench", seed=1)
    total = time.perf_counter() - began
    # Rebuild every decision's request from the fold, then time the assignor alone.
    requests = []
    state = GroupState()
    for event in result.sim.emitted:
        if isinstance(event.data, AssignmentCompleted) and state.members:
            requests.append(state.to_request(event.data.strategy))
        state.apply(event)
    began = time.perf_counter()
    for request in requests:
        assign(request)
    assignor = time.perf_counter() - began
    return f"{kind} / {protocol}", total, assignor, len(requests)


def main(quick: bool) -> None:
    members, steps = (20, 500) if quick else (100, 10_000)
    table = Table(title=f"simulate: {steps} steps, {members} members")
    for column in ("case", "steps/s", "run s", "assignor s", "decisions", "assignor share"):
        table.add_column(column, justify="right" if column != "case" else "left")
    for kind, protocol in (
        ("steady-churn", "eager"),
        ("rolling-deploy", "cooperative"),
        ("autoscaling", "consumer"),
    ):
        name, total, assignor, decisions = _case(kind, protocol, members, steps)
        table.add_row(
            name,
            f"{steps / total:,.0f}",
            f"{total:.2f}",
            f"{assignor:.2f}",
            str(decisions),
            f"{assignor / total:.0%}",
        )
    Console().print(table)
