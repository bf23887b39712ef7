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
    and models would find nothing to free and cost a large part of the time.

    What the pause made and kept is moved to the oldest generation as it ends: left in
    the youngest, it would all be traversed by the first collection after (0.7 s after
    a 10,000-step simulation); the oldest is collected as the collector's thresholds say.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if not gc.get_freeze_count():  # nobody else's frozen objects to let go
                gc.freeze()  # every tracked object to the permanent generation, in O(1),
                gc.unfreeze()  # and from there to the oldest one
            gc.enable()
