"""kstore: an event-sourced history store for Kafka consumer-group rebalances.

The top level holds the stable, pure parts and the errors (one hierarchy under
``KstoreError``, see ``kstore.errors``); the store, simulator, recorders, analytics
and Spark pipeline live in their own packages (``kstore.store``, ``kstore.simulate``,
``kstore.record``, ``kstore.analytics``, ``kstore.spark``).
"""

from __future__ import annotations

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
