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

__all__ = ["DEFAULT_TIMEOUT_S", "StoreBusyError", "lock_timeout", "store_lock"]

DEFAULT_TIMEOUT_S = 60.0


class StoreBusyError(KstoreError):
    """The lock was not had within the bounded wait."""

    exit_code = 3


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
