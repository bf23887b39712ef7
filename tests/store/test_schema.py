"""Schema revisions: upgrade, downgrade, and what commands say about other revisions."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from kstore.model import StreamId
from kstore.store.log import MIGRATIONS, SchemaError, Store
from kstore.store.schema import HEAD, REVISIONS
from tests.store.test_store import completed, projection_rows

G = StreamId("default", "g", "recorded")


def tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as connection:
        return {r[0] for r in connection.sql("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_revisions_match_the_migrations() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    script = ScriptDirectory.from_config(config)
    history = [s.revision for s in reversed(list(script.walk_revisions()))]
    assert tuple(history) == REVISIONS and script.get_current_head() == HEAD


def test_upgrade_and_downgrade_keep_the_log(store: Store) -> None:
    events = [completed(1, {"a": [("t", 0)]}), completed(2, {"b": [("t", 0)]})]
    store.append(events)
    full = projection_rows(store)
    store.migrate(REVISIONS[0])
    assert store.revision() == REVISIONS[0]
    assert "kstore_assignments" not in tables(store.path)
    with pytest.raises(SchemaError, match=r"older than this kstore's .*kstore --store .* init"):
        list(store.events())
    with pytest.raises(SchemaError, match="older"):
        store.append([completed(3, {})])
    assert store.init() == (REVISIONS[0], HEAD)
    assert projection_rows(store) == full  # rebuilt after the upgrade
    assert [s.event for s in store.events()] == events
    store.migrate("base")
    assert store.revision() is None and not tables(store.path) - {"alembic_version"}
    store.init()
    assert list(store.events()) == []


def test_newer_store_is_refused(store: Store) -> None:
    with duckdb.connect(str(store.path)) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999_future'")
    with pytest.raises(SchemaError, match="newer than this kstore knows"):
        store.streams()
    with pytest.raises(SchemaError, match="newer"):
        store.init()


def test_missing_or_foreign_store(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="no store here"):
        Store(tmp_path / "none.duckdb").streams()
    assert not (tmp_path / "none.duckdb").exists()
    foreign = tmp_path / "foreign.duckdb"
    with duckdb.connect(str(foreign)) as connection:
        connection.execute("CREATE TABLE x (a INT)")
    with pytest.raises(SchemaError, match="not a kstore store"):
        Store(foreign).streams()
