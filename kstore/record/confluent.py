"""Recording confluent-kafka (librdkafka) groups: members report, the merge makes events.

librdkafka does not hand the application the group's assignment; each member only
learns its own partitions, in its rebalance callbacks. So every member installs a
``RecordingListener``, which appends one ``MemberReport`` per callback (``on_assign``,
``on_revoke``, ``on_lost``), one at ``close``, and one ``present`` report for a
generation the member finds itself in without a callback, to a JSON Lines file of its
own in a shared reports directory. A report says only what the member knows for
certain: its member id, the group generation it is in (read from
``consumer_group_metadata()`` after the poll, never inside a callback), a sequence
number of its own, the partitions of the callback, what it holds afterwards, its
subscription, its topics' partition counts and its client library.

With ``RecordingListener.configure`` in the consumer's settings, a member that leads
also reports each run of its assignor (``decided``: the members it named, what it gave
each), read from librdkafka's own debug log (``_rdkafka_log``), which confluent-kafka
hands to the listener's logger inside ``poll``.

``merge_reports`` groups the reports by generation, never by time, so delays and any
order of arrival across members merge into the same events. A generation is one
somebody was given an assignment in. A member is in a generation when it reported in it
(a callback, or its presence: a cooperative member whose partitions do not change, or
whose SyncGroup failed, gets no callback, and reports that it found itself there), or
when it reports after it and every generation until then has it (it never heard of
them): named by its leader, or, where no decision was reported, it reported before. A
member that reported nothing in a generation and nothing after it is not in it, whatever
it held: it was killed, closed or expelled before (its leader may still name a killed
member until its session ends, and give it what it held). Where the leader's decision
was reported, a member it did not name is not in the generation either, unless it was
called back in it; and a member it named that reports only from a later generation on
is in it, new and holding nothing (Tansu counted its JoinGroup in the round but answered
it only with the next one: it never heard of this one). What it held in the
generation is what its last report of that generation says, where a revocation that
ends the generation (every eager revocation, any ``lost``) counts what was held before
it. A member missing from a generation has left: of its own accord when it reported
``close``, otherwise it crashed or was expelled.

Generations are the group's own numbers (librdkafka's), so the merge is deterministic:
event ids derive from the generation and the event's content, and merging again (after
more reports, or from every member at once) stores each fact once. A merge made while
the group runs (``settle``) stores only final generations (``_final``), so that no later
merge stores one otherwise: one still under way would be recorded cut short, and one a
named member has not reported yet could be recorded without it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from kstore._errors import KstoreError, UsageError, known_hint
from kstore._files import text_lines
from kstore.model.events import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    StreamId,
    SubscriptionChanged,
    TopicChanged,
)
from kstore.model.strategies import protocol_of
from kstore.record._clock import recorded_now
from kstore.record._rdkafka_log import FACILITIES, LeaderLog
from kstore.store.writer import stamp

__all__ = [
    "NOT_ANSWERED",
    "NOT_CALLED_BACK",
    "NOT_HEARD",
    "MemberReport",
    "RecordingListener",
    "group_generation",
    "librdkafka_client",
    "merge_reports",
    "read_reports",
]

log = logging.getLogger("kstore.record")
_METADATA_MAGIC = b"CGMDv2:"
ReportKind = Literal["assign", "revoke", "lost", "close", "present", "decided"]
"""``present``: the member found itself in a new generation, outside any callback (a
cooperative member whose partitions do not change, or a new one given nothing yet, may
get no callback in it). ``decided``: the member led the generation and its assignor
ran (``named``, ``decision``; only with ``RecordingListener.configure``)."""
REPORTED_REASON = "from member reports"
NOT_CALLED_BACK = "in the generation, called back in nothing: its SyncGroup failed"
NOT_HEARD = "reported nothing in the generation, before and after it"
NOT_ANSWERED = "named by its leader, first reported in a later generation: never heard of it"
"""``AssignmentNotTakenUp.reason``: the member reported being in the generation, or it
never heard of it (it reported before and after it, or, new, its leader named it before
its JoinGroup was answered, with a later generation)."""
_CALLBACKS = ("assign", "revoke", "lost")

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class MemberReport:
    """One member's view after one rebalance callback."""

    group: str
    member_id: str
    generation: int
    """The group generation the member was in at the callback."""
    seq: int
    """The member's own count of its reports (in the order they happened)."""
    kind: ReportKind
    at: float
    """Seconds since the Unix epoch."""
    partitions: list[TopicPartition]
    """The partitions of the callback (added, revoked or lost)."""
    holds: list[TopicPartition]
    """Everything the member holds after the callback."""
    topics: list[str]
    strategy: str
    partition_counts: dict[str, int] = field(default_factory=dict)
    client: str = ""
    """The member's client library and version (``librdkafka 2.16.0``; empty in reports
    of older listeners)."""
    named: list[str] = field(default_factory=list)
    """``decided``: the members the leader's assignor ran for, in its order."""
    decision: dict[str, list[TopicPartition]] = field(default_factory=dict)
    """``decided``: what the assignor gave each member (cooperative-sticky: the target,
    before the cooperative step takes away what another member still owns)."""

    @classmethod
    def from_json(cls, line: str, where: str) -> MemberReport:
        try:
            raw = json.loads(line)
            raw["partitions"] = [(t, p) for t, p in raw["partitions"]]
            raw["holds"] = [(t, p) for t, p in raw["holds"]]
            if "decision" in raw:
                raw["decision"] = {
                    m: [(t, p) for t, p in tps] for m, tps in raw["decision"].items()
                }
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise UsageError(f"{where}: not a member report: {exc}") from None

    @property
    def cooperative(self) -> bool:
        return protocol_of(self.strategy) == "cooperative"

    def held_in_generation(self, closing: bool) -> list[TopicPartition]:
        """What the member held in its generation, when this is its last report of it.

        ``closing``: the member closed in this generation (a cooperative member revokes
        everything then, which ends the generation as an eager revocation does).
        """
        cooperative_step = self.cooperative and not closing
        ends = self.kind == "lost" or (self.kind == "revoke" and not cooperative_step)
        return sorted(set(self.holds) | set(self.partitions)) if ends else sorted(self.holds)


def group_generation(consumer: Any) -> int:
    """The generation a confluent-kafka consumer is in (-1: none yet).

    librdkafka gives it only inside its serialised group metadata: the magic
    ``CGMDv2:``, then the generation id as a native-endian 32-bit integer.
    """
    data = consumer.consumer_group_metadata()
    if not isinstance(data, bytes) or not data.startswith(_METADATA_MAGIC):
        raise KstoreError("this confluent-kafka does not expose the group generation")
    start = len(_METADATA_MAGIC)
    return int.from_bytes(data[start : start + 4], sys.byteorder, signed=True)


class RecordingListener:
    """Rebalance callbacks for one confluent-kafka consumer that report to ``reports``.

    Use ``subscribe(consumer, topics)`` instead of ``consumer.subscribe``,
    ``poll(consumer, timeout)`` instead of ``consumer.poll`` (or call ``flush(consumer)``
    after each of your own polls) and ``close(consumer)`` instead of ``consumer.close()``.

    A callback calls nothing of the client: librdkafka aborts the consumer
    (``CallState_get: cs != NULL``) when a client call inside a rebalance callback
    serves callbacks itself, as a metadata call does under cooperative-sticky. A callback
    only notes what it is given (its partitions, what the member then holds, the time).
    The member id and the generation are read once the poll that ran the callbacks has
    returned, on the application's thread, and the reports written then (a read from
    another thread waits for every ``poll`` in progress: confluent-kafka serves one call
    of a consumer at a time). ``poll`` polls in slices of ``slice_s`` seconds, so the
    read comes at most that long after the callback; the generation moves only when a
    JoinGroup answer arrives, after the rejoin the callback's return lets librdkafka
    send. An eager revocation is dated with the generation of the member's last
    assignment (it comes before the member joins again).
    """

    def __init__(
        self, reports: Path | str, group: str, strategy: str, *, slice_s: float = 0.05
    ) -> None:
        self.group = group
        self.strategy = strategy
        self.topics: list[str] = []
        self.holds: set[TopicPartition] = set()
        self.member_id: str | None = None
        """The member id as last read (None before the first poll in a group)."""
        self.generation = -1
        """The generation as last read (-1 before the first poll in a group)."""
        self.client = librdkafka_client()
        self.slice_s = slice_s
        self._seq = 0
        self._cooperative = protocol_of(strategy) == "cooperative"
        directory = Path(reports)
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{group}.{os.getpid()}.{uuid.uuid4().hex[:8]}.jsonl"
        self._partition_counts: dict[str, int] = {}
        self._noted: list[_Callback] = []
        self._present = -1
        self._lines: list[tuple[float, str]] = []
        self._leader_log = LeaderLog()
        self._forward: logging.Logger | None = None
        self.logger = logging.getLogger(f"kstore.record.librdkafka.{self.path.stem}")
        """librdkafka's log, once ``configure`` has put it in the consumer's settings."""
        self.logger.propagate = False
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(_Lines(self._lines, self))

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` for the consumer, with librdkafka's ``cgrp`` and ``assignor`` debug
        contexts on and its log sent to ``self.logger`` (a logger in ``settings`` still
        gets every line), so that the member, when it leads, reports each decision of its
        assignor: the members it named and what it gave each (a ``decided`` report). The
        merge then takes a member its leader did not name out of the generation. The
        lines are handed over in ``poll``, on the application's thread, and read after
        it, as the callbacks are."""
        contexts = {c.strip() for c in str(settings.get("debug", "")).split(",") if c.strip()}
        forward = settings.get("logger")
        self._forward = forward if isinstance(forward, logging.Logger) else None
        debug = ",".join(sorted(contexts | {"cgrp", "assignor"}))
        return {**settings, "debug": debug, "logger": self.logger}

    def subscribe(self, consumer: Any, topics: Sequence[str]) -> None:
        self.topics = sorted(topics)
        self._partition_counts = self._counts(consumer)
        consumer.subscribe(
            list(topics), on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost
        )

    def poll(self, consumer: Any, timeout: float | None = None) -> Any:
        """``consumer.poll(timeout)`` (None: wait for a message), reporting the callbacks it
        ran and each new generation the member finds itself in."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            left = self.slice_s if deadline is None else deadline - time.monotonic()
            message = consumer.poll(max(0.0, min(self.slice_s, left)))
            self.flush(consumer)
            self._presence(consumer)
            if message is not None or (deadline is not None and time.monotonic() >= deadline):
                return message

    def flush(self, consumer: Any) -> None:
        """Report the callbacks noted since the last flush (call it outside any callback),
        and the decisions of its assignor the log has shown since."""
        self._decisions(consumer)
        if not self._noted:
            return
        before = self.generation
        member_id, generation = consumer.memberid(), group_generation(consumer)
        noted, self._noted = self._noted, []
        for callback in noted:
            # An eager member revokes before it joins again: in the generation of its
            # last assignment.
            eager_revoke = callback.kind == "revoke" and not self._cooperative and before >= 0
            self._report(
                member_id or self.member_id,
                before if eager_revoke else generation,
                callback,
                counts=True,
            )
        self.member_id = member_id or self.member_id
        self.generation = generation

    def close(self, consumer: Any) -> None:
        """Leave the group: the revocation ``close`` calls back with is reported with the
        member id and generation read just before."""
        self.flush(consumer)
        self.member_id, self.generation = consumer.memberid(), group_generation(consumer)
        consumer.close()
        noted, self._noted = self._noted, []
        for callback in noted:
            self._report(self.member_id, self.generation, callback, counts=True)
        self._report(
            self.member_id, self.generation, _Callback("close", [], [], _now()), counts=False
        )

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        pairs = [(tp.topic, tp.partition) for tp in partitions]
        self.holds = (self.holds | set(pairs)) if self._cooperative else set(pairs)
        self._note("assign", pairs)

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        pairs = [(tp.topic, tp.partition) for tp in partitions]
        self.holds -= set(pairs)
        self._note("revoke", pairs)

    def on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        pairs = [(tp.topic, tp.partition) for tp in partitions]
        self.holds -= set(pairs)
        self._note("lost", pairs)

    def _decisions(self, consumer: Any) -> None:
        lines, self._lines[:] = list(self._lines), []
        for at, text in lines:
            run = self._leader_log.feed(at, text)
            if run is None or run.generation is None or run.generation < 0:
                continue
            self._seq += 1
            report = MemberReport(
                group=self.group,
                member_id=consumer.memberid() or self.member_id or "",
                generation=run.generation,
                seq=self._seq,
                kind="decided",
                at=run.at,
                partitions=[],
                holds=sorted(self.holds),
                topics=self.topics,
                strategy=self.strategy,
                client=self.client,
                named=[member for member, _, _ in run.members],
                decision={m: sorted(tps) for m, tps in run.assigned.items()},
            )
            self._write(report)

    def _presence(self, consumer: Any) -> None:
        """A ``present`` report for a generation the member is in and was not called back
        in (yet). It makes no generation of its own in the merge: a generation whose
        JoinGroup round never completed is called back in by nobody."""
        generation = group_generation(consumer)
        if generation < 0 or generation in (self.generation, self._present):
            return
        self._present = generation
        member_id = consumer.memberid() or self.member_id
        callback = _Callback("present", [], sorted(self.holds), _now())
        self._report(member_id, generation, callback, counts=True)

    def _note(self, kind: ReportKind, pairs: list[TopicPartition]) -> None:
        self._noted.append(_Callback(kind, sorted(pairs), sorted(self.holds), _now()))

    def _counts(self, consumer: Any) -> dict[str, int]:
        counts = {}
        for topic in self.topics:
            try:
                found = consumer.list_topics(topic, timeout=2).topics.get(topic)
            except Exception as exc:  # a report without counts is still worth keeping
                log.warning("no metadata for %s: %s", topic, exc)
                continue
            if found is not None and found.partitions:
                counts[topic] = len(found.partitions)
        return counts

    def _report(
        self, member_id: str | None, generation: int, callback: _Callback, *, counts: bool
    ) -> None:
        if not member_id or generation < 0:
            log.warning("%s: a %s callback outside any generation", self.group, callback.kind)
            return
        self._seq += 1
        report = MemberReport(
            group=self.group,
            member_id=member_id,
            generation=generation,
            seq=self._seq,
            kind=callback.kind,
            at=callback.at,
            partitions=callback.partitions,
            holds=callback.holds,
            topics=self.topics,
            strategy=self.strategy,
            partition_counts=dict(self._partition_counts) if counts else {},
            client=self.client,
        )
        self._write(report)

    def _write(self, report: MemberReport) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(report)) + "\n")


class _Lines(logging.Handler):
    """Keeps librdkafka's lines of the facilities ``LeaderLog`` reads (the logger is
    called inside ``poll``: it only notes them), and hands every record on to the
    application's own logger, if it gave one."""

    def __init__(self, lines: list[tuple[float, str]], listener: RecordingListener) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines
        self.listener = listener

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        facility, _, rest = text.partition(" ")
        if facility in FACILITIES and "]: " in rest:
            self.lines.append((record.created, rest.split("]: ", 1)[1]))
        if self.listener._forward is not None:
            self.listener._forward.handle(record)


@dataclass(frozen=True)
class _Callback:
    """What one rebalance callback was given, and what the member then held."""

    kind: ReportKind
    partitions: list[TopicPartition]
    holds: list[TopicPartition]
    at: float


def _now() -> float:
    return recorded_now().timestamp()


def librdkafka_client() -> str:
    """``librdkafka`` and the version of the librdkafka under confluent-kafka."""
    import confluent_kafka

    return f"librdkafka {confluent_kafka.libversion()[0]}"


def read_reports(directory: Path | str, group: str | None = None) -> list[MemberReport]:
    """Every report in ``directory`` (of ``group``, when given), by generation. A folder
    that is not there, and a group of which it holds no report, are errors: an empty
    merge would read as a group that never rebalanced."""
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():  # it was "no such folder" (a user trial)
        raise UsageError(
            f"--reports {directory}: a file, not a folder (the folder the listeners write "
            "their reports in)"
        )
    if not folder.is_dir():
        raise UsageError(f"--reports {directory}: no such folder")
    reports, groups = [], set()
    for path in sorted(folder.glob("*.jsonl")):
        for number, line in enumerate(text_lines(path), start=1):
            if line.strip():
                report = MemberReport.from_json(line, f"{path}:{number}")
                groups.add(report.group)
                if group is None or report.group == group:
                    reports.append(report)
    if group is not None and group not in groups:
        held = known_hint(group, groups) if groups else " (it holds none)"
        raise UsageError(f"--group {group}: no report of it in {directory}{held}")
    reports.sort(key=_order)
    return reports


def _order(report: MemberReport) -> tuple[int, str, int]:
    return report.generation, report.member_id, report.seq


@dataclass
class _Batch:
    """The events of one generation (or of closes after the last one), and what a merge
    made while the group runs waits for before it stores them."""

    name: str
    at: float
    """Its first report's time: the events' ``at``."""
    newest: float
    """Its newest report's time: ``settle`` counts from it."""
    facts: list[EventData]
    awaited: list[str] = field(default_factory=list)
    """Members a later report could still put in it (its leader named them, and they
    have reported nothing in it or after it, nor closed), or, in a batch of closes, the
    members left (the next generation will have the closes)."""
    waiting: str = ""
    """What it waits for, as the warning says it."""


def merge_reports(
    reports: Iterable[MemberReport],
    *,
    cluster: str = "default",
    settle: float | None = None,
    now: float | None = None,
) -> list[Event]:
    """The events of the groups' reports (one ``recorded`` stream per group).

    ``settle``: the group may still be running, so only its final generations (``_final``:
    none of their reports younger than this many seconds at ``now``, nobody awaited);
    None or 0: the group has stopped, and every generation is final.
    """
    by_group: dict[str, list[MemberReport]] = {}
    for report in sorted(reports, key=_order):
        by_group.setdefault(report.group, []).append(report)
    current = datetime.now(UTC).timestamp() if now is None else now
    events = []
    for group, every in sorted(by_group.items()):
        batches = _batches(group, every, stopped=not settle)
        if settle:
            batches = batches[: _final(group, batches, settle, current)]
        for batch in batches:
            events.extend(_events(cluster, group, batch.name, batch.at, batch.facts))
    return events


def _final(group: str, batches: list[_Batch], settle: float, now: float) -> int:
    """How many of ``batches`` a merge stores. A batch is final when none of its reports
    is younger than ``settle`` and it awaits nobody, or the batch after it is final:
    that one does not have the members awaited here (they have reported nothing, so its
    leader did not name them, else it would await them too), and a member is in a
    generation it never heard of only when every generation until its next report has
    it. From the first batch not final on, every batch waits (each builds on the one
    before)."""
    count, after = len(batches), False
    for index in reversed(range(len(batches))):
        batch = batches[index]
        final = now - batch.newest >= settle and (after or not batch.awaited)
        count, after = (count if final else index), final
    if count < len(batches) and now - batches[count].newest >= settle:
        log.warning(
            "group %s: %s (merge again later; --settle 0 once the group has stopped)",
            group,
            batches[count].waiting,
        )
    return count


def _batches(group: str, reports: list[MemberReport], *, stopped: bool) -> list[_Batch]:
    """Events of one group's reports, sorted by (generation, member, seq): a batch per
    generation, and one of the members' closes after the last generation they were in
    when every member closed, or after the last generation; while members are left
    (unless ``stopped``: the group has stopped), that one awaits them: the next
    generation's batch will have the closes."""
    first: dict[str, MemberReport] = {}
    seen: dict[str, list[int]] = {}
    """The generations each member reported in, in order."""
    closed: dict[str, int] = {}
    newest: dict[int, float] = {}
    by_generation: dict[int, list[MemberReport]] = {}
    decided: dict[int, MemberReport] = {}
    for report in reports:
        first.setdefault(report.member_id, report)
        seen.setdefault(report.member_id, []).append(report.generation)
        newest[report.generation] = max(newest.get(report.generation, report.at), report.at)
        if report.kind == "close":
            closed[report.member_id] = report.generation
        else:
            by_generation.setdefault(report.generation, []).append(report)
        if report.kind == "decided":
            decided[report.generation] = report
    # A generation is one somebody was given an assignment in (librdkafka calls every
    # member whose SyncGroup succeeds back with one, empty or not). Presence alone makes
    # none, nor does the revocation of a member closing in a JoinGroup round that never
    # completed.
    by_generation = {
        generation: round_reports
        for generation, round_reports in by_generation.items()
        if any(report.kind == "assign" for report in round_reports)
    }

    numbers = sorted(by_generation)

    def in_unheard(member: str, generation: int) -> bool:
        """Whether a member that reported nothing in ``generation`` was in it: it reports
        later, and every generation until then has it (it never heard of them): named by
        its leader, or, where no decision was reported, the member reported before."""
        reported = seen.get(member, [])
        after = bisect_right(reported, generation)
        if after == len(reported):
            return False
        until = bisect_left(numbers, reported[after])
        return all(
            member in decided[g].named if g in decided else reported[0] < generation
            for g in numbers[bisect_left(numbers, generation) : until]
        )

    batches: list[_Batch] = []
    members: dict[str, list[str]] = {}
    holds: dict[str, list[TopicPartition]] = {}
    counts: dict[str, int] = {}
    for generation in numbers:
        round_reports = by_generation[generation]
        if members and all(closed.get(m, generation) < generation for m in members):
            batches.append(_closes(members, closed, reports, []))  # the group emptied
        out: list[EventData] = []
        last = {report.member_id: report for report in round_reports}
        for report in round_reports:
            for topic, count in sorted(report.partition_counts.items()):
                if counts.get(topic) != count and count >= 1:
                    out.append(TopicChanged(topic=topic, partitions=count))
                    counts[topic] = count
        named = decided[generation].named if generation in decided else []
        unheard = {m for m in {*members, *named} - set(last) if in_unheard(m, generation)}
        present = set(last) | unheard
        called = {r.member_id for r in round_reports if r.kind in _CALLBACKS}
        if generation in decided:  # but none its leader did not name, unless called back
            present = {m for m in present if m in named or m in called}
            last = {m: report for m, report in last.items() if m in present}
        for member_id in sorted(set(members) - present):
            reason = "leave" if member_id in closed else "other"
            out.append(MemberLeft(member_id=member_id, reason=reason))
            del members[member_id]
            holds.pop(member_id, None)
        for member_id, report in sorted(last.items()):
            if member_id not in members:
                out.append(
                    MemberJoined(
                        member_id=member_id, topics=report.topics, protocols=[report.strategy]
                    )
                )
            elif members[member_id] != report.topics:
                out.append(SubscriptionChanged(member_id=member_id, topics=report.topics))
            members[member_id] = report.topics
            holds[member_id] = report.held_in_generation(closed.get(member_id) == generation)
        for member_id in sorted(unheard - set(members)):  # new, holding nothing yet
            report = first[member_id]
            out.append(
                MemberJoined(member_id=member_id, topics=report.topics, protocols=[report.strategy])
            )
            members[member_id], holds[member_id] = report.topics, []
        strategy = round_reports[-1].strategy
        missed = present - called
        if protocol_of(strategy) == "eager":
            # It revoked everything before it joined again, and took nothing up.
            holds.update({member_id: [] for member_id in unheard})
            _say_unseen(group, generation, members, holds, counts, missed, decided.get(generation))
        clients = {report.client for report in round_reports}
        out.append(RebalanceStarted(generation=generation, reason=_reason(missed)))
        out.append(
            AssignmentCompleted(
                generation=generation,
                strategy=strategy,
                assignment={m: holds.get(m, []) for m in sorted(members)},
                protocol=protocol_of(strategy),
                leader=decided[generation].member_id if generation in decided else None,
                client=clients.pop() if len(clients) == 1 and "" not in clients else None,
            )
        )
        if protocol_of(strategy) == "cooperative":  # eager: it revoked all, holds nothing
            for member_id in sorted(missed):
                why = NOT_CALLED_BACK if member_id in last else NOT_HEARD
                why = NOT_ANSWERED if generation < first[member_id].generation else why
                fact = AssignmentNotTakenUp(generation=generation, member_id=member_id, reason=why)
                out.append(fact)
        # The generation's first report: later ones (a revocation ending it, a member
        # reporting late) would move the time of facts already stored under these ids.
        at = min(report.at for report in round_reports)
        awaited = [
            m for m in named if m not in closed and seen.get(m, [generation - 1])[-1] < generation
        ]
        waiting = (
            f"generation {generation} and later not stored yet: its leader named "
            f"{', '.join(awaited)}, which reported nothing in it or since"
        )
        batches.append(_Batch(f"{generation}", at, newest[generation], out, awaited, waiting))
    # Members that closed after the last generation the reports show.
    if any(m in closed for m in members):
        batches.append(_closes(members, closed, reports, [] if stopped else sorted(members)))
    return batches


def _closes(
    members: dict[str, list[str]],
    closed: dict[str, int],
    reports: list[MemberReport],
    awaited: list[str],
) -> _Batch:
    """The ``leave`` of each member of ``members`` that closed, taken out of it; the batch
    awaits the members of ``awaited`` that are left, if any."""
    gone = sorted(m for m in members if m in closed)
    at = max(r.at for r in reports if r.kind == "close" and r.member_id in gone)
    for member_id in gone:
        del members[member_id]
    left = [m for m in awaited if m in members]
    waiting = (
        f"the closes of {', '.join(gone)} not stored yet: {', '.join(left)} still in the "
        "group, whose next generation records them"
    )
    leaves: list[EventData] = [MemberLeft(member_id=m, reason="leave") for m in gone]
    return _Batch("end", at, at, leaves, left, waiting)


def _reason(missed: set[str]) -> str:
    """``RebalanceStarted.reason``: naming the members that did not take the generation
    up (called back in nothing: librdkafka calls back every member whose SyncGroup
    succeeds, so their SyncGroup failed, or they never heard of the generation); what
    the record gives them is what they held, not what their leader decided. Each is
    also an ``AssignmentNotTakenUp`` after the generation's ``AssignmentCompleted``."""
    if not missed:
        return REPORTED_REASON
    return f"{REPORTED_REASON}; not taken up by {', '.join(sorted(missed))}"


def _say_unseen(
    group: str,
    generation: int,
    members: dict[str, list[str]],
    holds: dict[str, list[TopicPartition]],
    counts: dict[str, int],
    missed: set[str],
    decided: MemberReport | None,
) -> None:
    """An eager generation assigns every partition of the subscribed topics: those no
    reporter held were held by a member that runs no listener (kcat, another
    application), which the merge cannot see, or given to a member that did not take
    the generation up (``missed``; the leader's decision, where reported, says which).
    Said, not guessed."""
    subscribed = {topic for topics in members.values() for topic in topics}
    held = {tp for partitions in holds.values() for tp in partitions}
    if decided is not None:  # the record says why these are held by nobody
        held |= {tp for member in missed for tp in decided.decision.get(member, [])}
    unseen = sorted(
        (topic, partition)
        for topic in subscribed
        for partition in range(counts.get(topic, 0))
        if (topic, partition) not in held
    )
    if not unseen:
        return
    cause = "a member without the listener holds them, and the record leaves it out"
    if missed and decided is None:
        cause = (
            f"given to {', '.join(sorted(missed))}, which did not take the generation up, "
            "or held by a member without the listener"
        )
    log.warning(
        "group %s generation %d: %d partitions held by no reporting member (%s): %s",
        group,
        generation,
        len(unseen),
        ", ".join(f"{t}-{p}" for t, p in unseen[:5]) + (" ..." if len(unseen) > 5 else ""),
        cause,
    )


def _events(
    cluster: str, group: str, name: str, at: float, datas: Sequence[EventData]
) -> list[Event]:
    stream = StreamId(cluster, group, "recorded")
    when = datetime.fromtimestamp(at, UTC)
    return [
        stamp(stream, when, data, "confluent", f"{cluster}/{group}/{name}/{index}", content=True)
        for index, data in enumerate(datas)
    ]
