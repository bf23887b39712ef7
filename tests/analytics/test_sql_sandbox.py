"""``kstore sql`` is read-only and reads only the files the user names (``--read PATH``).

Every escape an attacker would try: writing files (``COPY ... TO`` over the store
itself, ``EXPORT DATABASE``), attaching other databases, reading files nobody named
(``read_text``, ``read_csv``, ``glob``, ``read_blob``), changing the sandbox (``SET``,
``RESET``, ``PRAGMA``), extensions (``INSTALL``, ``LOAD``). Each is refused with one
line, exit 2, and the store is unharmed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kstore._errors import UsageError
from kstore.model import MemberJoined, TopicChanged
from kstore.model.events import Event
from kstore.store.log import Store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _kstore(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def filled(store: Store) -> Store:
    datas = [TopicChanged(topic="t", partitions=3), MemberJoined(member_id="a", topics=["t"])]
    store.append(
        [Event(group="g", at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]
    )
    return store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_copy_over_the_store_is_refused_and_the_store_unharmed(filled: Store) -> None:
    before = _digest(filled.path)
    out = _kstore(filled.path, "sql", f"COPY (SELECT 'x') TO '{filled.path}' (FORMAT csv)")
    assert out.returncode == 2, out
    assert out.stderr.startswith("kstore: error: SQL:") and out.stderr.count("\n") == 1
    assert out.stdout == ""
    assert _digest(filled.path) == before
    assert [s.events for s in filled.streams()] == [2]


@pytest.mark.parametrize(
    "sql",
    [
        "COPY (SELECT 1) TO '{tmp}/out.csv' (FORMAT csv)",
        "COPY kstore_events TO '{tmp}/out.parquet' (FORMAT parquet)",
        "EXPORT DATABASE '{tmp}/exported'",
        "ATTACH '{tmp}/other.duckdb' AS other",
        "ATTACH ':memory:' AS m",
        "SELECT * FROM read_text('{secret}')",
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM read_blob('{secret}')",
        "SELECT * FROM glob('{tmp}/*')",
        "SELECT * FROM read_text('{store}')",
        "SET enable_external_access = true",
        "RESET enable_external_access",
        "SET allowed_directories = ['/']",
        "SET lock_configuration = false",
        "PRAGMA enable_profiling",
        "INSTALL httpfs",
        "LOAD httpfs",
        "CREATE TABLE x AS SELECT 1",
        "CREATE TEMP TABLE x AS SELECT 1",
        "DELETE FROM kstore_events",
        "CHECKPOINT",
        "SELECT 1; COPY (SELECT 1) TO '{tmp}/two.csv'",
    ],
)
def test_every_escape_is_refused(filled: Store, tmp_path: Path, sql: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("a\nsecret\n")
    text = sql.format(tmp=tmp_path, secret=secret, store=filled.path)
    before = sorted(p.name for p in tmp_path.iterdir())
    digest = _digest(filled.path)
    with pytest.raises(UsageError) as refused:
        filled.query(text)
    message = str(refused.value)
    assert message.startswith("SQL:") and "\n" not in message
    assert "secret" not in message.replace(str(secret), "")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert _digest(filled.path) == digest


def test_duckdbs_temporary_folder_is_the_querys_own_and_empty(
    filled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DuckDB lets a query read its temporary folder whatever the sandbox says; that was
    # ./.tmp of the working directory, where a file put there was read (user trial).
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "s.txt").write_text("not yours")
    for path in (".tmp/s.txt", str(tmp_path / ".tmp" / "s.txt")):
        with pytest.raises(UsageError, match="--read"):
            filled.query(f"SELECT content FROM read_text('{path}')")
    allowed = filled.query("SELECT current_setting('allowed_directories')").rows[0][0]
    assert len(allowed) == 1 and Path(allowed[0]).name.startswith("kstore-sql-")
    assert not Path(allowed[0]).exists()  # removed with the query


def test_reads_only_what_the_user_names(filled: Store, tmp_path: Path) -> None:
    folder = tmp_path / "metrics"
    folder.mkdir()
    pq.write_table(pa.table({"n": [1, 2, 3]}), folder / "part-0.parquet")
    single = tmp_path / "one.csv"
    single.write_text("n\n7\n")
    sql = f"SELECT sum(n) FROM read_parquet('{folder}/*.parquet')"
    with pytest.raises(UsageError, match="--read"):
        filled.query(sql)
    assert filled.query(sql, read_paths=[folder]).rows == [(6,)]
    assert filled.query(f"SELECT n FROM read_csv('{single}')", read_paths=[single]).rows == [(7,)]
    # a file beside the one named, and a way around the folder named, stay closed
    (tmp_path / "other.csv").write_text("n\n9\n")
    for path in (tmp_path / "other.csv", folder / ".." / "other.csv"):
        with pytest.raises(UsageError):
            filled.query(f"SELECT * FROM read_csv('{path}')", read_paths=[folder, single])
    with pytest.raises(UsageError, match="nowhere"):
        filled.query("SELECT 1", read_paths=[tmp_path / "nowhere"])


def test_cli_read_option(filled: Store, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    pq.write_table(pa.table({"n": [4, 5]}), folder / "part-0.parquet")
    sql = f"SELECT sum(n) AS s FROM read_parquet('{folder}/*.parquet')"
    refused = _kstore(filled.path, "sql", sql)
    assert refused.returncode == 2 and "--read" in refused.stderr
    out = _kstore(filled.path, "sql", "--read", str(folder), sql, "--format", "csv")
    assert out.returncode == 0, out.stderr
    assert list(csv.reader(io.StringIO(out.stdout))) == [["s"], ["9"]]


def test_a_link_out_of_the_folder_named_is_said_to_be_one(filled: Store, tmp_path: Path) -> None:
    # the hint said "name the files ... with --read" to a user who had named the folder
    folder, outside = tmp_path / "named", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "secret.csv").write_text("n\n1\n")
    (folder / "link.csv").symlink_to(outside / "secret.csv")
    sql = f"SELECT * FROM read_csv('{folder / 'link.csv'}')"
    refused = _kstore(filled.path, "sql", "--read", str(folder), sql)
    assert (refused.returncode, refused.stdout, refused.stderr.count("\n")) == (2, "", 1)
    assert refused.stderr.endswith(
        f"({folder / 'link.csv'} resolves to {outside / 'secret.csv'}, outside the folder "
        f"named with --read; name {outside / 'secret.csv'} or its folder with --read PATH "
        "to read it)\n"
    )
    # not named at all: the hint it always gave
    refused = _kstore(filled.path, "sql", sql)
    assert refused.stderr.endswith("(name the files a query may read with --read PATH)\n")


def test_sql_still_answers_and_binds(filled: Store) -> None:
    found = filled.query(
        "SELECT type, kstore_partition('k', 6) AS p FROM kstore_events WHERE group_id = ? "
        "ORDER BY position",
        ["g"],
    )
    assert found.columns == ["type", "p"]
    assert [r[0] for r in found.rows] == ["TopicChanged", "MemberJoined"]
    named = filled.query("SELECT $x + 1 AS y", {"x": 41})
    assert named.rows == [(42,)]
    assert filled.query("EXPLAIN SELECT 1").columns


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("INSTALL httpfs", "INSTALL"),  # DuckDB's type of it is LOAD: it said "not LOAD"
        ("-- why\n/* not */ install httpfs", "INSTALL"),
        ("COPY (SELECT 1) TO 'x.csv'", "COPY"),
        ("CHECKPOINT", "CHECKPOINT"),
    ],
)
def test_a_refusal_names_the_statement_as_written(filled: Store, sql: str, said: str) -> None:
    with pytest.raises(UsageError) as refused:
        filled.query(sql)
    assert str(refused.value).endswith(f"read-only to SQL), not {said}")


def test_json_in_the_store_is_printed_as_json_and_verbatim_in_csv_and_tables(
    filled: Store,
) -> None:
    """``kstore sql --format json`` gave the events' ``data`` as a string of JSON (a user
    trial): it is JSON in json and jsonl, as any JSON a query makes; csv and tables keep
    the stored text verbatim; a string that merely looks like JSON stays a string."""
    sql = (
        "SELECT type, data, json_object('n', 1) AS made, '[1]' AS text "
        "FROM kstore_events ORDER BY position"
    )
    rows = json.loads(_kstore(filled.path, "sql", sql, "--format", "json").stdout)
    assert rows[0] == {"type": "TopicChanged", "data": {"topic": "t", "partitions": 3},
                       "made": {"n": 1}, "text": "[1]"}  # fmt: skip
    assert rows[1]["data"]["member_id"] == "a"
    lines = _kstore(filled.path, "sql", sql, "--format", "jsonl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == rows
    printed = _kstore(filled.path, "sql", sql, "--format", "csv").stdout
    table = list(csv.reader(io.StringIO(printed)))
    stored = filled.query("SELECT data FROM kstore_events ORDER BY position").rows
    assert [row[1] for row in table[1:]] == [text for (text,) in stored]
    # SHOW TABLES names each table once (the JSON reading is no second table)
    shown = _kstore(filled.path, "sql", "SHOW TABLES", "--format", "csv").stdout.split()
    assert shown.count("kstore_events") == 1
