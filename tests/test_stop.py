"""Ctrl-C as a request to stop (kstore/commands/_stop.py)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from kstore.commands._stop import stop_requested


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
