"""The cyclic garbage collector paused around work that makes many objects and no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cyclic_gc_paused"]


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """No collection inside (a decorator too). Reference counting still frees everything
    that is not in a cycle; the collector's passes over millions of live tuples, lists
    and models would find nothing to free and cost a large part of the time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
