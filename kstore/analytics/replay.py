"""Replay: a timeline's history decided again by another strategy.

The membership, subscription and topic events of the source timeline are copied to the
new timeline as they are (same times), and so are its ``RebalanceStarted`` (the
reasons); every ``AssignmentCompleted`` is replaced by the strategy's own decision on
the replay's state at that point, whose ``owned`` partitions are the replay's previous
assignment (the fold of the replay's own events). The replay numbers its generations
itself. Under a cooperative strategy, a round that takes partitions from a member is
followed by a second round (``RebalanceStarted`` with reason ``cooperative follow-up``
and its ``AssignmentCompleted``, at the same time), as Kafka's consumers do.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from kstore._errors import UsageError
from kstore.assignors import TopicPartition, assign, get_assignor
from kstore.store.events import (
    AssignmentCompleted,
    Event,
    EventData,
    RebalanceStarted,
    StreamId,
)
from kstore.store.fold import GroupState
from kstore.store.log import Store

__all__ = ["ReplayResult", "protocol_of", "replay", "replay_events"]

_COOPERATIVE = frozenset({"cooperative-sticky"})
_CONSUMER = frozenset({"uniform", "server-range"})
_BATCH_EVENTS = 1000
_BATCH_ENTRIES = 1_000_000
"""A replay appends its events in batches (one transaction each) of at most this many
events or, counting each decision's assigned partitions, about this many entries."""


def protocol_of(strategy: str) -> Literal["eager", "cooperative", "consumer"]:
    """The rebalance protocol a strategy runs under: eager, cooperative or consumer."""
    if strategy in _COOPERATIVE:
        return "cooperative"
    return "consumer" if strategy in _CONSUMER else "eager"


@dataclass(frozen=True, slots=True)
class ReplayResult:
    stream: StreamId
    events: int
    rebalances: int
    follow_ups: int
    seconds: float
    assignor_seconds: float
    warnings: tuple[str, ...] = ()
    """The assignor's warnings, each with the replay's generation it came at."""


class _Replayer:
    def __init__(self, target: StreamId, strategy: str) -> None:
        self.target = target
        self.strategy = strategy
        self.protocol = protocol_of(strategy)
        self.state = GroupState()
        self.generation = 0
        self.rebalances = 0
        self.follow_ups = 0
        self.assignor_seconds = 0.0
        self.warnings: list[str] = []

    def _event(self, source: Event, data: EventData, suffix: str = "") -> Event:
        event = Event(
            event_id=f"{source.event_id}@{self.target.timeline}{suffix}"[:200],
            cluster=self.target.cluster,
            group=self.target.group,
            timeline=self.target.timeline,
            at=source.at,
            data=data,
        )
        self.state.apply(event)
        return event

    def _decide(self, source: Event, suffix: str = "") -> Event:
        request = self.state.to_request(self.strategy)
        started = time.perf_counter()
        result = assign(request)
        self.assignor_seconds += time.perf_counter() - started
        self.warnings.extend(f"generation {self.generation}: {w}" for w in result.warnings)
        self.rebalances += 1
        # The assignor's result is validated already: building the event does not check it again.
        data = AssignmentCompleted.model_construct(
            generation=self.generation,
            strategy=self.strategy,
            assignment={m: list(tps) for m, tps in result.assignment.items()},
            protocol=self.protocol,
        )
        return self._event(source, data, suffix)

    def _took(self, before: dict[str, tuple[TopicPartition, ...]]) -> bool:
        """Whether the latest decision took a partition from a member that stays."""
        after = self.state.assignment
        members = self.state.members
        return any(
            not set(after.get(m, ())).issuperset(tps) for m, tps in before.items() if m in members
        )

    def feed(self, source: Event) -> Iterator[Event]:
        data = source.data
        if isinstance(data, RebalanceStarted):
            self.generation += 1
            yield self._event(
                source, RebalanceStarted(generation=self.generation, reason=data.reason)
            )
        elif isinstance(data, AssignmentCompleted):
            if self.state.rebalance is None:
                self.generation += 1
            before = self.state.assignment
            yield self._decide(source)
            if self.protocol == "cooperative" and self._took(before):
                self.generation += 1
                self.follow_ups += 1
                reason = RebalanceStarted(
                    generation=self.generation, reason="cooperative follow-up"
                )
                yield self._event(source, reason, "/follow-up-start")
                yield self._decide(source, "/follow-up")
        else:
            yield self._event(source, data)


def replay_events(events: Iterable[Event], target: StreamId, strategy: str) -> Iterator[Event]:
    """The replay's events for a source stream's ``events`` (pure: nothing is stored)."""
    get_assignor(strategy)
    replayer = _Replayer(target, strategy)
    for event in events:
        yield from replayer.feed(event)


def replay(
    store: Store,
    *,
    group: str,
    strategy: str,
    cluster: str = "default",
    source: str = "recorded",
    timeline: str | None = None,
) -> ReplayResult:
    """Replay the stream (cluster, group, source) with ``strategy`` into a new timeline."""
    get_assignor(strategy)
    target = StreamId(cluster, group, timeline or f"replay/{strategy}")
    known = {info.stream for info in store.streams()}
    if StreamId(cluster, group, source) not in known:
        raise UsageError(f"no stream {cluster}/{group}/{source} in the store")
    if target in known:
        raise UsageError(f"timeline {target.timeline!r} of {cluster}/{group} exists already")
    started = time.perf_counter()
    replayer = _Replayer(target, strategy)
    batch: list[Event] = []
    entries = count = 0
    # The replay decides every assignment itself: the source's are not read.
    source_events = store.events(cluster=cluster, group=group, timeline=source, assignments=False)
    for stored in source_events:
        for event in replayer.feed(stored.event):
            batch.append(event)
            if isinstance(event.data, AssignmentCompleted):
                entries += sum(map(len, event.data.assignment.values()))
        if len(batch) >= _BATCH_EVENTS or entries >= _BATCH_ENTRIES:
            store.append(batch)
            count += len(batch)
            batch = []
            entries = 0
    store.append(batch)
    count += len(batch)
    return ReplayResult(
        target,
        count,
        replayer.rebalances,
        replayer.follow_ups,
        time.perf_counter() - started,
        replayer.assignor_seconds,
        tuple(replayer.warnings),
    )
