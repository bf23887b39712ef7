"""A damaged store file says so at once, in one line: it is not "busy", and no traceback.

DuckDB checks a block's checksum when it reads it; a flipped bit in the file's first
block, in a block of the log, or a file that is not DuckDB's at all are each reported
as damaged within seconds (the lock wait is 60 s), exit 1, nothing on standard output.
"""

from __future__ import annotations

import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from kstore.model import MemberJoined
from kstore.model.events import Event
from kstore.store.log import Store
from tests.processes import kstore_cli

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_HEADER = 3 * 4096
_BLOCK = 256 * 1024
_EVENT = (
    '{"type": "MemberJoined", "group": "g", "at": "2026-01-02T00:00:00Z", '
    '"data": {"member_id": "late", "topics": ["t"]}}\n'
)


def _kstore(store: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KSTORE_LOCK_TIMEOUT"}
    return kstore_cli(store, *args, stdin=stdin, env=env, timeout=50)


def _flip(path: Path, offset: int) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0xFF]))


def _log_block(path: Path) -> int:
    """The file offset of a block holding the log's ``event_id`` column: every command
    here reads it (an append looks its ids up there). An append reads no other block
    of the log: DuckDB adds its rows to new blocks, row groups being small
    (``kstore.store.log._STORAGE``)."""
    with duckdb.connect(str(path), read_only=True) as db:
        block = db.execute(
            "SELECT max(block_id) FROM pragma_storage_info('kstore_events') "
            "WHERE column_name = 'event_id' AND block_id >= 0"
        ).fetchone()
    assert block is not None and block[0] is not None
    return _HEADER + int(block[0]) * _BLOCK + 1000


@pytest.fixture
def filled(store: Store) -> Store:
    store.append(
        [
            Event(
                group="g",
                at=T0 + timedelta(seconds=i),
                data=MemberJoined(member_id=f"m{i:05d}-" + "x" * 40, topics=["t"]),
            )
            for i in range(3000)
        ]
    )
    return store


def _assert_damaged(out: subprocess.CompletedProcess[str], seconds: float) -> None:
    assert seconds < 15, seconds
    assert out.returncode == 1, out
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("kstore: error: ") and "damaged" in out.stderr
    assert "held by another process" not in out.stderr


@pytest.mark.parametrize("where", ["first block", "log block"])
@pytest.mark.parametrize("command", ["events", "append", "export"])
def test_a_flipped_bit_is_reported_as_damage_at_once(
    filled: Store, tmp_path: Path, where: str, command: str
) -> None:
    offset = _HEADER + 100 if where == "first block" else _log_block(filled.path)
    _flip(filled.path, offset)
    args = {
        "events": ("events", "--format", "jsonl"),
        "append": ("append", "-"),
        "export": ("export", "--out", str(tmp_path / "out")),
    }[command]
    started = time.monotonic()
    out = _kstore(filled.path, *args, stdin=_EVENT)
    _assert_damaged(out, time.monotonic() - started)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("g.jsonl", _EVENT),  # DuckDB opened it as a database in memory: init said "created"
        ("kstore.duckdb", "x\n"),  # what `COPY ... TO` the store used to leave
        ("short", "ab"),
        ("empty.duckdb", ""),
    ],
)
@pytest.mark.parametrize("command", [("init",), ("streams",), ("append", "-")])
def test_a_file_that_is_not_duckdbs_is_not_a_store(
    tmp_path: Path, name: str, text: str, command: tuple[str, ...]
) -> None:
    """The user's mistake, not the disk's: exit 2, the file left as it was."""
    path = tmp_path / name
    path.write_text(text)
    out = _kstore(path, *command, stdin=_EVENT)
    what = "an empty file" if not text else "not a DuckDB database file"
    assert (out.returncode, out.stdout) == (2, ""), out
    assert out.stderr == (
        f"kstore: error: {path}: not a kstore store ({what}); kstore left it as it is\n"
    )
    assert path.read_text() == text
    if text:  # known before the lock is taken: no lock files beside it either
        assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_log_killed_after_its_checkpoint_is_set_aside_not_a_damaged_store(
    tmp_path: Path,
) -> None:
    """A commit's write-ahead log is removed after its checkpoint; a process killed
    between the two (the clean-clone CI's SIGKILL test did it) left a log one checkpoint
    behind the file, which DuckDB refuses to open the file with: the whole store read as
    damaged. The log's changes are in the file, so kstore moves it aside (kept), says so,
    and reads the store whole."""
    path = tmp_path / "kstore.duckdb"
    store = Store(path)
    store.init()
    events = [
        Event(
            group="g",
            at=T0 + timedelta(seconds=i),
            data=MemberJoined(member_id=f"m{i}", topics=["t"]),
        )
        for i in range(5)
    ]
    store.append(events)
    # The state such a kill leaves, made by hand: a change committed into the log only,
    # the log copied, then checkpointed into the file (which removes the log), and the
    # copy put back.
    db = duckdb.connect(config={"checkpoint_threshold": "1GB"})
    db.execute(f"ATTACH '{path}' AS k (STORAGE_VERSION 'v1.5.0')")  # as kstore's
    db.execute("CREATE TABLE k.scratch AS SELECT 42 AS x")
    wal = path.with_name(path.name + ".wal")
    kept = wal.read_bytes()
    db.execute("CHECKPOINT k")
    db.close()
    assert not wal.exists()
    wal.write_bytes(kept)

    done = _kstore(path, "events", "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(events)
    assert done.stderr.startswith(f"kstore: note: {path}: its write-ahead log was already")
    aside = list(tmp_path.glob("kstore.duckdb.wal.checkpointed-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == kept and not wal.exists()
    # Its change was in the file: nothing of it lost.
    assert duckdb.connect(str(path), read_only=True).sql("SELECT x FROM scratch").fetchall() == [
        (42,)
    ]
    assert _kstore(path, "events").stderr == ""  # said once
