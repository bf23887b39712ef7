"""Real processes: several writers and a reader at once, and writers killed mid-append."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kstore.model import StreamId
from kstore.store.log import Store
from tests.store.test_store import projection_rows

ROOT = Path(__file__).resolve().parents[2]
SHARED = StreamId("default", "shared", "recorded")


def writer(
    store: Path, name: str, batches: int, size: int, partitions: int
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.store._writer",
            str(store),
            name,
            str(batches),
            str(size),
            str(partitions),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def check_log(store: Store, size: int) -> Counter[str]:
    """Positions and versions contiguous, ids unique, each batch whole; batches per writer."""
    stored = list(store.events())
    assert [s.position for s in stored] == list(range(1, len(stored) + 1))
    assert [s.version for s in stored] == list(range(1, len(stored) + 1))
    ids = [s.event.event_id for s in stored]
    assert len(set(ids)) == len(ids)
    batches = Counter(i.rsplit("-", 1)[0] for i in ids)
    assert set(batches.values()) <= {size}
    return Counter(b.split("-")[0] for b in batches)


@pytest.mark.slow
def test_several_writers_and_a_reader(tmp_path: Path) -> None:
    path = tmp_path / "kstore.duckdb"
    store = Store(path)
    store.init()
    writers = [writer(path, f"w{i}", 5, 5, 40) for i in range(3)]
    reads = 0
    while not store.streams() and any(w.poll() is None for w in writers):
        time.sleep(0.01)  # the reader below names the group: it must be there
    while any(w.poll() is None for w in writers):
        listed = subprocess.run(
            [
                sys.executable,
                "-m",
                "kstore.cli",
                "--store",
                str(path),
                "events",
                "--group",
                "shared",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
        reads += 1
    for w in writers:
        _, err = w.communicate()
        assert w.returncode == 0, err
        assert err == ""
    assert check_log(store, 5) == {"w0": 5, "w1": 5, "w2": 5}
    assert reads >= 1
    assert store.state(SHARED).version == 3 * 5 * 5
    before = projection_rows(store)
    store.rebuild()
    assert projection_rows(store) == before


@pytest.mark.slow
def test_sigkill_mid_append_leaves_batches_whole(tmp_path: Path) -> None:
    path = tmp_path / "kstore.duckdb"
    store = Store(path)
    store.init()
    rng = random.Random(7)
    for round_ in range(3):
        proc = writer(path, f"k{round_}", 1000, 20, 2000)
        assert proc.stdout is not None
        proc.stdout.readline()  # one batch is in: the kill lands in a later one
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        written = check_log(store, 20)
        assert 1 <= written[f"k{round_}"] < 1000
    # The projections match the log: nothing of a killed batch is left anywhere.
    before = projection_rows(store)
    assert len(before["kstore_assignments"]) == len(list(store.events())) * 2000
    store.rebuild()
    assert projection_rows(store) == before
