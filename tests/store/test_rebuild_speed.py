"""``kstore rebuild``'s way of working that its speed rests on (issue 13: at least as
fast as the appends that wrote the log)."""

from __future__ import annotations

import gc

from kstore.store.log import Store
from tests.store.test_store import completed


def test_the_rebuild_runs_without_the_cyclic_collector_and_gives_it_back(store: Store) -> None:
    # The collector's passes over the events, heads and decisions a rebuild holds were
    # some 40% of its CPU; reference counting frees what it makes (no cycles).
    store.append([completed(g, {"a": [("t", g % 3)], "b": [("t", 3)]}) for g in range(1, 30)])
    enabled: list[bool] = []
    assert gc.isenabled()
    store.rebuild(lambda read, total: enabled.append(gc.isenabled()))
    assert enabled and not any(enabled)
    assert gc.isenabled()
