"""The store's side lock file: many readers or one writer, waited for within a bound.

DuckDB lets one process open a file read-write, and then no other process may open it
at all. So every kstore process takes ``<store>.lock`` (``flock``) before it opens the
store, shared to read and exclusive to write, and closes the store before letting go.
Windows are short (open, work, close), so waiting processes get their turn quickly.
The kernel drops the lock of a process that dies, SIGKILL included.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kstore._errors import KstoreError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "CorruptStoreError",
    "StoreBusyError",
    "busy_elsewhere",
    "corruption",
    "lock_timeout",
    "store_lock",
    "writer_waiting",
    "yielding_to_writers",
]

DEFAULT_TIMEOUT_S = 60.0
YIELD_AFTER_S = 0.2
"""How long a long read keeps the store once a writer waits, before it steps aside."""


class StoreBusyError(KstoreError):
    """The lock was not had within the bounded wait."""

    exit_code = 3


class CorruptStoreError(KstoreError):
    """DuckDB found the file damaged (a block's checksum, a torn or foreign file)."""


# DuckDB's words for a damaged file, and for a file another program holds open.
_DAMAGED = (
    "Corrupt database file",
    "checksum",
    "not a valid DuckDB database file",
    "Could not read enough bytes",
)
_HELD = "Could not set lock on file"


def busy_elsewhere(error: BaseException) -> bool:
    """Another process (not kstore) has the DuckDB file open: worth waiting for."""
    return _HELD in str(error)


def corruption(store: Path, error: BaseException) -> CorruptStoreError | None:
    """The error to report when ``error`` says the file is damaged, else None."""
    lines = [line.removeprefix("Original Error: ") for line in str(error).splitlines()]
    found = next((line for line in lines if any(w in line for w in _DAMAGED)), None)
    if found is None:
        return None
    found = found.split(") ", 1)[1] if found.startswith("(_duckdb.") else found
    found = found.split(" (Background on this error", 1)[0]
    return CorruptStoreError(
        f"{store}: the store file is damaged: {found.strip()}; kstore stored nothing. "
        "DuckDB checks each block as it reads it: check the disk, and restore the file "
        "from a copy"
    )


def lock_timeout() -> float:
    """``KSTORE_LOCK_TIMEOUT`` seconds, else the default."""
    raw = os.environ.get("KSTORE_LOCK_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise KstoreError(f"KSTORE_LOCK_TIMEOUT: not a number of seconds: {raw!r}") from None


def _take(fd: int, mode: int, deadline: float, failure: StoreBusyError) -> None:
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise failure from None
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def _gate(store: Path) -> Path:
    return store.with_name(store.name + ".lock.gate")


@contextmanager
def store_lock(store: Path, *, exclusive: bool, timeout: float | None = None) -> Iterator[None]:
    """Hold the lock of ``store`` (exclusive to write, shared to read) for the block.

    Writers first: a writer takes the gate (``<store>.lock.gate``) exclusively before it
    waits for the lock, and a reader passes the gate (shared, for an instant) before it
    takes the lock. So once a writer waits, no new reader gets in: it waits for the
    readers already in, whose windows are short (and a long ``Store.query`` steps aside,
    ``writer_waiting``), never for a stream of new ones.
    """
    limit = lock_timeout() if timeout is None else timeout
    deadline = time.monotonic() + limit
    what = "write to" if exclusive else "read"
    busy = StoreBusyError(
        f"{store}: could not {what} the store: other kstore processes kept "
        f"it busy for {limit:g} s (raise KSTORE_LOCK_TIMEOUT to wait longer)"
    )
    gate = os.open(_gate(store), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fd = os.open(store.with_name(store.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if exclusive:
                _take(gate, fcntl.LOCK_EX, deadline, busy)
                _take(fd, fcntl.LOCK_EX, deadline, busy)
            else:
                _take(gate, fcntl.LOCK_SH, deadline, busy)
                _take(fd, fcntl.LOCK_SH, deadline, busy)
                fcntl.flock(gate, fcntl.LOCK_UN)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock
    finally:
        os.close(gate)


def writer_waiting(store: Path) -> bool:
    """Whether a writer holds the gate of ``store`` (it waits for the readers inside)."""
    try:
        gate = os.open(_gate(store), os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(gate, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(gate)
    return False


@contextmanager
def yielding_to_writers(store: Path, interrupt: Callable[[], None]) -> Iterator[threading.Event]:
    """For a long read: once a writer waits and the read has held the store for
    ``YIELD_AFTER_S``, call ``interrupt`` (the read is to stop and let go). The event
    says whether it was called."""
    fired = threading.Event()
    done = threading.Event()
    started = time.monotonic()

    def watch() -> None:
        while not done.wait(0.02):
            if time.monotonic() - started >= YIELD_AFTER_S and writer_waiting(store):
                fired.set()
                interrupt()
                return

    watcher = threading.Thread(target=watch, name="kstore-yield", daemon=True)
    watcher.start()
    try:
        yield fired
    finally:
        done.set()
        watcher.join()
