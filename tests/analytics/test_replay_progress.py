"""``kstore replay``'s bar in a terminal: its last frame and the closing line tell the
same count of source events, at the end and when Ctrl-C stops the run (a user trial
read the bar's 3,255 against the closing line's 3,598: the line counted the replay's
events, follow-up rounds included, not the source's)."""

from __future__ import annotations

import io
import os
import re
import signal
from collections.abc import Callable
from typing import Any

import pytest

from kstore._errors import Interrupted
from kstore.commands import analytics
from kstore.store.log import Store
from tests.report.test_pages import _big

FRAME = re.compile(r"(\d+)/(\d+)(?:\x1b\[[0-9;]*m)* source events")


class Terminal(io.StringIO):
    """Standard error as a terminal: the bar draws its frames into it."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def source(store: Store) -> int:
    """A history mostly eager (a cooperative replay of it makes follow-up rounds of its
    own, so more replay events than source events); the number of its events."""
    _big(store, "g", rebalances=120, partitions=24, members=12, strategy="range")
    return next(info.events for info in store.streams() if info.stream.timeline == "recorded")


def _replay(
    store: Store, monkeypatch: pytest.MonkeyPatch, terminal: Terminal, stop_at: int | None = None
) -> None:
    """``kstore replay`` with cooperative-sticky, its standard error ``terminal`` (100
    columns), Ctrl-C after source event ``stop_at``."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    # here, not in a fixture: pytest's capture puts its own back before the test runs
    monkeypatch.setattr("sys.stderr", terminal)
    real = analytics.replay

    def interrupting(*args: Any, progress: Callable[[int, int], None], **kwargs: Any) -> Any:
        def told(done: int, total: int) -> None:
            progress(done, total)
            if done == stop_at:
                os.kill(os.getpid(), signal.SIGINT)

        return real(*args, progress=told, **kwargs)

    monkeypatch.setattr(analytics, "replay", interrupting)
    analytics.replay_group(
        store.path,
        group="g",
        cluster=None,
        source=None,
        strategy="cooperative-sticky",
        timeline=None,
    )


def _last_frame(terminal: Terminal) -> tuple[int, int]:
    frames = FRAME.findall(terminal.getvalue())
    assert frames, terminal.getvalue()
    done, total = frames[-1]
    return int(done), int(total)


def _number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found is not None, text
    return int(found.group(1).replace(",", ""))


def test_the_last_frame_and_the_closing_line_count_the_same_source_events(
    store: Store,
    source: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    terminal = Terminal()
    _replay(store, monkeypatch, terminal)
    assert _last_frame(terminal) == (source, source)
    closing = capsys.readouterr().out
    assert _number(r"([\d,]+) source events", closing) == source, closing
    # the replay's own events, more (follow-up rounds), said to be the replay's
    assert _number(r"([\d,]+) replay events", closing) > source


def test_ctrl_c_the_last_frame_shows_where_the_run_stopped(
    store: Store, source: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = Terminal()
    with pytest.raises(Interrupted) as stopped:
        _replay(store, monkeypatch, terminal, stop_at=100)
    message = str(stopped.value)
    assert _number(r"after ([\d,]+) of", message) == 100
    assert _number(r"of ([\d,]+) source events", message) == source
    assert _last_frame(terminal) == (100, source)
