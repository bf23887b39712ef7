"""The log's ``data`` (each event's JSON) compressed with zstd, whatever DuckDB would pick.

Every append ends with a checkpoint, which writes the last row group of
``kstore_events`` again, its JSON included. DuckDB chose DICT_FSST for the JSON of
small groups' events: a 10,000-step simulation's 30,306 events (90 MB of JSON) took 2.6
CPU s of checkpoints over its eight appends, and 49 MB of file; with zstd, 0.2-0.35 s and
5 MB. Only the column's storage changes: the rows are the same.

Revision ID: 0009_log_data_zstd
Revises: 0008_member_spans
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0009_log_data_zstd"
down_revision = "0008_member_spans"
branch_labels = None
depends_on = None


def _move(data: str) -> None:
    """``kstore_events`` again with ``data`` stored as ``data`` says, its rows kept in log
    order (DuckDB changes no column's compression in place)."""
    op.execute(
        "CREATE TABLE kstore_events_moved ("
        "position BIGINT NOT NULL, event_id VARCHAR NOT NULL, cluster VARCHAR NOT NULL, "
        "group_id VARCHAR NOT NULL, timeline VARCHAR NOT NULL, version INTEGER NOT NULL, "
        'type VARCHAR NOT NULL, "at" TIMESTAMP NOT NULL, at_offset_s INTEGER NOT NULL, '
        f'schema_version SMALLINT NOT NULL, "data" VARCHAR NOT NULL{data})'
    )
    op.execute("INSERT INTO kstore_events_moved SELECT * FROM kstore_events ORDER BY position")
    op.drop_table("kstore_events")
    op.rename_table("kstore_events_moved", "kstore_events")


def upgrade() -> None:
    _move(" USING COMPRESSION zstd")


def downgrade() -> None:
    _move("")
