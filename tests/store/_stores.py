"""Stores for tests that make several in one test (hypothesis examples, pairs)."""

from __future__ import annotations

from pathlib import Path

from kstore.store.log import Store

__all__ = ["fresh_store"]


def fresh_store(path: Path) -> Store:
    """An initialised store at ``path``, whatever an earlier example left there removed."""
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    store = Store(path)
    store.init()
    return store
