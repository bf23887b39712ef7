"""The merge of confluent-kafka members' reports: by generation, whatever the arrival order."""

from __future__ import annotations

import json
import logging
import random
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore._errors import UsageError
from kstore.model import Event, fold
from kstore.record.confluent import (
    NOT_ANSWERED,
    NOT_CALLED_BACK,
    MemberReport,
    group_generation,
    merge_reports,
    read_reports,
)
from kstore.store.log import Store
from tests.processes import kstore_cli

TP = tuple[str, int]


@dataclass
class Reporter:
    """Writes the reports librdkafka's callbacks would give each member."""

    strategy: str
    count: int
    reports: list[MemberReport] = field(default_factory=list)
    seq: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def emit(
        self, member: str, generation: int, kind: str, partitions: set[TP], holds: set[TP]
    ) -> None:
        self.seq[member] += 1
        self.reports.append(
            MemberReport(
                group="g",
                member_id=member,
                generation=generation,
                seq=self.seq[member],
                kind=kind,  # type: ignore[arg-type]
                at=float(generation * 10 + self.seq[member]),
                partitions=sorted(partitions),
                holds=sorted(holds),
                topics=["t"],
                strategy=self.strategy,
                partition_counts={"t": self.count},
            )
        )


@dataclass
class History:
    """A group's true history and its members' reports."""

    strategy: str
    assignments: list[tuple[int, dict[str, list[TP]]]]
    left: list[tuple[str, str]]
    reports: list[MemberReport]
    skipped: bool
    """Whether a member reported nothing in a generation it was in (and later again)."""


@st.composite
def histories(draw: st.DrawFn) -> History:
    cooperative = draw(st.booleans())
    strategy = "cooperative-sticky" if cooperative else "range"
    count = draw(st.integers(1, 5))
    partitions = [("t", p) for p in range(count)]
    reporter = Reporter(strategy, count)
    first = draw(st.integers(0, 3))
    held: dict[str, set[TP]] = {}
    assignments: list[tuple[int, dict[str, list[TP]]]] = []
    left: list[tuple[str, str]] = []
    names = iter(f"m{i}" for i in range(100))
    silent_ok: list[int] = []  # report indexes a cooperative member may not get
    for generation in range(first, first + draw(st.integers(1, 5))):
        leaving = [m for m in sorted(held) if draw(st.booleans())] if generation > first else []
        joining = [next(names) for _ in range(draw(st.integers(0 if held else 1, 2)))]
        if len(leaving) == len(held) and not joining:
            leaving = leaving[1:]
        for member in leaving:
            reason = draw(st.sampled_from(["leave", "other"]))
            if reason == "leave":  # close: everything revoked, then the close
                reporter.emit(member, generation - 1, "revoke", held[member], set())
                reporter.emit(member, generation - 1, "close", set(), set())
            left.append((member, reason))
            del held[member]
        if not cooperative:  # eager: everyone revokes everything before joining again
            for member in sorted(held):
                reporter.emit(member, generation - 1, "revoke", held[member], set())
        members = sorted(held) + joining
        new: dict[str, set[TP]] = {m: set() for m in members}
        for tp in partitions:
            new[draw(st.sampled_from(members))].add(tp)
        for member in members:
            before = held.get(member, set())
            if cooperative and before - new[member]:
                reporter.emit(
                    member, generation, "revoke", before - new[member], before & new[member]
                )
            if cooperative and member in held and before == new[member]:
                silent_ok.append(len(reporter.reports))
            added = new[member] - before if cooperative else new[member]
            reporter.emit(member, generation, "assign", added, new[member])
        held = new
        assignments.append((generation, {m: sorted(tps) for m, tps in sorted(new.items())}))
    last = assignments[-1][0]
    for member in sorted(held):
        if draw(st.booleans()):
            reporter.emit(member, last, "revoke", held[member], set())
            reporter.emit(member, last, "close", set(), set())
            left.append((member, "leave"))
    # A cooperative member whose partitions did not change may not be called back (its
    # SyncGroup failed): it reports its presence in the generation instead, or, when
    # it reports again later, nothing at all (it never heard of the generation). Someone
    # is given an assignment in that generation (else nothing could tell it happened).
    reports = reporter.reports
    silenced: dict[int, MemberReport | None] = {}
    for index in silent_ok:
        report = reports[index]
        later = any(
            r.member_id == report.member_id and r.generation > report.generation for r in reports
        )
        others = any(
            r.generation == report.generation
            and r.kind == "assign"
            and i != index
            and i not in silenced
            for i, r in enumerate(reports)
        )
        if others and draw(st.booleans()):
            silent = later and draw(st.booleans())
            silenced[index] = None if silent else replace(report, kind="present")
    reports = [silenced.get(i, r) if i in silenced else r for i, r in enumerate(reports)]
    reports = [r for r in reports if r is not None]
    if draw(st.booleans()):  # the leaders' decisions reported (RecordingListener.configure)
        for generation, assignment in assignments:
            called = [r for r in reports if r.generation == generation and r.kind == "assign"]
            decided = replace(min(called, key=lambda r: r.member_id), kind="decided", seq=0)
            reports.append(replace(decided, named=sorted(assignment), decision=assignment))
    skipped = any(report is None for report in silenced.values())
    return History(strategy, assignments, left, reports, skipped)


def summary(events: list[Event]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(e.event_id, e.type, e.data.to_dict()) for e in events]


@settings(max_examples=60, deadline=None)
@given(histories(), st.randoms(use_true_random=False))
def test_any_arrival_order_and_delays_merge_into_the_true_history(
    history: History, rng: random.Random
) -> None:
    events = merge_reports(history.reports, cluster="prod")
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    assert [(c["generation"], c["assignment"]) for c in completed] == [
        (g, {m: [list(tp) for tp in tps] for m, tps in a.items()}) for g, a in history.assignments
    ]
    left = [
        (e.data.to_dict()["member_id"], e.data.to_dict()["reason"])
        for e in events
        if e.type == "MemberLeft"
    ]
    assert sorted(left) == sorted(history.left)
    assert {c["protocol"] for c in completed} == {
        "cooperative" if history.strategy == "cooperative-sticky" else "eager"
    }
    state = fold(events)
    assert set(state.members) == set(history.assignments[-1][1]) - {m for m, _ in history.left}
    # Delays (a member's reports seconds late, past other generations) and any order
    # across members and files: the same events.
    late = [replace(r, at=r.at + rng.uniform(0, 60)) for r in history.reports]
    rng.shuffle(late)
    assert summary(merge_reports(late, cluster="prod")) == summary(events)


@settings(max_examples=60, deadline=None)
@given(histories())
def test_a_merge_made_while_the_group_runs_stores_what_every_later_merge_does(
    history: History,
) -> None:
    """Reports of generation g arrive within a second of 100 g (in the order they were
    written), and a merge is made halfway between every two generations (--settle 5)
    and once the group has stopped: none stores what a later merge stores otherwise (a
    generation stored twice). Unless the leaders' decisions are reported, a member that
    reports nothing in a generation and later reports again is the known exception."""
    arrived = [
        replace(r, at=100.0 * r.generation + 0.001 * index)
        for index, r in enumerate(history.reports)
    ]
    decided = any(r.kind == "decided" for r in arrived)
    full = summary(merge_reports(arrived))
    for now in sorted({100.0 * r.generation + 50 for r in arrived}):
        early = summary(merge_reports([r for r in arrived if r.at <= now], settle=5.0, now=now))
        if decided or not history.skipped:
            assert early == full[: len(early)]


def test_merging_is_idempotent_and_growing_reports_keep_the_ids(store: Store) -> None:
    reporter = Reporter("range", 4)
    everything = {("t", p) for p in range(4)}
    reporter.emit("a", 0, "assign", everything, everything)
    reporter.emit("a", 0, "revoke", everything, set())
    reporter.emit("a", 1, "assign", {("t", 0), ("t", 1)}, {("t", 0), ("t", 1)})
    reporter.emit("b", 1, "assign", {("t", 2), ("t", 3)}, {("t", 2), ("t", 3)})
    early = list(reporter.reports)
    # b crashes; a alone in generation 2, then closes.
    reporter.emit("a", 1, "revoke", {("t", 0), ("t", 1)}, set())
    reporter.emit("a", 2, "assign", everything, everything)
    reporter.emit("a", 2, "revoke", everything, set())
    reporter.emit("a", 2, "close", set(), set())
    full = merge_reports(reporter.reports, cluster="prod")
    first = merge_reports(early, cluster="prod")
    assert summary(first) == summary(full[: len(first)])
    store.append(first)
    assert store.append(full).stored == len(full) - len(first)
    assert store.append(merge_reports(list(reversed(reporter.reports)), cluster="prod")).stored == 0
    completed = [e.data.to_dict() for e in full if e.type == "AssignmentCompleted"]
    assert [c["generation"] for c in completed] == [0, 1, 2]
    assert completed[2]["assignment"] == {"a": [["t", p] for p in range(4)]}
    left = [e.data.to_dict() for e in full if e.type == "MemberLeft"]
    assert left == [{"member_id": "b", "reason": "other"}, {"member_id": "a", "reason": "leave"}]


def test_an_unsettled_generation_waits() -> None:
    reporter = Reporter("range", 2)
    both = {("t", 0), ("t", 1)}
    reporter.emit("a", 0, "assign", both, both)
    reporter.emit("a", 0, "revoke", both, set())
    reporter.emit("a", 1, "assign", {("t", 0)}, {("t", 0)})
    newest = max(r.at for r in reporter.reports)
    young = merge_reports(reporter.reports, settle=5.0, now=newest + 1)
    assert [e.data.to_dict()["generation"] for e in young if e.type == "AssignmentCompleted"] == [0]
    old = merge_reports(reporter.reports, settle=5.0, now=newest + 6)
    assert [e.data.to_dict()["generation"] for e in old if e.type == "AssignmentCompleted"] == [
        0,
        1,
    ]


def test_a_cooperative_member_never_called_again_keeps_its_partitions() -> None:
    """As seen live (librdkafka 2.16, cooperative-sticky on Tansu): b is called in
    generation 0 only, and finds itself in 1 and 2 (its presence); c joins (a gives up
    t1 in generation 1, c takes it in 2); b is killed and its partitions go to a and c
    in generation 3."""
    reporter = Reporter("cooperative-sticky", 4)
    b_holds = {("t", 2), ("t", 3)}
    reporter.emit("a", 0, "assign", {("t", 0), ("t", 1)}, {("t", 0), ("t", 1)})
    reporter.emit("b", 0, "assign", b_holds, b_holds)
    reporter.emit("a", 1, "revoke", {("t", 1)}, {("t", 0)})
    reporter.emit("a", 1, "assign", set(), {("t", 0)})
    reporter.emit("b", 1, "present", set(), b_holds)
    reporter.emit("a", 2, "present", set(), {("t", 0)})
    reporter.emit("b", 2, "present", set(), b_holds)
    reporter.emit("c", 2, "assign", {("t", 1)}, {("t", 1)})
    settled = merge_reports(reporter.reports, cluster="prod")
    reporter.emit("a", 3, "assign", {("t", 2)}, {("t", 0), ("t", 2)})
    reporter.emit("c", 3, "assign", {("t", 3)}, {("t", 1), ("t", 3)})
    events = merge_reports(reporter.reports, cluster="prod")
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    b = [["t", 2], ["t", 3]]
    assert [c["assignment"] for c in completed] == [
        {"a": [["t", 0], ["t", 1]], "b": b},
        {"a": [["t", 0]], "b": b},
        {"a": [["t", 0]], "b": b, "c": [["t", 1]]},
        {"a": [["t", 0], ["t", 2]], "c": [["t", 1], ["t", 3]]},
    ]
    left = [e.data.to_dict() for e in events if e.type == "MemberLeft"]
    assert left == [{"member_id": "b", "reason": "other"}]
    # Before generation 3 is reported, b (called back in 0 only) is still in.
    assert summary(settled) == summary(events[: len(settled)])


def test_a_killed_member_leaves_in_the_first_generation_it_is_not_in() -> None:
    """As seen live (the churn test, and a member alone on its topic): b is SIGKILLed
    after generation 2. In generation 3 its leader names it no more and gives its
    partitions to c, whose SyncGroup fails (c only finds itself there), so nobody holds
    them; c takes them in 4. b reported nothing in 3: it is not in it (the merge once
    carried it on for as long as nobody held its partitions: minutes in a soak)."""
    reporter = Reporter("cooperative-sticky", 4)
    a_holds, b_holds = {("t", 0), ("t", 1)}, {("t", 2), ("t", 3)}
    reporter.emit("a", 2, "assign", a_holds, a_holds)
    reporter.emit("b", 2, "assign", b_holds, b_holds)
    reporter.emit("a", 3, "present", set(), a_holds)
    reporter.emit("a", 3, "assign", set(), a_holds)
    reporter.emit("c", 3, "present", set(), set())
    reporter.emit("a", 4, "assign", set(), a_holds)
    reporter.emit("c", 4, "assign", b_holds, b_holds)
    events = merge_reports(reporter.reports, cluster="prod")
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    a, b = [list(tp) for tp in sorted(a_holds)], [list(tp) for tp in sorted(b_holds)]
    assert [(c["generation"], c["assignment"]) for c in completed] == [
        (2, {"a": a, "b": b}),
        (3, {"a": a, "c": []}),
        (4, {"a": a, "c": b}),
    ]
    # c did not take generation 3 up (its SyncGroup failed): the record says so.
    reasons = [e.data.to_dict()["reason"] for e in events if e.type == "RebalanceStarted"]
    assert reasons == [
        "from member reports",
        "from member reports; not taken up by c",
        "from member reports",
    ]
    # ... and an AssignmentNotTakenUp right after that generation's assignment.
    types = [e.type for e in events]
    fact = types.index("AssignmentNotTakenUp")
    assert events[fact - 1].data.to_dict()["generation"] == 3
    assert events[fact].data.to_dict() == {
        "generation": 3,
        "member_id": "c",
        "reason": NOT_CALLED_BACK,
    }
    assert types.count("AssignmentNotTakenUp") == 1
    left = [e.data.to_dict() for e in events if e.type == "MemberLeft"]
    assert left == [{"member_id": "b", "reason": "other"}]


def test_a_join_round_nobody_was_assigned_in_is_no_generation() -> None:
    """As the 5-minute soak saw: generation 3's JoinGroup round never completed (every
    SyncGroup failed); a and b found themselves in it, and b closed in it (revoking what
    it held). Generation 4 then completed. 3 is no generation; b left before 4."""
    reporter = Reporter("cooperative-sticky", 2)
    reporter.emit("a", 2, "assign", {("t", 0)}, {("t", 0)})
    reporter.emit("b", 2, "assign", {("t", 1)}, {("t", 1)})
    reporter.emit("a", 3, "present", set(), {("t", 0)})
    reporter.emit("b", 3, "present", set(), {("t", 1)})
    reporter.emit("b", 3, "revoke", {("t", 1)}, set())
    reporter.emit("b", 3, "close", set(), set())
    reporter.emit("a", 4, "assign", {("t", 1)}, {("t", 0), ("t", 1)})
    events = merge_reports(reporter.reports, cluster="prod")
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    assert [(c["generation"], c["assignment"]) for c in completed] == [
        (2, {"a": [["t", 0]], "b": [["t", 1]]}),
        (4, {"a": [["t", 0], ["t", 1]]}),
    ]
    left = [e.data.to_dict() for e in events if e.type == "MemberLeft"]
    assert left == [{"member_id": "b", "reason": "leave"}]


def test_partitions_no_reporter_held_in_an_eager_generation_are_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A member without the listener (kcat) held t-2 and t-3 in generation 1: the merge
    cannot see it, and says so rather than leave it unsaid."""
    reporter = Reporter("range", 4)
    everything = {("t", p) for p in range(4)}
    reporter.emit("a", 0, "assign", everything, everything)
    reporter.emit("a", 0, "revoke", everything, set())
    reporter.emit("a", 1, "assign", {("t", 0), ("t", 1)}, {("t", 0), ("t", 1)})
    with caplog.at_level(logging.WARNING, logger="kstore.record"):
        merge_reports(reporter.reports, cluster="prod")
    assert [r.getMessage() for r in caplog.records] == [
        "group g generation 1: 2 partitions held by no reporting member (t-2, t-3): a member "
        "without the listener holds them, and the record leaves it out"
    ]


class _Consumer:
    def __init__(self, metadata: object) -> None:
        self.metadata = metadata

    def consumer_group_metadata(self) -> object:
        return self.metadata


def test_the_generation_comes_from_librdkafkas_group_metadata() -> None:
    # As confluent-kafka 2.x returns it (seen live: generation 1 of group pg).
    raw = b"CGMDv2:" + (1).to_bytes(4, sys.byteorder) + b"pg\x00rdkafka-a0323623\x00\x01"
    assert group_generation(_Consumer(raw)) == 1
    assert (
        group_generation(_Consumer(b"CGMDv2:" + (-1).to_bytes(4, sys.byteorder, signed=True))) == -1
    )


def test_a_member_its_leader_did_not_name_is_not_in_the_generation() -> None:
    """As a 5-minute soak saw on Tansu, which answers a JoinGroup with the round under
    way: c found itself in generation 3 and died; the round outlasted its session, and
    the leader's decision (a ``decided`` report, from its assignor's log) names a and b
    only. c is not in 3, and the leader is recorded. Without the decision, c would be
    (the merge cannot tell it from a member its leader counted)."""
    reporter = Reporter("cooperative-sticky", 2)
    reporter.emit("a", 2, "assign", {("t", 0), ("t", 1)}, {("t", 0), ("t", 1)})
    reporter.emit("a", 3, "present", set(), {("t", 0), ("t", 1)})
    reporter.emit("c", 3, "present", set(), set())
    reporter.emit("b", 3, "present", set(), set())
    reporter.emit("a", 3, "decided", set(), {("t", 0), ("t", 1)})
    reporter.reports[-1] = replace(
        reporter.reports[-1], named=["a", "b"], decision={"a": [("t", 0)], "b": [("t", 1)]}
    )
    reporter.emit("a", 3, "revoke", {("t", 1)}, {("t", 0)})
    reporter.emit("a", 3, "assign", set(), {("t", 0)})
    reporter.emit("b", 3, "assign", set(), set())
    without = [r for r in reporter.reports if r.kind != "decided"]
    for reports, members, leader in (
        (reporter.reports, ["a", "b"], "a"),
        (without, ["a", "b", "c"], None),
    ):
        events = merge_reports(reports, cluster="prod")
        completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"][-1]
        assert (sorted(completed["assignment"]), completed.get("leader")) == (members, leader)
        joined = sorted(e.data.to_dict()["member_id"] for e in events if e.type == "MemberJoined")
        assert joined == members


EVERYTHING, KEPT = {("t", p) for p in range(4)}, {("t", 2), ("t", 3)}


def named_early(b_first: int) -> list[MemberReport]:
    """a alone in generation 0; its assignor runs for a and b in every generation from 1
    (a gives up t0 and t1 for b in 1), b first reports in ``b_first`` (taking t0, t1)."""
    reporter = Reporter("cooperative-sticky", 4)
    reporter.emit("a", 0, "assign", EVERYTHING, EVERYTHING)
    for generation in range(1, b_first + 1):
        reporter.emit("a", generation, "decided", set(), EVERYTHING if generation == 1 else KEPT)
        reporter.reports[-1] = replace(reporter.reports[-1], named=["a", "b"])
        if generation == 1:
            reporter.emit("a", 1, "revoke", EVERYTHING - KEPT, KEPT)
        reporter.emit("a", generation, "assign", set(), KEPT)
    reporter.emit("b", b_first, "present", set(), set())
    reporter.emit("b", b_first, "assign", EVERYTHING - KEPT, EVERYTHING - KEPT)
    return reporter.reports


def test_a_member_its_leader_named_before_its_join_was_answered_is_in_the_generation() -> None:
    """The clean-clone CI's live cooperative-sticky group (2026-11-28): b's JoinGroup
    waited in Tansu; the leader a's answered with generation 1, its assignor ran for a
    and b (a gave up t0 and t1 for b), and a at once joined again, so Tansu answered b's
    JoinGroup only with generation 2: b never heard of 1 and first reported in 2. With
    the leader's decisions the record has b in 1, new, holding nothing and not taking it
    up (the merge left it out: a lone a giving up half of what it held, which no replay
    gives back); from member reports alone it cannot, and b joins in 2. A member named
    before it first reported stays until then (b's first report in 3: in 1 and 2). A
    merge made while b's first generation settles records 1 as a later merge does."""
    a, b = [["t", 2], ["t", 3]], [["t", 0], ["t", 1]]
    cases = [
        (named_early(2), {1: {"a": a, "b": []}, 2: {"a": a, "b": b}}, [1]),
        (
            [r for r in named_early(2) if r.kind != "decided"],
            {1: {"a": a}, 2: {"a": a, "b": b}},
            [],
        ),
        (named_early(3), {1: {"a": a, "b": []}, 2: {"a": a, "b": []}, 3: {"a": a, "b": b}}, [1, 2]),
    ]
    for merged, assignments, unheard in cases:
        events = merge_reports(merged, cluster="prod")
        completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
        assert {c["generation"]: c["assignment"] for c in completed} == {0: {"a": b + a}} | {
            g: assignments[g] for g in assignments
        }
        facts = [e.data.to_dict() for e in events if e.type == "AssignmentNotTakenUp"]
        assert facts == [
            {"generation": g, "member_id": "b", "reason": NOT_ANSWERED} for g in unheard
        ]
        joined = [e.data.to_dict()["member_id"] for e in events if e.type == "MemberJoined"]
        assert (joined, [e.type for e in events].count("MemberLeft")) == (["a", "b"], 0)
    # Merged while generation 2 settles (b's first reports young), generation 1 is the
    # same: a later merge stores it once.
    full = merge_reports(named_early(2), cluster="prod")
    early = merge_reports(named_early(2), cluster="prod", settle=5.0, now=25.0)
    assert early and summary(early) == summary(full[: len(early)]) != summary(full)


def test_a_settle_that_is_no_time_is_one_line(store: Store, tmp_path: Any) -> None:
    # `--settle -1` was taken: every generation settled, with the group running.
    for settle in ("-1", "nan"):
        merge = kstore_cli(
            store.path, "record", "merge", "--reports", str(tmp_path), "--settle", settle
        )
        assert (merge.returncode, merge.stdout) == (2, "")
        assert merge.stderr == f"kstore: error: --settle: not a number of seconds >= 0: {settle}\n"


def test_reports_not_there_or_not_text_are_one_line(tmp_path: Any) -> None:
    # `kstore record merge --reports nope` answered "0 events", exit 0, as of a group
    # that never rebalanced; a report file of binary data was "UnicodeDecodeError".
    with pytest.raises(UsageError, match=r"^--reports .*nope: no such folder$"):
        read_reports(tmp_path / "nope")
    # A report file named instead of its folder was "no such folder" too (a user trial).
    (tmp_path / "one.jsonl").write_text("{}\n")
    with pytest.raises(UsageError, match=r"^--reports .*one.jsonl: a file, not a folder \("):
        read_reports(tmp_path / "one.jsonl")
    folder = tmp_path / "reports"
    folder.mkdir()
    report = MemberReport(
        group="orders", member_id="m", generation=1, seq=1, kind="assign", at=1.0,
        partitions=[], holds=[], topics=["t"], strategy="range", partition_counts={"t": 1},
    )  # fmt: skip
    (folder / "m.jsonl").write_text(json.dumps(asdict(report)) + "\n")
    assert read_reports(folder, "orders") == [report]
    with pytest.raises(UsageError) as refused:
        read_reports(folder, "order")
    assert str(refused.value) == f"--group order: no report of it in {folder}; did you mean orders?"
    (folder / "x.jsonl").write_bytes(b"\xff\n")
    with pytest.raises(UsageError, match=r"x\.jsonl: line 1: not UTF-8 text \(byte 0xff\)$"):
        read_reports(folder)


def recorded(store: Store) -> list[tuple[str, int]]:
    """The stored ``recorded`` stream's rebalance events: (type, generation)."""
    return [
        (s.event.type, s.event.data.to_dict()["generation"])
        for s in store.events(timeline="recorded")
        if s.event.type in ("RebalanceStarted", "AssignmentCompleted")
    ]


def test_a_generation_waits_for_the_members_its_leader_named(store: Store) -> None:
    """NOTE19's first item left: a's assignor named b in generation 1 (at 12-14), and b
    first reported 7 s later, in generation 2 (at 21). A merge made at 20 with --settle 5
    stored generation 1 without b; the merge after b's report stored generation 1 again,
    with b: two generations 1 in the log. Generation 1 now waits for b."""
    every = named_early(2)
    early = merge_reports([r for r in every if r.at <= 20], settle=5.0, now=20.0)
    store.append(early)
    store.append(merge_reports(every, settle=5.0, now=40.0))
    assert recorded(store) == [
        (kind, generation)
        for generation in (0, 1, 2)
        for kind in ("RebalanceStarted", "AssignmentCompleted")
    ]


def test_a_generation_a_member_missed_is_the_same_before_and_after_its_next_report(
    store: Store,
) -> None:
    """b (cooperative, polling without ``listener.poll``) was called back in nothing in
    generation 2 and reported again in 3. A merge made while 3 settled left b out of 2
    (its reports of 3 were not read), and the one after put it in: 2 stored twice."""
    reporter = Reporter("cooperative-sticky", 2)
    reporter.emit("a", 1, "assign", {("t", 0)}, {("t", 0)})
    reporter.emit("b", 1, "assign", {("t", 1)}, {("t", 1)})
    reporter.emit("a", 2, "assign", set(), {("t", 0)})
    reporter.emit("a", 3, "assign", set(), {("t", 0)})
    reporter.emit("b", 3, "assign", set(), {("t", 1)})
    store.append(merge_reports(reporter.reports, settle=5.0, now=33.0))
    store.append(merge_reports(reporter.reports, settle=5.0, now=40.0))
    assert recorded(store) == [
        (kind, generation)
        for generation in (1, 2, 3)
        for kind in ("RebalanceStarted", "AssignmentCompleted")
    ]
    assert [s.event.type for s in store.events()].count("MemberLeft") == 0


def test_an_eager_member_named_before_its_first_report_is_not_a_member_without_listener(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """NOTE19's third item left: eager, a's assignor gave b t0 and t1 in generation 1, and
    b, whose JoinGroup Tansu answered with generation 2, never heard of 1. Nobody held t0
    and t1 there, and the merge warned that a member without the listener held them: the
    leader's decision says they were b's, which did not take generation 1 up."""
    reporter = Reporter("range", 4)
    reporter.emit("a", 0, "assign", EVERYTHING, EVERYTHING)
    reporter.emit("a", 0, "revoke", EVERYTHING, set())
    for generation in (1, 2):
        reporter.emit("a", generation, "decided", set(), set())
        reporter.reports[-1] = replace(
            reporter.reports[-1],
            named=["a", "b"],
            decision={"a": sorted(KEPT), "b": sorted(EVERYTHING - KEPT)},
        )
        reporter.emit("a", generation, "assign", KEPT, KEPT)
    reporter.emit("a", 1, "revoke", KEPT, set())
    reporter.emit("b", 2, "assign", EVERYTHING - KEPT, EVERYTHING - KEPT)
    with caplog.at_level(logging.WARNING, logger="kstore.record"):
        events = merge_reports(reporter.reports, cluster="prod")
    assert [r.getMessage() for r in caplog.records] == []
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    assert (completed[1]["generation"], completed[1]["assignment"]) == (
        1,
        {"a": [["t", 2], ["t", 3]], "b": []},
    )


def test_an_eager_member_that_never_heard_of_a_generation_holds_nothing_in_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Eager: b revoked everything in generation 1 to join again, and its JoinGroup was
    answered with generation 3 (it never heard of 2, in which a's assignor, whose decision
    was not reported, gave it t2 and t3). The record had b holding t2 and t3 in 2, which
    it had revoked; now nothing, and the warning about the partitions nobody held names b
    as well as a member without the listener."""
    reporter = Reporter("range", 4)
    reporter.emit("a", 1, "assign", EVERYTHING - KEPT, EVERYTHING - KEPT)
    reporter.emit("b", 1, "assign", KEPT, KEPT)
    reporter.emit("a", 1, "revoke", EVERYTHING - KEPT, set())
    reporter.emit("b", 1, "revoke", KEPT, set())
    reporter.emit("a", 2, "assign", EVERYTHING - KEPT, EVERYTHING - KEPT)
    reporter.emit("a", 2, "revoke", EVERYTHING - KEPT, set())
    reporter.emit("a", 3, "assign", EVERYTHING - KEPT, EVERYTHING - KEPT)
    reporter.emit("b", 3, "assign", KEPT, KEPT)
    with caplog.at_level(logging.WARNING, logger="kstore.record"):
        events = merge_reports(reporter.reports, cluster="prod")
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    assert completed[1]["assignment"] == {"a": [["t", 0], ["t", 1]], "b": []}
    assert [r.getMessage() for r in caplog.records] == [
        "group g generation 2: 2 partitions held by no reporting member (t-2, t-3): given "
        "to b, which did not take the generation up, or held by a member without the listener"
    ]


def test_reports_merging_differently_from_the_stored_record_are_refused(
    store: Store, tmp_path: Any
) -> None:
    """NOTE19's second item left: a store merged by an earlier kstore (here: one that read
    no leaders' decisions, so generation 1 had a alone) and merged again got generations
    1 and 2 appended a second time, after the stream's end. Now the merge says so in one
    line, exit 2, and stores nothing."""
    every = named_early(2)
    store.append(merge_reports([r for r in every if r.kind != "decided"], cluster="prod"))
    before = [s.event for s in store.events()]
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "g.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in every))
    merge = kstore_cli(store.path, "record", "merge", "--reports", str(folder), "--cluster", "prod")
    assert (merge.returncode, merge.stdout) == (2, "")
    assert merge.stderr == (
        "kstore: error: group g (cluster prod): these reports merge generation 1 otherwise "
        "than the record stored in this store (merged by an earlier kstore, or from other "
        "reports); nothing stored: merge them into a new store, or under another --cluster\n"
    )
    assert [s.event for s in store.events()] == before
    # A store merged by a kstore that wrote no AssignmentNotTakenUp yet: the merge now
    # has one in generation 1, which was appended after generation 2.
    store = Store(tmp_path / "older.duckdb")
    store.init()
    store.append(
        [e for e in merge_reports(every, cluster="prod") if e.type != "AssignmentNotTakenUp"]
    )
    merge = kstore_cli(store.path, "record", "merge", "--reports", str(folder), "--cluster", "prod")
    assert (merge.returncode, merge.stdout) == (2, "")
    assert "merge generation 1 otherwise than the record stored" in merge.stderr


def test_a_close_after_the_last_generation_is_stored_once(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """b closed after generation 1; a merge made then stored b's leave after 1, and the
    merge after generation 2 (the rebalance b's LeaveGroup set off) stored it again,
    inside 2: two leaves of b. While a member is left the close waits for that next
    generation; when the last member closed, it is stored after its last generation."""
    reporter = Reporter("cooperative-sticky", 2)
    reporter.emit("a", 1, "assign", {("t", 0)}, {("t", 0)})
    reporter.emit("b", 1, "assign", {("t", 1)}, {("t", 1)})
    reporter.emit("b", 1, "revoke", {("t", 1)}, set())
    reporter.emit("b", 1, "close", set(), set())
    with caplog.at_level(logging.WARNING, logger="kstore.record"):
        store.append(merge_reports(reporter.reports, settle=5.0, now=20.0))
    assert [r.getMessage() for r in caplog.records] == [
        "group g: the closes of b not stored yet: a still in the group, whose next "
        "generation records them (merge again later; --settle 0 once the group has stopped)"
    ]
    reporter.emit("a", 2, "assign", {("t", 1)}, {("t", 0), ("t", 1)})
    store.append(merge_reports(reporter.reports, settle=5.0, now=30.0))
    reporter.emit("a", 2, "revoke", {("t", 0), ("t", 1)}, set())
    reporter.emit("a", 2, "close", set(), set())
    store.append(merge_reports(reporter.reports, settle=5.0, now=40.0))
    reporter.emit("c", 3, "assign", {("t", 0), ("t", 1)}, {("t", 0), ("t", 1)})
    store.append(merge_reports(reporter.reports, settle=5.0, now=50.0))
    assert [(s.event.type, s.event.data.to_dict().get("member_id")) for s in store.events()] == [
        ("TopicChanged", None),
        ("MemberJoined", "a"),
        ("MemberJoined", "b"),
        ("RebalanceStarted", None),
        ("AssignmentCompleted", None),
        ("MemberLeft", "b"),
        ("RebalanceStarted", None),
        ("AssignmentCompleted", None),
        ("MemberLeft", "a"),
        ("MemberJoined", "c"),
        ("RebalanceStarted", None),
        ("AssignmentCompleted", None),
    ]


def test_a_member_named_that_never_reports_waits_until_a_later_leader_drops_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """c's JoinGroup was counted in generation 1 and c was killed before its answer: a's
    assignor named it in 1 and, until its session ended, in 2; in 3 no longer.
    Generation 1 waits (said once it is old), and is stored without c once generation 3,
    whose leader no longer names c, is final."""
    reporter = Reporter("cooperative-sticky", 4)
    reporter.emit("a", 0, "assign", EVERYTHING, EVERYTHING)
    for generation, named in ((1, ["a", "c"]), (2, ["a", "c"]), (3, ["a"])):
        reporter.emit("a", generation, "decided", set(), set())
        reporter.reports[-1] = replace(reporter.reports[-1], named=named)
        if generation == 1:
            reporter.emit("a", 1, "revoke", EVERYTHING - KEPT, KEPT)
        gained = EVERYTHING - KEPT if generation == 3 else set()
        reporter.emit("a", generation, "assign", gained, KEPT | gained)

    def stored(now: float) -> list[int]:
        reports = [r for r in reporter.reports if r.at <= now]
        merged = merge_reports(reports, settle=5.0, now=now)
        return [e.data.to_dict()["generation"] for e in merged if e.type == "AssignmentCompleted"]

    with caplog.at_level(logging.WARNING, logger="kstore.record"):
        assert [stored(now) for now in (16.0, 30.0, 38.0, 44.0)] == [[0], [0], [0], [0, 1, 2, 3]]
    assert [r.getMessage() for r in caplog.records] == [
        "group g: generation 1 and later not stored yet: its leader named c, which reported "
        "nothing in it or since (merge again later; --settle 0 once the group has stopped)"
    ] * 2
    events = merge_reports(reporter.reports)
    completed = [e.data.to_dict() for e in events if e.type == "AssignmentCompleted"]
    assert [sorted(c["assignment"]) for c in completed] == [["a"], ["a"], ["a"], ["a"]]
