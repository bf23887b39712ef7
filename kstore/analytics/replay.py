"""Replay: a timeline's history decided again by another strategy.

The membership, subscription and topic events of the source timeline are copied to the
new timeline as they are (same times), and so are its ``RebalanceStarted`` (the
reasons); every ``AssignmentCompleted`` is replaced by the strategy's own decision on
the replay's state at that point, whose ``owned`` partitions are the replay's previous
assignment (the fold of the replay's own events). The replay numbers its generations
itself. Under a cooperative strategy, a round that takes partitions from a member that
stays (of a topic it still subscribes to) is followed by a second round, as Kafka's
consumers do. Where the source's own cooperative decision took from a member too, the
source's next rebalance is that round and is replayed as it is. Else the replay makes
its own (``RebalanceStarted`` with reason ``cooperative follow-up`` and its
``AssignmentCompleted``, at the same time); the source's next rebalance, if nothing
changing membership, subscriptions or topics comes before it, is that follow-up and is
not replayed as another; what happens while that round runs (a member leaving) is part
of it, and the follow-up is decided at its end. A replay that makes no follow-up rounds
(eager, consumer) has none of the source's either: where the source's decision left its
follow-up due and the source's next rebalance is that round (nothing changing
membership, subscriptions or topics recorded before its end), the replay records
nothing for it, and its decision before answers the round's ``AssignmentCompleted``
too. The rule, with Kafka's reasons, is in docs/analytics.md.

The source's ``AssignmentNotTakenUp`` facts are read as well: a member that did not take
up a source decision does not take up the replay's decision of that rebalance either.
The replay's decision gives it what it holds in the replay, and the fact follows, with
the replay's generation. So a decision is made once its facts are seen (at the source's
next other event), and a follow-up round once the source's round it absorbs and that
round's facts are.

Each decision names its source timeline and the version of the source's
``AssignmentCompleted`` it answers (``source``, ``source_version``), so the log itself
says up to which source version a replay has decided (queries/coverage.sql).

``check_decisions`` asks another question, decision by decision: was each of the
source's assignments the strategy's answer to the request of its own moment? Each
decision is made on the source's state just before it (its members, subscriptions and
what they held in the source's previous assignment), never on an earlier answer of the
check's, so one assignment the group did not take up (a member whose SyncGroup failed
keeps what it held) shows in that rebalance only, as ``not-taken-up`` where the source
says so (``AssignmentNotTakenUp``).

The replay is deterministic (its event ids too), so an interrupted one is resumed: the
target's stored events are checked against the replay's, event for event, and folded
instead of decided again, and the source events after them are replayed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Literal, get_args

from kstore._errors import UsageError
from kstore._gc import cyclic_gc_paused
from kstore.assignors import TopicPartition, assign, get_assignor
from kstore.model._construct import construct
from kstore.model._timelines import new_timeline
from kstore.model.events import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    EventData,
    RebalanceStarted,
    StreamId,
)
from kstore.model.fold import GroupState
from kstore.model.ids import event_id
from kstore.model.strategies import (
    SAME,
    Strategy,
    UnknownStrategy,
    flavour_of,
    known_protocol,
    protocol_of,
)
from kstore.store.interface import EventStore, StoredEvent
from kstore.store.writer import Writer, stamp

__all__ = [
    "VERDICTS",
    "DecisionCheck",
    "ReplayResult",
    "check_decisions",
    "check_strategy",
    "cooperative",
    "holds_copy",
    "reads_assignments",
    "replay",
    "replay_events",
]


def _named(target: StreamId, source_id: str, suffix: str = "") -> tuple[object, ...]:
    """The name of a replay's event made for the source's event ``source_id`` (its id is
    ``event_id`` of it): the same on every run, so a stopped replay is resumed."""
    return ("replay", target, source_id, suffix)


def holds_copy(store: EventStore, target: StreamId, source: StoredEvent) -> bool:
    """Whether the replay ``target`` holds its copy of ``source``, a source event that is
    no ``AssignmentCompleted`` (a membership, subscription or topic event, a
    ``RebalanceStarted``, a not-taken-up fact), among its last three events: a copy is
    followed at most by a pending decision's settling (the decision and, under a
    cooperative strategy, its follow-up round's start and decision). False for a source
    event a replay makes no copy of (a round it absorbs, a fact that follows no
    decision): asked about the source's last event, that errs towards "not yet"."""
    wanted = event_id(*_named(target, source.event.event_id))
    last = store.version(target)
    found = store.events(
        cluster=target.cluster,
        group=target.group,
        timeline=target.timeline,
        from_version=max(1, last - 2),
        assignments=False,
    )
    return any(stored.event.event_id == wanted for stored in found)


_BATCH_EVENTS = 1000
_BATCH_ENTRIES = 1_000_000
"""A replay appends its events in batches (one transaction each) of at most this many
events or, counting each decision's assigned partitions, about this many entries."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """What this run did: the events it appended, the rebalances (follow-up rounds
    included) it decided, its time and the assignor's warnings it met. ``resumed`` is the
    number of events the target held already when the run started (0 for a new one)."""

    stream: StreamId
    events: int
    rebalances: int
    follow_ups: int
    seconds: float
    assignor_seconds: float
    warnings: tuple[str, ...] = ()
    """The assignor's warnings, each with the replay's generation it came at."""
    resumed: int = 0
    complete: bool = True
    """False when ``stop`` ended the run before the source's end."""
    store_seconds: float = 0.0
    """The store's part of ``seconds``: reading the source and appending the replay."""
    cpu_seconds: float = 0.0
    """The CPU time of the run (the process's, over ``seconds``)."""
    assignor_cpu_seconds: float = 0.0
    """The assignor's CPU time (within ``assignor_seconds``). On a busy machine the
    two walls stretch with the others' turns; the CPU ratio moves less."""
    reused: bool = False
    """True when the target was stored whole already and read as done: no source event
    read, nothing decided or appended (``advise``'s rule, ``stored_whole``)."""


_INSTEAD = "resume with the same --from and --strategy, or give another --timeline"
"""What ``kstore replay`` can do about a target that is not a prefix of its replay."""


class _Replayer:
    """The replay's events, source event by source event.

    Given the events a target holds already (``stored``), the replayer first checks its
    events against them, in order, and folds the stored ones instead of deciding again;
    ``feed`` yields only the events after them.
    """

    def __init__(
        self,
        target: StreamId,
        strategy: str,
        stored: Iterable[Event] = (),
        state: GroupState | None = None,
        instead: str = _INSTEAD,
        timed: bool = True,
    ) -> None:
        self.target = target
        self.instead = instead
        self.strategy = strategy
        # "same": each decision with the flavour of the source's (set per decision).
        self.same = strategy == SAME
        self.protocol = "eager" if self.same else protocol_of(strategy)
        self.state = state if state is not None else GroupState()
        self.generation = 0
        self.rebalances = 0
        self.follow_ups = 0
        self.assignor_seconds = 0.0
        self.assignor_cpu_seconds = 0.0
        # The assignor timed (``assignor_seconds``) for ``replay``'s result; ``replay_events``
        # reports no times, and four clock reads a decision were 3% of an assignor's work.
        self.timed = timed
        self.warnings: list[str] = []
        self._stored = iter(stored)
        self._next = next(self._stored, None)
        self.matched = 0
        self._unyielded = 0
        # The replay made a follow-up round and nothing that changes membership,
        # subscriptions or topics came since: the source's next rebalance is that round.
        self._followed = False
        self._absorbing = False
        # A replay that makes no follow-up rounds (eager, consumer) in the source's
        # follow-up round: its RebalanceStarted, until the round's end.
        self._skipping: Event | None = None
        # The generation of the source's round in progress (its last RebalanceStarted's,
        # until its AssignmentCompleted): a RebalanceStarted of that generation again is
        # that round started over (its coordinator moved), not another rebalance.
        self._round: int | None = None
        # The source's latest assignment (read only where ``reads_assignments``, or
        # from the source's first cooperative decision on: ``_source_events``).
        self._source_assignment: Mapping[str, Sequence[TopicPartition]] = {}
        # A source decision decided, not yet given: the source's not-taken-up facts of
        # it come after it, and the replay's decision gives those members what they held.
        self._pending: _Pending | None = None

    def _event(
        self, source: Event, data: EventData, suffix: str = "", at: datetime | None = None
    ) -> Event:
        # Made of the source's validated values and the replay's own: not validated again.
        at = source.at if at is None else at
        event = stamp(
            self.target, at, data, *_named(self.target, source.event_id, suffix), trusted=True
        )
        if self._next is not None:
            event = self._match(event)
        self.state.apply(event)
        return event

    def _match(self, event: Event) -> Event:
        """The next stored event, which must be ``event`` (a decision: but its assignment)."""
        assert self._next is not None
        stored, self._next = self._next, next(self._stored, None)
        self.matched += 1
        self._unyielded += 1
        data = stored.data
        if isinstance(data, AssignmentCompleted):
            if data.strategy != self.strategy:
                raise self._not_a_prefix(f"it was replayed with {data.strategy}")
            update: dict[str, object] = {"assignment": {}}
            if data.source is None:  # stored by a kstore whose decisions named no source
                assert isinstance(event.data, AssignmentCompleted)
                update |= {"source": event.data.source, "source_version": event.data.source_version}
            data = data.model_copy(update=update)
        if stored.model_copy(update={"data": data}) != event:
            raise self._not_a_prefix(
                f"its event {self.matched} is {stored.event_id!r} ({stored.type}), "
                f"the replay's {event.event_id!r} ({event.type})"
            )
        return stored

    def _not_a_prefix(self, why: str) -> UsageError:
        return UsageError(
            f"timeline {self.target.timeline!r} of {self.target.cluster}/{self.target.group} "
            f"is not a prefix of this replay ({why}): {self.instead}"
        )

    def finish(self) -> Iterator[Event]:
        """The replay's last events (its decision of the source's last one, if pending),
        then a check that the source gave every stored event."""
        while self._pending is not None:
            yield from self._unstored(self._settle())
        if self._next is not None:
            raise self._not_a_prefix(
                f"it holds {self._next.event_id!r} after the replay's last event"
            )

    def _decide(
        self,
        source: Event,
        version: int,
        suffix: str = "",
        kept: Iterable[str] = (),
        at: datetime | None = None,
    ) -> Event:
        """The strategy's decision on the state now (at ``source``'s time, or ``at``); each
        member of ``kept`` (that did not take it up) is given what it holds instead."""
        if self._next is not None:
            # Resuming: the stored decision is checked (all but its assignment) and folded.
            checked = construct(
                AssignmentCompleted,
                generation=self.generation,
                strategy=self.strategy,
                assignment={},
                protocol=self.protocol,
                source=source.timeline,
                source_version=version,
            )
            return self._event(source, checked, suffix, at)
        request = self.state.to_request(self.strategy)
        if self.timed:
            started, began = time.perf_counter(), time.process_time()
            result = assign(request)
            self.assignor_seconds += time.perf_counter() - started
            self.assignor_cpu_seconds += time.process_time() - began
        else:
            result = assign(request)
        self.warnings.extend(f"generation {self.generation}: {w}" for w in result.warnings)
        self.rebalances += 1
        if suffix:  # only a follow-up round's decision has one
            self.follow_ups += 1
        # The assignor's result is validated already and is the replay's alone: the event
        # takes its lists as they are, unchecked.
        assignment = dict(result.assignment)
        for member in kept:
            if member in assignment:
                assignment[member] = list(self.state.assignment.get(member, ()))
        data = construct(
            AssignmentCompleted,
            generation=self.generation,
            strategy=self.strategy,
            assignment=assignment,
            protocol=self.protocol,
            source=source.timeline,
            source_version=version,
        )
        return self._event(source, data, suffix, at)

    def _took(
        self,
        before: Mapping[str, Sequence[TopicPartition]],
        after: Mapping[str, Sequence[TopicPartition]],
    ) -> bool:
        """Whether a decision (``before`` -> ``after``) took a partition from a member that
        stays, of a topic it still subscribes to: a cooperative consumer gives up the
        partitions of a topic it unsubscribed from itself, before it rejoins (Kafka's
        ConsumerCoordinator, onJoinPrepare), so losing those asks for no follow-up round."""
        members = self.state.members
        return any(
            not set(after.get(m, ())).issuperset(tp for tp in tps if tp[0] in members[m].topics)
            for m, tps in before.items()
            if m in members
        )

    def source_decided(self, data: EventData) -> None:
        """The source's latest decision, ``data`` whole, read again after it was fed
        without its assignment (``_source_events``)."""
        if isinstance(data, AssignmentCompleted):
            self._source_assignment = data.assignment

    def _source_took(self, data: AssignmentCompleted) -> bool:
        """Whether the source's decision ``data`` left its own follow-up round due (a
        cooperative decision that took from a member that stays); its assignment is kept
        as the source's latest."""
        before, self._source_assignment = self._source_assignment, data.assignment
        return cooperative(data) and self._took(before, data.assignment)

    def _same_as(self, data: AssignmentCompleted) -> None:
        found = _flavour(data)
        self.strategy, self.protocol = found.name, found.protocol

    def feed(self, source: Event, version: int) -> Iterator[Event]:
        """The replay's events for the source's next event (its stream ``version``), but
        those stored already."""
        yield from self._unstored(self._outputs(source, version))

    def _unstored(self, events: Iterable[Event]) -> Iterator[Event]:
        for event in events:
            if self._unyielded:
                self._unyielded -= 1
            else:
                yield event

    def _settle(self) -> Iterator[Event]:
        """The pending decision, with what its members that did not take it up hold,
        those facts (of the replay's generation) and, for a first round that took a
        partition from a member, its follow-up round's start (its decision pending)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        before = self.state.assignment
        kept = [data.member_id for _, data in pending.not_taken_up]
        yield self._decide(pending.source, pending.version, pending.suffix, kept, pending.at)
        for fact, data in pending.not_taken_up:
            yield self._event(fact, data.model_copy(update={"generation": self.generation}))
        # Where the source's own decision left its follow-up round due, its next
        # rebalance is that round (whenever it came, whatever came first): the replay's
        # follow-up is that rebalance, replayed as it is, not a round of the replay's own.
        if (
            not pending.suffix
            and not pending.source_follows
            and self.protocol == "cooperative"
            and self._took(before, self.state.assignment)
        ):
            self.generation += 1
            reason = construct(
                RebalanceStarted, generation=self.generation, reason="cooperative follow-up"
            )
            yield self._event(pending.source, reason, "/follow-up-start")
            self._pending = _Pending(pending.source, pending.version, None, "/follow-up")
            self._followed = True

    def _outputs(self, source: Event, version: int) -> Iterator[Event]:
        data = source.data
        if isinstance(data, AssignmentNotTakenUp):
            pending = self._pending
            if pending is not None and data.generation == pending.generation:
                pending.not_taken_up.append((source, data))
            # Else it follows no decision of its generation (an odd fact that changes
            # nothing): the replay leaves it out.
            return
        again = isinstance(data, RebalanceStarted) and data.generation == self._round
        if isinstance(data, RebalanceStarted | AssignmentCompleted):
            self._round = data.generation if isinstance(data, RebalanceStarted) else None
        follows = isinstance(data, AssignmentCompleted) and self._source_took(data)
        if self._skipping is not None:
            # The source's follow-up round, which a replay that makes no follow-ups has
            # not: its end is answered by the decision before it (which stands); anything
            # else recorded during it (a member leaving) makes it a rebalance of the
            # replay's too, as it would an eager group's.
            pending, start = self._pending, self._skipping
            assert pending is not None
            if isinstance(data, AssignmentCompleted):
                pending.version, pending.source_follows = version, follows
                self._skipping = None
                return
            if again:
                return
            self._skipping = None
            yield from self._settle()
            self.generation += 1
            assert isinstance(start.data, RebalanceStarted)
            reason = start.data.reason
            yield self._event(
                start, construct(RebalanceStarted, generation=self.generation, reason=reason)
            )
        elif (
            isinstance(data, RebalanceStarted)
            and self._pending is not None
            and self._pending.source_follows
            and self.protocol != "cooperative"
        ):
            # The source's next rebalance, nothing recorded since its decision: only that
            # decision's follow-up round, when it left one due (``_source_took``).
            self._skipping = source
            return
        if self._pending is not None and not self._pending.suffix:
            yield from self._settle()
        # A follow-up round's decision waits for the source's next rebalance (that round,
        # if nothing else comes first) and the facts of its members that did not take it
        # up.
        if isinstance(data, RebalanceStarted) and self._followed:
            self._followed, self._absorbing = False, True
            return
        if isinstance(data, AssignmentCompleted) and self._absorbing:
            assert self._pending is not None
            self._absorbing = False
            self._pending.generation = data.generation
            if self._pending.at is not None:  # decided at the round's end, after its events
                self._pending.at = source.at
            return
        if self._absorbing and (again or not isinstance(data, RebalanceStarted)):
            # An event of the source's follow-up round, before its end (a member leaving
            # while it runs, the round started over), is part of that round, as in any
            # round: copied, and the round decided at its end on the state it leaves.
            assert self._pending is not None
            self._pending.at = source.at  # for now: the round's end, when it comes
            if isinstance(data, RebalanceStarted):  # ``again``: in the replay's numbering
                data = construct(RebalanceStarted, generation=self.generation, reason=data.reason)
            yield self._event(source, data)
            return
        yield from self._settle()
        if isinstance(data, RebalanceStarted):
            self._followed = self._absorbing = False
            if not again:
                self.generation += 1
            yield self._event(
                source,
                construct(RebalanceStarted, generation=self.generation, reason=data.reason),
            )
        elif isinstance(data, AssignmentCompleted):
            self._followed = False
            if self.same:
                self._same_as(data)
            if self.state.rebalance is None:
                self.generation += 1
            self._pending = _Pending(source, version, data.generation, source_follows=follows)
        else:
            self._followed = self._absorbing = False
            yield self._event(source, data)


@dataclass(slots=True)
class _Pending:
    """A source decision the replay is to decide, and the source's facts that members
    did not take it up (which come after it)."""

    source: Event
    version: int
    generation: int | None
    """The source's generation (a follow-up round: of the source's rebalance it
    absorbs, None before that comes)."""
    suffix: str = ""
    """``/follow-up`` for a follow-up round."""
    source_follows: bool = False
    """The source's decision left its own follow-up round due: the replay makes none."""
    at: datetime | None = None
    """When it is decided, if not at ``source``'s time: a follow-up round whose source
    round had events before its end is decided at that end."""
    not_taken_up: list[tuple[Event, AssignmentNotTakenUp]] = field(default_factory=list)


def cooperative(data: AssignmentCompleted) -> bool:
    """Whether a decision was made under the cooperative protocol: its ``protocol``, or
    where none is recorded its strategy's (``known_protocol``)."""
    return (data.protocol or known_protocol(data.strategy)) == "cooperative"


def _source_events(
    store: EventStore, stream: StreamId, strategy: str, replayer: _Replayer
) -> Iterator[StoredEvent]:
    """The source's events for a replay with ``strategy``: whole where it
    ``reads_assignments``; else without their assignments (a big group's partitions
    neither fetched nor parsed) up to the source's first cooperative decision, and whole
    from it on, the decision before it told to ``replayer`` whole (``_source_took``
    compares a cooperative decision with it). An eager source is read once, light, with
    nothing asked of the store beforehand (a query for its protocols parsed every
    decision's JSON: +0.12 s of a 0.63 s replay of 60 x 10,000 partitions)."""
    read = partial(
        store.events, cluster=stream.cluster, group=stream.group, timeline=stream.timeline
    )
    if reads_assignments(strategy):
        yield from read()
        return
    decided: int | None = None  # the version of the last decision read
    for light in read(assignments=False):
        data = light.event.data
        if isinstance(data, AssignmentCompleted):
            if cooperative(data):
                break
            decided = light.version
        yield light
    else:
        return
    for whole in read(from_version=decided or light.version):
        if whole.version >= light.version:
            yield whole
        elif whole.version == decided:
            replayer.source_decided(whole.event.data)


def reads_assignments(*strategies: str) -> bool:
    """Whether a replay with these strategies reads its source's assignments whatever
    the source. It decides every assignment itself, but where a cooperative decision of
    the source left its own follow-up round due (``_source_took``) matters to every
    replay: a cooperative one makes no round of its own, any other has none of the
    source's. So a cooperative or ``same`` replay reads them always, any other only
    where the source has a cooperative decision (an eager replay of an eager big group
    reads none of its source's assignments)."""
    return any(s == SAME or protocol_of(s) == "cooperative" for s in strategies)


def _flavour(data: AssignmentCompleted) -> Strategy:
    """The strategy ``same`` decides a source decision with (its strategy and client)."""
    try:
        return flavour_of(data.strategy, data.client)
    except UnknownStrategy as exc:
        raise UsageError(f"--strategy same: source generation {data.generation}: {exc}") from None


Verdict = Literal["same", "not-taken-up", "differs"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)


@dataclass(frozen=True, slots=True)
class DecisionCheck:
    """One source decision against the strategy's answer to the same request.

    ``verdict``: ``same``; ``not-taken-up`` when every member that differs is one the
    source says did not take the decision up (an ``AssignmentNotTakenUp`` after it: its
    SyncGroup failed, as a broker answers a follower's SyncGroup that comes after the
    leader rejoined) and holds what it owned when the decision was made; ``differs``
    otherwise (a member that holds what it owned without such a fact too: the log does
    not say why).
    """

    generation: int
    strategy: str
    verdict: Verdict
    members: dict[str, tuple[list[TopicPartition], list[TopicPartition]]]
    """Each member whose partitions differ: (the strategy's answer, the source's)."""


def check_decisions(events: Iterable[Event], strategy: str = SAME) -> Iterator[DecisionCheck]:
    """Each ``AssignmentCompleted`` of a source stream's ``events`` (from its first) against
    ``strategy``'s answer (``same``: the flavour that decided it) to the request made of
    the source's state just before it; the ``AssignmentNotTakenUp`` facts right after it
    say which members did not take it up."""
    check_strategy(strategy)
    state = GroupState()
    pending: tuple[AssignmentCompleted, str, dict[str, list[TopicPartition]]] | None = None
    owned: dict[str, tuple[TopicPartition, ...]] = {}
    named: set[str] = set()
    for event in events:
        data = event.data
        if isinstance(data, AssignmentNotTakenUp):
            if pending is not None and data.generation == pending[0].generation:
                named.add(data.member_id)
        elif pending is not None:
            yield _checked(*pending, owned, named)
            pending, named = None, set()
        if isinstance(data, AssignmentCompleted):
            name = _flavour(data).name if strategy == SAME else strategy
            owned = state.assignment
            answer = assign(state.to_request(name)).assignment
            pending = (data, name, {m: list(tps) for m, tps in answer.items()})
        state.apply(event)
    if pending is not None:
        yield _checked(*pending, owned, named)


def _checked(
    data: AssignmentCompleted,
    name: str,
    answer: dict[str, list[TopicPartition]],
    owned: dict[str, tuple[TopicPartition, ...]],
    named: set[str],
) -> DecisionCheck:
    held = {m: [(t, p) for t, p in tps] for m, tps in data.assignment.items()}
    differing = {
        m: (answer.get(m, []), held.get(m, []))
        for m in sorted(set(answer) | set(held))
        if sorted(answer.get(m, [])) != sorted(held.get(m, []))
    }
    explained = all(
        m in named and sorted(now) == sorted(owned.get(m, ())) for m, (_, now) in differing.items()
    )
    verdict: Verdict = "same" if not differing else "not-taken-up" if explained else "differs"
    return DecisionCheck(data.generation, name, verdict, differing)


def replay_events(
    events: Iterable[Event],
    target: StreamId,
    strategy: str,
    warnings: list[str] | None = None,
) -> Iterator[Event]:
    """The replay's events for a source stream's ``events`` (pure: nothing is stored).

    The assignor's warnings, each with its generation, are added to ``warnings`` if given.
    ``strategy`` ``same`` decides each generation with the flavour that decided it.
    ``events`` are the source stream's from its first (version 1).
    """
    check_strategy(strategy)
    replayer = _Replayer(target, strategy, timed=False)
    if warnings is not None:
        replayer.warnings = warnings
    for version, event in enumerate(events, start=1):
        yield from replayer.feed(event, version)
    yield from replayer.finish()


def check_strategy(strategy: str) -> None:
    """A strategy a replay can decide with (``same`` or an assignor), else the one line
    naming the nearest ones."""
    if strategy != SAME:
        get_assignor(strategy)


@cyclic_gc_paused()
def replay(
    store: EventStore,
    *,
    group: str,
    strategy: str,
    cluster: str = "default",
    source: str = "recorded",
    timeline: str | None = None,
    resume: bool = False,
    stop: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
    instead: str = _INSTEAD,
) -> ReplayResult:
    """Replay the stream (cluster, group, source) with ``strategy`` into a new timeline.

    ``stop``: asked after each source event; when it says so the run stores what it
    has and returns with ``complete`` False (``--resume`` continues it).
    ``progress``: told (source events done, source events in all) after each one.
    ``resume``: a target that exists already is continued where it stopped, if it is a
    prefix of this replay; else it is refused, as it always is without ``resume``.
    ``strategy`` ``same`` decides each generation with the flavour that decided it
    (``strategies.flavour_of``: the recorded strategy and client library).
    ``instead``: what the error for a target that is not a prefix of this replay says
    to do (the caller's options: ``kstore replay``'s by default).
    """
    check_strategy(strategy)
    target = StreamId(cluster, group, new_timeline(timeline, f"replay/{strategy}", replay=True))
    sizes = {info.stream: info.events for info in store.streams()}
    total = sizes.get(StreamId(cluster, group, source))
    if total is None:
        raise UsageError(f"no stream {cluster}/{group}/{source} in the store")
    started, cpu_started = time.perf_counter(), time.process_time()
    writer = Writer(store, batch_events=_BATCH_EVENTS, batch_entries=_BATCH_ENTRIES)
    # The stored events are matched against the replay's own, event for event (ids,
    # times, data): that finds where the run stopped whatever the ids' length (an id cut
    # at 200 characters cannot be parsed back into its source's), and refuses a target
    # from another strategy or source, which counting alone would take as a prefix.
    stored = writer.stored(target, sizes.get(target, 0))
    if writer.version(target) and not resume:
        raise UsageError(
            f"timeline {target.timeline!r} of {cluster}/{group} exists already "
            "(--resume continues an interrupted replay into it)"
        )
    replayer = _Replayer(target, strategy, stored, writer.fold(), instead)
    count = 0
    source_events = _source_events(store, StreamId(cluster, group, source), strategy, replayer)
    complete = True
    done = 0
    store_seconds = 0.0
    while True:
        began = time.perf_counter()
        stored_source = next(source_events, None)
        store_seconds += time.perf_counter() - began
        if stored_source is None:
            break
        done += 1
        events = list(replayer.feed(stored_source.event, stored_source.version))
        count += len(events)
        began = time.perf_counter()
        writer.add(events, fold=replayer.state)
        store_seconds += time.perf_counter() - began
        if progress is not None:
            progress(done, total)
        if stop is not None and stop():
            complete = False
            break
    if complete:
        events = list(replayer.finish())
        count += len(events)
        writer.add(events, fold=replayer.state)
    began = time.perf_counter()
    writer.flush()
    store_seconds += time.perf_counter() - began
    return ReplayResult(
        target,
        count,
        replayer.rebalances,
        replayer.follow_ups,
        time.perf_counter() - started,
        replayer.assignor_seconds,
        tuple(replayer.warnings),
        replayer.matched,
        complete,
        store_seconds,
        time.process_time() - cpu_started,
        replayer.assignor_cpu_seconds,
    )
