"""Recording confluent-kafka (librdkafka) groups: members report, the merge makes events.

librdkafka does not hand the application the group's assignment or its generation; each
member only learns its own partitions, in its rebalance callbacks. So every member
installs a ``RecordingListener``, which appends one ``MemberReport`` per callback
(``on_assign``, ``on_revoke``, ``on_lost``, and ``close``) to a JSON Lines file of its
own in a shared reports directory, with what it holds afterwards, its subscription and
its topics' partition counts.

``merge_reports`` turns the reports of a group into events. Reports less than
``gap`` seconds apart belong to one rebalance round; each round is a generation
(inferred: ``RebalanceStarted.reason`` says so, as librdkafka gives no generation id).
After every round, librdkafka calls every member that is still in the group (with an
empty list when its partitions did not change), so a member that held partitions and
did not report in a round has left; one that reported ``close`` left of its own accord.

The merge is pure and deterministic: event ids derive from the round's number and the
event's content, so merging again (after more reports, or from every member at once)
stores each fact once. Merge only settled rounds (``settle``): a round still under way
would be cut short.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from kstore._errors import UsageError
from kstore.store.events import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
)

__all__ = ["MemberReport", "RecordingListener", "merge_reports", "read_reports"]

log = logging.getLogger("kstore.record")
_NAMESPACE = uuid.UUID("a3f4b0f2-6c1e-4d0b-b5f1-2e7c9d3a4b58")
_COOPERATIVE = frozenset({"cooperative-sticky"})
ReportKind = Literal["assign", "revoke", "lost", "close"]
INFERRED_REASON = "inferred from member reports"


@dataclass(frozen=True)
class MemberReport:
    """One member's view after one rebalance callback."""

    group: str
    member_id: str
    kind: ReportKind
    at: float
    """Seconds since the Unix epoch."""
    partitions: list[tuple[str, int]]
    """The partitions of the callback (added, revoked or lost)."""
    holds: list[tuple[str, int]]
    """Everything the member holds after the callback."""
    topics: list[str]
    strategy: str
    partition_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, line: str, where: str) -> MemberReport:
        try:
            raw = json.loads(line)
            raw["partitions"] = [(t, p) for t, p in raw["partitions"]]
            raw["holds"] = [(t, p) for t, p in raw["holds"]]
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise UsageError(f"{where}: not a member report: {exc}") from None


class RecordingListener:
    """Rebalance callbacks for one confluent-kafka consumer that report to ``reports``.

    Use ``subscribe(consumer, topics)`` instead of ``consumer.subscribe``, and
    ``close(consumer)`` instead of ``consumer.close()``.
    """

    def __init__(self, reports: Path | str, group: str, strategy: str) -> None:
        self.group = group
        self.strategy = strategy
        self.topics: list[str] = []
        self.holds: set[tuple[str, int]] = set()
        self._cooperative = strategy in _COOPERATIVE
        directory = Path(reports)
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{group}.{os.getpid()}.{uuid.uuid4().hex[:8]}.jsonl"
        self._lock = threading.Lock()

    def subscribe(self, consumer: Any, topics: Sequence[str]) -> None:
        self.topics = sorted(topics)
        consumer.subscribe(
            list(topics), on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost
        )

    def close(self, consumer: Any) -> None:
        member_id = consumer.memberid()
        consumer.close()
        self._report(None, member_id, "close", [])

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        pairs = [(tp.topic, tp.partition) for tp in partitions]
        self.holds = (self.holds | set(pairs)) if self._cooperative else set(pairs)
        self._report(consumer, consumer.memberid(), "assign", pairs)

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        pairs = [(tp.topic, tp.partition) for tp in partitions]
        self.holds -= set(pairs)
        self._report(consumer, consumer.memberid(), "revoke", pairs)

    def on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        pairs = [(tp.topic, tp.partition) for tp in partitions]
        self.holds -= set(pairs)
        self._report(consumer, consumer.memberid(), "lost", pairs)

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
        self, consumer: Any, member_id: str | None, kind: ReportKind, pairs: list[Any]
    ) -> None:
        if not member_id:
            return
        report = MemberReport(
            group=self.group,
            member_id=member_id,
            kind=kind,
            at=datetime.now(UTC).timestamp(),
            partitions=sorted(pairs),
            holds=sorted(self.holds),
            topics=self.topics,
            strategy=self.strategy,
            partition_counts=self._counts(consumer) if consumer is not None else {},
        )
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(report)) + "\n")


def read_reports(directory: Path | str, group: str | None = None) -> list[MemberReport]:
    """Every report in ``directory`` (of ``group``, when given), in time order."""
    reports = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    report = MemberReport.from_json(line, f"{path}:{number}")
                    if group is None or report.group == group:
                        reports.append(report)
    reports.sort(key=lambda r: (r.at, r.member_id))
    return reports


def _rounds(reports: Sequence[MemberReport], gap: float) -> list[list[MemberReport]]:
    """Reports split at pauses longer than ``gap``; a round ends only after an assignment
    (eager revocations come a join's wait before the assignment they lead to), and a
    member revoking after an assignment in the round starts the next one.
    """
    rounds: list[list[MemberReport]] = []
    for report in reports:
        again = (
            bool(rounds)
            and report.kind in ("revoke", "lost")
            and any(r.member_id == report.member_id and r.kind == "assign" for r in rounds[-1])
        )
        if (
            rounds
            and not again
            and (
                report.at - rounds[-1][-1].at <= gap
                or all(r.kind in ("revoke", "lost") for r in rounds[-1])
            )
        ):
            rounds[-1].append(report)
        else:
            rounds.append([report])
    return rounds


def merge_reports(
    reports: Iterable[MemberReport],
    *,
    cluster: str = "default",
    gap: float = 1.0,
    settle: float | None = None,
    now: float | None = None,
) -> list[Event]:
    """The events of the groups' reports (one ``recorded`` stream per group).

    ``settle``: leave out the last round when its last report is younger than this
    many seconds (at ``now``), as it may still be under way.
    """
    by_group: dict[str, list[MemberReport]] = {}
    for report in sorted(reports, key=lambda r: (r.at, r.member_id)):
        by_group.setdefault(report.group, []).append(report)
    events = []
    for group, group_reports in sorted(by_group.items()):
        rounds = _rounds(group_reports, gap)
        if settle is not None and rounds:
            current = datetime.now(UTC).timestamp() if now is None else now
            if current - rounds[-1][-1].at < settle:
                rounds.pop()
        events.extend(_group_events(cluster, group, rounds))
    return events


def _group_events(cluster: str, group: str, rounds: list[list[MemberReport]]) -> list[Event]:
    events: list[Event] = []
    members: dict[str, list[str]] = {}
    holds: dict[str, list[tuple[str, int]]] = {}
    counts: dict[str, int] = {}
    for number, reports in enumerate(rounds, start=1):
        out: list[EventData] = []
        last = {report.member_id: report for report in reports}
        for report in reports:
            for topic, count in sorted(report.partition_counts.items()):
                if counts.get(topic) != count and count >= 1:
                    out.append(TopicChanged(topic=topic, partitions=count))
                    counts[topic] = count
        for member_id in list(members):
            seen = last.get(member_id)
            if seen is None or seen.kind == "close":
                reason = "leave" if seen is not None else "other"
                out.append(MemberLeft(member_id=member_id, reason=reason))
                del members[member_id]
                holds.pop(member_id, None)
        for member_id, report in last.items():
            if report.kind == "close":
                continue
            if member_id not in members:
                out.append(
                    MemberJoined(
                        member_id=member_id, topics=report.topics, protocols=[report.strategy]
                    )
                )
            elif members[member_id] != report.topics:
                out.append(SubscriptionChanged(member_id=member_id, topics=report.topics))
            members[member_id] = report.topics
            holds[member_id] = sorted(report.holds)
        if members:
            strategy = reports[-1].strategy
            out.append(
                RebalanceStarted(generation=number, reason=f"{INFERRED_REASON}: round {number}")
            )
            out.append(
                AssignmentCompleted(
                    generation=number,
                    strategy=strategy,
                    assignment={m: holds.get(m, []) for m in members},
                    protocol="cooperative" if strategy in _COOPERATIVE else "eager",
                )
            )
        at = datetime.fromtimestamp(reports[-1].at, UTC)
        for index, data in enumerate(out):
            body = json.dumps([data.type_name(), data.to_dict()], sort_keys=True)
            digest = hashlib.sha256(body.encode()).hexdigest()[:16]
            name = f"{cluster}/{group}/{number}/{index}/{digest}"
            events.append(
                Event(
                    event_id=f"report-{uuid.uuid5(_NAMESPACE, name)}",
                    cluster=cluster,
                    group=group,
                    at=at,
                    data=data,
                )
            )
    return events
