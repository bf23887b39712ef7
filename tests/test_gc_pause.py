"""The collector's pause: what it made is not left to the next young collection."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from kstore._gc import cyclic_gc_paused


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of each collection the collector starts."""
    started: list[int] = []

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(seen)
    yield started
    gc.callbacks.remove(seen)


def test_a_pause_ends_without_a_collection_of_what_it_kept(collections: list[int]) -> None:
    with cyclic_gc_paused():
        kept = [[i] for i in range(50_000)]
        assert not collections
    # Left in the youngest generation, everything the pause kept was traversed by a
    # collection right as it ended (0.7 s after a 10,000-step simulation).
    assert collections == []
    assert gc.isenabled() and len(kept) == 50_000
    assert len(gc.get_objects(generation=0)) < 5_000


def test_a_nested_pause_ends_with_the_outer_one() -> None:
    with cyclic_gc_paused():
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_paused_function_called_from_itself_ends_with_the_collector_on() -> None:
    """The decorator form pauses afresh for each call (``_recreate_cm``): an inner
    call's end does not end the outer call's pause, nor leave the collector off."""
    seen: list[bool] = []

    @cyclic_gc_paused()
    def walk(depth: int) -> None:
        if depth:
            walk(depth - 1)
        seen.append(gc.isenabled())

    walk(2)
    assert seen == [False, False, False]
    assert gc.isenabled()
