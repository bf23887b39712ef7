"""A real ``kstore simulate`` process, SIGKILLed part way, resumed by the same command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kstore.model.events import StreamId
from kstore.simulate import generate, run_scenario
from kstore.simulate.runner import FLUSH_EVERY
from kstore.store._lock import store_lock
from kstore.store.log import Store
from tests.processes import alive, children

KIND, MEMBERS, STEPS, SEED = "autoscaling", 20, 1_000, 5
NAME = f"{KIND}-{MEMBERS}-{STEPS}-{SEED}"
STREAM = StreamId("default", NAME, f"sim/{NAME}")


def _command(db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kstore.cli",
        "--store",
        str(db),
        "simulate",
        "--generate",
        KIND,
        "--members",
        str(MEMBERS),
        "--steps",
        str(STEPS),
        "--seed",
        str(SEED),
    ]


def _stored(store: Store) -> list[dict[str, Any]]:
    return [
        {"version": s.version, **s.event.to_dict()}
        for s in store.events(cluster=STREAM.cluster, group=STREAM.group, timeline=STREAM.timeline)
    ]


def _version(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        found = [s.events for s in Store(db).streams() if s.stream == STREAM]
    except Exception:  # the file may not be a complete store yet while it is created
        return 0
    return found[0] if found else 0


def _stored_version(db: Path) -> int:
    """The stream's version read by DuckDB alone (for a test that holds kstore's lock)."""
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute(
            "SELECT version FROM kstore_streams WHERE group_id = ? AND timeline = ?",
            [STREAM.group, STREAM.timeline],
        ).fetchall()
    return int(found[0][0]) if found else 0


def _kill_part_way(db: Path, sig: signal.Signals, total: int) -> int | None:
    """Start the command, send it ``sig`` once some events are stored; the events stored
    when it ended (None: the run had stored them all before it could be signalled;
    SIGKILL: those stored when it came, SIGINT: the run stores what it made). The store's
    lock is held from then until the command and the processes it forked to append are
    gone: while it is held no batch goes in, so a run that has not stored everything
    is still running when the signal lands."""
    proc = subprocess.Popen(
        _command(db),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "KSTORE_APPEND_APART": "1"},
        # A shell's background job ignores SIGINT, and Python keeps it ignored then.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 120
        while _version(db) == 0:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no events stored within 120 s"
            time.sleep(0.02)
        with store_lock(db, exclusive=True):
            at_kill = _stored_version(db)
            if at_kill == total:
                return None
            copies = children(proc.pid)
            proc.send_signal(sig)
            if sig == signal.SIGKILL:
                proc.wait(timeout=60)
                while any(alive(pid) for pid in copies):  # they end with the command
                    assert time.monotonic() < deadline, "a copy outlived the command"
                    time.sleep(0.02)
        # Ctrl-C: the run stores what it has made (the lock let go), then one line (what
        # is stored, the command that resumes) and exit 130.
        proc.wait(timeout=60)
        err = proc.stderr.read().decode()
        if sig == signal.SIGINT and proc.returncode == 0 and _version(db) == total:
            # The signal landed as the last batch was being stored: the write finishes
            # (test_ctrl_c_during_a_store_write_lets_the_write_finish) and nothing was left
            # to stop; seen once in the clean-clone CI. Not part way: try again.
            return None
        assert proc.returncode == (130 if sig == signal.SIGINT else -sig), err
        if sig == signal.SIGINT:
            at_stop = _version(db)
            assert at_kill <= at_stop <= total
            (line,) = [x for x in err.splitlines() if x.startswith("kstore: ")]
            assert line.startswith("kstore: simulation interrupted at "), line
            assert f": {at_stop:,} events stored in timeline {STREAM.timeline!r}; " in line
            assert "; resume with the same command: kstore " in line
            return at_stop if at_stop < total else None
        return at_kill
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        proc.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_simulation_resumes_to_the_straight_run(tmp_path: Path, sig: signal.Signals) -> None:
    scenario = generate(KIND, members=MEMBERS, steps=STEPS, seed=SEED)
    straight = Store(tmp_path / "straight.duckdb")
    straight.init()
    run_scenario(scenario, store=straight, timeline=STREAM.timeline, seed=SEED)
    expected = _stored(straight)
    assert len(expected) > 3 * FLUSH_EVERY  # several appends, so a kill can land between

    for attempt in range(3):  # on a busy machine the run may store everything first
        db = tmp_path / f"killed-{attempt}.duckdb"
        at_kill = _kill_part_way(db, sig, len(expected))
        if at_kill is not None:
            break
    assert at_kill is not None, "the run stored everything before each signal"
    assert 0 < at_kill < len(expected), "the kill did not land part way"
    assert _version(db) == at_kill
    assert _stored(Store(db)) == expected[:at_kill]

    resumed = subprocess.run(_command(db), capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed after {at_kill:,} already stored" in resumed.stdout
    got = _stored(Store(db))
    assert got == expected
    assert len({e["event_id"] for e in got}) == len(got)
    assert [e["version"] for e in got] == list(range(1, len(got) + 1))


def test_ctrl_c_during_a_store_write_lets_the_write_finish(tmp_path: Path) -> None:
    """Ctrl-C while a batch was being stored ended the run as ``RuntimeError: Query
    interrupted`` (exit 1), or as an interruption that dropped the batch. Now the batch in
    flight is stored, the run stops at its next step with one line naming what is
    stored, and the same command resumes it to the straight run's events."""
    scenario = generate(KIND, members=MEMBERS, steps=STEPS, seed=SEED)
    straight = Store(tmp_path / "straight.duckdb")
    straight.init()
    run_scenario(scenario, store=straight, timeline=STREAM.timeline, seed=SEED)
    expected = _stored(straight)
    db = tmp_path / "ctrl-c.duckdb"
    ctrl_c_at_each_write = (
        "import os, signal\n"
        "from kstore.store.writer import Writer\n"
        "flush = Writer.flush\n"
        "def ctrl_c_then_flush(self):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    flush(self)\n"
        "Writer.flush = ctrl_c_then_flush\n"
        "from kstore.cli import main\n"
        "main()\n"
    )
    command = [sys.executable, "-c", ctrl_c_at_each_write, *_command(db)[3:]]
    ended = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "KSTORE_APPEND_APART": "0"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert ended.returncode == 130, ended.stderr
    at_stop = _version(db)
    assert FLUSH_EVERY <= at_stop < len(expected)
    assert ended.stderr.count("\n") == 1 and "Traceback" not in ended.stderr, ended.stderr
    assert f": {at_stop:,} events stored in timeline " in ended.stderr, ended.stderr
    assert _stored(Store(db)) == expected[:at_stop]
    resumed = subprocess.run(_command(db), capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert _stored(Store(db)) == expected
