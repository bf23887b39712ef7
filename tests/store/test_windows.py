"""Write windows and the log's own reads share one DuckDB instance per process
(``log._Kept``): each lets the file go as it closes, a failed one leaves the next
working, and two at once in one process (threads) each get an instance; a forked copy
of the process makes its own, and user SQL (sandboxed) runs in one of its own."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import duckdb
import pytest

from kstore.model import EventError, StreamId
from kstore.store.log import ConcurrencyError, Store, _Kept
from tests.store.test_store import completed

G = StreamId("default", "g", "recorded")


def _count(path: Path) -> int:
    # Read-write, in this process: DuckDB refuses a file still attached to another of
    # the process's instances ("Unique file handle conflict").
    with duckdb.connect(str(path)) as connection:
        found = connection.sql("SELECT count(*) FROM kstore_events").fetchall()
    return int(found[0][0])


def test_a_failed_append_leaves_the_next_working(store: Store) -> None:
    store.append([completed(1, {"a": [("t", 0)]})])
    with pytest.raises(ConcurrencyError):
        store.append([completed(2, {"a": [("t", 0)]})], expected_version=5)
    taken = completed(2, {"a": [("t", 1)]}, event_id="taken")
    store.append([taken])
    with pytest.raises(EventError):  # another fact under a stored id
        store.append([completed(3, {"b": [("t", 1)]}, event_id="taken")])
    assert _count(store.path) == 2
    store.append([completed(3, {"b": [("t", 1)]})])
    assert [s.version for s in store.events()] == [1, 2, 3]
    assert _count(store.path) == 3


def test_appends_from_two_threads_at_once(tmp_path: Path) -> None:
    stores = [Store(tmp_path / f"{name}.duckdb") for name in "ab"]
    errors: list[BaseException] = []

    def append(store: Store) -> None:
        try:
            for generation in range(1, 31):
                store.append([completed(generation, {"m": [("t", generation % 3)]})])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    for store in stores:
        store.init()
    threads = [threading.Thread(target=append, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for store in stores:
        assert [s.version for s in store.events()] == list(range(1, 31))
        assert _count(store.path) == 30


def test_a_forked_copy_appends_with_an_instance_of_its_own(store: Store) -> None:
    store.append([completed(1, {"a": [("t", 0)]})])
    pid = os.fork()
    if pid == 0:  # the copy: never returns from here
        code = 1
        try:
            store.append([completed(2, {"a": [("t", 1)]})])
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    store.append([completed(3, {"b": [("t", 1)]})])
    assert [s.version for s in store.events()] == [1, 2, 3]
    assert _count(store.path) == 3


def test_a_shared_instance_that_cannot_open_a_cursor_is_given_up(store: Store) -> None:
    store.append([completed(1, {"a": [("t", 0)]})])
    held = _Kept._held
    assert held is not None  # kept from the append
    held.close()  # as if DuckDB had failed under it: cursor() now raises
    with pytest.raises(duckdb.Error):
        store.append([completed(2, {"a": [("t", 1)]})])
    assert not _Kept._busy and _Kept._held is None
    store.append([completed(2, {"a": [("t", 1)]})])
    assert _Kept._held is not None  # the next window shares again
    assert [s.version for s in store.events()] == [1, 2]


def _forget_kept() -> None:
    """The kept instance closed and forgotten, as in a process that made none yet."""
    if _Kept._held is not None:
        _Kept._held.close()
    _Kept._held = None


def test_reads_of_the_log_make_and_share_the_kept_instance(store: Store) -> None:
    store.append([completed(1, {"a": [("t", 0)]})])
    _forget_kept()
    assert [s.version for s in store.events()] == [1]
    held = _Kept._held
    assert held is not None and not _Kept._busy  # made by the read, given back
    assert store.version(G) == 1
    assert store.streams()[0].stream == G
    assert _Kept._held is held
    store.append([completed(2, {"a": [("t", 1)]})])  # the file was let go: it opens again
    assert _Kept._held is held
    assert _count(store.path) == 2


def test_sql_runs_in_an_instance_of_its_own(store: Store) -> None:
    store.append([completed(1, {"a": [("t", 0)]})])
    held = _Kept._held
    assert held is not None
    # The sandbox turns external access off and locks the settings, for good, in the
    # instance it runs in.
    assert store.query("SELECT count(*) FROM kstore_events").rows == [(1,)]
    assert _Kept._held is held
    settings = held.execute(
        "SELECT current_setting('enable_external_access'), current_setting('lock_configuration')"
    )
    assert settings.fetchall() == [(True, False)]
    store.append([completed(2, {"a": [("t", 1)]})])
    assert [s.version for s in store.events()] == [1, 2]
