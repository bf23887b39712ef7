"""The consumer group protocol of KIP-848: broker-side assignment, member epochs.

Follows Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``, ``ConsumerGroup`` and
``CurrentAssignmentBuilder`` (Kafka 3.9/4.0):

- a member joins with a heartbeat at epoch 0 and its own member id (a UUID); any change
  of membership, subscription or subscribed topics' partitions bumps the group epoch,
  and the broker's assignor (``uniform`` or ``server-range``) computes the target
  assignment for that epoch at once, from each member's subscription and its previous
  target;
- each member then reconciles on its own heartbeats, without a group-wide barrier:
  partitions it must give up are revoked first (state ``UNREVOKED_PARTITIONS``); once it
  acknowledges, it moves to the target epoch and gets the target partitions that no
  other member still holds; the rest follow on later heartbeats as they are released
  (``UNRELEASED_PARTITIONS``);
- a member that does not revoke within its rebalance timeout (``max.poll.interval.ms``)
  is fenced; one that stops heartbeating is removed after
  ``group.consumer.session.timeout.ms``;
- a static member leaves with epoch -2 and keeps its place and partitions for the
  session timeout; a new process with the same ``group.instance.id`` takes them over
  (``MemberReplaced``) without a new epoch.

Events: a bumped epoch is a ``RebalanceStarted`` (generation = the new group epoch) and
its target assignment an ``AssignmentCompleted`` with protocol ``consumer``, as kstore
records real KIP-848 groups. The members' reconciliation is not written as events; it
drives the run's ownership numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import Literal

from kstore.assignors import TopicPartition, assign, reads_owned
from kstore.model._construct import construct
from kstore.model.events import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
    SubscriptionChanged,
)
from kstore.model.fold import GroupState
from kstore.protocol.clock import Due
from kstore.protocol.group import Client, GroupSim
from kstore.protocol.settings import ProtocolSettings

__all__ = ["ConsumerGroupSim", "MemberEpochState"]

STABLE = "STABLE"
UNREVOKED = "UNREVOKED_PARTITIONS"
UNRELEASED = "UNRELEASED_PARTITIONS"

_LeftReason = Literal["leave", "session-timeout", "poll-timeout", "fenced", "other"]


@dataclass(slots=True)
class MemberEpochState:
    """What the coordinator keeps per member besides the fold: its epoch and partitions."""

    epoch: int = 0
    state: str = STABLE
    assigned: set[TopicPartition] = field(default_factory=set)
    given: tuple[TopicPartition, ...] | None = None
    """The target ``assigned`` was last found equal to, as the assignment listed it (or
    None): a later target that is the same tuple needs no set made (every member at
    every epoch bump)."""
    revoking: set[TopicPartition] = field(default_factory=set)
    left_static: bool = False


class ConsumerGroupSim(GroupSim):
    """A consumer group on the KIP-848 protocol with one broker-side ``strategy``."""

    protocol_name = "consumer"

    def __init__(
        self,
        stream: StreamId,
        *,
        strategy: str,
        start: datetime,
        settings: ProtocolSettings,
        seed: int,
        stored: Sequence[Event] = (),
        state: GroupState | None = None,
    ) -> None:
        super().__init__(
            stream, start=start, settings=settings, seed=seed, stored=stored, state=state
        )
        self.strategy = strategy
        self.epochs: dict[str, MemberEpochState] = {}
        self.claimed: set[TopicPartition] = set()
        """The partitions some member has (``assigned``) or is revoking: no two members
        claim one, so a member is given only partitions outside it."""

    def heartbeat_interval(self) -> int:
        return self.settings.consumer_heartbeat_interval_ms

    @property
    def group_epoch(self) -> int:
        return self.state.generation or 0

    # --- the group epoch and the target assignment ----------------------------------------

    def _bump(self, reason: str) -> None:
        epoch = self.group_epoch + 1
        self.emit(construct(RebalanceStarted, generation=epoch, reason=reason))
        result = assign(self.state.to_request(self.strategy, owned=reads_owned(self.strategy)))
        self.emit(
            construct(
                AssignmentCompleted,
                generation=epoch,
                strategy=self.strategy,
                assignment=dict(result.assignment),
                protocol="consumer",
            )
        )
        self.ledger.add_topics(self.subscribed_counts(), self.now)
        # Every member's next heartbeat, as one batch: run after run of them is one step.
        # ``next_tick`` inline: a phase is less than the interval, so the first tick at or
        # after ``after`` is the phase's in the interval that holds ``after`` (``start``)
        # if the phase is not before ``after``'s place in it, else in the next one (one
        # sum a member: each sum of these times is a new int). Numbered and made pending
        # keys in the same pass (``schedule_made``, as the classic protocol's rejoins):
        # every member at every epoch bump.
        after, interval, clients = self.now + 1, self.heartbeat_interval(), self.member_clients
        start = after - after % interval
        place, later = after - start, start + interval
        seq, live = self.queue.numbering()
        items: list[tuple[int, int, str, tuple[Client, int]]] = []
        append = items.append
        for c in map(clients.get, self.state.members):
            if c is not None:
                seq += 1
                key = c.heartbeat_key
                live[key] = seq
                phase = c.phase
                append(((start if phase >= place else later) + phase, seq, key, (c, c.life)))
        self.queue.schedule_made(items, seq, self._heartbeats)

    def _heartbeats(self, due: Due[tuple[Client, int]]) -> None:
        while (rest := self._heartbeat_each(due)) is not None:
            self._heartbeat(*rest)

    def _heartbeat_each(self, due: Due[tuple[Client, int]]) -> tuple[Client, int] | None:
        """The heartbeats after an epoch bump in one pass over the due ones (each consumed
        as it goes: ``Due.window``, as ``ClassicGroupSim._park_each`` goes through the
        rejoins: a generator or a call per heartbeat would cost what the pass saves), as
        ``_heartbeat`` takes them: each in turn whose client is gone or cut off, or whose
        member is stable and has its target already (nearly all: a member's target
        mostly stays the same tuple), up to one that does more (it must reconcile or
        join again), consumed and given back for ``_heartbeat``; ``None`` when every due
        one was handled."""
        members, epochs, assignment = self.state.members, self.epochs, self.state.assignment
        epoch = self.state.generation or 0
        items, pos, stop, live = due.window()
        take = live.pop
        last = None
        for i, (at, seq, key, heartbeat) in enumerate(islice(items, pos, stop), pos):
            pending = take(key, None)  # consumed if pending with this number
            if pending != seq:
                if pending is not None:
                    live[key] = pending
                continue
            last = at
            client, life = heartbeat
            if client.life != life or not client.alive or at < client.cut_until:
                continue
            member_id = client.member_id
            if member_id is not None and member_id in members:
                member = epochs[member_id]
                if member.state == STABLE and (
                    member.epoch == epoch or assignment.get(member_id, ()) == member.given
                ):
                    take(f"expire:{member_id}", None)  # the session goes on
                    member.epoch = epoch
                    continue
            due.consumed(i + 1, at)
            return heartbeat
        due.consumed(stop, last)
        return None

    # --- heartbeats --------------------------------------------------------------------

    def _schedule_heartbeat(self, client: Client, at: int | None = None) -> None:
        when = (
            at
            if at is not None
            else self.next_tick(client, self.now + 1, self.heartbeat_interval())
        )
        life = client.life
        self.queue.schedule(when, client.heartbeat_key, lambda: self._heartbeat(client, life))

    def _heartbeat(self, client: Client, life: int) -> None:
        # A heartbeat after an epoch bump mostly takes ``_heartbeat_each``'s quick way.
        queue = self.queue
        if client.life != life or not client.alive or queue.now < client.cut_until:
            return
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            # FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: give everything up, join at epoch 0.
            self.release_all(client)
            self._join(client)
            return
        queue.cancel(f"expire:{member_id}")  # the session goes on
        member = self.epochs[member_id]
        epoch = self.state.generation or 0
        if member.state != STABLE:
            self._reconcile(client, member_id)
        elif member.epoch != epoch:
            if self.state.assignment.get(member_id, ()) == member.given:
                member.epoch = epoch  # its new target is what it has (``_reconcile``)
            else:
                self._reconcile(client, member_id)

    def _reconcile(self, client: Client, member_id: str) -> None:
        member = self.epochs[member_id]
        if member.state == UNREVOKED:
            if not member.revoking.isdisjoint(self.owned(client)):
                return  # not acknowledged yet
            self.claimed -= member.revoking
            member.revoking = set()
            member.state = STABLE
            self.queue.cancel(f"revoke-timeout:{member_id}")
        if member.epoch == self.group_epoch and member.state == STABLE:
            return
        shares = self.state.assignment.get(member_id, ())
        if shares == member.given:  # most members after a bump: the target is theirs
            member.epoch, member.state = self.group_epoch, STABLE
            return
        target = set(shares)
        if member.assigned == target:
            member.epoch, member.state, member.given = self.group_epoch, STABLE, shares
            return
        kept = member.assigned & target
        revoking = member.assigned - target
        if revoking:
            member.assigned, member.revoking, member.state = kept, revoking, UNREVOKED
            member.given = None
            self._revoke(client, member_id, revoking)
            return
        # What it wants is not its own: it holds part of the target and revokes nothing.
        free = target - kept - self.claimed
        self.claimed |= free
        member.assigned = kept | free
        member.epoch = self.group_epoch
        member.state = UNRELEASED if member.assigned != target else STABLE
        member.given = shares if member.state == STABLE else None
        if free:
            self.acquire(client, free)
        if member.state == UNRELEASED:
            self._schedule_heartbeat(client)

    def _revoke(self, client: Client, member_id: str, revoking: set[TopicPartition]) -> None:
        """The member runs onPartitionsRevoked at its next poll and acknowledges at once."""
        life = client.life

        def done() -> None:
            if client.life == life and client.member_id == member_id:
                self.release(client, revoking)
                self._heartbeat(client, life)

        self.queue.schedule(
            max(self.now, client.busy_until) + self.settings.poll_ms,
            client.heartbeat_key,
            done,
        )
        timeout = (
            self.state.members[member_id].rebalance_timeout_ms or self.settings.max_poll_interval_ms
        )
        self.queue.schedule(
            self.now + timeout,
            f"revoke-timeout:{member_id}",
            lambda: self._revoke_timeout(member_id),
        )

    def _revoke_timeout(self, member_id: str) -> None:
        member = self.epochs.get(member_id)
        if member is not None and member.state == UNREVOKED:
            self._remove(
                member_id,
                "fenced",
                f"member {member_id} fenced: it did not revoke within its rebalance timeout",
            )

    # --- membership --------------------------------------------------------------------

    def _join(self, client: Client) -> None:
        spec = client.spec
        if spec.protocols and self.strategy not in spec.protocols:
            self.refused.append(
                f"{self.time_at(self.now).isoformat()} {spec.name}: UNSUPPORTED_ASSIGNOR "
                f"(asks for {', '.join(spec.protocols)}, the group uses {self.strategy})"
            )
            self.halt(client)
            return
        if spec.instance_id is not None:
            old = next(
                (
                    m
                    for m, member in self.state.members.items()
                    if member.instance_id == spec.instance_id
                ),
                None,
            )
            if old is not None and self.epochs[old].left_static:
                self._replace_static(client, old)
                return
        member_id = client.member_id or self.consumer_member_id()
        self.bind(client, member_id)
        self.emit(
            construct(
                MemberJoined,
                member_id=member_id,
                topics=list(spec.topics),
                instance_id=spec.instance_id,
                client_id=spec.name,
                rack=spec.rack,
                protocols=list(spec.protocols) or None,
                session_timeout_ms=self.settings.consumer_session_timeout_ms,
                rebalance_timeout_ms=self.settings.max_poll_interval_ms,
            )
        )
        self.epochs[member_id] = MemberEpochState()
        self._bump(f"member {member_id} joined the group")
        self._reconcile(client, member_id)

    def _replace_static(self, client: Client, old: str) -> None:
        assert client.spec.instance_id is not None
        new = self.consumer_member_id()
        self.emit(
            construct(
                MemberReplaced,
                old_member_id=old,
                new_member_id=new,
                instance_id=client.spec.instance_id,
            )
        )
        self.ledger.rename(old, new)
        self.queue.cancel(f"expire:{old}")
        member = self.epochs.pop(old)
        member.left_static = False
        self.epochs[new] = member
        self.bind(client, new)
        self.acquire(client, set(member.assigned))
        self._reconcile(client, new)

    def _remove(self, member_id: str, left: _LeftReason, reason: str) -> None:
        client = self.client_of(member_id)
        if client is not None:
            self.release_all(client)
            # A consumer-protocol client keeps its member id and rejoins at epoch 0.
            self._schedule_heartbeat(client)
        self.emit(construct(MemberLeft, member_id=member_id, reason=left))
        member = self.epochs.pop(member_id, None)
        if member is not None:
            self.claimed -= member.assigned
            self.claimed -= member.revoking
        for key in (f"expire:{member_id}", f"revoke-timeout:{member_id}"):
            self.queue.cancel(key)
        self._bump(reason)

    def _went_silent(self, client: Client, since: int) -> None:
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            return
        last = self.last_tick(client, since, self.heartbeat_interval())
        self._expire_at(member_id, max(last + self._session_timeout(member_id), self.now))

    def _session_timeout(self, member_id: str) -> int:
        found = self.state.members[member_id].session_timeout_ms
        return found or self.settings.consumer_session_timeout_ms

    def _expire_at(self, member_id: str, at: int) -> None:
        def expire() -> None:
            if member_id in self.epochs:
                self._remove(member_id, "session-timeout", f"member {member_id} session timed out")

        self.queue.schedule(at, f"expire:{member_id}", expire)

    # --- hooks from GroupSim -------------------------------------------------------------

    def on_start(self, client: Client) -> None:
        self._join(client)

    def on_stop(self, client: Client, *, clean: bool) -> None:
        member_id = client.member_id
        if member_id is None or member_id not in self.epochs:
            return
        if clean and client.spec.instance_id is None:
            self._remove(member_id, "leave", f"member {member_id} left the group")
        elif clean:
            # Epoch -2: the static member keeps its place until the session times out.
            self.epochs[member_id].left_static = True
            self._went_silent(client, self.now)
        else:
            self._went_silent(client, self.now)

    def on_subscription_changed(self, client: Client) -> None:
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            return
        if tuple(self.state.members[member_id].topics) == client.spec.topics:
            return
        self.emit(
            construct(SubscriptionChanged, member_id=member_id, topics=list(client.spec.topics))
        )
        self._bump(f"member {member_id} changed its subscription")
        self._reconcile(client, member_id)

    def on_topic_changed(self, topic: str) -> None:
        if not any(topic in m.topics for m in self.state.members.values()):
            return
        # The coordinator notices on the next heartbeat of any member.
        ticks = [
            self.next_tick(c, self.now, self.heartbeat_interval())
            for c in self.clients.values()
            if c.member_id is not None and c.connected(self.now)
        ]
        at = min(ticks, default=self.now)
        self.queue.schedule(
            at,
            f"metadata:{topic}",
            lambda: self._bump(f"partition metadata of topic {topic} changed"),
        )

    def on_slow(self, client: Client) -> None:
        limit = self.settings.max_poll_interval_ms
        if client.busy_until - self.now <= limit:
            return
        life = client.life

        def poll_timeout() -> None:
            member_id = client.member_id
            if client.life == life and member_id is not None and member_id in self.epochs:
                self._remove(
                    member_id,
                    "poll-timeout",
                    f"member {member_id} left: consumer poll timeout has expired",
                )
                self._schedule_heartbeat(client, at=client.busy_until)

        self.queue.schedule(self.now + limit, f"poll-timeout:{client.spec.name}", poll_timeout)

    def on_cut_off(self, client: Client) -> None:
        self._went_silent(client, self.now)

    def on_reconnected(self, client: Client) -> None:
        self._schedule_heartbeat(client, at=self.now)

    def on_coordinator_moved(self) -> None:
        # The new coordinator replays the group's records and restarts every session timer.
        for member_id in list(self.state.members):
            client = self.client_of(member_id)
            if client is None or not client.connected(self.now):
                self._expire_at(member_id, self.now + self._session_timeout(member_id))
