"""Alembic environment: a connection handed over by kstore, or the URL of alembic.ini.

``kstore.store`` passes its own (locked) connection in ``config.attributes``; run by
hand, ``-x store=PATH`` overrides the URL's file.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context
from sqlalchemy.pool import NullPool

from kstore.store.schema import metadata

config = context.config


def _url() -> str:
    store = context.get_x_argument(as_dictionary=True).get("store")
    if store:
        return f"duckdb:///{store}"
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None, "sqlalchemy.url is not set"
    return url


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def _run(connection: sa.Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
        return
    # NullPool: the DuckDB file lock must go with the connection.
    engine = sa.create_engine(_url(), poolclass=NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
