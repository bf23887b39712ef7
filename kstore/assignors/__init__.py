"""Kafka's partition assignors, exact re-implementations behind one contract.

Ask for a strategy by its Kafka name::

    from kstore.assignors import assign, parse_request
    result = assign(parse_request('{"strategy": "range", ...}'))
"""

from __future__ import annotations

import importlib

from kstore.assignors._base import Assignor
from kstore.assignors._contract import (
    Assignment,
    AssignmentRequest,
    AssignmentResult,
    ContractError,
    MemberSubscription,
    TopicPartition,
    normalise,
    parse_request,
    parse_requests,
    validate_request,
)

__all__ = [
    "Assignment",
    "AssignmentRequest",
    "AssignmentResult",
    "Assignor",
    "ContractError",
    "MemberSubscription",
    "TopicPartition",
    "assign",
    "get_assignor",
    "parse_request",
    "parse_requests",
    "strategies",
    "validate_request",
]

# Kafka name -> "module:attribute" of the Assignor instance. Modules load on first use.
_REGISTRY: dict[str, str] = {
    "range": "kstore.assignors.range:RANGE",
    "roundrobin": "kstore.assignors.roundrobin:ROUNDROBIN",
    "sticky": "kstore.assignors.sticky:STICKY",
    "cooperative-sticky": "kstore.assignors.sticky:COOPERATIVE_STICKY",
    "uniform": "kstore.assignors.uniform:UNIFORM",
    "server-range": "kstore.assignors.server_range:SERVER_RANGE",
    "optimal": "kstore.assignors.optimal:OPTIMAL",
}

_loaded: dict[str, Assignor] = {}


def strategies() -> list[str]:
    """The strategy names this build answers, in registry order."""
    return list(_REGISTRY)


def get_assignor(name: str) -> Assignor:
    """The assignor registered under ``name``; ``ContractError`` if there is none."""
    found = _loaded.get(name)
    if found is not None:
        return found
    target = _REGISTRY.get(name)
    if target is None:
        raise ContractError(f"strategy: unknown strategy {name!r} (known: {', '.join(_REGISTRY)})")
    module_name, attribute = target.split(":")
    assignor: Assignor = getattr(importlib.import_module(module_name), attribute)
    _loaded[name] = assignor
    return assignor


def assign(request: AssignmentRequest) -> AssignmentResult:
    """Answer one request with the strategy it names."""
    assignor = get_assignor(request.strategy)
    return assignor.assign(normalise(request, owned=assignor.reads_owned))
