"""The names a simulation or a replay may give the timeline it writes."""

from __future__ import annotations

from kstore._errors import UsageError

__all__ = ["RECORDED", "new_timeline"]

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
    if replay and name == RECORDED:
        raise UsageError(
            f"--timeline {RECORDED}: a replay's decisions would be read as what happened; "
            "give the replay another name"
        )
    return name
