"""``kstore replay --check``: each recorded decision against the strategy's answer to the
request of its own moment (the recorded state just before it), not to the replay's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kstore.analytics.replay import check_decisions, replay, replay_events
from kstore.assignors import ContractError
from kstore.model import (
    AssignmentCompleted,
    AssignmentNotTakenUp,
    Event,
    MemberJoined,
    RebalanceStarted,
    StreamId,
)
from kstore.store.log import Store
from tests.analytics.test_replay_same import _assignments, _events, _librdkafka_join, decided
from tests.store._stores import initialised_store


def _third_joins(m2_holds: list[int], m3_gets: list[int], said: bool = False) -> list[Event]:
    """``_librdkafka_join`` (m1 holds t-6..11, m2 t-0..5), then m3 joins: librdkafka's
    leader decides m1 t-8..11, m2 t-2..5, m3 nothing yet (t-0, 1, 6, 7 are withheld), and
    in the next round gives m3 what nobody holds. ``m2_holds``: what m2 holds in the
    first of them; ``m3_gets``: what m3 is given in the second; ``said``: the log says
    m2 did not take the first up (``AssignmentNotTakenUp``)."""
    joined = _librdkafka_join()
    fact = [AssignmentNotTakenUp(generation=4, member_id="m2", reason="x")] if said else []
    later = _events(
        [
            MemberJoined(member_id="m3", topics=["t"]),
            RebalanceStarted(generation=4, reason="join m3"),
            decided(4, {"m1": list(range(8, 12)), "m2": m2_holds, "m3": []}),
            *fact,
            RebalanceStarted(generation=5, reason="cooperative follow-up"),
            decided(5, {"m1": list(range(8, 12)), "m2": list(range(2, 6)), "m3": m3_gets}),
        ]
    )
    shifted = [e.model_copy(update={"at": e.at.replace(minute=1)}) for e in later]
    return joined + shifted


def _verdicts(events: list[Event], strategy: str = "same") -> list[tuple[int, str]]:
    return [(c.generation, c.verdict) for c in check_decisions(events, strategy)]


def test_every_decision_is_the_flavours_answer() -> None:
    events = _third_joins(list(range(2, 6)), [0, 1, 6, 7])
    assert _verdicts(events) == [(1, "same"), (2, "same"), (3, "same"), (4, "same"), (5, "same")]
    assert {c.strategy for c in check_decisions(events)} == {"librdkafka:cooperative-sticky"}


def test_a_member_that_did_not_take_a_decision_up_is_told_apart_and_replayed(
    store: Store,
) -> None:
    """m2's SyncGroup of generation 4 failed: it kept t-0..5 (so t-0, 1 are not free in
    generation 5), and the log says so. Generation 4 is ``not-taken-up``; generation 5,
    decided on what m2 really held, is exact again, and so is the whole replay: its m2
    did not take generation 4 up either."""
    events = _third_joins(list(range(6)), [6, 7], said=True)
    checks = list(check_decisions(events))
    assert [(c.generation, c.verdict) for c in checks][3:] == [(4, "not-taken-up"), (5, "same")]
    assert checks[3].members == {
        "m2": ([("t", p) for p in range(2, 6)], [("t", p) for p in range(6)])
    }
    store.append(events)
    replay(store, group="g", strategy="same")
    assert _assignments(store, "replay/same") == _assignments(store, "recorded")
    facts = [
        s.event.data
        for s in store.events(group="g", timeline="replay/same")
        if isinstance(s.event.data, AssignmentNotTakenUp)
    ]
    assert facts == [AssignmentNotTakenUp(generation=4, member_id="m2", reason="x")]


def test_a_member_that_kept_its_partitions_unsaid_differs_and_the_replay_goes_on() -> None:
    """The same record without the fact: nothing in the log says why m2 holds t-0, 1,
    so generation 4 ``differs``; generation 5 is still checked on what m2 held, and a
    replay goes on from its own decision of generation 4."""
    events = _third_joins(list(range(6)), [6, 7])
    assert _verdicts(events)[3:] == [(4, "differs"), (5, "same")]
    replayed = [
        e.data.assignment
        for e in replay_events(events, StreamId("default", "g", "r"), "same")
        if isinstance(e.data, AssignmentCompleted)
    ]
    recorded = [e.data.assignment for e in events if isinstance(e.data, AssignmentCompleted)]
    assert replayed[-1] != recorded[-1]


def test_a_decision_no_member_kept_to_differs_and_javas_differs_at_the_join() -> None:
    events = _third_joins(list(range(1, 6)), [6, 7])  # neither the flavour's nor what m2 owned
    assert _verdicts(events)[3] == (4, "differs")
    # Kafka's Java assignor keeps t-0..5 on m1 where librdkafka keeps t-6..11.
    java = _verdicts(_third_joins(list(range(2, 6)), [0, 1, 6, 7]), "cooperative-sticky")
    assert java[1] == (2, "differs")


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(ContractError, match="unknown strategy 'nosuch'"):
        list(check_decisions(_librdkafka_join(), "nosuch"))


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kstore.cli", "--store", str(path), "replay", "--group", "g"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False)


def test_the_cli_prints_each_decision_and_exits_1_when_one_is_not_the_answer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "k.duckdb"
    store = initialised_store(path)
    store.append(_third_joins(list(range(6)), [6, 7]))
    done = _cli(path, "--check", "--format", "jsonl")
    assert done.returncode == 1, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["generation"], r["verdict"], r["member"]) for r in rows] == [
        (1, "same", None),
        (2, "same", None),
        (3, "same", None),
        (4, "differs", "m2"),
        (5, "same", None),
    ]
    assert rows[3]["decided"] == [["t", p] for p in range(2, 6)]
    assert done.stderr.strip() == "5 decisions of recorded: 4 same, 0 not-taken-up, 1 differs"
    assert [s.stream.timeline for s in store.streams()] == ["recorded"]  # nothing stored
    for wrong in (["--resume"], ["--timeline", "x"]):
        refused = _cli(path, "--check", *wrong)
        assert refused.returncode == 2
        assert refused.stderr.count("\n") == 1 and "--check stores nothing" in refused.stderr


def test_the_cli_exits_0_when_every_decision_is_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "k.duckdb"
    store = initialised_store(path)
    store.append(_librdkafka_join())
    done = _cli(path, "--check", "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "generation,strategy,verdict,member,decided,held"
    assert "3 decisions of recorded: 3 same, 0 not-taken-up, 0 differs" in done.stderr
    # A decision a member did not take up, as the log says, is no failure.
    said = tmp_path / "said.duckdb"
    Store(said).init()
    Store(said).append(_third_joins(list(range(6)), [6, 7], said=True))
    done = _cli(said, "--check", "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert "4,librdkafka:cooperative-sticky,not-taken-up,m2," in done.stdout
    assert "5 decisions of recorded: 4 same, 1 not-taken-up, 0 differs" in done.stderr
