"""The event-sourced history store: events, the fold, and the DuckDB log behind them.

``kstore.store`` is the only package that knows DuckDB, SQLAlchemy and alembic; the
rest of kstore speaks ``Event`` and ``GroupState``. The storage side is imported on
first use, so code that only needs events and the fold does not load DuckDB.
"""

from __future__ import annotations

from kstore.store.events import (
    EVENT_TYPES,
    AssignmentCompleted,
    Event,
    EventData,
    EventError,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
    format_time,
    parse_event,
    parse_event_line,
    parse_event_lines,
)
from kstore.store.fold import GroupState, Member, Rebalance, fold

__all__ = [
    "EVENT_TYPES",
    "AssignmentCompleted",
    "Event",
    "EventData",
    "EventError",
    "GroupState",
    "Member",
    "MemberJoined",
    "MemberLeft",
    "MemberReplaced",
    "Rebalance",
    "RebalanceStarted",
    "StreamId",
    "SubscriptionChanged",
    "TopicChanged",
    "TopicDeleted",
    "fold",
    "format_time",
    "parse_event",
    "parse_event_line",
    "parse_event_lines",
]
