"""Issue 17, item 5, decision by decision: every generation of live librdkafka groups
(confluent-kafka members on Tansu: joins, a close, a kill, a join) against kstore's
``librdkafka:<strategy>``.

The record holds what the members held, which is not always what their leader decided:
Tansu fails a follower's SyncGroup at times (it holds it about 5 s, then answers
REBALANCE_IN_PROGRESS), and the follower keeps what it held. So each decision is
checked on its own, from the record of its moment, not from a replay's previous answer:

- the oracle is the leader itself: librdkafka's ``assignor`` debug log prints, for each
  run, the members in the leader's order with their subscriptions and how many
  partitions each owned, and what the assignor gave each (for cooperative-sticky, the
  target before the cooperative step);
- the leader's inputs are the record's: the same members and subscriptions, each owning
  as many partitions as the record says it held in the generation before
  (cooperative; an eager member owns none when it joins), and those partitions are the
  ones the member sent as owned in its last JoinGroup before the leader's run (its own
  ``cgrp`` log lists its group assignment);
- the leader's decision is kstore's answer to that request (``librdkafka:sticky`` for
  the target of cooperative-sticky);
- what a user runs, ``kstore replay --check``, finds every recorded assignment to be
  ``librdkafka:<strategy>``'s answer, but for members that held on to what they owned
  (``kept``), and each of those was called back in nothing in that generation (its
  SyncGroup failed); Kafka's Java cooperative-sticky is not the answer somewhere.
"""

from __future__ import annotations

import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kstore.assignors import assign
from kstore.model import AssignmentCompleted, Event
from kstore.model.fold import GroupState
from kstore.model.strategies import protocol_of
from kstore.record.confluent import read_reports
from kstore.store.log import Store
from tests.broker import Broker
from tests.golden.librdkafka_live import _runs
from tests.record.test_broker import RUN, confluent_family, kstore

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.xdist_group("broker")]

TARGET = {
    "cooperative-sticky": "librdkafka:sticky",
    "range": "librdkafka:range",
    "roundrobin": "librdkafka:roundrobin",
}
"""The flavour whose answer librdkafka's ``assignor`` log prints, by strategy."""


def leader_runs(workdir: Path) -> dict[int, dict[str, Any]]:
    """Each generation's assignor run, from the debug logs of the members in ``workdir``
    (whichever led it)."""
    found: dict[int, dict[str, Any]] = {}
    for log in sorted(workdir.glob("member-*.log")):
        for run in _runs(log.read_text(errors="replace").splitlines()):
            assert run["generation"] not in found, f"two leaders of {run['generation']}"
            found[run["generation"]] = run
    return found


_LIST = re.compile(r"List with (\d+) partition\(s\):")
_LISTED = re.compile(r"\s*(\S+) \[(\d+)\]")
_JOINING = re.compile(
    r'Joining group "[^"]*" with \d+ subscribed topic\(s\) and member id "([^"]+)"'
)
_REJOINING = re.compile(r"Rejoining group (?:without an assignment|with (\d+) owned partition)")


def joins(log: Path) -> list[tuple[float, str, list[tuple[str, int]]]]:
    """Each JoinGroup a member sent, from its ``cgrp`` debug log: (time, member id, the
    partitions it owned then, which a cooperative member sends as owned): its group
    assignment as last listed (``GRPASSIGNMENT``), none after "Rejoining group without
    an assignment"."""
    owned: list[tuple[str, int]] = []
    sent = []
    for line in log.read_text(errors="replace").splitlines():
        fields = line.split("|", 4)
        if len(fields) < 5 or "]: " not in fields[4]:
            continue
        tag, text = fields[2], fields[4].split("]: ", 1)[1]
        if tag == "GRPASSIGNMENT" and _LIST.fullmatch(text):
            owned = []
        elif tag == "GRPASSIGNMENT" and (m := _LISTED.match(text)):
            owned.append((m.group(1), int(m.group(2))))
        elif m := _REJOINING.match(text.split(": ", 1)[-1]):
            if m.group(1) is None:
                owned = []
            else:  # the parse agrees with librdkafka's own count
                assert int(m.group(1)) == len(owned), (log, line, owned)
        elif m := _JOINING.search(text):
            sent.append((float(fields[1]), m.group(1), sorted(owned)))
    return sent


def owned_when(
    sent: list[tuple[float, str, list[tuple[str, int]]]], member: str, at: float
) -> list[tuple[str, int]]:
    """What ``member`` owned in its last JoinGroup before ``at``."""
    before = [owned for when, who, owned in sent if who == member and when <= at]
    assert before, f"{member} sent no JoinGroup before {at}"
    return before[-1]


def called_back(reports: Path) -> set[tuple[str, int]]:
    """(member, generation) of every member given an assignment in a generation (its
    SyncGroup answered: librdkafka calls it back then, with nothing if nothing changes)."""
    return {(r.member_id, r.generation) for r in read_reports(reports) if r.kind == "assign"}


def check_each_decision(events: list[Event], strategy: str, workdir: Path) -> int:
    """The leader's inputs and decision of every recorded generation against the record
    and kstore's answer (the module's docstring); the number of generations."""
    runs = leader_runs(workdir)
    cooperative = protocol_of(strategy) == "cooperative"
    sent_joins = [join for log in sorted(workdir.glob("member-*.log")) for join in joins(log)]
    decided = [e.data.generation for e in events if isinstance(e.data, AssignmentCompleted)]
    assert sorted(runs) == decided, (sorted(runs), decided)
    state = GroupState()
    for event in events:
        data = event.data
        if isinstance(data, AssignmentCompleted):
            run = runs[data.generation]
            where = f"{strategy} generation {data.generation}"
            logged = [(m, count, sorted(topics)) for m, count, topics in run["members"]]
            # An eager member gives everything back before it joins again: it owns nothing.
            recorded = [
                (m, len(state.assignment.get(m, ())) if cooperative else 0, sorted(member.topics))
                for m, member in state.members.items()
            ]
            assert sorted(logged) == sorted(recorded), (where, logged, recorded)
            if cooperative:  # which partitions: what each member sent as owned
                for m in state.members:
                    sent = owned_when(sent_joins, m, run["at"])
                    assert sent == sorted(state.assignment.get(m, ())), (where, m, sent)
            request = state.to_request(TARGET[strategy])
            # The members in the leader's order (librdkafka's sticky depends on it).
            members = {m: request.members[m] for m, _, _ in run["members"]}
            answer = assign(request.model_copy(update={"members": members})).assignment
            leader = {m: sorted((t, p) for t, p in tps) for m, tps in run["assigned"].items()}
            assert {m: sorted(tps) for m, tps in answer.items()} == leader, where
        state.apply(event)
    return len(decided)


def replay_check(store: Store, group: str, strategy: str) -> list[dict[str, Any]]:
    """``kstore replay --check --format jsonl``'s rows (exit 0: all same, 1: not)."""
    command = kstore(store.path, "replay", "--group", group, "--check", "--strategy", strategy)
    done = subprocess.run([*command, "--format", "jsonl"], **RUN | {"check": False})
    assert done.returncode in (0, 1), done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == int(any(row["verdict"] != "same" for row in rows))
    return rows


def librdkafka_group_decision_by_decision(
    broker: Broker, store: Store, workdir: Path, strategy: str
) -> str:
    events = confluent_family(broker, store, workdir, strategy, replay=False)
    count = check_each_decision(events, strategy, workdir)
    group = events[0].group
    rows = replay_check(store, group, "same")
    assert {row["strategy"] for row in rows} == {f"librdkafka:{strategy}"}
    synced = called_back(workdir / "reports")
    kept = [(row["member"], row["generation"]) for row in rows if row["verdict"] == "kept"]
    assert [row for row in rows if row["verdict"] not in ("same", "kept")] == []
    assert not set(kept) & synced, (kept, rows)  # only members whose SyncGroup failed
    java = "differs" if strategy == "cooperative-sticky" else "-"
    if strategy == "cooperative-sticky":
        # Kafka's Java assignor keeps an owner's first partitions, librdkafka its last.
        java_rows = replay_check(store, group, "cooperative-sticky")
        assert any(row["verdict"] == "differs" for row in java_rows), java_rows
    return f"{strategy}: {count} generations, each the leader's decision; kept {kept}; java {java}"


def test_each_decision_of_live_librdkafka_groups_is_the_flavours(
    broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """range, roundrobin and cooperative-sticky groups at once, each member logging
    librdkafka's ``cgrp`` and ``assignor`` debug contexts."""
    monkeypatch.setenv("KSTORE_TEST_RDKAFKA_DEBUG", "cgrp,assignor")
    with ThreadPoolExecutor(len(TARGET)) as pool:
        running = []
        for strategy in TARGET:
            workdir = tmp_path / strategy
            workdir.mkdir()
            store = Store(workdir / "kstore.duckdb")
            store.init()
            running.append(
                pool.submit(librdkafka_group_decision_by_decision, broker, store, workdir, strategy)
            )
        for future in running:
            print(future.result())
