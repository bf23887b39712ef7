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
import time
from collections.abc import Iterator
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
]

DEFAULT_TIMEOUT_S = 60.0


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


@contextmanager
def store_lock(store: Path, *, exclusive: bool, timeout: float | None = None) -> Iterator[None]:
    """Hold the lock of ``store`` (exclusive to write, shared to read) for the block."""
    limit = lock_timeout() if timeout is None else timeout
    lock_path = store.with_name(store.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        deadline = time.monotonic() + limit
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, mode)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    what = "write to" if exclusive else "read"
                    raise StoreBusyError(
                        f"{store}: could not {what} the store: other kstore processes kept "
                        f"it busy for {limit:g} s (raise KSTORE_LOCK_TIMEOUT to wait longer)"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
