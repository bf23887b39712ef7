"""The classic group protocol: JoinGroup / SyncGroup / Heartbeat / LeaveGroup.

The coordinator side follows Kafka's ``GroupMetadataManager`` and ``ClassicGroup``
(``group-coordinator``, Kafka 3.9/4.0); the member side follows ``ConsumerCoordinator``
/ ``AbstractCoordinator``:

- member ids are ``clientId-UUID`` (``groupInstanceId-UUID`` for static members); the
  first member added leads; when the leader is removed, the next leader is the first
  key of the coordinator's ``HashMap`` of members (``kstore._java.HashSetOrder``);
- the protocol is voted: candidates are the protocols every member supports, each
  member votes for its first candidate, most votes wins (a tie goes to the protocol
  the ``HashMap`` of votes iterates first); a joining member that supports none of the
  candidates is refused with ``INCONSISTENT_GROUP_PROTOCOL``;
- a new group waits ``group.initial.rebalance.delay.ms``, extended by each new member
  up to the rebalance timeout; otherwise the join phase ends when every member has
  rejoined, or after the rebalance timeout (the largest ``max.poll.interval.ms``),
  when dynamic members that did not rejoin are removed;
- members learn of a rebalance from REBALANCE_IN_PROGRESS on their next heartbeat and
  rejoin from their next poll; a member silent for ``session.timeout.ms`` is removed;
- eager members revoke everything before rejoining; cooperative members (KIP-429) keep
  their partitions, give up those the assignment takes away, and rejoin at once for a
  second rebalance;
- a static member (KIP-345) restarted under the same ``group.instance.id`` while the
  coordinator still knows it replaces its old member id without a rebalance.

Simplified: the leader's SyncGroup follows its JoinGroup response at once, so a
generation never ends between the two (Kafka would then skip a generation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from itertools import islice
from typing import Literal

from kstore._java import HashSetOrder, hash_order, string_hash
from kstore.assignors import AssignmentRequest, TopicPartition, assign, reads_owned
from kstore.model._construct import construct, constructor
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
from kstore.model.strategies import protocol_of
from kstore.protocol.clock import Due
from kstore.protocol.group import Client, GroupSim, MemberSpec
from kstore.protocol.settings import ProtocolSettings

__all__ = ["ClassicGroupSim", "select_protocol"]

EMPTY = "Empty"
PREPARING = "PreparingRebalance"
STABLE = "Stable"

_JOIN_TIMER = "join"

_REBALANCING = (
    "rebalance failed due to 'The group is rebalancing, so a rejoin is needed.' "
    "(RebalanceInProgressException)"
)

_REVOKING = "need to revoke partitions and re-join"

_LeftReason = Literal["leave", "session-timeout", "poll-timeout", "fenced", "other"]

# A member's join and leave, fifty of each a decision when a group is scaled.
_joined = constructor(
    MemberJoined,
    "member_id",
    "topics",
    "instance_id",
    "client_id",
    "rack",
    "protocols",
    "session_timeout_ms",
    "rebalance_timeout_ms",
)
_left = constructor(MemberLeft, "member_id", "reason")


def select_protocol(members: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Kafka's vote: ``members`` as (member id, protocols in preference order), in the
    order they were added to the group.
    """
    return vote(Counter(tuple(protocols) for _, protocols in members), lambda: members)


def vote(
    lists: Mapping[tuple[str, ...], int],
    members: Callable[[], Sequence[tuple[str, Sequence[str]]]],
) -> str:
    """``select_protocol`` from the members' preference lists, each with how many members
    give it (members mostly share a few lists: a group keeps their count as it changes);
    ``members()`` gives the members as ``select_protocol`` takes them, asked for only
    when a tie is to be broken."""
    given = {protocols: n for protocols, n in lists.items() if n}
    size = sum(given.values())
    counts: Counter[str] = Counter()
    for protocols, n in given.items():
        for name in protocols:
            counts[name] += n
    candidates = {name for name, count in counts.items() if count == size}
    choices = {next(name for name in protocols if name in candidates) for protocols in given}
    if len(choices) == 1:
        return choices.pop()  # no tie to break: the order of the votes does not matter
    voters = members()
    by_id = dict(voters)
    votes: dict[str, int] = {}
    for member_id in hash_order([m for m, _ in voters]):
        choice = next(name for name in by_id[member_id] if name in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    best = ""
    for name in hash_order(list(votes)):
        if not best or votes[name] > votes[best]:
            best = name
    return best


class ClassicGroupSim(GroupSim):
    """A classic consumer group with ``protocol`` ``eager`` or ``cooperative``."""

    def __init__(
        self,
        stream: StreamId,
        *,
        protocol: str,
        start: datetime,
        settings: ProtocolSettings,
        seed: int,
        stored: Sequence[Event] = (),
        state: GroupState | None = None,
    ) -> None:
        super().__init__(
            stream, start=start, settings=settings, seed=seed, stored=stored, state=state
        )
        if protocol not in ("eager", "cooperative"):
            raise ValueError(f"classic protocol must be eager or cooperative, not {protocol}")
        self.protocol_name = protocol
        self._protocol: Literal["eager", "cooperative"] = (
            "eager" if protocol == "eager" else "cooperative"
        )
        self.phase = EMPTY
        self.previous_phase = EMPTY
        self.leader: str | None = None
        self.awaiting: set[str] = set()
        self.new_member_added = False
        self.static: dict[str, str] = {}
        self.order: HashSetOrder[str] = HashSetOrder(string_hash)
        self.preferences: Counter[tuple[str, ...]] = Counter()
        """The members' protocol lists (in preference order), each with how many give it."""
        self.assigned_topics: dict[str, int] = {}
        """Partition counts of the subscribed topics when the last assignment was made."""

    def heartbeat_interval(self) -> int:
        return self.settings.heartbeat_interval_ms

    # --- coordinator: membership ---------------------------------------------------------

    def _rebalance_timeout(self) -> int:
        """The largest of the members' rebalance timeouts, or the setting when there are
        none: every member is this simulation's (``_add_member``: the setting)."""
        return self.settings.max_poll_interval_ms

    def _session_timeout(self, member_id: str) -> int:
        member = self.state.members.get(member_id)
        found = member.session_timeout_ms if member is not None else None
        return found or self.settings.session_timeout_ms

    def _supports(self, protocols: Sequence[str]) -> bool:
        if self.phase == EMPTY or not self.state.members:
            return bool(protocols)
        # A protocol every member supports: named as many times in the members' lists
        # (``preferences``: each distinct list, with how many members give it) as there
        # are members.
        size, lists = len(self.state.members), self.preferences.items()
        return any(sum(n * given.count(p) for given, n in lists) == size for p in protocols)

    def _add_member(self, client: Client) -> str:
        spec = client.spec
        member_id = self.classic_member_id(spec)
        self.bind(client, member_id)
        settings = self.settings
        self.emit(
            _joined(
                member_id,
                list(spec.topics),
                spec.instance_id,
                spec.name,
                spec.rack,
                list(spec.protocols),
                settings.session_timeout_ms,
                settings.max_poll_interval_ms,
            )
        )
        self.order.add(member_id)
        self.preferences[spec.protocols] += 1
        if self.leader is None:
            self.leader = member_id
        if spec.instance_id is not None:
            self.static[spec.instance_id] = member_id
        self.awaiting.add(member_id)
        return member_id

    def _remove_member(self, member_id: str, left: _LeftReason, reason: str | None) -> None:
        """Remove a member; ``reason`` starts a rebalance (``None``: the caller completes
        the join phase itself)."""
        client = self.client_of(member_id)
        if client is not None:
            self.release_all(client)
            self.bind(client, None)
        member = self.state.members[member_id]
        self.emit(_left(member_id, left))
        self.preferences[member.protocols or ()] -= 1
        self.queue.cancel(f"expire:{member_id}")
        self.order.remove(member_id)
        self.awaiting.discard(member_id)
        if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        if self.leader == member_id:
            self.leader = self.order.first() if len(self.order) else None
        if reason is None:
            return
        if self.phase in (STABLE, EMPTY):
            self._prepare_rebalance(reason)
        elif self.phase == PREPARING and self._all_joined():
            self._complete_join()

    def _all_joined(self) -> bool:
        return len(self.awaiting) == len(self.state.members)

    def _heartbeating(self, member_id: str) -> bool:
        client = self.client_of(member_id)
        return client is not None and client.connected(self.now) and client.silent_since is None

    def _schedule_expiry(self, member_id: str, at: int) -> None:
        self.queue.schedule(at, f"expire:{member_id}", lambda: self._expire(member_id))

    def _expire(self, member_id: str) -> None:
        if member_id not in self.state.members or self._heartbeating(member_id):
            return
        if member_id in self.awaiting:
            return  # a member parked in JoinGroup counts as heartbeating
        self._remove_member(
            member_id, "session-timeout", f"removing member {member_id} on heartbeat expiration."
        )

    def _went_silent(self, client: Client) -> None:
        """Heartbeats of ``client`` stopped at ``silent_since``: the deadline is the last
        heartbeat that got through plus the session timeout."""
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            return
        since = client.silent_since if client.silent_since is not None else self.now
        last = self.last_tick(client, since, self.heartbeat_interval())
        deadline = max(last + self._session_timeout(member_id), self.now)
        self._schedule_expiry(member_id, deadline)

    # --- coordinator: the join phase ------------------------------------------------------

    def _prepare_rebalance(self, reason: str) -> None:
        initial = self.phase == EMPTY
        self.previous_phase, self.phase = self.phase, PREPARING
        self.emit(
            construct(RebalanceStarted, generation=(self.state.generation or 0) + 1, reason=reason)
        )
        if initial:
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(self._rebalance_timeout() - delay, 0)
            self._schedule_initial(delay, remaining)
            return
        if self._all_joined():
            self._complete_join()
            return
        self.queue.schedule(self.now + self._rebalance_timeout(), _JOIN_TIMER, self._complete_join)
        self._learn_rebalance(self.state.members, self.awaiting)

    def _schedule_initial(self, delay: int, remaining: int) -> None:
        def fire() -> None:
            if self.new_member_added and remaining != 0:
                self.new_member_added = False
                self._schedule_initial(
                    min(self.settings.initial_rebalance_delay_ms, remaining),
                    max(remaining - delay, 0),
                )
            else:
                self._complete_join()

        self.queue.schedule(self.now + delay, _JOIN_TIMER, fire)

    def _maybe_rebalance(self, reason: str) -> None:
        """``maybePrepareRebalanceOrCompleteJoin``."""
        if self.phase in (STABLE, EMPTY):
            self._prepare_rebalance(reason)
        else:
            self._maybe_complete()

    def _maybe_complete(self) -> None:
        # A new group always waits out its initial delay.
        if self.phase == PREPARING and self._all_joined() and self.previous_phase != EMPTY:
            self._complete_join()

    def _complete_join(self) -> None:
        if self.phase != PREPARING:
            return
        self.queue.cancel(_JOIN_TIMER)
        awaiting = self.awaiting
        if not self._all_joined():
            for member_id in [m for m in self.state.members if m not in awaiting]:
                if self.state.members[member_id].instance_id is None:
                    self._drop_unjoined(member_id)
        if self.state.members and not self._elect_joined_leader():
            self.queue.schedule(
                self.now + self._rebalance_timeout(), _JOIN_TIMER, self._complete_join
            )
            return
        generation = (self.state.generation or 0) + 1
        if not self.state.members:
            self.emit(
                construct(
                    AssignmentCompleted,
                    generation=generation,
                    strategy=self.state.strategy or "",
                    assignment={},
                    protocol=self._protocol,
                )
            )
            self.previous_phase, self.phase = self.phase, EMPTY
            self.awaiting.clear()
            return
        strategy = vote(
            self.preferences,
            lambda: [(m, member.protocols or ()) for m, member in self.state.members.items()],
        )
        result = assign(self._request(strategy))
        self.emit(
            construct(
                AssignmentCompleted,
                generation=generation,
                strategy=strategy,
                assignment=dict(result.assignment),
                leader=self.leader,
                protocol=self._protocol,
            )
        )
        self.assigned_topics = self.subscribed_counts()
        self.previous_phase, self.phase = self.phase, STABLE
        joined, self.awaiting = self.awaiting, set()
        self.ledger.add_topics(self.assigned_topics, self.now)
        self.queue.schedule_each(self._deliver(joined), self._rejoin_revoking)

    def _drop_unjoined(self, member_id: str) -> None:
        client = self.client_of(member_id)
        self._remove_member(member_id, "poll-timeout", None)
        if client is not None and client.alive:
            # It learns of it from UNKNOWN_MEMBER_ID and joins again as a new member.
            self._schedule_rejoin_as_new(client)

    def _elect_joined_leader(self) -> bool:
        if self.leader is not None and self.leader in self.awaiting:
            return True
        for member_id in hash_order(list(self.state.members)):
            if member_id in self.awaiting:
                self.leader = member_id
                return True
        return False

    def _request(self, strategy: str) -> AssignmentRequest:
        # Under EAGER every member revoked everything before joining, so the
        # subscriptions carry no owned partitions; an assignor that never reads them
        # (range, roundrobin) gets none either (the fold then keeps no member's
        # ``owned`` up to date at each decision: ``GroupState.bare``).
        revoked = self.protocol_name == "eager" and protocol_of(strategy) == "cooperative"
        return self.state.to_request(strategy, owned=not revoked and reads_owned(strategy))

    # --- members: receiving the assignment ------------------------------------------------

    def _deliver(self, joined: set[str]) -> Iterator[tuple[int, str, tuple[Client, int]]]:
        """Each member that joined gets its part of the new assignment (the others'
        sessions are checked); yields the rejoin of each cooperative member that gives
        partitions up, for ``schedule_each``: consumed as it goes, each rejoin keeps its
        place among the expiries scheduled here."""
        now, clients, ledger = self.now, self.member_clients, self.ledger
        cooperative = self.protocol_name != "eager"
        assignment = self.state.assignment
        # The ledger takes every member's new partitions in one call at the end: eager
        # members revoked everything before joining, and a cooperative assignment gives
        # no partition that its owner is still to revoke here.
        if not cooperative and joined == assignment.keys() and all(map(clients.get, joined)):
            ledger.acquire_each(assignment.items(), now)  # all joined: no one to look at
            return
        taken: list[tuple[str, tuple[TopicPartition, ...]]] = []
        for member_id, tps in assignment.items():
            client = clients.get(member_id)
            if client is None or member_id not in joined:
                if not self._heartbeating(member_id):
                    self._schedule_expiry(member_id, now + self._session_timeout(member_id))
                continue
            if cooperative:
                if ledger.holds_given(member_id, tps):
                    continue  # the same tuple as the last time: it keeps what it holds
                owned, given = ledger.held(member_id), set(tps)
                if owned == given:
                    continue  # it keeps what it holds: nothing to give up or take
                revoked = owned - given
                if revoked:
                    ledger.release(member_id, revoked, now)
                    rejoin = (client, client.life)
                    yield now + self.settings.poll_ms, client.rejoin_key, rejoin
            taken.append((member_id, tps))
        # A cooperative member holds its new share now and nothing else: it gave up
        # above what the share does not name.
        ledger.acquire_each(taken, now, exact=cooperative)

    # --- members: rejoining -----------------------------------------------------------------

    def _learn_rebalance(self, member_ids: Iterable[str], joined: Container[str] = ()) -> None:
        """REBALANCE_IN_PROGRESS on the next heartbeat of each member's client (those in
        ``joined`` aside), its JoinGroup from its next poll."""
        # Every member of every rebalance passes through here: ``next_tick`` and
        # ``connected`` inline (a phase is less than the interval: the first tick at or
        # after ``now`` is ``now`` plus the phase's distance from it, modulo the interval).
        # Each rejoin is numbered and made a pending key here, in the same pass
        # (``schedule_made``): the queue's items made at once.
        now, interval, poll = self.now, self.heartbeat_interval(), self.settings.poll_ms
        clients = self.member_clients
        seq, live = self.queue.numbering()
        items: list[tuple[int, int, str, tuple[Client, int]]] = []
        append = items.append
        for member_id in member_ids:
            if member_id in joined:
                continue
            c = clients.get(member_id)
            if c is not None and c.alive and now >= c.cut_until:
                tick = now + (c.phase - now) % interval
                busy = c.busy_until
                seq += 1
                key = c.rejoin_key
                live[key] = seq
                append(((tick if tick > busy else busy) + poll, seq, key, (c, c.life)))
        self.queue.schedule_made(items, seq, self._rejoin_rebalancing)

    def _rejoin_rebalancing(self, due: Due[tuple[Client, int]]) -> None:
        self._rejoin_each(due, _REBALANCING)

    def _rejoin_revoking(self, due: Due[tuple[Client, int]]) -> None:
        self._rejoin_each(due, _REVOKING)

    def _rejoin_each(self, due: Due[tuple[Client, int]], client_reason: str) -> None:
        """Each client's JoinGroup with its member id, at its own time; in the join phase,
        the run of those that only wait for the others as one step."""
        if self.phase != PREPARING:
            for client, life in due:
                self._rejoin(client, life, client_reason)
                if self.phase == PREPARING:
                    break
            else:
                return
        rest = self._park_each(due)
        if rest is not None:
            client, life = rest
            self._rejoin(client, life, client_reason)

    def _park_each(self, due: Due[tuple[Client, int]]) -> tuple[Client, int] | None:
        """The join phase's common case in one pass over the due rejoins (each consumed
        as it goes: ``Due.window``): each in turn whose member waits in JoinGroup for
        the others (an eager one lets go of all it holds first), up to one that does
        more (its member is gone, or the join completes with it), consumed and given
        back for ``_rejoin``; ``None`` when every due one was handled."""
        members, awaiting = self.state.members, self.awaiting
        completes = self.previous_phase != EMPTY  # ``_maybe_complete``
        left = len(members) - len(awaiting)
        # An eager member lets go of all it holds (``OwnershipLedger.release_all``
        # inline: one call less per member and rebalance).
        holds = self.ledger.live.pop if self.protocol_name == "eager" else None
        items, pos, stop, live = due.window()
        take = live.pop
        last = None
        for i, (at, seq, key, rejoin) in enumerate(islice(items, pos, stop), pos):
            # One dictionary operation for the common case (the key pending with this
            # number: consumed); a stale one (its timer reset or cancelled) is skipped, a
            # later number taken out by mistake put back (nothing reads the keys' order).
            pending = take(key, None)
            if pending != seq:
                if pending is not None:
                    live[key] = pending
                continue
            last = at
            client, life = rejoin
            if client.life != life or not client.alive or at < client.cut_until:
                continue
            member_id = client.member_id
            if member_id not in members:  # ``None`` never is: it rejoins as a new member
                due.consumed(i + 1, at)
                return rejoin
            if member_id not in awaiting:
                left -= 1
            if not left and completes:
                due.consumed(i + 1, at)
                return rejoin
            awaiting.add(member_id)
            if holds is not None and (hold := holds(member_id, None)) is not None:
                hold[1] = at
        due.consumed(stop, last)
        return None

    def _rejoin(self, client: Client, life: int, client_reason: str) -> None:
        """A client's JoinGroup with its member id."""
        now = self.now
        if client.life != life or not client.alive or now < client.cut_until:
            return
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            self._schedule_rejoin_as_new(client)
            return
        if self.protocol_name == "eager":
            self.ledger.release_all(member_id, now)
        if self.phase != PREPARING:
            self._join_existing(client, member_id, client_reason, metadata_changed=False)
            return
        self.awaiting.add(member_id)
        self._maybe_complete()

    def _join_existing(
        self, client: Client, member_id: str, client_reason: str, *, metadata_changed: bool
    ) -> None:
        if self.phase == PREPARING:
            self.awaiting.add(member_id)
            self._maybe_complete()
            return
        cooperative_revoke = client_reason == _REVOKING
        if member_id == self.leader:
            self.awaiting.add(member_id)
            self._prepare_rebalance(
                f"Leader {member_id} re-joining group during {self.phase}; "
                f"client reason: {client_reason}"
            )
        elif metadata_changed or cooperative_revoke:
            # The subscription a cooperative member sends lists its owned partitions,
            # so after revoking its metadata no longer matches.
            self.awaiting.add(member_id)
            self._prepare_rebalance(
                f"Updating metadata for member {member_id} during {self.phase}; "
                f"client reason: {client_reason}"
            )

    def _schedule_rejoin_as_new(self, client: Client) -> None:
        self.release_all(client)
        self.bind(client, None)
        client.life += 1
        life = client.life
        at = max(self.now, client.busy_until) + self.settings.poll_ms
        self.queue.schedule(at, client.rejoin_key, lambda: self._join_new_if(client, life))

    def _join_new_if(self, client: Client, life: int) -> None:
        if client.life == life and client.connected(self.now):
            client.silent_since = None
            self._join_new(client)

    def _join_new(self, client: Client) -> None:
        """JoinGroup with no member id (MEMBER_ID_REQUIRED, then again with the id)."""
        spec = client.spec
        existing = self.static.get(spec.instance_id) if spec.instance_id is not None else None
        if not self._supports(spec.protocols):
            self.refused.append(
                f"{self.time_at(self.now).isoformat()} {spec.name}: INCONSISTENT_GROUP_PROTOCOL "
                f"(offers {', '.join(spec.protocols)})"
            )
            self.halt(client)
            return
        if existing is not None:
            self._replace_static(client, existing)
            return
        if self.protocol_name == "eager":
            self.release_all(client)
        member_id = self._add_member(client)
        if self.phase == PREPARING and self.previous_phase == EMPTY:
            self.new_member_added = True
        reason = (
            "not provided"
            if spec.instance_id
            else f"need to re-join with the given member-id: {member_id}"
        )
        self._maybe_rebalance(
            f"Adding new member {member_id} with group instance id {spec.instance_id}; "
            f"client reason: {reason}"
        )

    def _replace_static(self, client: Client, old: str) -> None:
        spec = client.spec
        new = self.classic_member_id(spec)
        assert spec.instance_id is not None
        previous = self.state.members[old]
        old_client = self.client_of(old)
        if old_client is not None and old_client is not client:
            # The old process is fenced (FENCED_INSTANCE_ID): it stops for good.
            self.release_all(old_client)
            self.bind(old_client, None)
            self.halt(old_client)
        self.emit(
            construct(
                MemberReplaced, old_member_id=old, new_member_id=new, instance_id=spec.instance_id
            )
        )
        self.ledger.rename(old, new)
        self.bind(client, new)
        self.queue.cancel(f"expire:{old}")
        self.order.remove(old)
        self.order.add(new)
        self.static[spec.instance_id] = new
        if self.leader == old:
            self.leader = new
        if old in self.awaiting:
            self.awaiting.discard(old)
        topics_changed = tuple(previous.topics) != spec.topics
        if topics_changed:
            self.emit(construct(SubscriptionChanged, member_id=new, topics=list(spec.topics)))
        if self.phase == PREPARING:
            self.awaiting.add(new)
            self._maybe_complete()
            return
        if self.phase == STABLE and topics_changed:
            self.awaiting.add(new)
            self._prepare_rebalance(
                f"Updating metadata for static member {new} with instance id "
                f"{spec.instance_id}; client reason: not provided"
            )
        else:
            # No rebalance: the member gets the assignment its predecessor had.
            self.ledger.add_topics(self.subscribed_counts(), self.now)
            self.acquire(client, set(self.state.assignment.get(new, ())))

    # --- hooks from GroupSim -------------------------------------------------------------

    def on_start(self, client: Client) -> None:
        self._join_new(client)

    def start_each(self, specs: Sequence[MemberSpec]) -> None:
        """``start_client`` of each spec in turn (a scale step's dozens of new members):
        one that only joins the join phase in progress as a new dynamic member (the
        common case once the first has started it) in this loop, ``start_client`` and
        ``_join_new`` inline, the others by ``start_client``.

        In the loop, the protocol check (``_supports``) is made once for a run of
        members with the same protocol list: a member with list L joins only where
        some protocol of L is named by every member, and adding a member with L (no
        name twice in it) keeps that so; the reason a join gives is made only where
        it starts a rebalance, which in a join phase it does not."""
        clients, running, rng = self.clients, self._running, self.rng
        interval = self.heartbeat_interval()
        supported: tuple[str, ...] | None = None
        for spec in specs:
            if (
                self.phase != PREPARING
                or not self.state.members
                or spec.instance_id is not None
                or spec.name in clients
            ):
                supported = None
                self.start_client(spec)
                continue
            protocols = spec.protocols
            if protocols != supported:
                if not self._supports(protocols):
                    supported = None
                    self.start_client(spec)  # refused, as there
                    continue
                supported = protocols if len(set(protocols)) == len(protocols) else None
            # ``start_client`` of a client never started before.
            client = clients[spec.name] = Client(spec, index=len(clients))
            client.alive = True
            client.life += 1
            running[spec.name] = client.index
            client.busy_until = self.now
            client.phase = rng.randrange(interval)
            # ``_join_new``: no static member to replace, nothing held to let go of.
            self._add_member(client)
            if self.previous_phase == EMPTY:
                self.new_member_added = True
            self._maybe_complete()  # ``_maybe_rebalance`` in a join phase

    def stop_each(self, names: Sequence[str]) -> None:
        """``stop_client`` of each name in turn, closed cleanly (a scale step's dozens of
        leavers): one that only leaves the join phase in progress (a dynamic member, the
        common case once the first has started it) in this loop, ``stop_client``,
        ``on_stop`` and ``_remove_member`` inline, the others by ``stop_client``. Its
        reason is made only where a leave starts a rebalance, which in a join phase it
        does not."""
        clients, member_clients, running = self.clients, self.member_clients, self._running
        release, now, state = self.ledger.release_all, self.now, self.state
        for name in names:
            # Looked up each time: a join phase that completes here gives new ones.
            members, awaiting, order = state.members, self.awaiting, self.order
            client = clients.get(name)
            member_id = client.member_id if client is not None else None
            if (
                client is None
                or member_id is None
                or self.phase != PREPARING
                or not client.alive
                or client.spec.instance_id is not None
                or member_id not in members
                or member_clients.get(member_id) is not client
            ):
                self.stop_client(name, clean=True)
                continue
            # ``stop_client``: it lets go of everything, ``halt``.
            release(member_id, now)
            client.alive = False
            client.life += 1
            running.pop(name, None)
            client.silent_since = now
            # ``_remove_member`` (by ``on_stop``): its LeaveGroup.
            del member_clients[member_id]
            client.member_id = None
            member = members[member_id]
            self.emit(_left(member_id, "leave"))
            self.preferences[member.protocols or ()] -= 1
            self.queue.cancel(f"expire:{member_id}")
            order.remove(member_id)
            awaiting.discard(member_id)
            if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
                del self.static[member.instance_id]
            if self.leader == member_id:
                self.leader = order.first() if len(order) else None
            if len(awaiting) == len(members):  # ``_all_joined``
                self._complete_join()

    def on_stop(self, client: Client, *, clean: bool) -> None:
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            return
        if clean and client.spec.instance_id is None:
            self._remove_member(
                member_id,
                "leave",
                f"explicit `LeaveGroup` request for ({member_id}) members; "
                "client reason: the consumer is being closed",
            )
        else:
            # Static members send no LeaveGroup on close (KIP-345): the session times out.
            self._went_silent(client)

    def on_subscription_changed(self, client: Client) -> None:
        life = client.life
        self.queue.schedule(
            max(self.now, client.busy_until) + self.settings.poll_ms,
            client.rejoin_key,
            lambda: self._resubscribe(client, life),
        )

    def _resubscribe(self, client: Client, life: int) -> None:
        member_id = client.member_id
        if client.life != life or member_id is None or member_id not in self.state.members:
            return
        old = self.state.members[member_id].topics
        new = client.spec.topics
        if tuple(old) == new:
            return
        if self.protocol_name == "eager":
            self.release_all(client)
        self.emit(construct(SubscriptionChanged, member_id=member_id, topics=list(new)))
        self._join_existing(
            client,
            member_id,
            f"subscription has changed from topics {sorted(old)} to topics {sorted(new)}",
            metadata_changed=True,
        )

    def on_topic_changed(self, topic: str) -> None:
        if self.leader is None or topic not in self.assigned_topics:
            return
        leader = self.client_of(self.leader)
        if leader is None:
            return
        life = leader.life
        at = self.next_tick(leader, self.now, self.settings.metadata_max_age_ms)
        self.queue.schedule(at, f"metadata:{leader.spec.name}", lambda: self._refresh(leader, life))

    def _refresh(self, client: Client, life: int) -> None:
        member_id = client.member_id
        if client.life != life or member_id != self.leader or member_id is None:
            return
        if self.phase != STABLE or self.subscribed_counts() == self.assigned_topics:
            return
        if self.protocol_name == "eager":
            self.release_all(client)
        self._join_existing(
            client,
            member_id,
            "cached metadata has changed from the beginning of the rebalance",
            metadata_changed=True,
        )

    def on_slow(self, client: Client) -> None:
        limit = self.settings.max_poll_interval_ms
        if client.busy_until - self.now <= limit:
            return
        life = client.life
        self.queue.schedule(
            self.now + limit,
            f"poll-timeout:{client.spec.name}",
            lambda: self._poll_timeout(client, life),
        )

    def _poll_timeout(self, client: Client, life: int) -> None:
        if client.life != life or client.busy_until <= self.now:
            return
        member_id = client.member_id
        if member_id is not None and member_id in self.state.members:
            if client.spec.instance_id is None:
                self._remove_member(
                    member_id,
                    "poll-timeout",
                    f"explicit `LeaveGroup` request for ({member_id}) members; "
                    "client reason: consumer poll timeout has expired.",
                )
            else:
                client.silent_since = self.now
                self._went_silent(client)
        # The client forgets its member id and joins again when its poll returns.
        self._schedule_rejoin_as_new(client)

    def on_cut_off(self, client: Client) -> None:
        if client.member_id is not None and client.member_id not in self.awaiting:
            self._went_silent(client)

    def on_reconnected(self, client: Client) -> None:
        member_id = client.member_id
        if member_id is None or member_id not in self.state.members:
            self._schedule_rejoin_as_new(client)
            return
        self.queue.cancel(f"expire:{member_id}")
        if self.phase == PREPARING:
            self._learn_rebalance((member_id,), self.awaiting)

    def on_coordinator_moved(self) -> None:
        # The new coordinator loads the group from the log (here: the fold) and gives
        # every member a fresh session deadline.
        self.order = HashSetOrder(string_hash)
        self.static = {}
        for member_id, member in self.state.members.items():
            self.order.add(member_id)
            if member.instance_id is not None:
                self.static[member.instance_id] = member_id
            if not self._heartbeating(member_id):
                self._schedule_expiry(member_id, self.now + self._session_timeout(member_id))
        self.leader = (
            self.state.leader
            if self.state.leader in self.state.members
            else (self.order.first() if len(self.order) else None)
        )
        if self.phase == PREPARING:
            # The join phase lived in the old coordinator's memory: it starts again.
            self.queue.cancel(_JOIN_TIMER)
            self.awaiting = set()
            self.phase = STABLE
            self._prepare_rebalance(
                "coordinator moved during a rebalance; members rejoin the new coordinator"
            )
