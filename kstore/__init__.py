"""kstore: an event-sourced history store for Kafka consumer-group rebalances.

The top level holds the stable, pure parts and the errors (one hierarchy under
``KstoreError``, see ``kstore.errors``); the store, simulator, recorders, analytics
and Spark pipeline live in their own packages (``kstore.store``, ``kstore.simulate``,
``kstore.record``, ``kstore.analytics``, ``kstore.spark``). Names are loaded on first
use (``kstore._lazy``), so that a command starts with only what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstore._lazy import lazy

if TYPE_CHECKING:
    from kstore.assignors import (
        AssignmentRequest,
        AssignmentResult,
        ContractError,
        MemberSubscription,
        assign,
        get_assignor,
        parse_request,
        strategies,
    )
    from kstore.errors import EventError, KstoreError, OffsetsDecodeError, UsageError
    from kstore.partitioner import partition_for_key
    from kstore.protocol.find_coordinator import coordinator_partition

__all__ = [
    "AssignmentRequest",
    "AssignmentResult",
    "ContractError",
    "EventError",
    "KstoreError",
    "MemberSubscription",
    "OffsetsDecodeError",
    "UsageError",
    "__version__",
    "assign",
    "coordinator_partition",
    "get_assignor",
    "parse_request",
    "partition_for_key",
    "strategies",
]

__version__ = "0.1.0"

_ASSIGNORS = (
    "AssignmentRequest",
    "AssignmentResult",
    "ContractError",
    "MemberSubscription",
    "assign",
    "get_assignor",
    "parse_request",
    "strategies",
)
_ERRORS = ("EventError", "KstoreError", "OffsetsDecodeError", "UsageError")
__getattr__ = lazy(
    __name__,
    dict.fromkeys(_ASSIGNORS, "kstore.assignors")
    | dict.fromkeys(_ERRORS, "kstore.errors")
    | {
        "partition_for_key": "kstore.partitioner",
        "coordinator_partition": "kstore.protocol.find_coordinator",
    },
)
