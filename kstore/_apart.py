"""Work run in a forked copy of this process while the process goes on: a batch appended
(``Writer.flush_apart``) or a new store created (``run_scenario``) on another core."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["FORKS", "Apart"]

FORKS = sys.platform == "linux"
"""``Apart`` forks (and asks Linux to end the copy with its parent): Linux only."""


class Apart:
    """``work()`` run in a forked copy of this process; ``result`` waits for it and gives
    its value or raises its exception (pickled back through a pipe). ``cpu``: the CPU
    seconds the copy used (user and system), once it ended. ``doing``: what it does, for
    the error when it ends without a result."""

    def __init__(self, work: Callable[[], Any], doing: str = "appending a batch") -> None:
        self.doing = doing
        parent = os.getpid()
        read, write = os.pipe()
        self._status: int | None = None
        self.cpu = 0.0
        # Ctrl-C is held back over the fork: raised inside it, in the handlers modules
        # register to run at a fork (logging's), it would be printed and lost.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        self._pid = os.fork()
        if self._pid == 0:  # the copy: it never returns from here
            os.close(read)
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                # PR_SET_PDEATHSIG: SIGKILL this copy when its parent ends.
                ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
                if os.getppid() == parent:  # else the parent ended before the line above
                    with os.fdopen(write, "wb") as out:
                        out.write(_outcome(work))
                    code = 0
            finally:
                os._exit(code)
        os.close(write)
        self._read: int | None = read
        signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def done(self) -> bool:
        """Whether the copy has ended (without waiting)."""
        if self._status is None:
            pid, status, used = os.wait4(self._pid, os.WNOHANG)
            if pid == 0:
                return False
            self._ended(status, used)
        return True

    def _wait(self) -> None:
        if self._status is None:
            _, status, used = os.wait4(self._pid, 0)
            self._ended(status, used)

    def _ended(self, status: int, used: Any) -> None:
        self._status = status
        self.cpu = used.ru_utime + used.ru_stime

    def kill(self) -> None:
        """End the copy now (if it has not ended) and wait for it to be gone."""
        self._close()
        if self._status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            self._wait()

    def result(self) -> Any:
        """The copy's value, once it ended; its exception raised."""
        assert self._read is not None, "the copy's result was read already"
        chunks = []
        while chunk := os.read(self._read, 1 << 16):
            chunks.append(chunk)
        self._close()
        self._wait()
        if not chunks:
            raise RuntimeError(
                f"the process {self.doing} ended (wait status {self._status}) before it was done"
            )
        ok, value = pickle.loads(b"".join(chunks))
        if not ok:
            raise value
        return value

    def _close(self) -> None:
        if self._read is not None:
            os.close(self._read)
            self._read = None


def _outcome(work: Callable[[], Any]) -> bytes:
    """``(True, work())`` or ``(False, its exception)``, pickled."""
    try:
        return pickle.dumps((True, work()))
    except BaseException as exc:
        try:
            return pickle.dumps((False, exc))
        except Exception:  # an exception that does not pickle: its type and text
            return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
