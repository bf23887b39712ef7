"""The names a simulation or a replay may give the timeline it writes."""

from __future__ import annotations

from kstore._errors import UsageError
from kstore._limits import MAX_TEXT

__all__ = ["RECORDED", "new_timeline", "replay_name"]

RECORDED = "recorded"
"""The timeline of what happened, the default source of ``replay`` and ``compare``."""


def new_timeline(name: str | None, default: str, *, replay: bool = False) -> str:
    """``--timeline`` of a producer that makes a history (``default`` when not given).

    An empty name, or one with a control character (a line break in every table), is
    refused. A replay may not write ``recorded``: its decisions would be read as what
    happened. A simulation may, to stand in for a recorded group (as the tests do).
    """
    if name is None:
        return default
    if not name.strip():
        raise UsageError("--timeline: an empty name")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise UsageError(f"--timeline {name!r}: a control character in the name")
    _fits(name, "--timeline")
    if replay and name == RECORDED:
        raise UsageError(
            f"--timeline {RECORDED}: a replay's decisions would be read as what happened; "
            "give the replay another name"
        )
    return name


def replay_name(source: str, strategy: str, *, default_source: bool) -> str:
    """The timeline of ``source`` replayed with ``strategy`` (docs/analytics.md, "Replay
    timelines"): ``replay/<strategy>`` for the group's default source,
    ``replay/<source>/<strategy>`` for any other, so two sources' replays never meet."""
    return _fits(
        f"replay/{strategy}" if default_source else f"replay/{source}/{strategy}",
        f"the replay of {source[:40]}{'...' if len(source) > 40 else ''}",
    )


def _fits(name: str, what: str) -> str:
    """``name`` if a timeline may have it (``MAX_TEXT`` characters, as ``append`` takes)."""
    if len(name) > MAX_TEXT:
        raise UsageError(
            f"{what}: a timeline's name has at most {MAX_TEXT:,} characters, "
            f"this one would have {len(name):,}"
        )
    return name
