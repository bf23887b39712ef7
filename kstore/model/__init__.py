"""The group model: events, the fold, stream ids, event ids and the strategy catalogue.

Pure data and rules, no I/O: ``kstore.store`` persists these events, the protocol and
the recorders produce them, analytics reads what the store projects from them.
"""

from __future__ import annotations

from kstore.model.events import (
    EVENT_TYPES,
    AssignmentCompleted,
    AssignmentNotTakenUp,
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
    format_span,
    format_time,
    parse_event,
    parse_event_line,
    parse_event_lines,
)
from kstore.model.fold import Applied, GroupState, Member, Rebalance, fold
from kstore.model.ids import event_id
from kstore.model.strategies import CATALOGUE, Protocol, Strategy, protocol_of, strategy

__all__ = [
    "CATALOGUE",
    "EVENT_TYPES",
    "Applied",
    "AssignmentCompleted",
    "AssignmentNotTakenUp",
    "Event",
    "EventData",
    "EventError",
    "GroupState",
    "Member",
    "MemberJoined",
    "MemberLeft",
    "MemberReplaced",
    "Protocol",
    "Rebalance",
    "RebalanceStarted",
    "Strategy",
    "StreamId",
    "SubscriptionChanged",
    "TopicChanged",
    "TopicDeleted",
    "event_id",
    "fold",
    "format_span",
    "format_time",
    "parse_event",
    "parse_event_line",
    "parse_event_lines",
    "protocol_of",
    "strategy",
]
