"""The fold: a stream's events, applied in stream order, give the group's state.

``GroupState`` holds what the log says about a group after some event: its members
(join order kept, as it is the order the next request lists them in), topics, the
latest ``AssignmentCompleted`` and a rebalance still in progress. ``to_request`` turns
it into the next assignor request, each member's ``owned`` partitions and
``generation`` rebuilt from the log.

The state is treated as immutable data: ``apply`` replaces the containers it changes
and never mutates a tuple or ``Member`` in place, so ``copy`` only copies the dicts.

An ``AssignmentNotTakenUp`` of the latest ``AssignmentCompleted``'s generation gives its
member back what it held before that event (its share of the assignment before, or
nothing), with the generation it held it in: the next request's ``owned`` and
``generation`` for it are those, whatever the event gave it.

A fold can keep a record of what it held at each event the store's projections read
it for (``applied``: ``Applied`` per ``AssignmentCompleted``, ``MemberReplaced`` and
``AssignmentNotTakenUp``). A
producer that folds its own events hands that record to the store with them, so the
store projects from it instead of folding the same events a second time.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from kstore.model._construct import construct, every_field, instance
from kstore.model.events import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
    format_time,
)

if TYPE_CHECKING:
    from kstore.assignors import AssignmentRequest, MemberSubscription, TopicPartition

__all__ = ["Applied", "GroupState", "Member", "Rebalance", "fold"]

_STREAM_OF = itemgetter("cluster", "group", "timeline")
"""An event's stream from its fields, as a plain tuple (``StreamId`` compares equal)."""


# Not ``frozen``: a frozen dataclass's ``__init__`` sets each field through
# ``object.__setattr__``, 12,700 instructions for these eight against 2,500, and every
# join makes one (fifty a decision when a group is scaled). The fold never changes a
# ``Member`` (it replaces it: the module's doc); ``unsafe_hash`` keeps it hashable.
@dataclass(slots=True, unsafe_hash=True)
class Member:
    """A member as its latest ``MemberJoined``/``SubscriptionChanged`` left it."""

    topics: tuple[str, ...]
    instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    rack: str | None = None
    protocols: tuple[str, ...] | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if value is not None:
                out[item.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Member:
        values = dict(raw)
        values["topics"] = tuple(values["topics"])
        if values.get("protocols") is not None:
            values["protocols"] = tuple(values["protocols"])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Rebalance:
    """A ``RebalanceStarted`` not yet followed by an ``AssignmentCompleted``."""

    generation: int
    reason: str
    started: datetime


@dataclass(frozen=True, slots=True)
class Applied:
    """The fold as it applied an event that projections read it for.

    ``generation`` is the state's after the event; for an ``AssignmentCompleted`` E,
    ``members`` and ``topics`` are the group at E (E changes neither) and ``previous``
    the assignment before E; for a ``MemberReplaced`` they are left empty; for an
    ``AssignmentNotTakenUp``, ``previous`` is its member's share it holds again (no
    entry: the event changed nothing).
    """

    event_id: str
    version: int
    generation: int | None
    members: Mapping[str, Member] = field(default_factory=dict)
    topics: Mapping[str, int] = field(default_factory=dict)
    previous: Mapping[str, tuple[TopicPartition, ...]] = field(default_factory=dict)


@dataclass(slots=True)
class GroupState:
    """A stream's state after ``version`` events (0: nothing yet)."""

    stream: StreamId | None = None
    version: int = 0
    at: datetime | None = None
    members: dict[str, Member] = field(default_factory=dict)
    topics: dict[str, int] = field(default_factory=dict)
    topic_racks: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    generation: int | None = None
    strategy: str | None = None
    protocol: str | None = None
    leader: str | None = None
    assignment: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    rebalance: Rebalance | None = None
    held_from: dict[str, int | None] = field(default_factory=dict)
    """Members whose share of ``assignment`` is of an earlier generation than
    ``generation`` (they did not take the later ones up), with that generation (None:
    they held nothing then)."""
    previous: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    """The assignment before the latest ``AssignmentCompleted``, with its generation and
    its ``held_from`` below: what an ``AssignmentNotTakenUp`` gives back."""
    previous_generation: int | None = None
    previous_held_from: dict[str, int | None] = field(default_factory=dict)
    applied: list[Applied] | None = field(default=None, compare=False, repr=False)
    """None, or the record ``apply`` adds an ``Applied`` to (see the module's doc)."""
    requesting: dict[str, MemberSubscription] | None = field(
        default=None, compare=False, repr=False
    )
    """Each member's subscription in the next request, in member order: made by the first
    ``to_request``, then kept up to date by ``apply`` (see ``to_request``); None until
    then, or after an event that renames members (``MemberReplaced``)."""
    bare: dict[str, MemberSubscription] | None = field(default=None, compare=False, repr=False)
    """``requesting`` without what each member owns (``owned`` empty, ``generation``
    None): the request of an assignor that never reads them (``to_request`` with
    ``owned=False``). Made by the first such request, then kept up to date by ``apply``
    as ``requesting`` is, but an ``AssignmentCompleted`` leaves it as it is: a decision
    costs no pass over the members here."""
    lists: Counter[tuple[str, ...]] | None = field(default=None, compare=False, repr=False)
    """How many members subscribe to each distinct topic list (none at 0): made by the
    first ``topic_lists``, then kept up to date by ``apply`` as members join and leave;
    None until then, or after an event that renames members (``MemberReplaced``) or
    changes a subscription, or a member id that joins again (rare: made anew)."""

    def copy(self) -> GroupState:
        """A copy that keeps no record (the record is its producer's)."""
        return dataclasses.replace(
            self,
            members=dict(self.members),
            topics=dict(self.topics),
            topic_racks=dict(self.topic_racks),
            assignment=dict(self.assignment),
            held_from=dict(self.held_from),
            applied=None,
            requesting=None,
            bare=None,
            lists=None,
        )

    def apply(self, event: Event) -> None:
        """Advance by one event (the stream's next); odd facts are applied as they are."""
        # The fields read from the models' dictionaries (a pydantic model's attribute is a
        # slow lookup: its ``__getattr__`` keeps CPython from specialising it), as
        # ``Event.stream`` does: a scaled group's joins and leaves, fifty a decision.
        fields = event.__dict__
        if self.stream is None:
            self.stream = event.stream
        elif _STREAM_OF(fields) != self.stream:
            raise ValueError(f"event {event.event_id} is of {event.stream}, not {self.stream}")
        self.version += 1
        self.at = fields["at"]
        data = fields["data"]
        # By the data's exact class, the commonest first (a scaled group's joins and
        # leaves, fifty a decision): a class pattern (``match``) or ``isinstance`` asks
        # pydantic's metaclass, 0.2-0.3 us a class tried (an ``AssignmentCompleted`` was
        # the eighth: 2.5 us of every decision's fold).
        if type(data) is MemberJoined:
            joined = data.__dict__
            member_id, topics = joined["member_id"], tuple(joined["topics"])
            protocols = joined["protocols"]
            size = len(self.members)
            self.members[member_id] = Member(  # positional: a third less than by name
                topics,
                joined["instance_id"],
                joined["client_id"],
                joined["host"],
                joined["rack"],
                tuple(protocols) if protocols is not None else None,
                joined["session_timeout_ms"],
                joined["rebalance_timeout_ms"],
            )
            # ``lists`` by a count in place, no call: fifty joins a decision when scaled. A
            # member id that joins again (the size unchanged) has it made anew.
            if (lists := self.lists) is not None:
                if len(self.members) == size:
                    self.lists = None
                else:
                    lists[topics] = lists.get(topics, 0) + 1
            if self.requesting is not None:
                self._request_member(member_id)
            if self.bare is not None:
                self._bare_member(member_id)
        elif type(data) is MemberLeft:
            member_id = data.__dict__["member_id"]
            gone = self.members.pop(member_id, None)
            if (lists := self.lists) is not None and gone is not None:
                if (left := lists[gone.topics] - 1) > 0:
                    lists[gone.topics] = left
                else:
                    del lists[gone.topics]
            if self.requesting is not None:
                self.requesting.pop(member_id, None)
            if self.bare is not None:
                self.bare.pop(member_id, None)
        elif type(data) is AssignmentCompleted:
            if self.applied is not None:
                # ``assignment`` is only ever replaced, the other two change in place.
                self.applied.append(
                    Applied(
                        event.event_id,
                        self.version,
                        data.generation,
                        dict(self.members),
                        dict(self.topics),
                        self.assignment,
                    )
                )
            self.previous, self.previous_generation = self.assignment, self.generation
            self.previous_held_from, self.held_from = self.held_from, {}
            self.generation = data.generation
            self.strategy = data.strategy
            self.protocol = data.protocol
            self.leader = data.leader
            shares = data.assignment
            self.assignment = dict(zip(shares, map(tuple, shares.values()), strict=True))
            self.rebalance = None
            if self.requesting is not None:
                self._request_owned()
        elif type(data) is RebalanceStarted:
            self.rebalance = Rebalance(data.generation, data.reason, event.at)
        elif type(data) is TopicChanged:
            self.topics[data.topic] = data.partitions
            if data.racks is None:
                self.topic_racks.pop(data.topic, None)
            else:
                self.topic_racks[data.topic] = tuple(tuple(r) for r in data.racks)
        elif type(data) is TopicDeleted:
            self.topics.pop(data.topic, None)
            self.topic_racks.pop(data.topic, None)
        elif type(data) is MemberReplaced:
            self._replace_member(data)
            # Ids renamed, partitions merged: made anew.
            self.requesting = self.bare = self.lists = None
            if self.applied is not None:
                self.applied.append(Applied(event.event_id, self.version, self.generation))
        elif type(data) is SubscriptionChanged:
            # Only MemberJoined makes a member (metrics.md): a non-member's change
            # stays in the log and changes no state.
            known = self.members.get(data.member_id)
            if known is not None:
                self.members[data.member_id] = dataclasses.replace(known, topics=tuple(data.topics))
                self.lists = None  # rare: made anew when next asked
                if self.requesting is not None:
                    self._request_member(data.member_id)
                if self.bare is not None:
                    self._bare_member(data.member_id)
        elif type(data) is AssignmentNotTakenUp:
            held = self._not_taken_up(data)
            if held is not None and self.requesting is not None and data.member_id in self.members:
                self._request_member(data.member_id)
            if self.applied is not None:
                previous = {} if held is None else {data.member_id: held}
                self.applied.append(
                    Applied(event.event_id, self.version, data.generation, previous=previous)
                )
        else:
            raise TypeError(f"no fold rule for event type {event.type}")

    def _not_taken_up(self, data: AssignmentNotTakenUp) -> tuple[TopicPartition, ...] | None:
        """The member holds its share of ``previous`` again, of its generation then
        (a member ``previous`` did not name holds nothing, of no generation); the share,
        or None where the event changes nothing: it is of another generation than the
        latest ``AssignmentCompleted``'s (an odd fact), or names a member neither
        assignment names."""
        member = data.member_id
        if data.generation != self.generation or (
            member not in self.assignment and member not in self.previous
        ):
            return None
        held = self.previous.get(member)
        self.assignment = {**self.assignment, member: held or ()}  # replaced (``Applied``)
        if held is None:
            self.held_from[member] = None
        else:
            generation = self.previous_held_from.get(member, self.previous_generation)
            if generation == self.generation:
                self.held_from.pop(member, None)
            else:
                self.held_from[member] = generation
        return held or ()

    def _replace_member(self, data: MemberReplaced) -> None:
        """The new id takes over the old one's membership, subscription and partitions.

        The new id takes the old one's place in member order (it reaches the assignor)
        and its member record (with the event's instance id). If the new id is a member
        already, that record gives way; if it holds partitions already, it keeps them
        after the old id's (a merge: from here on the old id's partitions are the new
        id's, and its own stay its own). Equal ids: only the instance id is set.
        """
        old, new = data.old_member_id, data.new_member_id
        if old in self.members:
            self.members = {
                (new if key == old else key): (
                    dataclasses.replace(value, instance_id=data.instance_id)
                    if key == old
                    else value
                )
                for key, value in self.members.items()
                if key != new or old == new
            }
        if old == new:
            return
        if self.leader == old:
            self.leader = new
        # The latest assignment and the one before it (what an AssignmentNotTakenUp
        # gives back) both read the old id as the new one (docs/spec/metrics.md).
        self.assignment, self.held_from = _renamed(self.assignment, self.held_from, old, new)
        self.previous, self.previous_held_from = _renamed(
            self.previous, self.previous_held_from, old, new
        )

    def topic_lists(self) -> list[tuple[str, ...]]:
        """The members' distinct topic lists (in no set order): every decision asks, and
        members mostly share one, so ``lists`` keeps their count as members join and
        leave instead of a pass over the members each time."""
        lists = self.lists
        if lists is None:
            lists = self.lists = Counter(member.topics for member in self.members.values())
        return list(lists)

    def to_request(self, strategy: str, *, owned: bool = True) -> AssignmentRequest:
        """The next assignor request: today's members, each with what it owns now.

        ``owned`` is the member's part of the latest ``AssignmentCompleted`` and
        ``generation`` that event's generation (``None`` for a member it did not name),
        but for a member that did not take it up (``held_from``).

        The first request makes every member's subscription; from then on ``apply`` keeps
        them up to date (a member's made again when its record changes, every member's
        ``owned`` and ``generation`` set in place by an ``AssignmentCompleted``), so a
        request costs a copy of the member map, not a pass of Python over the members.
        A request is therefore to be used (assigned) before the fold applies its next
        event: its subscriptions are the fold's.

        ``owned=False``: every member's ``owned`` empty and ``generation`` None (``bare``),
        for an assignor that never reads them (``reads_owned``), or eager members, which
        revoked everything before joining.
        """
        from kstore.assignors._contract import AssignmentRequest, check_total

        # Built without validation: every value comes from validated events, and
        # checking 10,000 owned partitions again would cost as much as assigning them.
        # ``assign`` still checks the strategy; the size is checked here.
        check_total(self.topics)
        if not owned:
            requesting = self.bare
            if requesting is None:
                requesting = self.bare = {}
                for member_id in self.members:
                    self._bare_member(member_id)
        elif (requesting := self.requesting) is None:
            requesting = self.requesting = {}
            for member_id in self.members:
                self._request_member(member_id)
        # A recorded placement can list more partitions than the topic has now (an odd
        # fact, stored as it was); the contract wants one entry per existing partition.
        racks = {
            t: [list(r) for r in racks[: self.topics[t]]]
            for t, racks in self.topic_racks.items()
            if t in self.topics
        }
        return construct(
            AssignmentRequest,
            strategy=strategy,
            topics=dict(self.topics),
            partition_racks=racks or None,
            members=dict(requesting),
        )

    def _request_member(self, member_id: str) -> None:
        """Make ``member_id``'s subscription in ``requesting`` anew (its place kept)."""
        assert self.requesting is not None
        member = self.members[member_id]
        owned = self.assignment.get(member_id)
        subscription, every = _subscription()
        self.requesting[member_id] = instance(
            subscription,
            {
                "topics": list(member.topics),
                "owned": list(owned) if owned is not None else [],
                "generation": None
                if owned is None
                else self.held_from.get(member_id, self.generation),
                "rack": member.rack,
                "instance_id": member.instance_id,
            },
            every,
        )

    def _bare_member(self, member_id: str) -> None:
        """Make ``member_id``'s subscription in ``bare`` anew (its place kept)."""
        assert self.bare is not None
        member = self.members[member_id]
        subscription, every = _subscription()
        self.bare[member_id] = instance(
            subscription,
            {
                "topics": list(member.topics),
                "owned": [],
                "generation": None,
                "rack": member.rack,
                "instance_id": member.instance_id,
            },
            every,
        )

    def _request_owned(self) -> None:
        """After an ``AssignmentCompleted``: every member's ``owned`` and ``generation``
        in ``requesting`` set in place (``held_from`` is empty)."""
        assert self.requesting is not None
        requesting, latest = self.requesting, self.generation
        for sub, owned in zip(
            requesting.values(), map(self.assignment.get, requesting), strict=True
        ):
            values = sub.__dict__
            if owned is None:
                values["owned"] = []
                values["generation"] = None
            else:
                values["owned"] = list(owned)
                values["generation"] = latest

    def to_dict(self, *, tuples: bool = False) -> dict[str, Any]:
        """JSON form (``kstore state``, snapshots): ``from_dict`` reads it back.
        ``tuples``: the assignments' partitions left as the fold holds them (tuples),
        for an encoder that writes a tuple as a list (a snapshot's: no list per
        partition made first)."""
        shares = _tuples if tuples else _shares
        stream = self.stream
        return {
            "cluster": stream.cluster if stream else None,
            "group": stream.group if stream else None,
            "timeline": stream.timeline if stream else None,
            "version": self.version,
            "at": format_time(self.at) if self.at is not None else None,
            "generation": self.generation,
            "strategy": self.strategy,
            "protocol": self.protocol,
            "leader": self.leader,
            "members": {m: member.to_dict() for m, member in self.members.items()},
            "topics": dict(self.topics),
            "topic_racks": {t: [list(r) for r in racks] for t, racks in self.topic_racks.items()},
            "assignment": shares(self.assignment),
            "held_from": dict(self.held_from),
            "previous": {
                "generation": self.previous_generation,
                "held_from": dict(self.previous_held_from),
                "assignment": shares(self.previous),
            },
            "rebalance": None
            if self.rebalance is None
            else {
                "generation": self.rebalance.generation,
                "reason": self.rebalance.reason,
                "started": format_time(self.rebalance.started),
            },
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> GroupState:
        rebalance = raw["rebalance"]
        # Written before ``AssignmentNotTakenUp``: no member held an earlier generation's.
        previous = raw.get("previous", {"generation": None, "held_from": {}, "assignment": {}})
        return cls(
            stream=StreamId(raw["cluster"], raw["group"], raw["timeline"])
            if raw["group"] is not None
            else None,
            version=raw["version"],
            at=datetime.fromisoformat(raw["at"]) if raw["at"] is not None else None,
            members={m: Member.from_dict(v) for m, v in raw["members"].items()},
            topics=dict(raw["topics"]),
            topic_racks={
                t: tuple(tuple(r) for r in racks) for t, racks in raw["topic_racks"].items()
            },
            generation=raw["generation"],
            strategy=raw["strategy"],
            protocol=raw["protocol"],
            leader=raw["leader"],
            assignment=_read_shares(raw["assignment"]),
            held_from=dict(raw.get("held_from", {})),
            previous=_read_shares(previous["assignment"]),
            previous_generation=previous["generation"],
            previous_held_from=dict(previous["held_from"]),
            rebalance=None
            if rebalance is None
            else Rebalance(
                rebalance["generation"],
                rebalance["reason"],
                datetime.fromisoformat(rebalance["started"]),
            ),
        )


def _shares(assignment: Mapping[str, tuple[TopicPartition, ...]]) -> dict[str, list[list[Any]]]:
    return {m: [list(tp) for tp in tps] for m, tps in assignment.items()}


def _tuples(assignment: Mapping[str, tuple[TopicPartition, ...]]) -> dict[str, Any]:
    return dict(assignment)


def _read_shares(raw: dict[str, list[list[Any]]]) -> dict[str, tuple[TopicPartition, ...]]:
    return {m: tuple((tp[0], tp[1]) for tp in tps) for m, tps in raw.items()}


@functools.cache
def _subscription() -> tuple[type[MemberSubscription], set[str]]:
    """The assignors' subscription model, and the fields set of one made with every field
    (a request once built one per member: ``model_construct``'s per-field defaults and
    aliases were most of a simulation's time). The assignors' contract is imported on
    first use: a fold that makes no request (``kstore append``) does without its models
    (0.035 CPU s of every process's start-up)."""
    from kstore.assignors._contract import MemberSubscription

    return MemberSubscription, every_field(MemberSubscription)


def _renamed(
    shares: dict[str, tuple[TopicPartition, ...]],
    held_from: dict[str, int | None],
    old: str,
    new: str,
) -> tuple[dict[str, tuple[TopicPartition, ...]], dict[str, int | None]]:
    """``shares`` and their ``held_from`` with the old id's partitions the new id's: if
    the new id holds partitions already, it keeps them after the old id's (from here on
    the old id's partitions are the new id's, and its own stay its own). The merged
    holdings are of the old id's generation, unless it held nothing and the new id
    something: then they are the new id's own, of its generation."""
    old_id_decides = bool(shares.get(old)) or not shares.get(new)
    if old in shares:
        taken = shares[old]
        seen = set(taken)
        merged = taken + tuple(tp for tp in shares.get(new, ()) if tp not in seen)
        shares = {
            (new if key == old else key): (merged if key == old else value)
            for key, value in shares.items()
            if key != new
        }
    held_from = dict(held_from)
    if old_id_decides:
        if old in held_from:
            held_from[new] = held_from.pop(old)
        else:
            held_from.pop(new, None)
    else:
        held_from.pop(old, None)
    return shares, held_from


def fold(events: Iterable[Event], start: GroupState | None = None) -> GroupState:
    """The state after ``events`` (a stream's, in order), from ``start`` or from nothing.

    ``start`` is not changed.
    """
    state = start.copy() if start is not None else GroupState()
    for event in events:
        state.apply(event)
    return state
