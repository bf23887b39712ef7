"""The poller: the broker's present view of groups, diffed against the store, as events.

A poll asks the admin API for the groups (ListGroups), each group's members with their
subscription and assignment bytes (DescribeGroups, the fields of Kafka's
``DescribeGroupsResponse``) and the partition counts of the topics involved (Metadata).
``diff`` compares one described group with the fold of its ``recorded`` stream and
gives the events that bring the stream up to the present: topic changes, members that
joined, left or changed their subscription, and, once the group is ``Stable`` with an
assignment that differs from the stream's, a new generation.

DescribeGroups carries no generation, so the poller infers one: the stream's generation
plus one. Such a generation is always announced by a ``RebalanceStarted`` whose
``reason`` starts with ``INFERRED_REASON`` and names what changed; that reason is how a
reader tells an inferred generation from one Kafka numbered (events.md fixes the data
of ``AssignmentCompleted``, so the mark goes on the event before it).

Starting from the stream's fold makes the poller stateless: a restart, or two pollers of
the same group on one store, compute the same events with the same ids (a hash of the
stream version they build on and the event's content), so nothing is stored twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from kstore.model.events import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    StreamId,
    SubscriptionChanged,
    TopicChanged,
    TopicDeleted,
)
from kstore.model.fold import GroupState
from kstore.model.strategies import wire_protocol
from kstore.record._clock import recorded_now
from kstore.record._failures import (
    AUTHORIZATION,
    CONFIGURATION,
    ClientError,
    ClientFailure,
    FirstAnswer,
    Retries,
    Stopped,
    check_login,
    close_within,
    interruptible,
    permanent_error,
)
from kstore.record.config import KafkaSettings
from kstore.record.offsets_codec import (
    Assignment,
    OffsetsDecodeError,
    Subscription,
    decode_assignment,
    decode_subscription,
)
from kstore.store.interface import ConcurrencyError, EventStore
from kstore.store.writer import Writer, stamp

__all__ = [
    "INFERRED_REASON",
    "AdminView",
    "DescribedGroup",
    "DescribedMember",
    "Poller",
    "diff",
    "relevant_topics",
    "visibility_key",
]

INFERRED_REASON = "inferred by poller"
log = logging.getLogger("kstore.record")


@dataclass(frozen=True)
class DescribedMember:
    """A member as DescribeGroups gives it; metadata and assignment decoded when valid."""

    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None
    subscription: Subscription | None
    assignment: Assignment | None

    @classmethod
    def from_response(
        cls,
        group: str,
        member_id: str,
        client_id: str,
        client_host: str,
        instance_id: str | None,
        metadata: bytes,
        assignment: bytes,
    ) -> DescribedMember:
        """Decode the member's bytes; undecodable bytes are logged and left out."""

        def decode(kind: str, data: bytes, decoder: Any) -> Any:
            if not data:
                return None
            try:
                return decoder(data, f"{group}/{member_id}/{kind}")
            except (OffsetsDecodeError, ValueError) as exc:  # ValueError: the bytes reader's
                log.warning("describe: %s", exc)
                return None

        return cls(
            member_id,
            client_id,
            client_host,
            instance_id,
            decode("member_metadata", metadata, decode_subscription),
            decode("member_assignment", assignment, decode_assignment),
        )

    @property
    def topics(self) -> list[str]:
        return list(self.subscription.topics) if self.subscription else []

    def partitions(self) -> list[tuple[str, int]]:
        if self.assignment is None:
            return []
        return sorted(
            (entry.topic, partition)
            for entry in self.assignment.partitions
            for partition in entry.partitions
        )


@dataclass(frozen=True)
class DescribedGroup:
    """One group of a DescribeGroups response (``state``: Kafka's group state name).

    ``error``: the broker's error for this group (e.g. ``GroupAuthorizationFailedError``),
    when it could not describe it; the other fields are then empty.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...]
    error: str | None = None

    @property
    def assignments_described(self) -> bool:
        """False for a stable group whose broker describes members but neither the
        chosen protocol nor any assignment (Tansu, for one): membership is all it shows."""
        if self.state != "Stable" or not self.members:
            return True
        return bool(self.protocol) or any(m.assignment is not None for m in self.members)


def relevant_topics(group: DescribedGroup, state: GroupState) -> set[str]:
    """Topics whose partition counts the diff needs: subscribed, assigned or known."""
    topics = set(state.topics)
    for member in group.members:
        topics.update(member.topics)
        topics.update(topic for topic, _ in member.partitions())
    return topics


def _changes(
    group: DescribedGroup,
    state: GroupState,
    topics: Mapping[str, int],
    generation: int | None,
    client: str | None = None,
) -> list[EventData]:
    """The data of the events, in order, that bring ``state`` to what ``group`` shows.

    ``generation``: the group's generation when known (then always a new one), or None
    to infer one when the assignment changed. ``client``: the library that computed the
    assignment, when known (``AssignmentCompleted.client``).
    """
    out: list[EventData] = []
    for topic in sorted(relevant_topics(group, state)):
        count = topics.get(topic)
        if count is None:
            if topic in state.topics:
                out.append(TopicDeleted(topic=topic))
        elif count >= 1 and state.topics.get(topic) != count:
            out.append(TopicChanged(topic=topic, partitions=count))

    if group.state in ("Empty", "Dead") or group.protocol_type not in ("consumer", ""):
        described: dict[str, DescribedMember] = {}
    else:
        described = {member.member_id: member for member in group.members}

    known = dict(state.members)
    before = {member_id: sorted(tps) for member_id, tps in state.assignment.items()}
    joined = [m for m in described.values() if m.member_id not in known]
    gone = [member_id for member_id in known if member_id not in described]
    # A static member back under a new id, with the old one's partitions: a replacement.
    for old_id in list(gone):
        instance = known[old_id].instance_id
        new = next((m for m in joined if instance and m.instance_id == instance), None)
        if new is None or new.partitions() != sorted(state.assignment.get(old_id, ())):
            continue
        assert instance is not None
        out.append(
            MemberReplaced(old_member_id=old_id, new_member_id=new.member_id, instance_id=instance)
        )
        gone.remove(old_id)
        joined.remove(new)
        known[new.member_id] = known.pop(old_id)
        if old_id in before:
            before[new.member_id] = before.pop(old_id)
    out.extend(MemberLeft(member_id=member_id, reason="other") for member_id in gone)
    for member in described.values():
        if member in joined:
            rack = member.subscription.rack_id if member.subscription else None
            data = {
                "member_id": member.member_id,
                "topics": member.topics,
                "instance_id": member.instance_id,
                "client_id": member.client_id or None,
                "host": member.client_host or None,
                "rack": rack,
                "protocols": [group.protocol] if group.protocol else None,
            }
            out.append(MemberJoined(**{k: v for k, v in data.items() if v is not None}))
        elif member.subscription is not None and sorted(
            set(known[member.member_id].topics)
        ) != sorted(set(member.topics)):
            # A member described without its metadata (Tansu's) has no subscription to
            # tell: it changed nothing (it was "topics: []" over what another recorder
            # of the group had stored, a user trial).
            out.append(SubscriptionChanged(member_id=member.member_id, topics=member.topics))

    if group.state != "Stable" or not described or not group.assignments_described:
        return out
    assignment = {member_id: member.partitions() for member_id, member in described.items()}
    if generation is not None:
        if generation == state.generation:
            return out
        reason = f"generation {generation}"
    else:
        if assignment == before and group.protocol == state.strategy:
            return out
        generation = (state.generation or 0) + 1
        reason = f"{INFERRED_REASON}: {_what_changed(assignment, before, group, state)}"
    out.append(RebalanceStarted(generation=generation, reason=reason))
    protocol = wire_protocol(group.protocol)
    payload: dict[str, Any] = {
        "generation": generation,
        "strategy": group.protocol or "unknown",
        "assignment": assignment,
    }
    if protocol is not None:
        payload["protocol"] = protocol
    if client is not None:
        payload["client"] = client
    out.append(AssignmentCompleted(**payload))
    return out


def _what_changed(
    assignment: dict[str, list[tuple[str, int]]],
    before: dict[str, list[tuple[str, int]]],
    group: DescribedGroup,
    state: GroupState,
) -> str:
    what = []
    if set(assignment) != set(before):
        what.append("member set changed")
    if any(assignment.get(m) != before.get(m) for m in assignment.keys() & before.keys()):
        what.append("assignment changed")
    if group.protocol != state.strategy and state.strategy is not None:
        what.append("strategy changed")
    return ", ".join(what) or "first poll"


def diff(
    group: DescribedGroup,
    state: GroupState,
    topics: Mapping[str, int],
    at: datetime,
    cluster: str = "default",
    generation: int | None = None,
    client: str | None = None,
) -> list[Event]:
    """Events that bring the ``recorded`` stream (folded into ``state``) to ``group``.

    ``topics`` maps topic names to partition counts (topics missing from it no longer
    exist). ``generation`` is the group's generation when the caller knows it (a
    recording group leader); otherwise a changed assignment gets an inferred one. Event
    ids are derived from the stream version and each event's content.
    """
    stream = StreamId(cluster, group.group_id, "recorded")
    return [
        stamp(
            stream,
            at,
            data,
            "poll",
            f"{stream.cluster}/{stream.group}/{state.version}/{i}",
            content=True,
        )
        for i, data in enumerate(_changes(group, state, topics, generation, client))
    ]


def visibility_key(cluster: str, group: str) -> str:
    """The store checkpoint that says what the poller sees of a group (``kstore sql``:
    ``SELECT * FROM kstore_checkpoints``): ``{"sees": "assignments"}`` or
    ``{"sees": "membership", "why": ...}``."""
    return f"poll/{cluster}/{group}"


def _visibility(group: DescribedGroup) -> dict[str, str]:
    if group.assignments_described:
        return {"sees": "assignments"}
    return {
        "sees": "membership",
        "why": "the broker describes its members but not their assignments (empty "
        "protocol, no assignment bytes)",
    }


class AdminView(Protocol):
    """What a poll asks the broker (``KafkaAdminView`` live; fakes in tests)."""

    def group_ids(self) -> list[str]: ...

    def describe(self, group_ids: list[str]) -> list[DescribedGroup]: ...

    def partition_counts(self, topics: Collection[str]) -> dict[str, int]: ...

    def close(self) -> None: ...


class Poller:
    """Polls the admin view and appends each group's differences to the store.

    ``admin`` is the view to ask, or None with ``open_admin`` to open one (again after a
    failure). The broker is asked on a thread of its own (``_failures.interruptible``) and
    the store written on the caller's, so a stop request is acted on at once and never
    in the middle of a write.
    """

    def __init__(
        self,
        store: EventStore,
        admin: AdminView | None,
        *,
        cluster: str = "default",
        groups: Collection[str] | None = None,
        open_admin: Callable[[], AdminView] | None = None,
    ) -> None:
        if admin is None and open_admin is None:
            raise ValueError("give an admin view or a way to open one")
        self.store = store
        self._writers: dict[str, Writer] = {}
        self._said: set[tuple[str, str]] = set()
        self.admin = admin
        self.open_admin = open_admin
        self.cluster = cluster
        self.groups = None if groups is None else sorted(groups)
        self.stored = 0
        self.polls = 0
        self.retries = 0

    def _view(self) -> AdminView:
        if self.admin is None:
            assert self.open_admin is not None
            self.admin = self.open_admin()
        return self.admin

    def fetch(self) -> tuple[list[DescribedGroup], dict[str, int]]:
        """Ask the broker: the groups described, and the partition counts they need."""
        admin = self._view()
        ids = self.groups if self.groups is not None else sorted(admin.group_ids())
        if not ids:  # --all-groups: a poller that polled nothing said nothing (user trial)
            self._once(
                "",
                "no groups",
                "the broker lists no consumer group (ListGroups); polling on until one "
                "appears (ListGroups leaves out groups the principal may not Describe, "
                "and some brokers list none: --group G asks for one by name)",
            )
        described = admin.describe(ids) if ids else []
        wanted: set[str] = set()
        for group in described:
            wanted |= relevant_topics(group, self._state(group.group_id))
        counts = admin.partition_counts(sorted(wanted)) if wanted else {}
        return described, counts

    def _writer(self, group_id: str) -> Writer:
        """The group's writer; its checkpoint (``visibility_key``) holds what is seen."""
        writer = self._writers.get(group_id)
        if writer is None:
            key = visibility_key(self.cluster, group_id)
            writer = self._writers[group_id] = Writer(self.store, checkpoint=key)
        return writer

    def _state(self, group_id: str) -> GroupState:
        return self._writer(group_id).state(StreamId(self.cluster, group_id, "recorded"))

    def _once(self, group_id: str, what: str, message: str, *args: object) -> None:
        if (group_id, what) not in self._said:
            self._said.add((group_id, what))
            log.warning(message, *args)

    def _unreadable(self, group: DescribedGroup) -> None:
        """A group the broker would not describe: said once; an explicitly asked group
        the principal may not describe is an authorization failure (exit 2)."""
        assert group.error is not None
        if "Authorization" in group.error:
            if self.groups is not None:
                detail = f"no Describe on group {group.group_id}"
                raise permanent_error(ClientFailure(AUTHORIZATION, detail))
            self._once(
                group.group_id,
                "unreadable",
                "group %s: not authorized to describe it (needs Describe on the group); "
                "not recorded",
                group.group_id,
            )
        else:
            self._once(
                group.group_id,
                "unreadable",
                "group %s: the broker could not describe it (%s); not recorded until it can",
                group.group_id,
                group.error,
            )

    def record(
        self, described: list[DescribedGroup], counts: Mapping[str, int], at: datetime
    ) -> int:
        """Append what changed since the stored state: the number of new events."""
        stored = 0
        for group in described:
            if group.error is not None:
                self._unreadable(group)
                continue
            writer = self._writer(group.group_id)
            seen = _visibility(group)
            if seen["sees"] == "membership":
                self._once(
                    group.group_id,
                    "membership",
                    "group %s: %s; recording membership only (joins and leaves, no "
                    "generations or assignments)",
                    group.group_id,
                    seen["why"],
                )
            events = diff(group, self._state(group.group_id), counts, at, self.cluster)
            changed = seen != writer.saved and group.state == "Stable"
            if not events and not changed:
                continue
            stream = StreamId(self.cluster, group.group_id, "recorded")
            try:
                result = writer.write(events, seen if changed else None)
            except ConcurrencyError:
                self._writers.pop(group.group_id, None)
                log.info("%s moved on while polling; its changes wait for the next poll", stream)
                continue
            stored += result.stored
            for event in events:
                log.info("recorded %s %s %s", event.group, event.type, event.data.to_dict())
        self.stored += stored
        return stored

    def poll_once(self, at: datetime | None = None) -> int:
        """One poll: the number of new events stored."""
        described, counts = self.fetch()
        return self.record(described, counts, at or recorded_now())

    def close(self) -> None:
        """Close the view, waiting a second at most (a client may hang on a lost broker)."""
        admin, self.admin = self.admin, None
        if admin is not None:
            close_within(admin.close)

    def run(
        self,
        interval: float,
        stop: threading.Event,
        polls: int | None = None,
        *,
        max_retries: int = -1,
        backoff: tuple[float, float] = (0.5, 30.0),
        first: FirstAnswer | None = None,
    ) -> int:
        """Poll every ``interval`` seconds until ``stop`` (or ``polls`` answered polls).

        A failed poll is retried by the one rule of ``_failures.Retries`` (``max_retries``
        failures in a row, then ``GaveUp``); a permanent failure raises at once. With
        ``first``, a broker that has not answered a poll within ``first.within`` seconds
        is given up on (``GaveUp``), a poll hanging in its client included.
        """
        retries = Retries(max_retries, stop, backoff, first)
        while not stop.is_set() and (polls is None or self.polls < polls):
            try:
                described, counts = interruptible(self.fetch, stop, retries.remaining())
            except Stopped:
                if stop.is_set():
                    break
                self.close()  # the call left hanging is abandoned with its client
                raise retries.unanswered("poll") from None
            except Exception as exc:
                if self.open_admin is not None:
                    self.close()
                try:
                    retries.failed(exc, "poll")
                finally:
                    self.retries = retries.total
                continue
            retries.succeeded()
            self.record(described, counts, recorded_now())
            self.polls += 1
            if polls is None or self.polls < polls:
                stop.wait(interval)
        return self.stored


class KafkaAdminView:
    """The admin API through kafka-python, keeping DescribeGroups' member bytes raw.

    kafka-python's public ``describe_groups`` decodes the members' bytes and the group's
    authorized operations itself, and loses the whole answer when it cannot: a broker
    whose authorized-operations field has a bit kafka-python does not know (Tansu answers
    all 32 set: ``ValueError: 15 is not a valid ACLOperation``), or one member's
    malformed bytes; it also hands user data over as text. confluent-kafka's public
    ``describe_consumer_groups`` gives no member subscriptions, and on Tansu no members at
    all. So the poller takes the raw answer through one kafka-python hook,
    ``_describe_groups_process_response`` (checked at start: a kafka-python without it is
    a configuration error naming the versions that have it), and decodes the bytes with
    kstore's own decoder, tested on every version of Kafka's schemas.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        from kafka import __version__ as version
        from kafka.admin import KafkaAdminClient

        if not hasattr(KafkaAdminClient, "_describe_groups_process_response"):
            raise ClientError(
                CONFIGURATION,
                f"kafka-python {version} has no _describe_groups_process_response, which "
                "the poller takes DescribeGroups' raw answer from: install kafka-python 3.0.x",
            )

        class _RawDescribe(KafkaAdminClient):  # type: ignore[misc]
            def _describe_groups_process_response(self, response: Any) -> Any:
                return {group.group_id: group for group in response.groups}

        options = settings.kafka_python(client_id="kstore-poller", bootstrap_timeout_ms=5000)
        check_login(settings.confluent())
        self._client = _RawDescribe(**options)

    def group_ids(self) -> list[str]:
        return sorted({g["group_id"] for g in self._client.list_groups()})

    def describe(self, group_ids: list[str]) -> list[DescribedGroup]:
        from kafka.errors import for_code

        out = []
        for group_id, raw in sorted(self._client.describe_groups(group_ids).items()):
            if raw.error_code:
                error = for_code(raw.error_code).__name__
                out.append(DescribedGroup(group_id, "", "", "", (), error=error))
                continue
            members = tuple(
                DescribedMember.from_response(
                    group_id,
                    member.member_id,
                    member.client_id,
                    member.client_host,
                    getattr(member, "group_instance_id", None),
                    bytes(member.member_metadata or b""),
                    bytes(member.member_assignment or b""),
                )
                for member in raw.members
            )
            out.append(
                DescribedGroup(
                    group_id, raw.group_state, raw.protocol_type, raw.protocol_data, members
                )
            )
        return out

    def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        counts = {}
        for topic in self._client.describe_topics(list(topics)):
            if not topic.get("error_code") and topic.get("partitions"):
                counts[topic["name"]] = len(topic["partitions"])
        return counts

    def close(self) -> None:
        self._client.close()
