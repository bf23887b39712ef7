"""``server-range``: the group coordinator's ``RangeAssignor`` (KIP-848).

Members are sorted as the client assignors sort them (static members by instance id
first); each topic's subscribers then receive contiguous ranges in that order, the
first ``partitions % subscribers`` one partition more. The coordinator's assignor does
not read the members' current assignment nor racks, so neither does this one.

Kafka picks a homogeneous or a heterogeneous code path from the subscribed topic
*names* (missing topics included). Both paths give every existing topic's subscribers
the same ranges, so the result does not depend on the path and none is chosen here.
"""

from __future__ import annotations

from kstore.assignors._contract import AssignmentRequest, AssignmentResult
from kstore.assignors._range_common import (
    Dealer,
    ordered_members,
    topic_subscribers,
)

__all__ = ["SERVER_RANGE", "ServerRangeAssignor"]


class ServerRangeAssignor:
    """The coordinator-side range assignor; ignores owned partitions and racks."""

    name = "server-range"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        order = ordered_members(request)
        subscribers = topic_subscribers(request, order)
        dealer = Dealer(request, order)
        dealer.all_ranges(request.topics, subscribers, {})
        return dealer.result()


SERVER_RANGE = ServerRangeAssignor()
