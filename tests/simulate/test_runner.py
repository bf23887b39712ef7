"""Scenario files, the store round trip, resuming an interrupted run, and the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kstore._apart import FORKS
from kstore.cli import app
from kstore.model.events import Event
from kstore.protocol.group import ResumeMismatch
from kstore.simulate import (
    ScenarioError,
    generate,
    load_scenario,
    parse_scenario,
    run_scenario,
    runner,
)
from kstore.simulate.summary import Summary
from kstore.store.interface import AppendResult
from kstore.store.log import Store
from kstore.store.memory import MemoryStore
from tests.processes import kstore_cli, on_a_terminal, plain
from tests.store._stores import initialised_store

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.yaml"))


def _stored(store: Store, timeline: str) -> list[dict[str, object]]:
    return [s.event.to_dict() for s in store.events(timeline=timeline)]


def test_errors_name_the_line() -> None:
    text = (
        "name: x\ntopics:\n  t: 3\nmembers:\n  - count: 2\n    topics: [t]\n"
        "steps:\n  - at: 10s\n    scale: -1\n"
    )
    with pytest.raises(ScenarioError, match=r"^s.yaml:9: steps\[0\].scale: "):
        parse_scenario(text, "s.yaml")
    with pytest.raises(ScenarioError, match=r"^s.yaml:8: steps\[0\]: .*exactly one action"):
        parse_scenario(text.replace("    scale: -1\n", ""), "s.yaml")
    with pytest.raises(ScenarioError, match=r"^s.yaml:3: .*not valid YAML"):
        parse_scenario("name: x\ntopics: [\n  :", "s.yaml")
    with pytest.raises(ScenarioError, match=r"s.yaml:2: .*strategy uniform does not go"):
        parse_scenario(
            "name: x\nstrategy: uniform\ntopics: {t: 1}\nmembers: [{topics: [t]}]\n", "s.yaml"
        )
    # a member naming one assignor twice ended the run in the vote (StopIteration)
    twice = "name: x\ntopics: {t: 1}\nmembers:\n  - topics: [t]\n    protocols: [range, range]\n"
    with pytest.raises(ScenarioError, match=r"^s.yaml:5: members\[0\].protocols: .*range listed"):
        parse_scenario(twice, "s.yaml")
    join = "name: x\ntopics: {t: 1}\nmembers: [{topics: [t]}]\nsteps:\n  - at: 1s\n"
    join += "    join: {name: j, topics: [t], protocols: [sticky, range, sticky]}\n"
    with pytest.raises(ScenarioError, match=r"^s.yaml:6: steps\[0\].join.protocols: .*sticky"):
        parse_scenario(join, "s.yaml")
    # a name no protocol knows was said not to go with the protocol; now the nearest names
    with pytest.raises(
        ScenarioError, match=r"s.yaml:2: .*unknown strategy 'stiky'; did you mean sticky\?"
    ):
        parse_scenario(
            "name: x\nstrategy: stiky\ntopics: {t: 1}\nmembers: [{topics: [t]}]\n", "s.yaml"
        )


def test_simulate_names_an_unknown_strategy_as_unknown(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "kstore.cli", "--store", str(tmp_path / "s.duckdb")]
    command += ["simulate", "--generate", "steady-churn", "--strategy"]
    done = subprocess.run([*command, "stiky"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kstore: error: --strategy: unknown strategy 'stiky'; did you mean sticky?\n"
    )
    done = subprocess.run([*command, "uniform"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kstore: error: --strategy: strategy uniform does not go with protocol eager (one of "
        "range, roundrobin, sticky, cooperative-sticky); add --protocol consumer for the "
        "consumer protocol (KIP-848)\n"
    )
    done = subprocess.run([*command, "uniform", "--protocol", "eager"], capture_output=True)
    assert done.returncode == 2 and b"add --protocol" not in done.stderr  # asked for eager


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--members", "100000000"], "--members 100,000,000: kstore simulates at most 100,000"),
        (["--steps", "100000000"], "--steps 100,000,000: kstore generates at most 10,000 steps"),
        (
            ["--members", "100000", "--steps", "100"],
            "--members 100,000 with --steps 100: 10,000,000 members times steps; "
            "kstore simulates at most 2,000,000",
        ),
    ],
)
def test_a_generated_run_too_big_to_simulate_is_refused_at_once(
    tmp_path: Path, given: list[str], said: str
) -> None:
    # --members 100000000 grew a list of names until memory ran out, with no word
    db = tmp_path / "s.duckdb"
    command = [sys.executable, "-m", "kstore", "--store", str(db), "simulate"]
    command += ["--generate", "steady-churn", *given]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"kstore: error: {said}") and done.stderr.count("\n") == 1
    assert not db.exists()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--members", "-5"], "--members -5: must be at least 1"),
        (["--members", "0", "--steps", "3"], "--members 0: must be at least 1"),
        (["--steps", "-1"], "--steps -1: must be at least 0"),
    ],
)
def test_a_bad_member_or_step_count_names_only_itself(
    tmp_path: Path, given: list[str], said: str
) -> None:
    # --members -5 said "--members must be at least 1 and --steps at least 0"
    db = tmp_path / "s.duckdb"
    done = kstore_cli(db, "simulate", "--generate", "steady-churn", *given, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"kstore: error: {said}\n"
    assert not db.exists()


def test_autoscaling_at_the_most_members_stays_a_scenario_kstore_takes() -> None:
    scenario = generate("autoscaling", members=100_000, steps=20, seed=1)
    assert max(step.scale or 0 for step in scenario.steps) <= 100_000


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_load_and_run(path: Path) -> None:
    scenario = load_scenario(path)
    result = run_scenario(scenario, store=None, timeline="sim/example")
    assert result.sim.rebalances >= 1
    assert result.sim.state.generation is not None


def test_interrupted_run_resumes_to_the_same_events(tmp_path: Path) -> None:
    scenario = generate("steady-churn", members=6, steps=40, seed=3, protocol="cooperative")
    straight = initialised_store(tmp_path / "a.duckdb")
    run_scenario(scenario, store=straight, timeline="sim/x", seed=3)
    expected = _stored(straight, "sim/x")
    assert len(expected) > 60

    resumed = initialised_store(tmp_path / "b.duckdb")
    cut = run_scenario(scenario, store=resumed, timeline="sim/x", seed=3, stop_after=37)
    assert cut.appended == 37 and len(_stored(resumed, "sim/x")) == 37
    again = run_scenario(scenario, store=resumed, timeline="sim/x", seed=3)
    assert again.resumed == 37
    assert _stored(resumed, "sim/x") == expected
    # Once complete, running it again stores nothing.
    assert run_scenario(scenario, store=resumed, timeline="sim/x", seed=3).appended == 0


def test_a_resumed_run_says_how_much_of_the_stored_part_is_left_to_check(
    tmp_path: Path,
) -> None:
    # Its bar restarted near 0% as "simulating", which read as the stored work lost.
    scenario = generate("rolling-deploy", members=10, steps=150, seed=2)
    store = initialised_store(tmp_path / "s.duckdb")
    run_scenario(scenario, store=store, timeline="sim/r", seed=2, stop_after=600)
    told: list[tuple[int, int]] = []
    run_scenario(
        scenario,
        store=store,
        timeline="sim/r",
        seed=2,
        progress=lambda now, end, to_check: told.append((now, to_check)),
    )
    checking = [left for _, left in told if left]
    assert checking and checking[0] <= 600
    assert checking == sorted(checking, reverse=True)  # counts down
    assert told[-1][1] == 0  # then simulating what was not stored
    first_free = next(i for i, (_, left) in enumerate(told) if not left)
    assert all(not left for _, left in told[first_free:])


def test_resuming_with_another_seed_is_refused(tmp_path: Path) -> None:
    scenario = generate("flapping-member", members=3, steps=10, seed=1)
    store = initialised_store(tmp_path / "s.duckdb")
    run_scenario(scenario, store=store, timeline="sim/y", seed=1, stop_after=20)
    with pytest.raises(ResumeMismatch, match="another simulation"):
        run_scenario(scenario, store=store, timeline="sim/y", seed=2)


def test_cli_simulate_generated(tmp_path: Path) -> None:
    db = tmp_path / "k.duckdb"
    args = ["--store", str(db), "simulate", "--generate", "autoscaling", "--members", "5"]
    args += ["--steps", "6", "--seed", "4", "--protocol", "consumer"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "rebalances" in result.output and "consumer (uniform)" in result.output
    stored = _stored(Store(db), "sim/autoscaling-5-6-4")
    assert stored and all(e["group"] == "autoscaling-5-6-4" for e in stored)
    bad = CliRunner().invoke(app, ["--store", str(db), "simulate", "--generate", "nope"])
    assert bad.exit_code != 0


@pytest.mark.parametrize(
    ("given", "said"),
    [
        # --generate with no kind took the next option as its kind, the option's value
        # as the scenario file: "give a SCENARIO file or --generate KIND, not both"
        (
            ["--generate", "--strategy", "cooperative-sticky"],
            "--generate: unknown kind '--strategy' (known: steady-churn, autoscaling, "
            "flapping-member, rolling-deploy)",
        ),
        # neither: it said "not both" too
        ([], "give a SCENARIO file (or an example's name: kstore examples) or --generate KIND"),
        (
            ["rolling-deploy-30", "--generate", "steady-churn"],
            "give a SCENARIO file or --generate KIND, not both",
        ),
    ],
)
def test_cli_simulate_says_which_of_scenario_and_kind_is_wrong(
    tmp_path: Path, given: list[str], said: str
) -> None:
    done = kstore_cli(tmp_path / "k.duckdb", "simulate", *given, timeout=60)
    assert (done.returncode, done.stderr) == (2, f"kstore: error: {said}\n")


class _CountingStore(MemoryStore):
    """A store that remembers the size of each append."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def append(self, events: Iterable[Event], *args: Any, **kwargs: Any) -> AppendResult:
        batch = list(events)
        self.batches.append(len(batch))
        return super().append(batch, *args, **kwargs)


def test_appends_grow_to_a_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each append costs the store time that grows with what it holds: a long run hands
    # over ever larger batches (twice the last, up to a cap), not equal small ones.
    monkeypatch.setattr(runner, "FLUSH_EVERY", 50)
    monkeypatch.setattr(runner, "FLUSH_MOST", 300)
    scenario = generate("steady-churn", members=6, steps=600, seed=3)
    store = _CountingStore()
    result = run_scenario(scenario, store=store, timeline="sim/grow", seed=3)
    assert result.appended == sum(store.batches) > 1_500
    full = store.batches[:-1]
    assert full[:3] == [
        pytest.approx(50, abs=5),
        pytest.approx(100, abs=5),
        pytest.approx(200, abs=5),
    ]
    assert all(300 <= n <= 305 for n in full[3:]) and len(full) > 4


def test_appending_apart_stores_what_appending_in_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Into a store file, batches are appended by a forked copy while the run goes on
    # (KSTORE_APPEND_APART=1) or by the run itself (0): the log and every table the
    # store derives are the same, but where the fold's snapshots fall (per append).
    monkeypatch.setattr(runner, "FLUSH_EVERY", 100)
    scenario = generate("steady-churn", members=8, steps=400, seed=3)
    tables: dict[str, list[Any]] = {}
    for apart in ("1", "0"):
        monkeypatch.setenv("KSTORE_APPEND_APART", apart)
        store = initialised_store(tmp_path / f"apart-{apart}.duckdb")
        result = run_scenario(scenario, store=store, timeline="sim/x", seed=3)
        assert result.appended > 5 * runner.FLUSH_EVERY  # several batches
        names = [
            row[0]
            for row in store.query(
                "SELECT table_name FROM information_schema.tables WHERE table_name LIKE "
                "'kstore_%' AND table_name <> 'kstore_snapshots' ORDER BY 1"
            ).rows
        ]
        tables[apart] = [_stored(store, "sim/x")] + [
            store.query(f"SELECT * FROM {name} ORDER BY ALL").rows for name in names
        ]
    assert tables["1"] == tables["0"]


def test_appending_apart_is_decided_by_the_idle_time_of_the_first_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The minute's load average decided alone: a run started after another command
    # appended in its own process on an idle machine (13-14 s instead of 10).
    from kstore.simulate import runner

    monkeypatch.delenv("KSTORE_APPEND_APART", raising=False)
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 2)
    now = (150, 200)  # idle, total ticks since the run's start: 1.5 of 2 cores idle
    monkeypatch.setattr(runner, "_cpu_times", lambda: now)
    monkeypatch.setattr(runner.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    assert runner._core_free((0, 0))
    now = (40, 200)  # 0.4 of a core idle: another process has the other core
    monkeypatch.setattr(runner.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert not runner._core_free((0, 0))
    # Where /proc/stat cannot be read, the load average a core below the count.
    assert runner._core_free(None)
    monkeypatch.setattr(runner.os, "getloadavg", lambda: (1.5, 1.5, 1.5))
    assert not runner._core_free(None)
    # The real /proc/stat (Linux): ticks that only grow.
    monkeypatch.undo()
    first = runner._cpu_times()
    second = runner._cpu_times()
    if first is not None and second is not None:
        assert second[0] >= first[0] and second[1] >= first[1] > first[0]


def test_a_new_store_is_created_apart_while_the_run_begins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `kstore simulate` into a store that does not exist: the store is created in a
    # forked copy while the run makes its first events (a second of wall time on the
    # critical path otherwise); the run's first append waits for it.
    import os

    made_by = tmp_path / "made-by"
    init = Store.init

    def recorded(self: Store) -> tuple[str | None, str]:
        made_by.write_text(str(os.getpid()))
        return init(self)

    monkeypatch.setattr(Store, "init", recorded)
    db = tmp_path / "new.duckdb"
    args = ["--store", str(db), "simulate", "--generate", "steady-churn", "--members", "4"]
    result = CliRunner().invoke(app, [*args, "--steps", "30", "--seed", "2"])
    assert result.exit_code == 0, result.output
    if FORKS:
        assert int(made_by.read_text()) != os.getpid()
    timeline = "sim/steady-churn-4-30-2"
    scenario = generate("steady-churn", members=4, steps=30, seed=2)
    in_memory = run_scenario(scenario, store=None, timeline=timeline, seed=2)
    assert _stored(Store(db), timeline) == [e.to_dict() for e in in_memory.sim.emitted]


def test_a_store_that_fails_to_be_created_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: Store) -> tuple[str | None, str]:
        raise PermissionError(f"{self.path}: read-only")

    monkeypatch.setattr(Store, "init", refused)
    scenario = generate("steady-churn", members=4, steps=30, seed=2)
    store = Store(tmp_path / "new.duckdb")
    with pytest.raises(PermissionError, match="read-only"):
        run_scenario(scenario, store=store, timeline="sim/x", seed=2, new_store=True)


def test_the_store_created_apart_does_not_hide_another_process_from_the_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The copy creating the store ran while the first batch was made. Counted as busy it
    # tells a busy machine; counted as idle it hid another process whose core it took:
    # run, copy and that process each had two thirds of a core, nothing idle, and the
    # copy's CPU made two thirds of a core look idle (apart chosen, 25-29 s instead of
    # 21.6-24 in process at load 1.5-2). The others' use is what was busy beyond the
    # run's and the copy's CPU; the run needs a whole core, half a core must be left.
    monkeypatch.delenv("KSTORE_APPEND_APART", raising=False)
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 2)
    hz = runner.os.sysconf("SC_CLK_TCK")
    second = 2 * hz  # the ticks of one second on two cores
    # Another process: nothing idle, the run and the copy two thirds of a core each.
    monkeypatch.setattr(runner, "_cpu_times", lambda: (0, second))
    assert not runner._core_free((0, 0), (2 / 3, 2 / 3))
    # Alone: the run a whole core, the copy half a core, half a core idle.
    monkeypatch.setattr(runner, "_cpu_times", lambda: (hz // 2, second))
    assert runner._core_free((0, 0), (1.0, 0.5))
    # Another process using half a core: as much left as without the copy.
    monkeypatch.setattr(runner, "_cpu_times", lambda: (0, second))
    assert runner._core_free((0, 0), (1.0, 0.5))
    # Without a store made apart, the idle time as before.
    assert not runner._core_free((0, 0))


def test_the_simulate_bar_tells_the_time_left(tmp_path: Path) -> None:
    """It told the time elapsed; a bar with an ETA is what the house asks of long work."""
    command = [sys.executable, "-m", "kstore.cli", "--store", str(tmp_path / "s.duckdb")]
    command += ["simulate", "--generate", "steady-churn", "--members", "20", "--steps", "400"]
    code, shown = on_a_terminal(command, columns=120)
    assert code == 0 and "% of simulated time" in plain(shown)
    # the time left, labelled (a bare "-:--:--" read as a time taken too), before the pace
    assert "ETA -:--:--" in plain(shown), plain(shown)


@pytest.mark.parametrize("columns", [100, 60])
def test_the_simulate_bar_shows_the_whole_group_name_where_it_fits(
    tmp_path: Path, columns: int
) -> None:
    # On 100 columns the bar took half the line and the label read
    # "simulating payments-ledger-consum…"
    name = "payments-ledger-consumers-eu-west-1"
    scenario = tmp_path / "long.yaml"
    scenario.write_text(
        f"name: {name}\ntopics: {{t: 6}}\nmembers: [{{count: 3, topics: [t]}}]\n"
        "steps: [{at: 10s, crash: c-001}]\nuntil: 30m\n"
    )
    command = [sys.executable, "-m", "kstore.cli", "--store", str(tmp_path / "s.duckdb")]
    code, shown = on_a_terminal([*command, "simulate", str(scenario), "--progress"], columns)
    lines = [line for line in re.split(r"[\r\n]", plain(shown)) if "% of simulated" in line]
    assert code == 0 and lines, plain(shown)
    figures = re.compile(r" +\d+% of simulated time ETA (\d+:\d\d:\d\d|-:--:--) *$")
    assert all(figures.search(line) for line in lines), lines  # the figures stay whole
    if columns == 100:
        assert all(line.startswith(f"simulating {name} ━") for line in lines), lines
    else:  # no room: the bar keeps 10 columns, the label shortens
        assert all(re.match(r"simulating \S+… ━{10} ", line) for line in lines), lines


def test_a_step_naming_a_member_not_there_is_named_at_its_line(tmp_path: Path) -> None:
    # It ended the run with "kstore: error: no member named 'nobody'", exit 1: which
    # step, and what of the run was stored, the user had to find out.
    flapping = "".join(f"  - at: {i * 2}s\n    scale: {4 if i % 2 else 2}\n" for i in range(1, 400))
    text = "name: late\ntopics: {a: 4}\nmembers: [{count: 2, topics: [a]}]\nsteps:\n" + flapping
    bad = parse_scenario(text + "  - at: 900s\n    leave: c-00\n", "late.yaml")
    store = initialised_store(tmp_path / "s.duckdb")
    with pytest.raises(ScenarioError) as refused:
        run_scenario(bad, store=store, timeline="sim", seed=1)
    [stream] = store.streams()
    said = str(refused.value)
    assert said.startswith(
        "late.yaml:804: steps[399].leave (at 900,000 ms): no member named 'c-00'; did you mean"
    ), said
    assert said.endswith(
        f"; the {stream.events:,} events before it are stored in timeline default/late/sim: "
        "mend the step and run again to go on from them"
    ), said
    mended = parse_scenario(text + "  - at: 900s\n    leave: c-000\n", "late.yaml")
    again = run_scenario(mended, store=store, timeline="sim", seed=1)
    assert (again.resumed, again.complete) == (stream.events, True)
    fresh = initialised_store(tmp_path / "fresh.duckdb")
    run_scenario(mended, store=fresh, timeline="sim", seed=1)
    assert list(store.events()) == list(fresh.events())


def test_the_summary_says_counts_and_lengths_as_a_reader_says_them() -> None:
    summary = Summary(
        stream=("default", "g", "sim/g"),
        protocol="eager",
        strategy="range",
        coordinator_partition=13,
        simulated_ms=6_254_000,
        events=30_306,
        rebalances=1_585,
        generation=1_585,
        members=20,
        partitions_moved=10_416,
        unowned_ms=32_699_200,
        longest_unowned_ms=3_000,
        refused=(),
    )
    lines = summary.lines()
    # were "6254.0 s, 30306 events", "1585 (...)", "10416 partitions", "32699.2 s ..."
    assert lines[2] == "simulated    1.74 h, 30,306 events"
    assert lines[3].startswith("rebalances   1,585 (generation now 1585), 20 members")
    assert lines[4] == "moved        10,416 partitions (churn: kstore docs metrics)"
    assert lines[5] == "unowned      9.08 h partition-time without an owner, longest 3 s"
    # "1 members", "1 events", "1 partitions" were said with a count of one
    one = replace(summary, events=1, rebalances=1, generation=1, members=1, partitions_moved=1)
    assert one.lines()[2:5] == [
        "simulated    1.74 h, 1 event",
        "rebalances   1 (generation now 1), 1 member",
        "moved        1 partition (churn: kstore docs metrics)",
    ]
