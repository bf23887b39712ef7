"""Ctrl-C (and a supervisor's SIGTERM) as a request to stop, not an exception.

A command that stores as it goes asks ``stop.is_set()`` between units of work, stores
what it has and says how to resume. Raised as ``KeyboardInterrupt`` instead, the signal
would land wherever the process is, often inside DuckDB, which ends the query as
``RuntimeError: Query interrupted``.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kstore._errors import Interrupted

__all__ = ["interrupted_says", "stop_requested"]


@contextmanager
def stop_requested(
    *signums: signal.Signals, heard: Callable[[signal.Signals], None] | None = None
) -> Iterator[threading.Event]:
    """An event these signals (SIGINT when none is given) set while the block runs;
    ``heard(signal)`` is called at each. The handlers before are put back after. A signal
    ignored when the block starts stays ignored: a shell starts a background job with
    SIGINT ignored so that a Ctrl-C meant for the foreground does not reach it."""
    stop = threading.Event()

    def request(signum: int, _frame: object) -> None:
        if heard is not None:
            heard(signal.Signals(signum))
        stop.set()

    previous = {
        sig: signal.signal(sig, request)
        for sig in signums or (signal.SIGINT,)
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def interrupted_says(message: str) -> Iterator[None]:
    """Ctrl-C in the block ends the command as ``Interrupted(message)`` (exit 130): what an
    interruption there leaves, where a bare "interrupted" would leave the user guessing.
    Also when a library turned the ``KeyboardInterrupt`` into an error of its own (DuckDB
    ends its query with ``RuntimeError: Query interrupted``). A SIGINT ignored when the
    block starts stays ignored, as in ``stop_requested``."""
    heard: list[bool] = []

    def interrupt(_signum: int, _frame: object) -> None:
        heard.append(True)
        raise KeyboardInterrupt

    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    except BaseException as exc:
        if heard or isinstance(exc, KeyboardInterrupt):
            raise Interrupted(message) from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
