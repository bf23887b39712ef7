"""Replays: every decision is the strategy's answer on the replay's own state."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks._fleet import group_events
from kstore._errors import UsageError
from kstore.analytics.replay import _BATCH_EVENTS, replay, replay_events
from kstore.assignors import assign
from kstore.model import (
    AssignmentCompleted,
    Event,
    EventData,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    StreamId,
    TopicChanged,
)
from kstore.store.log import Store
from tests.processes import interrupted_when, on_a_terminal, plain
from tests.store._stores import initialised_store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _history() -> list[Event]:
    datas: list[EventData] = [TopicChanged(topic="t", partitions=12)]
    members: list[str] = []
    for generation, (kind, member) in enumerate(
        [("join", "a"), ("join", "b"), ("join", "c"), ("leave", "b"), ("join", "d")], start=1
    ):
        if kind == "join":
            datas.append(MemberJoined(member_id=member, topics=["t"]))
            members.append(member)
        else:
            datas.append(MemberLeft(member_id=member, reason="leave"))
            members.remove(member)
        datas.append(RebalanceStarted(generation=generation, reason=f"{kind} {member}"))
        # what was recorded does not matter to a replay: a lopsided assignment
        datas.append(
            AssignmentCompleted(
                generation=generation,
                strategy="range",
                assignment={members[0]: [("t", p) for p in range(12)]},
            )
        )
    return [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky", "roundrobin", "optimal"])
def test_each_decision_uses_the_replays_own_previous_assignment(
    store: Store, strategy: str
) -> None:
    source = _history()
    store.append(source)
    done = replay(store, group="g", strategy=strategy)
    stream = StreamId("default", "g", f"replay/{strategy}")
    assert done.stream == stream
    events = [s.event for s in store.events(group="g", timeline=stream.timeline)]
    assert len(events) == done.events
    decisions = [e for e in events if isinstance(e.data, AssignmentCompleted)]
    assert len(decisions) == done.rebalances == 5 + done.follow_ups
    for version, event in enumerate(events, start=1):
        if not isinstance(event.data, AssignmentCompleted):
            continue
        before = store.state(stream, at_version=version - 1)
        expected = assign(before.to_request(strategy)).assignment
        assert event.data.assignment == expected
        assert event.data.strategy == strategy
    copied = [
        e.data for e in events if not isinstance(e.data, AssignmentCompleted | RebalanceStarted)
    ]
    assert copied == [
        e.data for e in source if not isinstance(e.data, AssignmentCompleted | RebalanceStarted)
    ]
    assert [e.at for e in events if isinstance(e.data, MemberJoined)] == [
        e.at for e in source if isinstance(e.data, MemberJoined)
    ]
    generations = [e.data.generation for e in decisions if isinstance(e.data, AssignmentCompleted)]
    assert generations == list(range(1, len(decisions) + 1))
    if strategy == "cooperative-sticky":
        assert done.follow_ups > 0
    else:
        assert done.follow_ups == 0


def test_a_replay_never_overwrites_a_timeline(store: Store) -> None:
    store.append(_history())
    replay(store, group="g", strategy="range", timeline="mine")
    with pytest.raises(UsageError, match=r"exists already \(--resume continues"):
        replay(store, group="g", strategy="range", timeline="mine")
    with pytest.raises(UsageError, match="no stream"):
        replay(store, group="nope", strategy="range")


def test_a_replay_says_its_cpu_time_and_the_assignors_beside_the_walls(store: Store) -> None:
    # On a busy machine the walls stretch with the other processes' turns: the write
    # path benchmark shows the CPU ratio beside the wall ratio of its goal.
    store.append(list(group_events("g00815", 20, seed=7, cluster="eu")))
    done = replay(store, group="g00815", cluster="eu", strategy="sticky")
    assert 0 < done.assignor_cpu_seconds <= done.cpu_seconds


def test_a_replay_reports_the_assignors_warnings(store: Store) -> None:
    """The fleet's group g00815 leads sticky to a request Kafka never returns from
    (quirk 4 in docs/assignors/sticky.md): the replay finishes and says where."""
    store.append(list(group_events("g00815", 50, seed=7, cluster="eu")))
    done = replay(store, group="g00815", cluster="eu", strategy="sticky")
    assert done.rebalances == 50
    assert len(done.warnings) == 1
    assert done.warnings[0].startswith("generation ")
    assert "never returns" in done.warnings[0]


def _timeline(store: Store, stream: StreamId) -> list[dict[str, Any]]:
    return [
        {"version": s.version, **s.event.to_dict()}
        for s in store.events(cluster=stream.cluster, group=stream.group, timeline=stream.timeline)
    ]


def _straight(tmp_path: Path, source: list[Event], strategy: str) -> list[dict[str, Any]]:
    """The timeline of an uninterrupted replay of ``source``."""
    straight = initialised_store(tmp_path / "straight.duckdb")
    straight.append(source)
    done = replay(straight, group="g", strategy=strategy)
    return _timeline(straight, done.stream)


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("cut", [1, 0.3, 0.7, -1])
def test_a_replay_cut_after_some_source_events_resumes_to_the_straight_one(
    store: Store, tmp_path: Path, strategy: str, cut: float
) -> None:
    source = list(group_events("g", 40, seed=3))
    expected = _straight(tmp_path, source, strategy)
    store.append(source)
    stream = StreamId("default", "g", f"replay/{strategy}")
    # What a killed run leaves: the replay of the first source events, in two batches.
    kept = source[: int(cut * len(source)) if isinstance(cut, float) else cut]
    prefix = list(replay_events(kept, stream, strategy))
    assert 0 < len(prefix) < len(expected)
    store.append(prefix[: len(prefix) // 2])
    store.append(prefix[len(prefix) // 2 :])
    done = replay(store, group="g", strategy=strategy, resume=True)
    assert _timeline(store, stream) == expected
    assert (done.resumed, done.events) == (len(prefix), len(expected) - len(prefix))
    decided = sum(e["type"] == "AssignmentCompleted" for e in expected[len(prefix) :])
    assert done.rebalances == decided > 0
    if strategy == "cooperative-sticky" and cut == 0.3:
        assert done.follow_ups > 0


def test_a_cut_inside_a_source_events_outputs_resumes_with_its_follow_up(
    store: Store, tmp_path: Path
) -> None:
    """A run's batches end on source events; a target cut elsewhere still resumes."""
    source = _history()
    expected = _straight(tmp_path, source, "cooperative-sticky")
    store.append(source)
    follow_up = next(
        i
        for i, event in enumerate(expected)
        if event["type"] == "RebalanceStarted"
        and event["data"]["reason"] == "cooperative follow-up"
    )
    stream = StreamId("default", "g", "replay/cooperative-sticky")
    store.append(list(replay_events(source, stream, "cooperative-sticky"))[:follow_up])
    done = replay(store, group="g", strategy="cooperative-sticky", resume=True)
    assert _timeline(store, stream) == expected
    assert done.follow_ups >= 1 and done.resumed == follow_up


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_resuming_a_complete_replay_appends_nothing(store: Store, strategy: str) -> None:
    store.append(_history())
    first = replay(store, group="g", strategy=strategy)
    before = _timeline(store, first.stream)
    again = replay(store, group="g", strategy=strategy, resume=True)
    assert (again.events, again.rebalances, again.follow_ups) == (0, 0, 0)
    assert again.resumed == first.events == len(before)
    assert again.assignor_seconds == 0.0
    assert _timeline(store, first.stream) == before
    # The run's time splits into the assignor's, the store's and the replay's own.
    for done in (first, again):
        assert 0 < done.store_seconds < done.seconds - done.assignor_seconds


def test_resume_without_a_target_replays_it_all(store: Store) -> None:
    store.append(_history())
    done = replay(store, group="g", strategy="sticky", resume=True)
    assert done.resumed == 0 and done.rebalances == 5
    assert len(_timeline(store, done.stream)) == done.events


def test_resume_refuses_a_timeline_that_is_not_a_prefix_of_the_replay(store: Store) -> None:
    history = _history()
    store.append(history)
    replay(store, group="g", strategy="range", timeline="mine")
    mine = StreamId("default", "g", "mine")
    stored = _timeline(store, mine)
    with pytest.raises(
        UsageError, match=r"not a prefix of this replay \(it was replayed with range"
    ):
        replay(store, group="g", strategy="sticky", timeline="mine", resume=True)
    # The same facts in another source stream, so under other event ids.
    other = [
        e.model_copy(update={"event_id": f"o{i}", "timeline": "other"})
        for i, e in enumerate(history)
    ]
    store.append(other)
    with pytest.raises(
        UsageError,
        match=r"its event 1 is '[0-9a-f-]{36}' \(TopicChanged\), the replay's '[0-9a-f-]{36}'",
    ):
        replay(store, group="g", strategy="range", source="other", timeline="mine", resume=True)
    assert _timeline(store, mine) == stored
    # A target holding more than the replay gives.
    extra = Event(
        group="g",
        timeline="mine",
        at=T0 + timedelta(hours=1),
        data=MemberLeft(member_id="a", reason="leave"),
    )
    store.append([extra])
    with pytest.raises(
        UsageError, match=f"it holds '{extra.event_id}' after the replay's last event"
    ):
        replay(store, group="g", strategy="range", timeline="mine", resume=True)
    assert _timeline(store, mine)[:-1] == stored


def _stored_events(store: Store, stream: StreamId) -> int:
    return next((s.events for s in store.streams() if s.stream == stream), 0)


def test_a_killed_replay_process_resumes_to_the_straight_one(tmp_path: Path) -> None:
    """A real ``kstore replay``, SIGKILLed once its first batch is stored, then resumed
    through the CLI: the same timeline as an uninterrupted replay."""
    source = list(group_events("g", 800, seed=11))
    db = tmp_path / "killed.duckdb"
    store = initialised_store(db)
    store.append(source)
    stream = StreamId("default", "g", "replay/cooperative-sticky")
    expected = list(replay_events(source, stream, "cooperative-sticky"))
    assert len(expected) > 2 * _BATCH_EVENTS  # batches after the first, so a kill lands between
    command = [sys.executable, "-m", "kstore.cli", "--store", str(db), "replay", "--group", "g"]
    command += ["--strategy", "cooperative-sticky"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not _stored_events(store, stream):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "no batch stored within 60 s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    at_kill = _stored_events(store, stream)
    assert 0 < at_kill < len(expected), "the kill did not land part way"

    again = subprocess.run(command, capture_output=True, text=True, check=False)
    assert again.returncode == 2
    assert again.stderr.count("\n") == 1 and "--resume" in again.stderr
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert (
        f"this run {len(expected) - at_kill:,} replay events after {at_kill:,} stored already"
        in resumed.stdout
    )
    got = _timeline(store, stream)
    assert got == [{"version": v, **e.to_dict()} for v, e in enumerate(expected, start=1)]


def test_the_cli_refuses_a_bad_resume_in_one_line(store: Store) -> None:
    store.append(_history())
    replay(store, group="g", strategy="range")
    command = [sys.executable, "-m", "kstore.cli", "--store", str(store.path), "replay"]
    command += ["--group", "g", "--strategy", "sticky", "--timeline", "replay/range", "--resume"]
    bad = subprocess.run(command, capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        "kstore: error: timeline 'replay/range' of default/g is not a prefix"
    )
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_ctrl_c_ends_a_replay_with_one_line_and_its_resume_command(tmp_path: Path) -> None:
    """A real ``kstore replay`` sent SIGINT once a batch is stored: one line naming what
    was stored and the resuming command, exit 130, and the resume completes it."""
    source = list(group_events("g", 800, seed=11))
    db = tmp_path / "ctrl-c.duckdb"
    store = initialised_store(db)
    store.append(source)
    stream = StreamId("default", "g", "replay/cooperative-sticky")
    expected = list(replay_events(source, stream, "cooperative-sticky"))
    command = [sys.executable, "-m", "kstore.cli", "--store", str(db), "replay", "--group", "g"]
    command += ["--strategy", "cooperative-sticky"]
    returncode, _, err = interrupted_when(command, lambda: _stored_events(store, stream) > 0)
    assert returncode == 130, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("kstore: replay interrupted after "), err  # a stop, no "error:"
    at_stop = _stored_events(store, stream)
    assert 0 < at_stop < len(expected)
    # the line counts source events as the progress bar does, and the replay's stored
    assert f" of {len(source):,} source events: {at_stop:,} replay events stored" in err, err
    assert "--resume" in err, err
    # compare says it is partial and compares the prefix it covers (issue 13)
    base = [sys.executable, "-m", "kstore.cli", "--store", str(db), "compare", "--group", "g"]
    compared = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    assert "replay/cooperative-sticky is partial: it has decided up to version" in compared
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    compared = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    assert "partial" not in compared
    assert _timeline(store, stream) == [
        {"version": v, **e.to_dict()} for v, e in enumerate(expected, start=1)
    ]


def test_a_progress_bar_with_rate_and_eta_on_a_terminal_only(tmp_path: Path) -> None:
    db = tmp_path / "bar.duckdb"
    store = initialised_store(db)
    store.append(list(group_events("g", 200, seed=3)))
    command = [sys.executable, "-m", "kstore.cli", "--store", str(db), "replay", "--group", "g"]
    piped = subprocess.run([*command, "--strategy", "range"], capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    returncode, text = on_a_terminal([*command, "--strategy", "sticky"], columns=160)
    assert returncode == 0
    assert "replaying default/g/recorded" in text and "source events" in text, text
    assert "/s" in text


def test_the_bars_count_says_thousands_as_kstore_does() -> None:
    from rich.progress import Progress

    from kstore.commands._output import done_of_total

    column = done_of_total()
    progress = Progress(column)
    progress.add_task("x", total=9_093, completed=2_363)
    assert str(column.render(progress.tasks[0])) == "2,363/9,093"  # was "2363/9093"
    progress.add_task("y", total=None, completed=12_000)
    assert str(column.render(progress.tasks[1])) == "12,000/?"


def test_the_bar_keeps_its_figures_whole_in_a_narrow_terminal(tmp_path: Path) -> None:
    """A long group name used to push the count and the time left off an 80-column line
    (``1… source events 507/s 0:0…``); now the name shortens instead."""
    db = tmp_path / "bar.duckdb"
    store = initialised_store(db)
    group = "orders-consumers-of-the-eu-west-payments-platform-" + "x" * 20
    store.append(list(group_events(group, 200, seed=3)))
    command = [sys.executable, "-m", "kstore.cli", "--store", str(db), "replay", "--group", group]
    returncode, text = on_a_terminal([*command, "--strategy", "sticky"], columns=80)
    assert returncode == 0
    whole = r"\d+/\d+ source events [\d,]+/s ETA (\d+:\d\d:\d\d|-:--:--)"
    assert re.search(whole, plain(text)), plain(text)
