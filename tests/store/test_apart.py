"""A batch of several streams projected on two cores (``log.APART_EVENTS``): some streams'
projection rows made in a forked copy of the process while this one makes the others'
and the log's. The store is the same as one process makes, folded by the store or
handed by producers; a copy that fails or dies stores nothing."""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kstore._apart import FORKS
from kstore.model import Event
from kstore.model.events import StreamId
from kstore.store import log
from kstore.store.log import Store
from kstore.store.testing import G, H, history
from kstore.store.writer import Writer
from tests.store._stores import fresh_store
from tests.store.events_gen import streams

pytestmark = pytest.mark.skipif(not FORKS, reason="projects apart only where it forks")


def _contents(store: Store) -> dict[str, list[str]]:
    """Every ``kstore_*`` table's and view's rows, sorted."""
    with duckdb.connect(str(store.path), read_only=True) as connection:
        names = connection.sql(
            "SELECT table_name FROM duckdb_tables() UNION "
            "SELECT view_name FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
        return {
            name: sorted(map(repr, connection.sql(f"SELECT * FROM {name}").fetchall()))
            for (name,) in names
            if name.startswith("kstore_") and name != "kstore_checkpoints"
        }


def _interleaved(groups: list[list[Event]]) -> list[Event]:
    mixed = itertools.chain.from_iterable(itertools.zip_longest(*groups))
    return [event for event in mixed if event is not None]


def _batches(events: list[Event], cuts: list[int]) -> list[list[Event]]:
    bounds = sorted({0, len(events), *(c for c in cuts if c < len(events))})
    return [events[lo:hi] for lo, hi in itertools.pairwise(bounds)]


@contextmanager
def _apart(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Within the block every batch of two streams or more is projected apart; the
    copies made are counted (by the process that forks them)."""
    made: list[object] = []
    forked = log.Apart

    def counted(*args: Any, **kwargs: Any) -> log.Apart:
        made.append(args)
        return forked(*args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(log, "APART_EVENTS", 1)
        patched.setattr(log, "_core_idle", lambda: True)  # whatever else runs
        patched.setattr(log, "Apart", counted)
        yield made


_SETTINGS = settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_GROUPS = st.tuples(*(streams(max_size=30, group=f"g{i}") for i in range(4)))
_CUTS = st.lists(st.integers(1, 120), max_size=3)


def _append_folded(writer: Writer, batches: list[list[Event]]) -> None:
    """The batches through ``writer``, each event with its producer's fold handed over."""
    folds = {e.stream: writer.fold() for batch in batches for e in batch}
    for batch in batches:
        for event in batch:
            folds[event.stream].apply(event)
            writer.add([event], fold=folds[event.stream])
        writer.flush()


@_SETTINGS
@given(groups=_GROUPS, cuts=_CUTS)
@pytest.mark.parametrize("handed", [False, True], ids=["store-folds", "producer-folds"])
def test_projected_apart_the_store_is_the_same(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    handed: bool,
    groups: tuple[list[Event], ...],
    cuts: list[int],
) -> None:
    """Every batch of two streams or more projected apart, the store as one process makes
    it: where the store folds the events, and where their producer hands its folds over."""
    folder = tmp_path_factory.mktemp("apart")
    batches = _batches(_interleaved(list(groups)), cuts)
    one, two = fresh_store(folder / "one.duckdb"), fresh_store(folder / "two.duckdb")
    for batch in batches:
        one.append(batch)
    with _apart(monkeypatch) as made:
        if handed:
            _append_folded(Writer(two, batch_events=None), batches)
        else:
            for batch in batches:
                two.append(batch)
    assert len(made) == sum(len({e.stream for e in batch}) > 1 for batch in batches)
    assert _contents(two) == _contents(one)
    if not handed:
        for stream in {e.stream for batch in batches for e in batch}:
            # the heads the copy made, kept by the store, and read again
            assert two.state(stream) == Store(two.path).state(stream) == one.state(stream)


def _fails() -> None:
    raise RuntimeError("the copy failed")


def _dies() -> None:
    os._exit(3)


@pytest.mark.parametrize(
    ("work", "says"), [(_fails, "the copy failed"), (_dies, "ended .* before it was done")]
)
def test_a_copy_that_fails_or_dies_stores_nothing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, work: Any, says: str
) -> None:
    store = fresh_store(tmp_path / "k.duckdb")
    store.append(history(G, 2))
    before = _contents(store)
    batch = _interleaved([history(G, 4)[len(history(G, 2)) :], history(H, 3)])
    with _apart(monkeypatch):
        monkeypatch.setattr(log, "_projected_apart", lambda *_: work())
        with pytest.raises(RuntimeError, match=says):
            store.append(batch)
    assert _contents(store) == before
    monkeypatch.undo()
    assert store.append(batch).stored == len(batch)  # and it goes in afterwards
    fresh = fresh_store(tmp_path / "fresh.duckdb")
    fresh.append(history(G, 2))
    fresh.append(batch)
    assert _contents(store) == _contents(fresh)


def test_big_enough_batches_of_several_streams_with_a_core_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(log, "APART_EVENTS", 4)
    monkeypatch.setattr(log, "_core_idle", lambda: True)
    g, h, k = (StreamId("c", name, "recorded") for name in "ghk")
    assert log._apart_streams([g, h, g], [g, h]) == set()  # too few events
    assert log._apart_streams([g, g, g, g], [g]) == set()  # one stream
    batch = [g, h, k, g, h, k, g, h]
    apart = log._apart_streams(batch, [g, h, k])
    assert apart == {k, h}  # the last streams, about APART_SHARE of the events; never all
    monkeypatch.setattr(log, "_core_idle", lambda: False)
    assert log._apart_streams(batch, [g, h, k]) == set()


def test_a_core_is_idle_by_the_runnable_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = len(os.sched_getaffinity(0))
    for running, idle in ((1, cores > 1), (cores, False), (cores + 3, False)):
        text = f"0.50 0.40 0.30 {running}/200 4242\n".encode()
        monkeypatch.setattr("builtins.open", lambda *_a, _t=text, **_k: io.BytesIO(_t))
        assert log._core_idle() is idle
