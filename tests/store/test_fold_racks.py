"""A recorded rack placement longer than the topic still gives a request every assignor answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kstore.assignors import assign, strategies
from kstore.model import Event, MemberJoined, TopicChanged, fold


@pytest.mark.parametrize("strategy", strategies())
def test_racks_listing_more_partitions_than_exist_are_trimmed(strategy: str) -> None:
    t0 = datetime(2026, 11, 21, tzinfo=UTC)
    racks = [["r1"], ["r2"], ["r1"], ["r2"]]  # four placements, two partitions
    events = [
        Event(group="g", at=t0, data=TopicChanged(topic="t", partitions=2, racks=racks)),
        Event(
            group="g",
            at=t0 + timedelta(seconds=1),
            data=MemberJoined(member_id="m1", topics=["t"], rack="r1"),
        ),
        Event(
            group="g",
            at=t0 + timedelta(seconds=2),
            data=MemberJoined(member_id="m2", topics=["t"], rack="r2"),
        ),
    ]
    request = fold(events).to_request(strategy)
    assert request.partition_racks == {"t": [["r1"], ["r2"]]}
    result = assign(request).assignment
    assert sorted(tp for tps in result.values() for tp in tps) == [("t", 0), ("t", 1)]
