"""The store commands as a user runs them: output, exit status, nothing stored on error."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks._fleet import group_events
from kstore._lazy import one_blas_thread
from kstore.cli import main
from kstore.model.events import StreamId
from tests.processes import on_a_terminal, plain
from tests.store._stores import initialised_store
from tests.store.test_events import SPEC_EXAMPLE


def run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["kstore", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


LINES = [
    SPEC_EXAMPLE,
    {
        "event_id": "e2",
        "cluster": "prod-eu",
        "group": "orders-consumers",
        "timeline": "recorded",
        "type": "AssignmentCompleted",
        "at": "2026-11-21T10:00:01+01:00",
        "data": {
            "generation": 7,
            "strategy": "range",
            "assignment": {"consumer-1-7c2e": [["orders", 0]]},
        },
    },
]


def test_store_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "s.duckdb")
    monkeypatch.setenv("KSTORE_STORE", store)
    assert run(capsys, monkeypatch, "init")[0] == 0
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    code, out, _ = run(capsys, monkeypatch, "append", str(source))
    assert (code, out) == (0, "stored 2, already there 0\n")
    assert run(capsys, monkeypatch, "append", str(source))[1] == "stored 0, already there 2\n"

    code, out, _ = run(capsys, monkeypatch, "events")
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == LINES
    code, out, _ = run(capsys, monkeypatch, "events", "--until", "2026-11-21T09:30:00Z")
    assert [json.loads(line)["event_id"] for line in out.splitlines()] == ["e2"]
    code, out, err = run(capsys, monkeypatch, "events", "--group", "other")
    assert (code, out) == (2, "") and "no group 'other'" in err
    code, out, err = run(
        capsys, monkeypatch, "events", "--since", "2026-11-22", "--until", "2026-11-21"
    )  # printed nothing, exit 0
    assert (code, out) == (2, "") and err == (
        "kstore: error: --since 2026-11-22 is after --until 2026-11-21: no time is in between\n"
    )

    code, out, _ = run(
        capsys, monkeypatch, "state", "--group", "orders-consumers", "--cluster", "prod-eu"
    )
    state = json.loads(out)
    assert (state["version"], state["generation"]) == (2, 7)
    assert state["members"] == {"consumer-1-7c2e": {"topics": ["orders"], "rack": "r1"}}
    assert state["assignment"] == {"consumer-1-7c2e": [["orders", 0]]}
    code, out, _ = run(
        capsys,
        monkeypatch,
        "state",
        "--group",
        "orders-consumers",
        "--cluster",
        "prod-eu",
        "--at-version",
        "1",
    )
    assert json.loads(out)["assignment"] == {}
    code, out, _ = run(
        capsys,
        monkeypatch,
        "state",
        "--group",
        "orders-consumers",
        "--cluster",
        "prod-eu",
        "--format",
        "table",
    )
    assert code == 0 and "consumer-1-7c2e" in out and "orders-0" in out

    code, out, _ = run(capsys, monkeypatch, "streams")
    assert code == 0 and "orders-consumers" in out
    code, out, _ = run(capsys, monkeypatch, "rebuild")
    assert code == 0 and out.strip().endswith("snapshots of 1 stream")
    code, out, _ = run(capsys, monkeypatch, "export", "--out", str(tmp_path / "parquet"))
    assert code == 0 and re.match(r"exported [0-9,]+ events of 1 stream and ", out)


def test_bad_input_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "s.duckdb")
    run(capsys, monkeypatch, "--store", store, "init")
    bad = dict(
        LINES[1],
        event_id="e3",
        data={"generation": 8, "strategy": "range", "assignment": {"m": [["orders", -1]]}},
    )
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in [*LINES, bad]))
    code, out, err = run(capsys, monkeypatch, "--store", store, "append", str(source))
    assert code == 2 and out == ""
    assert err.startswith(f"kstore: error: {source}: line 3: data.assignment.m[0][1]: ")
    assert len(err.strip().splitlines()) == 1
    assert run(capsys, monkeypatch, "--store", store, "events")[1] == ""
    code, _, err = run(capsys, monkeypatch, "--store", store, "events", "--since", "yesterday")
    assert code == 2 and "--since" in err


@pytest.mark.parametrize(
    ("field", "where"),
    [
        ("member_id", "data.member_id"),
        ("client_id", "data.client_id"),
        ("group", "group"),
        ("timeline", "timeline"),
    ],
)
def test_a_10_mb_name_is_refused_as_kafka_never_carries_it(
    field: str,
    where: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member id of 10,000,000 characters was stored (user trial): Kafka's wire strings
    hold at most 32,767 bytes, so no broker or client gives one; the line is refused,
    its length said, the 10 MB not echoed."""
    store = str(tmp_path / "s.duckdb")
    run(capsys, monkeypatch, "--store", store, "init")
    joined = {"member_id": "m", "topics": ["orders"]}
    event = {"group": "g", "type": "MemberJoined", "at": "2026-01-01T00:00:00Z", "data": joined}
    huge = "x" * 10_000_000
    if where.startswith("data."):
        bad = {**event, "data": {**joined, field: huge}}
    else:
        bad = {**event, field: huge}
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(event) + "\n" + json.dumps(bad) + "\n")
    code, out, err = run(capsys, monkeypatch, "--store", store, "append", str(source))
    limit = "100,000" if field == "timeline" else "32,767"
    assert (code, out) == (2, "")
    assert err == (
        f"kstore: error: {source}: line 2: {where}: at most {limit} characters, not 10,000,000\n"
    )
    assert run(capsys, monkeypatch, "--store", store, "events")[1] == ""


def test_a_replay_whose_name_would_pass_the_bound_of_a_timeline_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source timeline of 99,995 characters (within ``append``'s bound) was replayed as
    ``replay/<source>/range``, 100,008 characters: the store then held a timeline that
    ``append`` refuses, so its events could not be appended elsewhere."""
    store = str(tmp_path / "s.duckdb")
    run(capsys, monkeypatch, "--store", store, "init")
    source = "x" * 99_995
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({**line, "timeline": source}) + "\n" for line in LINES))
    assert run(capsys, monkeypatch, "--store", store, "append", str(path))[0] == 0
    group = ["--cluster", "prod-eu", "--group", "orders-consumers"]
    replay = ["replay", *group, "--from", source, "--strategy", "range"]
    code, out, err = run(capsys, monkeypatch, "--store", store, *replay)
    assert (code, out) == (2, "")
    assert err == (
        f"kstore: error: the replay of {'x' * 40}...: a timeline's name has at most "
        "100,000 characters, this one would have 100,008\n"
    )
    listed = run(capsys, monkeypatch, "--store", store, "events", "--format", "csv")
    assert listed[0] == 0 and "replay/" not in listed[1]


@pytest.mark.parametrize("command", ["compare", "advise", "state"])
def test_a_missing_group_names_the_stores_groups(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``kstore advise`` on a store of several groups said only "Missing option
    '--group'." (user trial): the user had to find the names with another command."""
    store = str(tmp_path / "s.duckdb")
    run(capsys, monkeypatch, "--store", store, "init")
    source = tmp_path / "in.jsonl"
    joined = {"member_id": "m", "topics": ["orders"]}
    source.write_text(
        "".join(
            json.dumps({"group": g, "type": "MemberJoined", "at": "2026-01-01T00:00:00Z",
                        "data": joined}) + "\n"
            for g in ("payments", "orders")
        )
    )  # fmt: skip
    assert run(capsys, monkeypatch, "--store", store, "append", str(source))[0] == 0
    code, out, err = run(capsys, monkeypatch, "--store", store, command)
    assert (code, out) == (2, "")
    assert err == (
        "kstore: error: Missing option '--group'. The store's groups: orders, payments\n"
    )
    # no store there: click's line alone
    code, _, err = run(capsys, monkeypatch, "--store", str(tmp_path / "none.duckdb"), command)
    assert (code, err) == (2, "kstore: error: Missing option '--group'.\n")


def test_version_is_the_installed_distributions(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "--version")
    assert (code, out, err) == (0, f"kstore {importlib.metadata.version('kstore')}\n", "")


def test_commands_on_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, monkeypatch, "--store", str(tmp_path / "x.duckdb"), "streams")
    assert code == 2 and "kstore --store" in err and "init" in err


@pytest.mark.parametrize(
    "command", [["streams"], ["init"], ["simulate", "--generate", "steady-churn"]]
)
def test_a_store_that_is_a_directory_is_named_in_one_line(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, err = run(capsys, monkeypatch, "--store", str(tmp_path), *command)
    assert (code, out) == (2, "")
    assert err == (
        f"kstore: error: --store {tmp_path}: a directory, not a store file "
        f"(give a file, e.g. {tmp_path / 'kstore.duckdb'})\n"
    )


@pytest.mark.parametrize("command", [["init"], ["events"], ["append", "-"]])
def test_a_store_that_is_a_device_is_named_in_one_line_and_nothing_is_made_beside_it(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--store /dev/null`` (user trial): ``init`` failed with exit 1 and SQLAlchemy's
    text (``Could not fsync file "/dev/null"``, a link to sqlalche.me), and every command
    left ``/dev/null.lock`` and ``/dev/null.lock.gate`` in /dev."""
    beside = [Path("/dev/null.lock"), Path("/dev/null.lock.gate"), Path("/dev/null.wal")]
    before = {p for p in beside if p.exists()}
    try:
        code, out, err = run(capsys, monkeypatch, "--store", "/dev/null", *command)
        made = {p for p in beside if p.exists()} - before
    finally:
        for p in beside:
            if p not in before:
                p.unlink(missing_ok=True)
    assert (code, out) == (2, "")
    assert err == (
        "kstore: error: --store /dev/null: a character device, not a store file "
        "(give a file, e.g. kstore.duckdb)\n"
    )
    assert not made


def test_events_without_ids_appended_twice_are_stored_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retried ``kstore append`` of events that carry no ``event_id`` stored them twice
    (a random id each time); the id now comes from the fact's content."""
    monkeypatch.setenv("KSTORE_STORE", str(tmp_path / "s.duckdb"))
    source = tmp_path / "e.jsonl"
    joined = {"member_id": "m1", "topics": ["t"]}
    at = ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", "2026-01-01T00:00:01Z")
    source.write_text(
        "".join(
            json.dumps({"type": "MemberJoined", "group": "dup", "at": t, "data": joined}) + "\n"
            for t in at
        )
    )
    assert run(capsys, monkeypatch, "init")[0] == 0
    first = run(capsys, monkeypatch, "append", str(source))
    again = run(capsys, monkeypatch, "append", str(source))
    # one instant: one fact, the line repeating it counted apart
    assert first[:2] == (0, "stored 2, already there 0, repeated in the input 1\n"), first
    assert again[:2] == (0, "stored 0, already there 2, repeated in the input 1\n"), again
    code, out, _ = run(capsys, monkeypatch, "events", "--group", "dup")
    assert code == 0 and len(out.splitlines()) == 2


def test_append_starts_with_only_what_it_runs(tmp_path: Path) -> None:
    # Start-up was as much of a small append as the append itself: SQLAlchemy (for the
    # migrations only), pandas (imported by pyarrow and DuckDB on first use), the
    # recorders, the simulator, analytics and rich are no part of it; nor is
    # pyarrow.compute (30 ms), which coding 1,000 values or more with Arrow imported.
    store = tmp_path / "s.duckdb"
    source = tmp_path / "in.jsonl"
    big = {"consumer-1-7c2e": [["orders", p] for p in range(1500)]}
    lines = [SPEC_EXAMPLE, {**LINES[1], "data": {**LINES[1]["data"], "assignment": big}}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run_process(store, "init").returncode == 0
    code = (
        "import sys\n"
        "from kstore.cli import main\n"
        f"sys.argv = ['kstore', '--store', {str(store)!r}, 'append', {str(source)!r}]\n"
        "main()\n"
        "heavy = ('pandas', 'sqlalchemy', 'alembic', 'kstore.record', 'kstore.simulate',\n"
        "         'kstore.analytics', 'rich', 'pyarrow.compute')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["stored 2, already there 0", "[]"]
    # Outside the command pandas imports as before.
    code = "from kstore._lazy import without_pandas\nwith without_pandas(): pass\nimport pandas"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


_EXIT_PROBE = """
import atexit, ctypes, gc, os, sys

def at_exit():  # registered first: runs last, as the interpreter's collections start
    print(gc.get_freeze_count() > 0, len(gc.get_objects()) < 1000)

atexit.register(at_exit)
from benchmarks._fleet import group_events
from kstore._lazy import one_blas_thread
from kstore.cli import main
sys.argv = ['kstore', '--store', sys.argv[1], 'append', sys.argv[2]]
main()
path = next((line.split()[-1] for line in open('/proc/self/maps') if 'openblas' in line), None)
names = [p + 'openblas_get_num_threads' + s for p in ('', 'scipy_') for s in ('', '64_')]
lib = ctypes.CDLL(path) if path else None
count = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
print(count() if count else 'no openblas', os.environ.get('OPENBLAS_NUM_THREADS'))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
def test_an_append_process_spins_no_blas_thread_and_ends_uncollected(tmp_path: Path) -> None:
    # numpy's OpenBLAS started a thread per core, spinning 35-40 ms of CPU, and the
    # interpreter's collections at the exit traversed every module's objects (90 ms):
    # together a tenth of a small append's CPU.
    store = tmp_path / "s.duckdb"
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(SPEC_EXAMPLE) + "\n")
    assert run_process(store, "init").returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_PROBE, str(store), str(source)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    stored, blas, at_exit = done.stdout.splitlines()
    assert stored == "stored 1, already there 0"
    if blas != "no openblas None":
        assert blas == "1 None"  # one thread; the environment as it was
    assert at_exit == "True True"


def test_a_blas_thread_limit_given_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with one_blas_thread():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "2"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    with one_blas_thread():
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_a_command_makes_only_its_own_parser(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # typer read every command's signature and annotations as it started, 20 ms of a
    # small append's start-up; help and usage errors still see every command.
    import typer.main

    read: list[str] = []
    real = typer.main.get_params_from_function

    def reading(function: Any) -> Any:
        read.append(function.__name__)
        return real(function)

    monkeypatch.setattr(typer.main, "get_params_from_function", reading)
    code, out, _ = run(capsys, monkeypatch, "partition", "--key", "k", "--partitions", "3")
    assert code == 0 and out.splitlines()[0].isdigit()
    assert set(read) == {"_global", "_print_version", "partition_cmd"}
    read.clear()
    code, out, _ = run(capsys, monkeypatch, "--help")
    assert code == 0 and "append" in out and "partition" in out
    assert {"append_cmd", "partition_cmd", "replay_cmd"} <= set(read)
    code, _, err = run(capsys, monkeypatch, "--store", "x.duckdb", "appendd", "-")
    assert code == 2 and "No such command 'appendd'" in err


def run_process(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore", "--store", str(store), *args],
        capture_output=True,
        text=True,
    )


def test_ctrl_c_a_library_turns_into_another_error_is_an_interruption(tmp_path: Path) -> None:
    # Ctrl-C in `kstore simulate`'s first second landed in an import (pandas'), which
    # ended as "AttributeError: partially initialized module 'pandas' ...", exit 1.
    code = (
        "import os, signal, sys\n"
        "from kstore.cli import main\n"
        "from kstore.store.log import Store\n"
        "original = Store.init\n"
        "def init_in_a_library_that_swallows_ctrl_c(self):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        signal.pause()\n"
        "    except KeyboardInterrupt:\n"
        "        raise AttributeError('partially initialized module') from None\n"
        "    return original(self)\n"
        "Store.init = init_in_a_library_that_swallows_ctrl_c\n"
        f"sys.argv = ['kstore', '--store', {str(tmp_path / 's.duckdb')!r}, 'init']\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert (done.returncode, done.stderr) == (130, "kstore: interrupted\n")
    # Where SIGINT is ignored (a shell's background job), it stays ignored.
    ignored = subprocess.run(
        [sys.executable, "-c", code.replace("signal.pause()", "pass")],
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert ignored.returncode == 0, ignored.stderr


def test_an_empty_table_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `kstore streams` on a new store printed a box of headers and nothing else.
    store = str(tmp_path / "s.duckdb")
    run(capsys, monkeypatch, "--store", store, "init")
    code, out, err = run(capsys, monkeypatch, "--store", store, "streams")
    assert code == 0 and "cluster" in out
    assert (
        err
        == f"kstore: note: no streams in {store}: kstore append, simulate or record stores some\n"
    )
    code, out, err = run(capsys, monkeypatch, "--store", store, "events", "--format", "table")
    assert (code, err) == (0, "kstore: note: no events match\n")
    # Data formats stay data: nothing on stderr, an empty list or the header alone.
    assert run(capsys, monkeypatch, "--store", store, "streams", "--format", "json")[1:] == (
        "[]\n",
        "",
    )
    code, out, err = run(capsys, monkeypatch, "--store", store, "streams", "--format", "csv")
    assert (out.count("\n"), err) == (1, "")


@pytest.mark.parametrize(
    "command",
    [
        ["query", "metrics", "--group", "orders-consumers", "--format", "csv"],
        ["replay", "--group", "orders-consumers", "--cluster", "prod-eu", "--strategy", "range"],
        ["simulate", "--generate", "steady-churn", "--members", "3", "--steps", "3"],
        ["sql", "SELECT count(*) FROM kstore_events", "--format", "csv"],
        ["report", "--group", "orders-consumers", "--out", "r.html"],
    ],
)
def test_commands_start_without_pandas(tmp_path: Path, command: list[str]) -> None:
    # DuckDB's first query with parameters imported pandas: 0.25 s of CPU at each start.
    store = tmp_path / "s.duckdb"
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    assert run_process(store, "init").returncode == 0
    assert run_process(store, "append", str(source)).returncode == 0
    code = (
        "import sys\n"
        "from kstore.cli import main\n"
        f"sys.argv = ['kstore', '--store', {str(store)!r}, *{command!r}]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print('pandas' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "False", done.stderr


@pytest.mark.parametrize(
    ("timeline", "error", "simulates"),
    [
        ("recorded", "--timeline recorded: a replay's decisions would be read as what ", True),
        ("", "--timeline: an empty name", False),
        ("a\nb", "--timeline 'a\\nb': a control character in the name", False),
        ("t" * 100_001, "--timeline: a timeline's name has at most 100,000 characters", False),
    ],
)
def test_a_replay_cannot_pose_as_the_recorded_timeline(
    timeline: str,
    error: str,
    simulates: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stored as ``recorded``, a replay would be read as what happened (the default source
    of replay and compare); an empty name became the default silently. A simulation may
    stand in for a recorded group; not under a name that is empty or breaks lines."""
    store = str(tmp_path / "s.duckdb")
    simulate = ["simulate", "--generate", "steady-churn", "--members", "4", "--steps", "20"]
    code, out, err = run(capsys, monkeypatch, "--store", store, *simulate, "--timeline", timeline)
    if simulates:
        assert code == 0, err
        Path(store).unlink()
    else:
        assert (code, out) == (2, "") and err.startswith(f"kstore: error: {error}")
        assert len(err.splitlines()) == 1 and not Path(store).exists()
    assert run(capsys, monkeypatch, "--store", store, *simulate)[0] == 0
    group = "steady-churn-4-20-0"
    replay = ["replay", "--group", group, "--strategy", "sticky", "--timeline", timeline]
    code, out, err = run(capsys, monkeypatch, "--store", store, *replay)
    assert (code, out) == (2, "") and err.startswith(f"kstore: error: {error}")
    code, out, _ = run(capsys, monkeypatch, "--store", store, "streams", "--format", "csv")
    assert [line.split(",")[2] for line in out.splitlines()[1:]] == [f"sim/{group}"]


def test_append_to_a_missing_store_says_so_before_reading_its_input(tmp_path: Path) -> None:
    """The input was read and validated first (10 s for a 107 MB file), then the missing
    store named; from standard input it waited for the input's end."""
    missing = tmp_path / "x.duckdb"
    command = [sys.executable, "-m", "kstore.cli", "--store", str(missing), "append", "-"]
    writer = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = writer.communicate(timeout=60)  # standard input left open
    finally:
        writer.kill()
        writer.wait()
    assert (writer.returncode, out) == (2, "")
    assert err == (
        f"kstore: error: {missing}: no store here; create it with `kstore --store {missing} init`\n"
    )
    assert not missing.exists()


def test_append_and_rebuild_show_a_bar_on_a_terminal(tmp_path: Path) -> None:
    store = initialised_store(tmp_path / "s.duckdb")
    events = list(group_events("g", 60, seed=3))
    source = tmp_path / "in.jsonl"
    source.write_text("".join(e.to_json() + "\n" for e in events))
    n = len(events)
    kstore = [sys.executable, "-m", "kstore.cli", "--store", str(store.path)]
    code, shown = on_a_terminal([*kstore, "append", str(source)], columns=120)
    assert code == 0
    assert "reading /" in plain(shown) and f"storing {n:,} events" in plain(shown)
    assert [s.events for s in store.streams()] == [n]
    code, shown = on_a_terminal([*kstore, "rebuild"], columns=120)
    assert code == 0 and "rebuilding /" in plain(shown)
    assert f"{n}/{n} events" in plain(shown), plain(shown)
    piped = subprocess.run([*kstore, "rebuild"], capture_output=True, text=True)
    assert (piped.returncode, piped.stderr) == (0, "")


_ETA = re.compile(r"ETA (\d+:\d\d:\d\d|-:--:--)")
_TIME = re.compile(r"(\d+:\d\d:\d\d|-:--:--)\s*$")


def test_every_bar_labels_its_time_left(tmp_path: Path) -> None:
    """The bars ended in a bare ``0:00:12`` (a time taken, or left?, a user trial): each
    says ``ETA 0:00:12`` (``ETA -:--:--`` before the pace is known)."""
    store = initialised_store(tmp_path / "s.duckdb").path
    kstore = [sys.executable, "-m", "kstore.cli", "--store", str(store)]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(e.to_json() + "\n" for e in group_events("g", 60, seed=3)))
    example = str(Path(__file__).resolve().parents[2] / "examples" / "flapping-member.yaml")
    commands = {
        "appending": ["append", str(source)],
        "rebuilding": ["rebuild"],
        "simulating": ["simulate", example],
        "replaying": ["replay", "--group", "flapping-member", "--strategy", "sticky"],
        "advise": ["advise", "--group", "flapping-member", "--strategies", "range"],
        "report": ["report", "--group", "flapping-member", "--out", str(tmp_path / "r.html")],
    }
    for said, args in commands.items():
        code, shown = on_a_terminal([*kstore, *args], columns=160)
        bars = [line for line in re.split(r"[\r\n]", plain(shown)) if "━" in line]
        assert code == 0 and any(_ETA.search(line) for line in bars), (said, plain(shown))
        bare = [line for line in bars if _TIME.search(line) and not _ETA.search(line)]
        assert not bare, (said, bare)


def test_state_outside_the_stream_is_an_error_not_its_first_or_last_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--at-version -1`` and a time before the first event printed an empty state,
    ``--at-version 99999`` the last one, and an unknown generation was exit 1. Versions
    start at 1: ``--at-version 0`` printed the empty state (all nulls), exit 0."""
    monkeypatch.setenv("KSTORE_STORE", str(tmp_path / "s.duckdb"))
    assert run(capsys, monkeypatch, "init")[0] == 0
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    assert run(capsys, monkeypatch, "append", str(source))[0] == 0
    state = ["state", "--group", "orders-consumers", "--cluster", "prod-eu", "--format", "csv"]
    stream = "prod-eu/orders-consumers/recorded"
    for option, value, message in (
        ("--at-version", "-1", f"--at-version -1: {stream} has versions 1 to 2"),
        ("--at-version", "0", f"--at-version 0: {stream} has versions 1 to 2"),
        ("--at-version", "3", f"--at-version 3: {stream} has versions 1 to 2"),
        ("--at", "2026-11-21T08:00:00Z", "--at 2026-11-21T08:00:00Z: before the first event "
         f"of {stream} (2026-11-21T09:00:01Z)"),
        ("--at-generation", "8", f"stream {stream} has no AssignmentCompleted of generation 8"),
    ):  # fmt: skip
        code, out, err = run(capsys, monkeypatch, *state, option, value)
        assert (code, out, err) == (2, "", f"kstore: error: {message}\n")
    for option, value in (("--at-version", "1"), ("--at-version", "2"), ("--at", "2030-01-01")):
        assert run(capsys, monkeypatch, *state, option, value)[0] == 0


def test_state_of_a_group_with_one_timeline_that_is_no_replay_needs_no_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As replay's default: a simulated group's state said "no timeline 'recorded'"
    unless given ``--timeline sim/NAME`` (user trial)."""
    monkeypatch.setenv("KSTORE_STORE", str(tmp_path / "s.duckdb"))
    store = initialised_store(tmp_path / "s.duckdb")
    events = list(group_events("g", 5, seed=1))
    store.append([e.model_copy(update={"timeline": "sim/g"}) for e in events])
    code, out, err = run(capsys, monkeypatch, "state", "--group", "g")
    assert (code, err) == (0, ""), err
    assert json.loads(out)["timeline"] == "sim/g"
    store.append([e.model_copy(update={"timeline": "sim/h"}) for e in group_events("g", 5, seed=2)])
    code, out, err = run(capsys, monkeypatch, "state", "--group", "g")
    assert (code, out) == (2, "")
    assert err == (
        "kstore: error: group default/g has no 'recorded' timeline: give --timeline "
        "(one of: sim/g, sim/h)\n"
    )


def _interrupted_inside(
    store: Path, method: str, *args: str, owner: str = "kstore.store.log:Store"
) -> subprocess.CompletedProcess[str]:
    """``kstore ARGS`` with a Ctrl-C arriving once ``Store.METHOD`` has done its work inside
    the command's transaction (rows written, nothing committed); ``owner``: the class
    (``module:name``) whose method it is, ``Store`` by default."""
    module, name = owner.split(":")
    code = (
        "import signal, sys, threading\n"
        "from kstore.cli import main\n"
        f"from {module} import {name} as Store\n"
        f"original = Store.{method}\n"
        "def then_ctrl_c(*args, **kwargs):\n"
        "    done = original(*args, **kwargs)\n"
        # to the main thread: a process's signal may go to any of its threads (Arrow's
        # pool, after an export's first write), and pause() then waited for ever
        "    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)\n"
        "    signal.pause()\n"
        "    return done\n"
        f"Store.{method} = then_ctrl_c\n"
        f"sys.argv = ['kstore', '--store', {str(store)!r}, *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        timeout=300,  # a hang fails the test instead of the suite's time limit
    )


def test_an_export_stopped_part_way_leaves_no_folder(tmp_path: Path) -> None:
    """A user trial: Ctrl-C during ``kstore export --out OUT`` left ``OUT/events`` without
    ``OUT/assignments`` (a log that reads as whole), and ``export --out OUT`` again said
    the folder was not empty. What it wrote is removed; the same command runs again."""
    store, out = tmp_path / "s.duckdb", tmp_path / "out"
    made = run_process(store, "simulate", "--generate", "steady-churn", "--steps", "30")
    assert made.returncode == 0, made.stderr
    # Ctrl-C on the main thread as the assignments are asked for, the events written
    ask = ["export", "--out", str(out)]
    done = _interrupted_inside(
        store, "assignment_batches", *ask, owner="kstore.spark._export:_Export"
    )
    assert (done.returncode, done.stderr) == (130, "kstore: interrupted\n")
    assert not out.exists()
    again = run_process(store, "export", "--out", str(out))
    assert again.returncode == 0 and (out / "assignments").is_dir(), again.stderr


def test_ctrl_c_of_append_and_rebuild_says_what_is_stored(tmp_path: Path) -> None:
    # Both said only "kstore: error: interrupted": whether half an input was stored, or
    # the projections left half rebuilt, the user had to find out.
    store, first, second = tmp_path / "s.duckdb", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, seed in ((first, 1), (second, 2)):
        path.write_text("".join(e.to_json() + "\n" for e in group_events("g", 5, seed=seed)))
    assert run_process(store, "init").returncode == 0
    assert run_process(store, "append", str(first)).returncode == 0
    before = run_process(store, "events", "--format", "jsonl").stdout
    done = _interrupted_inside(store, "_write_batch", "append", str(second))
    assert done.returncode == 130
    assert done.stderr.startswith("kstore: interrupted while storing (one transaction")
    assert done.stderr.count("\n") == 1 and "run the same command again" in done.stderr
    assert run_process(store, "events", "--format", "jsonl").stdout == before

    rows = "SELECT count(*) FROM kstore_assignments"
    counted = run_process(store, "sql", rows, "--format", "csv").stdout
    done = _interrupted_inside(store, "_store_rows", "rebuild")
    assert (done.returncode, done.stderr) == (
        130,
        "kstore: interrupted: the projections are as they were (the rebuild is one "
        "transaction, undone unless it had just committed); run kstore rebuild again\n",
    )
    assert run_process(store, "sql", rows, "--format", "csv").stdout == counted


def test_the_state_tables_title_says_what_is_known_and_fits_the_terminal(tmp_path: Path) -> None:
    """A simulated group's state at 100 columns: the title wrapped anywhere, and before
    its first rebalance said ``generation None  strategy None`` (user trial)."""
    path = tmp_path / "s.duckdb"
    base = [sys.executable, "-m", "kstore", "--store", str(path)]
    made = subprocess.run(
        [*base, "simulate", "--generate", "steady-churn", "--members", "3", "--steps", "3"],
        capture_output=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    state = [*base, "state", "--group", "steady-churn-3-3-0", "--format", "table"]
    said = {
        "3": "version 3  rebalance of generation 1 in progress  topics events:12",
        "": "generation 5  strategy range  topics events:12",
    }
    for version, known in said.items():
        at = ["--at-version", version] if version else []
        code, shown = on_a_terminal([*state, *at], 100, both=True)
        lines = plain(shown).splitlines()
        assert code == 0 and all(len(line) <= 100 for line in lines), shown
        title = lines[: next(i for i, line in enumerate(lines) if line.startswith("┏"))]
        assert title[0].startswith("default/steady-churn-3-3-0/sim/steady-churn-3-3-0  version")
        assert known in "  ".join(title) and "None" not in shown, shown


def _simulated_kstore(tmp_path: Path, steps: int) -> str:
    """The command line of kstore on a store of a simulated group of 30 members."""
    kstore = f"{sys.executable} -m kstore --store {tmp_path / 's.duckdb'}"
    made = subprocess.run(
        f"{kstore} simulate --generate steady-churn --members 30 --steps {steps}",
        shell=True,
        capture_output=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return kstore


def _into_head(command: str) -> subprocess.CompletedProcess[str]:
    """``command | head -1``, with the command's exit status."""
    return subprocess.run(
        f"{command} | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_closed_pipe_ends_the_command_quietly_with_status_0(tmp_path: Path) -> None:
    """``kstore events | head -1`` ended with status 1 (typer's handling of EPIPE); as
    ``cat`` ends, quietly, but with 0: the reader had what it wanted."""
    kstore = _simulated_kstore(tmp_path, 60)
    for command in ("events", "sql 'SELECT * FROM range(1000000)' --format csv"):
        size = subprocess.run(f"{kstore} {command} | wc -c", shell=True, capture_output=True)
        assert int(size.stdout) > 200_000  # more than a pipe holds: the writer sees it closed
        done = _into_head(f"{kstore} {command}")
        assert (done.returncode, done.stderr, done.stdout.count("\n")) == (0, "", 1), done


def test_a_closed_pipe_after_a_tables_title_ends_with_status_0(tmp_path: Path) -> None:
    """``kstore compare --group G | head -1`` (and every titled table) ended with status 1
    (user trial): the title was read, the reader gone, and rich's console exited 1 by
    itself when the table met the closed pipe. Now it ends as a closed pipe does."""
    kstore = f"COLUMNS=400 {_simulated_kstore(tmp_path, 400)}"  # a table, not blocks
    command = f"{kstore} query metrics --format table"
    size = subprocess.run(command, shell=True, capture_output=True)
    assert size.stdout.count(b"\n") > 300 and size.stdout.startswith(b"metrics\n\xe2\x94\x8f")
    assert len(size.stdout) > 100_000  # more than a pipe holds: the table meets it closed
    done = _into_head(command)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "metrics\n"), done


@pytest.mark.parametrize(
    "command",
    [
        "events --group steady-churn-30-60-0",
        "state --group steady-churn-30-60-0",
        "streams --format table",
        "sql 'SELECT * FROM range(1000000)' --format csv",
        "query --list",
        "docs metrics",
        "--version",
        "simulate --generate steady-churn --members 3 --steps 3",
    ],
)
def test_a_full_standard_output_is_one_line_and_status_2(command: str, full_store: Path) -> None:
    """``kstore events > /dev/full`` said ``OSError: [Errno 28] No space left on device``
    with status 1 (a user trial; a traceback in the wheel tried): one line naming
    standard output, status 2 as for an ``--out`` that cannot be written."""
    done = subprocess.run(
        f"{sys.executable} -m kstore --store {full_store} {command} > /dev/full",
        shell=True,
        env={**os.environ, "COLUMNS": "1000"},  # the table fits: no note on stderr
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "kstore: error: cannot write to standard output: No space left on device\n",
    ), done


@pytest.fixture(scope="module")
def full_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("full") / "s.duckdb"
    made = subprocess.run(
        [sys.executable, "-m", "kstore", "--store", str(store), "simulate", "--generate",
         "steady-churn", "--members", "30", "--steps", "60"],
        capture_output=True,
        check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return store


def test_state_lists_members_and_their_partitions_sorted_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Members came in the order they joined and partitions in the order assigned (a
    user trial: ``kstore state`` printed them unsorted)."""
    monkeypatch.setenv("KSTORE_STORE", str(tmp_path / "s.duckdb"))
    assert run(capsys, monkeypatch, "init")[0] == 0
    base = {"cluster": "c", "group": "g", "timeline": "recorded"}
    joins = ["m2", "m10", "m1"]
    lines = [
        {**base, "event_id": f"j{i}", "type": "MemberJoined", "at": f"2026-11-21T10:00:0{i}Z",
         "data": {"member_id": m, "topics": ["t", "a"]}}
        for i, m in enumerate(joins)
    ] + [
        {**base, "event_id": "r", "type": "RebalanceStarted", "at": "2026-11-21T10:00:05Z",
         "data": {"generation": 1, "reason": "x"}},
        {**base, "event_id": "a", "type": "AssignmentCompleted", "at": "2026-11-21T10:00:06Z",
         "data": {"generation": 1, "strategy": "range", "assignment": {
             "m2": [["t", 10], ["t", 2], ["a", 0]], "m10": [["t", 1]], "m1": [["t", 0]]}}},
    ]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run(capsys, monkeypatch, "append", str(source))[0] == 0
    order = ["m1", "m10", "m2"]
    state = ["state", "--group", "g", "--format"]
    code, out, _ = run(capsys, monkeypatch, *state, "json")
    whole = json.loads(out)
    assert code == 0 and list(whole["members"]) == order and list(whole["assignment"]) == order
    assert whole["assignment"]["m2"] == [["a", 0], ["t", 2], ["t", 10]]
    code, out, _ = run(capsys, monkeypatch, *state, "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["member"] for row in rows] == order
    assert rows[2]["partitions"] == ["a-0", "t-2", "t-10"]
    code, out, _ = run(capsys, monkeypatch, *state, "csv")
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == order
    code, out, _ = run(capsys, monkeypatch, *state, "table")
    members = [line.split()[1] for line in out.splitlines() if "│ m" in line]
    assert members == order and "a-0 t-2 t-10" in out


def test_state_as_json_lines_lists_topics_and_partitions_as_arrays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``state --format jsonl`` gave a member's topics and partitions as one string each
    (``"t-0 t-1"``), which a JSON reader must split again (user trial); CSV keeps a cell."""
    monkeypatch.setenv("KSTORE_STORE", str(tmp_path / "s.duckdb"))
    store = initialised_store(tmp_path / "s.duckdb")
    store.append(list(group_events("g", 5, seed=1)))
    code, out, _ = run(capsys, monkeypatch, "state", "--group", "g", "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and rows
    state = store.state(StreamId("default", "g", "recorded"))
    for row in rows:
        assert row["topics"] == list(state.members[row["member"]].topics)
        owned = sorted(state.assignment.get(row["member"], ()))
        assert row["partitions"] == [f"{t}-{p}" for t, p in owned]
    code, out, _ = run(capsys, monkeypatch, "state", "--group", "g", "--format", "csv")
    assert code == 0 and all('"[' not in line for line in out.splitlines())


def test_the_command_list_uses_a_wide_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 100 columns ``kstore --help`` cut every command's line at 80 ("Answer
    assignment requests (the contract: kstore docs...", user trial): click's help stops
    at 80 columns unless told more."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, monkeypatch, "--help")
    assert code == 0
    assert "Answer assignment requests (the contract: kstore docs assignment-contract)." in out
    assert max(len(line) for line in out.splitlines()) <= 100


@pytest.mark.parametrize(
    "command",
    [["init"], ["simulate", "--generate", "steady-churn", "--members", "3", "--steps", "3"]],
)
def test_a_store_in_a_folder_not_there_is_refused_naming_it(
    tmp_path: Path, command: list[str]
) -> None:
    """``--store /nonexistent/dir/x.duckdb init`` made both folders without a word (a
    user trial; a typo in a path is the likelier cause). Every command that creates a
    store refuses: one line naming the first missing folder and how to make it, exit 2,
    nothing made; a file where a folder would be is named too."""
    store = tmp_path / "no" / "dir" / "x.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "kstore", "--store", str(store), *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == (
        f"kstore: error: {store}: cannot create the store: no such folder: {tmp_path / 'no'} "
        f"(make it first: mkdir -p {store.parent})\n"
    )
    assert not (tmp_path / "no").exists()
    (tmp_path / "file").write_text("")
    inside = tmp_path / "file" / "x.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "kstore", "--store", str(inside), *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and done.stderr == (
        f"kstore: error: {inside}: cannot create the store: not a folder: {tmp_path / 'file'}\n"
    )


def test_json_at_a_terminal_is_indented_and_one_line_into_a_pipe(full_store: Path) -> None:
    """``kstore state`` at a terminal printed its JSON as one long line (a user trial):
    ``--format json`` is indented at a terminal (as jq prints it), compact into a pipe."""
    kstore = [sys.executable, "-m", "kstore.cli", "--store", str(full_store)]
    for args in (
        ["state", "--group", "steady-churn-30-60-0"],
        ["sql", "SELECT 1 AS n, [1, 2] AS l", "--format", "json"],
    ):
        piped = subprocess.run([*kstore, *args], capture_output=True, text=True, check=False)
        assert piped.returncode == 0 and piped.stdout.count("\n") == 1, piped
        code, shown = on_a_terminal([*kstore, *args], 100, both=True)
        lines = plain(shown).replace("\r\n", "\n").strip().split("\n")
        assert code == 0 and len(lines) > 3 and lines[1].startswith("  "), shown
        assert json.loads("\n".join(lines)) == json.loads(piped.stdout)
