"""A real ``kstore simulate`` process, SIGKILLed part way, resumed by the same command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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


def _kill_part_way(db: Path, sig: signal.Signals) -> int:
    """Start the command, send it ``sig`` once some events are stored; the events stored
    then. The store's lock is held from then until the command and the processes it
    forked to append are gone, so the signal lands part way (no batch goes in after)."""
    proc = subprocess.Popen(
        _command(db),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "KSTORE_APPEND_APART": "1"},
        # A shell's background job ignores SIGINT, and Python keeps it ignored then.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while _version(db) == 0:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "no events stored within 120 s"
            time.sleep(0.02)
        with store_lock(db, exclusive=True):
            assert proc.poll() is None, "the run ended before it was signalled"
            copies = children(proc.pid)
            proc.send_signal(sig)
            proc.wait(timeout=60)
            while any(alive(pid) for pid in copies):  # they end with the command
                assert time.monotonic() < deadline, "a copy outlived the command"
                time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()
    # Ctrl-C: one line and exit 130.
    assert proc.returncode == (130 if sig == signal.SIGINT else -sig)
    return _version(db)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_simulation_resumes_to_the_straight_run(tmp_path: Path, sig: signal.Signals) -> None:
    scenario = generate(KIND, members=MEMBERS, steps=STEPS, seed=SEED)
    straight = Store(tmp_path / "straight.duckdb")
    straight.init()
    run_scenario(scenario, store=straight, timeline=STREAM.timeline, seed=SEED)
    expected = _stored(straight)
    assert len(expected) > 3 * FLUSH_EVERY  # several appends, so a kill can land between

    db = tmp_path / "killed.duckdb"
    at_kill = _kill_part_way(db, sig)
    assert 0 < at_kill < len(expected), "the kill did not land part way"
    assert _stored(Store(db)) == expected[:at_kill]

    resumed = subprocess.run(_command(db), capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed after {at_kill} already stored" in resumed.stdout
    got = _stored(Store(db))
    assert got == expected
    assert len({e["event_id"] for e in got}) == len(got)
    assert [e["version"] for e in got] == list(range(1, len(got) + 1))
