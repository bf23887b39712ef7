"""``roundrobin``: Kafka's client ``RoundRobinAssignor``.

Members stand in a circle in Kafka's order (static members by instance id first, then
by member id). Topics are walked in name order, each topic's partitions in number
order; every partition goes to the next member of the circle that subscribes to its
topic, and the cursor carries over from one topic to the next.

Within one topic the members that subscribe to it are served in turn, so the walk is
computed per topic: the first subscriber at or after the cursor gets partition 0 and
every ``len(subscribers)``-th partition after it, the next subscriber the following
ones, and the cursor ends just past the member that took the last partition.
"""

from __future__ import annotations

from kstore.assignors._contract import AssignmentRequest, AssignmentResult
from kstore.assignors._range_common import (
    Dealer,
    ordered_members,
    topic_subscribers,
)

__all__ = ["ROUNDROBIN", "RoundRobinAssignor"]


class RoundRobinAssignor:
    """The classic round-robin assignor (ignores owned partitions and racks)."""

    name = "roundrobin"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        order = ordered_members(request)
        subscribers = topic_subscribers(request, order)
        dealer = Dealer(request, order)
        dealer.round_robin(request.topics, subscribers)
        return dealer.result()


ROUNDROBIN = RoundRobinAssignor()
