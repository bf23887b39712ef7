"""What every simulated group shares: clients, the clock, the fold, and event emission.

A ``GroupSim`` never keeps its own copy of the group's assignment or generation: every
event it emits is applied at once to ``state`` (the store's ``GroupState`` fold), and
assignor requests are built from that fold. What the log cannot hold (timers, which
member has rejoined, a client's heartbeat phase) lives in the protocol classes.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import chain

from kstore._errors import KstoreError, known_hint
from kstore.assignors import TopicPartition
from kstore.model._construct import construct
from kstore.model.events import Event, EventData, RebalanceStarted, StreamId, TopicChanged
from kstore.model.fold import GroupState
from kstore.model.ids import uuid5_bytes, uuid5_text
from kstore.protocol.clock import EventQueue
from kstore.protocol.find_coordinator import coordinator_partition
from kstore.protocol.ownership import OwnershipLedger
from kstore.protocol.settings import ProtocolSettings
from kstore.store.writer import stamper

__all__ = ["Client", "GroupSim", "MemberSpec", "NotNow", "ResumeMismatch"]


class NotNow(KstoreError):
    """What a scenario's step asks that the group cannot do at that moment (a member that
    is not there, or is running already)."""


class ResumeMismatch(KstoreError):
    """The timeline holds events this simulation would not write (another scenario or seed)."""


# Not ``frozen``, as ``fold.Member`` (its ``__init__`` a third of the instructions): a
# scaled group's every new member has one. Replaced, never changed (``change_subscription``).
@dataclass(slots=True, unsafe_hash=True)
class MemberSpec:
    """How one consumer process is configured."""

    name: str
    """Its ``client.id``; stays the same across restarts."""
    topics: tuple[str, ...]
    protocols: tuple[str, ...]
    """Assignor names in preference order (``partition.assignment.strategy``)."""
    rack: str | None = None
    instance_id: str | None = None
    """``group.instance.id``: a static member (KIP-345)."""


@dataclass(slots=True)
class Client:
    """A consumer process as the simulation drives it."""

    spec: MemberSpec
    index: int = 0
    """Its place among the simulation's clients, in the order they first started."""
    member_id: str | None = None
    alive: bool = False
    life: int = 0
    """Bumped whenever the process stops or the member id is reset; old timers check it."""
    phase: int = 0
    """Offset of its heartbeat ticks within the heartbeat interval."""
    cut_until: int = 0
    busy_until: int = 0
    silent_since: int | None = None
    """When its heartbeats stopped reaching the coordinator (crash, cut off, poll timeout)."""
    rejoin_key: str = field(init=False)
    """The keys of its JoinGroup's and its heartbeat's timers (its name is for life: made
    once)."""
    heartbeat_key: str = field(init=False)

    def __post_init__(self) -> None:
        self.rejoin_key = f"rejoin:{self.spec.name}"
        self.heartbeat_key = f"heartbeat:{self.spec.name}"

    def connected(self, now: int) -> bool:
        return self.alive and now >= self.cut_until


class GroupSim:
    """The shared machinery; ``ClassicGroupSim`` and ``ConsumerGroupSim`` add a protocol."""

    protocol_name = ""

    def __init__(
        self,
        stream: StreamId,
        *,
        start: datetime,
        settings: ProtocolSettings,
        seed: int,
        stored: Sequence[Event] = (),
        state: GroupState | None = None,
    ) -> None:
        self.stream = stream
        self.start = start
        self.settings = settings
        self.seed = seed
        self.queue = EventQueue()
        self.state = state if state is not None else GroupState()
        """The fold of every event the run emits (``state``: the one to start from,
        a writer's, ``Writer.fold``)."""
        self.clients: dict[str, Client] = {}
        self.rng = random.Random(seed)
        self.ledger = OwnershipLedger()
        self.coordinator = coordinator_partition(stream.group, settings.offsets_topic_partitions)
        self.coordinator_moves = 0
        self.refused: list[str] = []
        self.rebalances = 0
        self.emitted: list[Event] = []
        """Events this run produced that the store did not hold yet."""
        self.member_clients: dict[str, Client] = {}
        """Member id -> the running client that holds it."""
        self._running: dict[str, int] = {}
        """Running clients' names -> when each was first started (its place in ``clients``)."""
        self._stored = list(stored)
        self._ids = 0
        self._time_ms, self._time = 0, start
        self._name = str(stream)
        """The first part of each event's and member id's name (``event_id(stream,
        version)``, ``_new_name``), made once."""
        self._stamp = stamper(stream, self._name)
        self._member_names = f"{self._name}|{seed}|member|"
        """The part of each member id's name before its number (``_new_name``)."""

    # --- events ----------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.queue.now

    def time_at(self, ms: int) -> datetime:
        # Events come in runs at one simulated time (a scale step's members, a decision's
        # events): the last time made is kept.
        if ms != self._time_ms:
            self._time_ms, self._time = ms, self.start + timedelta(milliseconds=ms)
        return self._time

    def emit(self, data: EventData) -> Event:
        """Write one event: apply it to the fold and keep it for the store.

        When resuming, the first events are the ones already stored; each must be the
        event this run produces at that place, or the timeline is another simulation's.
        """
        version = self.state.version + 1
        # Built from values the simulation made itself: no validation on this hot path.
        event = self._stamp(self.time_at(self.now), data, version)
        if version <= len(self._stored):
            stored = self._stored[version - 1]
            if stored.to_dict() != event.to_dict():
                raise ResumeMismatch(
                    f"timeline {self.stream} holds another simulation: its event {version} is "
                    f"{stored.type} at {stored.to_dict()['at']}, this run writes {event.type} "
                    f"at {event.to_dict()['at']}; use another --timeline"
                )
        else:
            self.emitted.append(event)
        self.state.apply(event)
        if type(data) is RebalanceStarted:  # exact: isinstance asks pydantic's metaclass
            self.rebalances += 1
        return event

    @property
    def resumed_events(self) -> int:
        return len(self._stored)

    # --- helpers -----------------------------------------------------------------------

    def _new_name(self) -> str:
        """What the next member id is made from (its UUID's name)."""
        self._ids += 1
        return f"{self._member_names}{self._ids}"

    def classic_member_id(self, spec: MemberSpec) -> str:
        """``clientId-UUID`` or, for a static member, ``groupInstanceId-UUID``."""
        return f"{spec.instance_id or spec.name}-{uuid5_text(self._new_name())}"

    def consumer_member_id(self) -> str:
        """A KIP-848 client's own id: a UUID in Kafka's URL-safe base64 form."""
        return base64.urlsafe_b64encode(uuid5_bytes(self._new_name())).decode().rstrip("=")

    def next_tick(self, client: Client, after: int, interval: int) -> int:
        """The client's first heartbeat at or after ``after``."""
        k = -(-(after - client.phase) // interval)
        return client.phase + max(k, 0) * interval

    def last_tick(self, client: Client, before: int, interval: int) -> int:
        """The client's last heartbeat at or before ``before``."""
        return client.phase + max((before - client.phase) // interval, 0) * interval

    def subscribed_counts(self) -> dict[str, int]:
        """Partition counts of the existing topics some member subscribes to, by name."""
        # Members mostly share a subscription: its distinct tuples first (kept by the
        # fold: every decision asks), then their topics.
        lists = self.state.topic_lists()
        topics = lists[0] if len(lists) == 1 else set(chain.from_iterable(lists))
        return {t: n for t, n in sorted(self.state.topics.items()) if t in topics}

    # --- the cluster -------------------------------------------------------------------

    def set_topic(self, topic: str, partitions: int, racks: list[list[str]] | None = None) -> None:
        """A topic is created or its partition count / placement changes."""
        known = self.state.topics.get(topic)
        if known is not None and partitions < known:
            raise KstoreError(
                f"topic {topic}: Kafka cannot reduce partitions ({known} -> {partitions})"
            )
        self.emit(construct(TopicChanged, topic=topic, partitions=partitions, racks=racks))
        self.ledger.add_topics(self.subscribed_counts(), self.now)
        if known is not None and known != partitions:
            self.on_topic_changed(topic)

    def coordinator_failover(self) -> None:
        """The coordinator's broker changes; the new one loads the group from the log."""
        self.coordinator_moves += 1
        self.on_coordinator_moved()

    # --- clients -----------------------------------------------------------------------

    def client(self, name: str) -> Client:
        found = self.clients.get(name)
        if found is None:
            raise NotNow(f"no member named {name!r}{known_hint(name, self.clients)}")
        return found

    def start_client(self, spec: MemberSpec) -> None:
        client = self.clients.get(spec.name)
        if client is None:
            client = self.clients[spec.name] = Client(spec, index=len(self.clients))
        elif client.alive:
            raise NotNow(f"member {spec.name} is already running")
        client.spec = spec
        client.alive = True
        client.life += 1
        self._running[spec.name] = client.index
        client.cut_until = 0
        client.busy_until = self.now
        client.silent_since = None
        client.phase = self.rng.randrange(self.heartbeat_interval())
        self.on_start(client)

    def start_each(self, specs: Sequence[MemberSpec]) -> None:
        """``start_client`` of each spec in turn (a scale step's new members)."""
        for spec in specs:
            self.start_client(spec)

    def stop_each(self, names: Sequence[str]) -> None:
        """``stop_client`` of each name in turn, closed cleanly (a scale step's leavers)."""
        for name in names:
            self.stop_client(name, clean=True)

    def stop_client(self, name: str, *, clean: bool) -> None:
        """The process ends: ``clean`` closes the consumer (LeaveGroup), else it dies."""
        client = self.client(name)
        if not client.alive:
            return
        self.release_all(client)
        self.halt(client)
        client.silent_since = self.now
        self.on_stop(client, clean=clean)
        self.bind(client, None)

    def halt(self, client: Client) -> None:
        """The process is no longer running; its pending timers go stale."""
        client.alive = False
        client.life += 1
        self._running.pop(client.spec.name, None)

    def running(self) -> list[str]:
        """Names of the running clients, in the order they first started."""
        return sorted(self._running, key=self._running.__getitem__)

    def restart_client(self, name: str, down_ms: int, *, clean: bool = True) -> None:
        client = self.client(name)
        spec = client.spec
        self.stop_client(name, clean=clean)
        self.queue.schedule(
            self.now + down_ms, f"start:{name}:{client.life}", lambda: self.start_client(spec)
        )

    def change_subscription(self, name: str, topics: tuple[str, ...]) -> None:
        client = self.client(name)
        client.spec = MemberSpec(
            client.spec.name,
            topics,
            client.spec.protocols,
            client.spec.rack,
            client.spec.instance_id,
        )
        if client.alive:
            self.on_subscription_changed(client)

    def slow_down(self, name: str, ms: int) -> None:
        """The client's poll loop is stuck for ``ms`` (a long batch, a GC pause)."""
        client = self.client(name)
        if client.alive:
            client.busy_until = max(client.busy_until, self.now + ms)
            self.on_slow(client)

    def cut_off(self, name: str, ms: int) -> None:
        """Nothing between the client and the coordinator gets through for ``ms``."""
        client = self.client(name)
        if not client.alive:
            return
        client.cut_until = max(client.cut_until, self.now + ms)
        if client.silent_since is None:
            client.silent_since = self.now
        self.on_cut_off(client)
        life = client.life
        self.queue.schedule(
            client.cut_until, f"reconnect:{name}", lambda: self._reconnect(name, life)
        )

    def _reconnect(self, name: str, life: int) -> None:
        client = self.clients[name]
        if client.life == life and client.connected(self.now):
            client.silent_since = None
            self.on_reconnected(client)

    # --- partitions as clients hold them -------------------------------------------------

    # The ledger keeps what each member holds; a client holds nothing without a member id
    # (it lets go of everything before it gives its id up).

    def owned(self, client: Client) -> Set[TopicPartition]:
        """The partitions the client holds now (revoked ones gone, new ones not yet
        arrived): the ledger's set, not to be changed."""
        member_id = client.member_id
        return self.ledger.held(member_id) if member_id is not None else frozenset()

    def release(self, client: Client, tps: Set[TopicPartition]) -> None:
        if client.member_id is not None:
            self.ledger.release(client.member_id, tps, self.now)

    def release_all(self, client: Client) -> None:
        if client.member_id is not None:
            self.ledger.release_all(client.member_id, self.now)

    def acquire(self, client: Client, tps: set[TopicPartition]) -> None:
        assert client.member_id is not None
        self.ledger.acquire(client.member_id, tps, self.now)

    def client_of(self, member_id: str) -> Client | None:
        return self.member_clients.get(member_id)

    def bind(self, client: Client, member_id: str | None) -> None:
        """The client now goes by ``member_id`` (``None``: it has no member id)."""
        if client.member_id is not None and self.member_clients.get(client.member_id) is client:
            del self.member_clients[client.member_id]
        client.member_id = member_id
        if member_id is not None:
            self.member_clients[member_id] = client

    # --- running -----------------------------------------------------------------------

    def run_until(self, ms: int) -> None:
        self.queue.run_until(ms)

    def finish(self) -> None:
        self.ledger.close(self.now)

    # --- protocol hooks ----------------------------------------------------------------

    def heartbeat_interval(self) -> int:
        raise NotImplementedError

    def on_start(self, client: Client) -> None:
        raise NotImplementedError

    def on_stop(self, client: Client, *, clean: bool) -> None:
        raise NotImplementedError

    def on_subscription_changed(self, client: Client) -> None:
        raise NotImplementedError

    def on_topic_changed(self, topic: str) -> None:
        raise NotImplementedError

    def on_slow(self, client: Client) -> None:
        raise NotImplementedError

    def on_cut_off(self, client: Client) -> None:
        raise NotImplementedError

    def on_reconnected(self, client: Client) -> None:
        raise NotImplementedError

    def on_coordinator_moved(self) -> None:
        raise NotImplementedError
