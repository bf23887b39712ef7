"""One convention across commands and honest answers (issue 14, points 1 and 2).

``--store`` anywhere, ``--format table|csv|json|jsonl`` on every command that prints
rows, tables that print data verbatim and fit the terminal without cutting a number or
an id, a group's one cluster inferred, and an unknown name an error naming the nearest.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kstore.model import AssignmentCompleted, Event, MemberJoined, RebalanceStarted, TopicChanged
from tests.processes import on_a_terminal, plain
from tests.store._stores import initialised_store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
REASONS = ["Optional[static-1] rejoined", "member :x: left [/] now", "[bold]join[/bold]"]
MEMBER = "consumer-orders-1-0f9c8a7e-2b1d-4c3e-9a8f-7d6e5c4b3a21"


def kstore(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Group ``orders`` in cluster ``prod`` only; group ``shared`` in two clusters."""
    store = initialised_store(tmp_path_factory.mktemp("surface") / "kstore.duckdb")
    members = [MEMBER, "b", "c"]
    datas: list[object] = [
        TopicChanged(topic="payments", partitions=6),
        *(MemberJoined(member_id=m, topics=["payments"]) for m in members),
    ]
    for generation, reason in enumerate(REASONS, start=1):
        owners = members[: 1 + generation % 3] if generation < 3 else members
        datas.append(RebalanceStarted(generation=generation, reason=reason))
        datas.append(
            AssignmentCompleted(
                generation=generation,
                strategy="range",
                assignment={
                    m: [("payments", p) for p in range(6) if p % len(owners) == i]
                    for i, m in enumerate(owners)
                },
            )
        )
    events = [
        Event(cluster="prod", group="orders", at=T0 + timedelta(seconds=i), data=d)  # type: ignore[arg-type]
        for i, d in enumerate(datas)
    ]
    for cluster in ("prod", "test"):
        events += [
            Event(
                cluster=cluster, group="shared", at=T0, data=TopicChanged(topic="t", partitions=1)
            )
        ]
    store.append(events)
    return store.path


def test_store_is_accepted_before_and_after_the_subcommand(path: Path) -> None:
    before = kstore("--store", str(path), "streams", "--format", "csv")
    after = kstore("streams", "--format", "csv", "--store", str(path))
    equals = kstore("streams", f"--store={path}", "--format", "csv")
    assert before.returncode == after.returncode == equals.returncode == 0, after.stderr
    assert before.stdout == after.stdout == equals.stdout
    assert before.stdout.splitlines()[1].startswith("prod,orders,recorded,")


@pytest.mark.parametrize(
    "command",
    [
        ["streams"],
        ["events", "--group", "orders"],
        ["state", "--group", "orders"],
        ["query", "metrics", "--group", "orders"],
        ["query", "--list"],
        ["sql", "SELECT 1 AS one, 'a' AS two"],
        ["compare", "--group", "orders"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_every_row_command_takes_every_format(path: Path, command: list[str]) -> None:
    found: dict[str, list[dict[str, object]]] = {}
    for output in ("csv", "json", "jsonl", "table"):
        out = kstore(*command, "--store", str(path), "--format", output)
        assert out.returncode == 0, (output, out.stderr)
        assert out.stdout.strip(), output
        if output == "csv":
            found[output] = list(csv.DictReader(io.StringIO(out.stdout)))
        elif output == "json":
            parsed = json.loads(out.stdout)
            found[output] = parsed if isinstance(parsed, list) else [parsed]
        elif output == "jsonl":
            found[output] = [json.loads(line) for line in out.stdout.splitlines()]
    if command[0] != "state":  # state's json is the whole fold; its rows are members
        assert len(found["json"]) == len(found["jsonl"])
    assert len(found["csv"]) == len(found["jsonl"])
    bad = kstore(*command, "--store", str(path), "--format", "xml")
    assert bad.returncode == 2 and "--format" in bad.stderr and bad.stdout == ""


def test_tables_print_data_verbatim(path: Path) -> None:
    out = kstore("--store", str(path), "query", "timeline", "--group", "orders", columns=400)
    assert out.returncode == 0, out.stderr
    for reason in REASONS:
        assert reason in out.stdout
    state = kstore("--store", str(path), "events", "--group", "orders", "--format", "table")
    assert state.returncode == 0, state.stderr
    assert "Optional[static-1] rejoined" in state.stdout


def _words(text: str) -> set[str]:
    return {w for line in text.splitlines() for w in line.replace("│", " ").split()}


def test_tables_fit_the_terminal_without_cutting_numbers_or_ids(path: Path) -> None:
    rows = json.loads(
        kstore(
            "--store", str(path), "query", "metrics", "--group", "orders", "--format", "json"
        ).stdout
    )
    for columns in (100, 60):
        out = kstore("--store", str(path), "query", "metrics", "--group", "orders", columns=columns)
        assert out.returncode == 0, out.stderr
        words = _words(out.stdout)
        for row in rows:
            assert row["at"] in words and str(row["version"]) in words
        # 19 columns of whole values cannot fit in 100 columns: it says so, what to use,
        # and prints a block per row (as psql's expanded display) that fits
        assert "--format csv" in out.stderr
        assert max(len(line) for line in out.stdout.splitlines()) <= columns
        assert out.stdout.count("-[ row ") == len(rows)
    sql = (
        f"SELECT '{MEMBER}' AS member, "
        "'a long explanation of what happened to this member in that rebalance' AS detail"
    )
    out = kstore("--store", str(path), "sql", sql, columns=90)
    assert out.returncode == 0 and out.stderr == ""
    assert max(len(line) for line in out.stdout.splitlines()) <= 90
    assert MEMBER in out.stdout  # the id is whole, on one line
    assert "explanation" in _words(out.stdout)  # the text wrapped at spaces


def test_a_table_into_a_pipe_fits_the_terminal_the_user_reads_at(path: Path) -> None:
    """``kstore sql ... | less`` in a 70-column terminal (COLUMNS is a shell variable,
    not exported): the table was laid out as wide as its widest cell (a user trial: 600
    columns). Now it fits the terminal on stderr; with no terminal at all (a script, a
    cron job) it is as wide as its content, no wider."""
    import fcntl
    import struct
    import termios

    detail = "a long explanation of what happened to this member in that rebalance " * 2
    sql = f"SELECT '{MEMBER}' AS member, '{detail.strip()}' AS detail"
    command = [sys.executable, "-m", "kstore.cli", "--store", str(path), "sql", sql]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 70, 0, 0))
    try:
        piped = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=follower, text=True, env=env, check=False
        )
    finally:
        os.close(follower)
        os.close(leader)
    lines = piped.stdout.splitlines()
    assert piped.returncode == 0 and max(len(line) for line in lines) <= 70, piped.stdout
    assert MEMBER in piped.stdout and "explanation" in _words(piped.stdout)
    alone = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    widest = len(MEMBER) + len(detail.strip()) + 7  # 2 cells, a space each side, 3 borders
    assert {len(line) for line in alone.stdout.splitlines()} == {widest}, alone.stdout


def test_a_block_per_row_fits_the_terminal_exactly(path: Path) -> None:
    """Each block's header line as wide as the terminal: at 100 columns it was 101 (102
    from row 10: the label is wider than the names), and a lone "-" wrapped."""
    command = [sys.executable, "-m", "kstore.cli", "--store", str(path), "events"]
    code, shown = on_a_terminal(
        [*command, "--group", "orders", "--format", "table"], 100, both=True
    )
    lines = plain(shown).split("\r\n")
    headers = [line for line in lines if line.startswith("-[ row ")]
    assert code == 0 and len(headers) >= 10, shown
    assert {len(line) for line in headers} == {100}, [len(line) for line in headers]
    assert max(len(line) for line in lines) <= 100  # the note too: it wrapped, at 108


def test_a_group_in_one_cluster_needs_no_cluster(path: Path) -> None:
    for command in (
        ["state", "--group", "orders", "--format", "csv"],
        ["compare", "--group", "orders", "--format", "csv"],
        ["query", "timelines", "--group", "orders", "--format", "csv"],
    ):
        out = kstore("--store", str(path), *command)
        assert out.returncode == 0, (command, out.stderr)
    shared = kstore("--store", str(path), "state", "--group", "shared")
    assert shared.returncode == 2 and "prod, test" in shared.stderr and "--cluster" in shared.stderr
    assert (
        kstore("--store", str(path), "state", "--group", "shared", "--cluster", "test").returncode
        == 0
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", "metrics", "--group", "nosuch"], "no group 'nosuch'"),
        (["query", "metrics", "--group", "order"], "did you mean orders"),
        (["query", "metrics", "--cluster", "prd"], "no cluster 'prd'; did you mean prod"),
        (
            ["query", "metrics", "--group", "orders", "--timeline", "recordd"],
            "did you mean recorded",
        ),
        (
            ["compare", "--group", "orders", "--timelines", "recorded,replay/x"],
            "no timeline 'replay/x'",
        ),
        (
            ["query", "member_history", "--param", "member=consumer-orders-1"],
            f"did you mean {MEMBER}",
        ),
        (["query", "windows", "--param", "window=week"], "no window 'week'"),
        (["query", "topics", "--param", "window=month"], "no window 'month'"),
        (["query", "partition_history", "--param", "topic=paymnts"], "did you mean payments"),
        (
            ["query", "partition_history", "--param", "topic=payments", "--param", "partition=6"],
            "partitions 0 to 5",
        ),
        (["query", "timeline", "--param", "storm_count=0"], "storm_count"),
        (["query", "timeline", "--param", "storm_seconds=soon"], "storm_seconds"),
        (
            [
                "query",
                "key_owner",
                "--param",
                "topic=payments",
                "--param",
                "key=k",
                "--param",
                "at=noon",
            ],
            "--param at",
        ),
        (
            ["state", "--group", "orders", "--timeline", "replay/sticky"],
            "no timeline 'replay/sticky'",
        ),
        (["events", "--group", "nosuch"], "no group 'nosuch'"),
        (["replay", "--group", "nosuch", "--strategy", "sticky"], "no group 'nosuch'"),
        (["sql", ""], "empty"),
        (["sql", "  "], "empty"),
    ],
)
def test_unknown_names_are_one_line_errors(path: Path, args: list[str], message: str) -> None:
    out = kstore("--store", str(path), *args)
    assert (out.returncode, out.stdout) == (2, ""), out.stderr
    assert out.stderr.startswith("kstore: error: ") and out.stderr.count("\n") == 1
    assert message in out.stderr


def test_replay_infers_the_one_timeline_that_is_no_replay(tmp_path: Path) -> None:
    """A simulated group has no ``recorded`` timeline: replay, --check and advise take its
    one source (``sim/NAME``) unasked, not a replay of it; two sources need --from."""
    store = initialised_store(tmp_path / "kstore.duckdb")
    datas = [
        TopicChanged(topic="t", partitions=4),
        MemberJoined(member_id="a", topics=["t"]),
        RebalanceStarted(generation=1, reason="a joined"),
        AssignmentCompleted(
            generation=1, strategy="range", assignment={"a": [("t", p) for p in range(4)]}
        ),
    ]
    store.append(
        [Event(cluster="c", group="g", timeline="sim/g", at=T0, data=d) for d in datas]  # type: ignore[arg-type]
    )
    at = ("--store", str(store.path))
    done = kstore(*at, "replay", "--group", "g", "--strategy", "sticky")
    assert done.returncode == 0 and "c/g/sim/g with sticky" in done.stdout, done.stderr
    # The replay is not a second source: each of these still takes sim/g.
    assert kstore(*at, "replay", "--group", "g", "--strategy", "range", "--check").returncode == 0
    again = kstore(*at, "replay", "--group", "g", "--strategy", "range")
    assert again.returncode == 0 and "c/g/sim/g with range" in again.stdout, again.stderr
    advice = kstore(*at, "advise", "--group", "g", "--strategies", "range", "--format", "csv")
    assert advice.returncode == 0 and "replay/range" in advice.stdout, advice.stderr
    store.append(
        [Event(cluster="c", group="g", timeline="sim/h", at=T0, data=d) for d in datas]  # type: ignore[arg-type]
    )
    two = kstore(*at, "replay", "--group", "g", "--strategy", "roundrobin")
    assert two.returncode == 2 and two.stderr.count("\n") == 1, two.stderr
    assert "give --from (one of: sim/g, sim/h)" in two.stderr


def test_a_strategy_the_catalogue_lacks_is_answered_not_an_error(tmp_path: Path) -> None:
    """A custom assignor's name (or any odd string) in a recorded rebalance: anomalies
    takes its protocol as unknown (eager's rules) instead of failing the whole query
    (the catalogue's UDF returned None, which DuckDB refused)."""
    store = initialised_store(tmp_path / "kstore.duckdb")
    datas = [
        TopicChanged(topic="t", partitions=3),
        MemberJoined(member_id="a", topics=["t"]),
        AssignmentCompleted(
            generation=1, strategy="com.acme.MyAssignor", assignment={"a": [("t", 0)]}
        ),
    ]
    store.append([Event(cluster="c", group="g", at=T0, data=d) for d in datas])  # type: ignore[arg-type]
    out = kstore("--store", str(store.path), "query", "anomalies", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {(r["kind"], r["partition"], r["expected"]) for r in rows} == {
        ("unassigned", 1, False),
        ("unassigned", 2, False),
    }
