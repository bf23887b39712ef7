"""A process's children and whether a process still runs, read from Linux's /proc."""

from __future__ import annotations

from pathlib import Path

__all__ = ["alive", "children"]


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name, or None when it is gone."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None


def children(parent: int) -> list[int]:
    """The processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields is not None and int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"
