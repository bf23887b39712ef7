"""Scenarios run on Kafka's group protocol (``kstore.protocol``), written to the store."""

from __future__ import annotations

from kstore.simulate.generate import KINDS, generate
from kstore.simulate.runner import RunResult, run_scenario
from kstore.simulate.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from kstore.simulate.summary import Summary, summarise

__all__ = [
    "KINDS",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "Summary",
    "generate",
    "load_scenario",
    "parse_scenario",
    "run_scenario",
    "summarise",
]
