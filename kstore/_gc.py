"""The cyclic garbage collector paused around work that makes many objects and no cycles."""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import ContextDecorator, contextmanager

__all__ = ["cyclic_gc_paused", "uncollected_to_exit"]


class _Paused(ContextDecorator):
    """``cyclic_gc_paused``'s context: a class, not a generator (``contextmanager``), as
    it is entered on every assignor call (a generator's context cost 1 us of a small
    sticky decision's 60)."""

    def __init__(self) -> None:
        self._was_enabled = False

    def _recreate_cm(self) -> _Paused:
        return _Paused()  # each call of a decorated function pauses afresh

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was_enabled:
            if not gc.get_freeze_count():  # nobody else's frozen objects to let go
                gc.freeze()  # every tracked object to the permanent generation, in O(1),
                gc.unfreeze()  # and from there to the oldest one
            gc.enable()


def cyclic_gc_paused() -> _Paused:
    """No collection inside (a decorator too). Reference counting still frees everything
    that is not in a cycle; the collector's passes over millions of live tuples, lists
    and models would find nothing to free and cost a large part of the time.

    What the pause made and kept is moved to the oldest generation as it ends: left in
    the youngest, it would all be traversed by the first collection after (0.7 s after
    a 10,000-step simulation); the oldest is collected as the collector's thresholds say.
    """
    return _Paused()


_frozen_at_exit: list[bool] = []
"""Whether ``uncollected_to_exit`` registered the freeze at the exit (once a process)."""


@contextmanager
def uncollected_to_exit() -> Iterator[None]:
    """For a command whose process ends with it (``kstore append``): no collection inside
    (``cyclic_gc_paused``, its imports included), and none at the interpreter's exit.

    As it ends, the interpreter collects several times over every object still alive
    (the modules: numpy, pydantic, DuckDB, ...), 90 ms of a 13,000-event append's 1.3 s
    of CPU, though it is about to free them all. Frozen at the exit (``atexit`` runs
    before those collections), they are not traversed; reference counting still frees
    them as the modules are cleared, and the command's own work is stored and closed by
    then. A process that goes on (a test calling ``main``) is only frozen as it exits.
    """
    if not _frozen_at_exit:
        atexit.register(gc.freeze)
        _frozen_at_exit.append(True)
    with cyclic_gc_paused():
        yield
