"""Kafka's partition assignors, exact re-implementations behind one contract.

The plain names are Apache Kafka's Java assignors; ``librdkafka:<name>`` are librdkafka's
(2.16), which decide differently on the same request.

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
    "reads_owned",
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
    "librdkafka:range": "kstore.assignors._librdkafka_range:LIBRDKAFKA_RANGE",
    "librdkafka:roundrobin": "kstore.assignors._librdkafka_range:LIBRDKAFKA_ROUNDROBIN",
    "librdkafka:sticky": "kstore.assignors._librdkafka_sticky:LIBRDKAFKA_STICKY",
    "librdkafka:cooperative-sticky": (
        "kstore.assignors._librdkafka_sticky:LIBRDKAFKA_COOPERATIVE_STICKY"
    ),
    "kafka-python:range": "kstore.assignors._kafka_python:KAFKA_PYTHON_RANGE",
    "kafka-python:roundrobin": "kstore.assignors._kafka_python:KAFKA_PYTHON_ROUNDROBIN",
    "kafka-python:sticky": "kstore.assignors._kafka_python_sticky:KAFKA_PYTHON_STICKY",
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
        from kstore.model.strategies import unknown_strategy

        raise ContractError(f"strategy: {unknown_strategy(name, list(_REGISTRY))}")
    module_name, attribute = target.split(":")
    assignor: Assignor = getattr(importlib.import_module(module_name), attribute)
    _loaded[name] = assignor
    return assignor


def reads_owned(strategy: str) -> bool:
    """Whether the strategy's answer depends on the members' ``owned`` partitions and
    ``generation`` at all (``Assignor.reads_owned``); True for a name no assignor has
    (its request is refused by ``assign`` as it is)."""
    try:
        return get_assignor(strategy).reads_owned
    except ContractError:
        return True


def assign(request: AssignmentRequest) -> AssignmentResult:
    """Answer one request with the strategy it names."""
    assignor = get_assignor(request.strategy)
    # An assignor with ``raw_owned`` reads owned partitions as the members sent them
    # (librdkafka hands owned partitions of deleted topics back to their owners).
    raw = getattr(assignor, "raw_owned", False)
    return assignor.assign(normalise(request, owned=assignor.reads_owned and not raw))
