"""The analytics commands through the CLI: formats, bound parameters, errors, report."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kstore.analytics import queries
from kstore.model import AssignmentCompleted, Event, MemberJoined, RebalanceStarted, TopicChanged
from kstore.store.log import Store
from tests.report.test_pages import chromium

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
ODD_GROUP = "o'rders\"; DROP TABLE kstore_events; --"


def _kstore(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def filled(store: Store) -> Path:
    datas = [
        TopicChanged(topic="t", partitions=6),
        MemberJoined(member_id="a", topics=["t"]),
        MemberJoined(member_id="b", topics=["t"]),
        RebalanceStarted(generation=1, reason="join"),
        AssignmentCompleted(
            generation=1,
            strategy="range",
            assignment={"a": [("t", p) for p in range(3)], "b": [("t", p) for p in range(3, 6)]},
        ),
    ]
    for group in ("g", ODD_GROUP):
        store.append(
            [Event(group=group, at=T0 + timedelta(seconds=i), data=d) for i, d in enumerate(datas)]
        )
    return store.path


def test_metrics_formats(filled: Path) -> None:
    out = _kstore(filled, "query", "metrics", "--group", "g", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["new"] for r in rows] == [6]
    assert rows[0]["at"] == "2026-11-21T10:00:04Z"
    out = _kstore(filled, "query", "metrics", "--group", "g", "--format", "csv")
    table = list(csv.reader(io.StringIO(out.stdout)))
    assert table[0][:4] == ["cluster", "group", "timeline", "version"]
    assert len(table) == 2


def test_parameters_are_bound(filled: Path) -> None:
    out = _kstore(filled, "query", "metrics", "--group", ODD_GROUP, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert [r["group"] for r in json.loads(out.stdout)] == [ODD_GROUP]
    out = _kstore(
        filled, "sql", "SELECT count(DISTINCT group_id) AS n FROM kstore_events", "--format", "csv"
    )
    assert out.stdout.splitlines() == ["n", "2"]


def test_each_querys_summary_is_its_first_sentence_whole() -> None:
    # The header's first line alone was shown: "whether it is complete (coverage.sql), its"
    summaries = {query.name: query.summary for query in queries()}
    assert summaries["compare"].endswith("over the source versions it is compared on")
    assert summaries["member_history"].endswith("the partitions it was given")
    for name, summary in summaries.items():
        assert not summary.endswith((",", " its", " per", " and", " or")), (name, summary)
        assert ".sql" not in summary and "docs/" not in summary, (name, summary)


def test_params_list_and_errors(filled: Path) -> None:
    listed = _kstore(filled, "query", "--list", "--format", "csv").stdout
    assert {line.split(",")[0] for line in listed.splitlines()} >= {
        "metrics",
        "windows",
        "key_owner",
    }
    out = _kstore(
        filled,
        "query",
        "key_owner",
        "--group",
        "g",
        "--param",
        "topic=t",
        "--param",
        "key=k",
        "--param",
        "at=2026-11-21T10:00:05Z",
        "--format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)
    from kstore.partitioner import partition_for_key

    assert row["partition"] == partition_for_key("k", 6)
    assert row["owner"] == ("a" if row["partition"] < 3 else "b")
    # Before the topic existed the answer was "no rows", as if nobody had owned the key.
    ask = ["query", "key_owner", "--group", "g", "--param", "topic=t", "--param", "key=k"]
    bad = _kstore(filled, *ask, "--param", "at=2026-11-21T09:59:59Z")
    assert (bad.returncode, bad.stderr) == (
        2,
        "kstore: error: --param at 2026-11-21T09:59:59Z: before topic 't' first appears "
        "here (2026-11-21T10:00:00Z): nothing owned it yet\n",
    )
    first = _kstore(filled, *ask, "--param", "at=2026-11-21T11:00:00+01:00", "--format", "csv")
    assert first.returncode == 0 and len(first.stdout.splitlines()) == 2, first.stderr
    bad = _kstore(filled, "query", "metrics", "--param", "nope=1")
    assert bad.returncode == 2 and "unknown parameter 'nope'" in bad.stderr
    bad = _kstore(filled, "query", "member_history")
    assert bad.returncode == 2 and "'member' is required" in bad.stderr
    bad = _kstore(filled, "sql", "DELETE FROM kstore_events")
    assert bad.returncode != 0 and bad.stderr.startswith("kstore: error:")
    assert (
        _kstore(
            filled, "sql", "SELECT count(*) FROM kstore_events", "--format", "csv"
        ).stdout.splitlines()[1]
        == "10"
    )


def test_report_draws_its_plots_in_chromium(filled: Path, tmp_path: Path) -> None:
    for strategy in ("sticky", "optimal"):
        assert _kstore(filled, "replay", "--group", "g", "--strategy", strategy).returncode == 0
    compared = _kstore(filled, "compare", "--group", "g", "--format", "json")
    rows = json.loads(compared.stdout)
    assert [r["timeline"] for r in rows] == ["recorded", "replay/optimal", "replay/sticky"]
    assert all(r["churn_above_optimal"] >= 0 for r in rows)
    page = tmp_path / "report.html"
    out = _kstore(filled, "report", "--group", "g", "--out", str(page))
    assert out.returncode == 0, out.stderr
    plots = int(re.search(r"\((\d+) plots", out.stdout).group(1))  # type: ignore[union-attr]
    text = page.read_text()
    assert "<script src=" not in text  # plotly.js inlined: nothing to fetch
    dom, _ = chromium(page, tmp_path / "profile", "--dump-dom")
    drawn = dom.count('<div class="plot-container plotly"')
    assert drawn == plots == 2 + 3  # rates, reasons, an ownership view per timeline
    assert dom.count('class="main-svg"') >= plots
    assert "heatmaplayer" in dom or "hm" in dom


def test_every_type_duckdb_answers_prints_in_every_format(filled: Path) -> None:
    # --format json of a BLOB column printed '[{"b": ' then "TypeError: Object of type
    # bytes is not JSON serializable", exit 1; a struct holding a time, an interval or a
    # UUID did the same; the table showed a BLOB as Python's b'\x00ab'.
    sql = (
        "SELECT from_hex('00ff5c41') AS b, {'t': TIMESTAMP '2026-01-01 00:00:00'} AS s, "
        "INTERVAL 90 MINUTE AS i, '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID AS u, "
        "TIME '10:00:01' AS tm, MAP {1: 'v'} AS m"
    )
    cast = _kstore(filled, "sql", "SELECT from_hex('00ff5c41')::VARCHAR AS b", "--format", "csv")
    as_duckdb = cast.stdout.splitlines()[1]  # DuckDB's own text of the BLOB
    assert as_duckdb == r"\x00\xFF\x5CA"
    record = {
        "b": as_duckdb,
        "s": {"t": "2026-01-01T00:00:00Z"},
        "i": "1:30:00",
        "u": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        "tm": "10:00:01",
        "m": {"1": "v"},
    }
    out = _kstore(filled, "sql", sql, "--format", "json")
    assert (out.returncode, json.loads(out.stdout)) == (0, [record]), out.stderr
    out = _kstore(filled, "sql", sql, "--format", "jsonl")
    assert (out.returncode, json.loads(out.stdout)) == (0, record), out.stderr
    out = _kstore(filled, "sql", sql, "--format", "csv")
    [row] = list(csv.DictReader(io.StringIO(out.stdout)))
    assert row["b"] == as_duckdb and json.loads(row["s"]) == record["s"], out.stderr
    out = _kstore(filled, "sql", sql, "--format", "table")
    assert out.returncode == 0 and as_duckdb in out.stdout, out.stderr


def test_times_print_as_the_events_do(filled: Path) -> None:
    # `streams` and `query metrics` printed 2026-01-01T01:39:27.820000Z where `events`
    # prints the same time 2026-01-01T01:39:27.820Z: one rule (format_time) for both.
    sql = (
        "SELECT TIMESTAMP '2026-01-01 01:39:27.82' AS ms, TIMESTAMP '2026-01-01 00:00:01' AS s,"
        " TIMESTAMP '2026-01-01 00:00:01.000001' AS us, [TIMESTAMP '2026-01-01 00:00:00.5'] AS l"
    )
    out = _kstore(filled, "sql", sql, "--format", "jsonl")
    assert json.loads(out.stdout) == {
        "ms": "2026-01-01T01:39:27.820Z",
        "s": "2026-01-01T00:00:01Z",
        "us": "2026-01-01T00:00:01.000001Z",
        "l": ["2026-01-01T00:00:00.500Z"],
    }, out.stderr
    out = _kstore(filled, "sql", sql, "--format", "csv")
    assert out.stdout.splitlines()[1].startswith("2026-01-01T01:39:27.820Z,"), out.stdout


def test_a_partition_past_every_topic_without_a_topic_is_an_error(filled: Path) -> None:
    """A user trial: ``query partition_history --param partition=99`` (no topic named)
    printed an empty table; a partition past its topic's was an error only with
    ``topic``. The rule: an unknown value is an error, never an empty table."""
    ask = ["query", "partition_history", "--group", "g", "--format", "csv"]
    bad = _kstore(filled, *ask, "--param", "partition=6")
    assert (bad.returncode, bad.stdout, bad.stderr) == (
        2,
        "",
        "kstore: error: --param partition: no topic here has a partition 6 (the most: "
        "topic 't', partitions 0 to 5)\n",
    )
    good = _kstore(filled, *ask, "--param", "partition=5")
    assert good.returncode == 0 and len(good.stdout.splitlines()) == 2, good.stderr


@pytest.mark.parametrize("second", ["day", "hour"])
def test_a_param_given_twice_is_an_error(filled: Path, second: str) -> None:
    """`--param window=hour --param window=day` ran with `day`, saying nothing."""
    out = _kstore(
        filled, "query", "windows", "--param", "window=hour", "--param", f"window={second}"
    )
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        f"kstore: error: --param window given twice ('hour', '{second}'): give it once\n"
    )


def test_a_query_parameter_missing_or_given_as_an_option_says_how_to_give_it(
    filled: Path,
) -> None:
    """A user trial: ``kstore query key_owner --group g`` said only "parameter 'topic' is
    required", and ``--at ...`` (as a Kafka tool takes it) "No such option: --at
    (Possible options: --format, --list)": neither said that parameters go as --param."""
    missing = _kstore(filled, "query", "key_owner", "--group", "g")
    assert (missing.returncode, missing.stderr) == (
        2,
        "kstore: error: query key_owner: parameter 'topic' is required (--param topic=VALUE)\n",
    )
    as_option = _kstore(filled, "query", "key_owner", "--at", "2026-11-21T10:00:00Z")
    assert as_option.returncode == 2
    assert as_option.stderr.startswith("kstore: error: No such option: --at")
    assert as_option.stderr.endswith(
        "; a query's parameters are given as --param NAME=VALUE (kstore query --list)\n"
    )
    assert len(as_option.stderr.splitlines()) == 1
    # Another command's unknown option keeps Click's line alone.
    other = _kstore(filled, "events", "--grup", "g")
    assert other.stderr == "kstore: error: No such option: --grup (Possible options: --group)\n"


def test_sql_on_a_table_the_store_lacks_names_the_nearest_of_its_tables(filled: Path) -> None:
    """A user trial: ``kstore sql "SELECT count(*) FROM events"`` said only "Table with
    name events does not exist!" (DuckDB's "Did you mean" line was cut, and it named
    pg_views); the store's tables are kstore_*."""
    bad = _kstore(filled, "sql", "SELECT count(*) FROM events")
    assert (bad.returncode, bad.stderr) == (
        2,
        "kstore: error: SQL: Catalog Error: Table with name events does not exist!; "
        "did you mean kstore_events? (SHOW TABLES lists them)\n",
    )


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        (
            'SELECT "group" FROM kstore_assignments',
            'Binder Error: Referenced column "group" not found in FROM clause!; '
            'did you mean "group_id", "generation"?',
        ),
        (
            "SELECT lenght(cluster) FROM kstore_events",
            "Catalog Error: Scalar Function with name lenght does not exist!; "
            'did you mean "length"?',
        ),
        ("SELECT CAST(1 AS integr)", 'Catalog Error: Type with name integr does not exist!; '
         'did you mean "integer"?'),
    ],
)  # fmt: skip
def test_sql_on_a_column_or_function_the_store_lacks_names_duckdbs_guess(
    filled: Path, sql: str, said: str
) -> None:
    """A user trial: ``SELECT "group" FROM kstore_assignments`` (``events`` prints the
    column as ``group``; the tables call it ``group_id``) said only that the column was
    not found: DuckDB's next line, its candidates, was cut with the rest."""
    bad = _kstore(filled, "sql", sql)
    assert (bad.returncode, bad.stderr) == (2, f"kstore: error: SQL: {said}\n")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["query", "timelin"], "no query 'timelin'; did you mean timeline or timelines?"),
        (
            ["query", "timeline", "--param", "storm_sconds=3"],
            "query timeline: unknown parameter 'storm_sconds'; "
            "did you mean storm_seconds or storm_count?",
        ),
        (
            ["simulate", "--generate", "rolling-depoy"],
            "--generate: unknown kind 'rolling-depoy'; did you mean rolling-deploy?",
        ),
        (
            ["simulate", "--generate", "rolling-deploy", "--protocol", "cooperativ"],
            "--protocol: unknown protocol 'cooperativ'; did you mean cooperative?",
        ),
    ],
)
def test_a_mistyped_name_gets_the_nearest_one(filled: Path, args: list[str], said: str) -> None:
    """A query name, a query parameter, a --generate kind and a --protocol mistyped
    listed every name (user trial: "no query 'timelin' (known: anomalies, compare, ...)")
    where the other names of kstore say the nearest."""
    done = _kstore(filled, *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"kstore: error: {said}\n")
