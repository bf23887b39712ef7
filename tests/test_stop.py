"""Ctrl-C as a request to stop (kstore/commands/_stop.py)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import duckdb
import pytest

from kstore._errors import Interrupted
from kstore.commands._stop import interrupted_says, stop_requested


@pytest.fixture
def sigint_restored() -> Iterator[None]:
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_signal_sets_the_event_and_the_handler_before_is_put_back(
    sigint_restored: None,
) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    heard: list[signal.Signals] = []
    with stop_requested(heard=heard.append) as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.wait(5)
    assert heard == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_ignored_before_stays_ignored(sigint_restored: None) -> None:
    """A background job of a shell starts with SIGINT ignored: a Ctrl-C meant for the
    foreground must not stop it halfway through a run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with stop_requested() as stop:
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)
        assert not stop.wait(0.2)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_ctrl_c_duckdb_turned_into_its_own_error_says_what_it_left(
    sigint_restored: None,
) -> None:
    """DuckDB ends a query a Ctrl-C reaches with ``RuntimeError: Query interrupted``; in
    the block it is the interruption, with the block's words."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    conn = duckdb.connect(config={"threads": 1})  # interrupted at once (more threads: not always)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(Interrupted, match=r"^nothing stored$"), interrupted_says("nothing stored"):
        conn.execute("SELECT count(*) FROM range(1000000000000) a")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(RuntimeError, match="other"), interrupted_says("nothing stored"):
        raise RuntimeError("other")
