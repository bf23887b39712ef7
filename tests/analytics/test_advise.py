"""``kstore advise`` (issue 14, point 5): every strategy and optimal replayed, one table."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks._fleet import group_events
from kstore.analytics import Result
from kstore.analytics.advise import (
    ADVICE_COLUMNS,
    BELOW_OPTIMAL,
    against_optimal,
    replay_every,
    verdict,
)
from kstore.analytics.scope import replays
from kstore.model.events import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    RebalanceStarted,
    StreamId,
)
from kstore.model.strategies import CATALOGUE
from kstore.store.log import Store
from tests.processes import interrupted_when, on_a_terminal, plain
from tests.store._stores import initialised_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def kstore(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_advise_ranks_every_strategy_against_optimal(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    assert kstore(store, "init").returncode == 0
    scenario = EXAMPLES / "eager-vs-cooperative.yaml"
    assert kstore(store, "simulate", str(scenario), "--timeline", "recorded").returncode == 0
    out = kstore(store, "advise", "--group", "eager-vs-cooperative", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["strategy"] for r in rows} == {*CATALOGUE, "recorded (cooperative-sticky)"}
    for row in rows:
        name = row["strategy"].removeprefix("recorded (").removesuffix(")")
        assert row["protocol"] == CATALOGUE[name].protocol
        assert row["disruption"] == row["churn"] + row["unassigned"]
        assert row["churn_above_optimal"] >= 0 and row["disruption_above_optimal"] >= 0
    (optimal,) = [r for r in rows if r["strategy"] == "optimal"]
    assert optimal["churn_above_optimal"] == 0
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [r["disruption"] for r in rows] == sorted(r["disruption"] for r in rows)
    # the numbers are compare's, timeline by timeline
    compared = {
        r["timeline"]: r
        for r in json.loads(
            kstore(store, "compare", "--group", "eager-vs-cooperative", "--format", "json").stdout
        )
    }
    for row in rows:
        assert row["churn"] == compared[row["timeline"]]["churn"]
    # a second advice reuses the stored replays: nothing appended, same table
    events = kstore(store, "streams", "--format", "json").stdout
    again = kstore(store, "advise", "--group", "eager-vs-cooperative", "--format", "json")
    assert json.loads(again.stdout) == rows
    assert kstore(store, "streams", "--format", "json").stdout == events
    table = kstore(store, "advise", "--group", "eager-vs-cooperative")
    # the first of the strategies that moved least (here the three stickies tie)
    best = next(
        r for r in rows if r["strategy"] not in ("optimal", "recorded (cooperative-sticky)")
    )
    assert best["strategy"].endswith("sticky") and best["protocol"] == "eager", best
    assert f"would have moved least: {best['strategy']} (eager protocol)" in table.stdout
    # ... and the least of each protocol beside it, with what disruption leaves out
    # (the lone line ranked eager sticky first as if its pauses were free: user trial)
    least = {}
    for row in rows:
        if row["strategy"] != "optimal" and not row["strategy"].startswith("recorded"):
            least.setdefault(row["protocol"], row)
    said = ", ".join(f"{p} {r['strategy']} {r['disruption']:,}" for p, r in least.items())
    assert f"least disruption by protocol: {said}\n" in table.stdout
    assert {"eager", "cooperative", "consumer"} <= set(least)
    assert "an eager rebalance also stops every partition" in table.stdout
    bad = kstore(store, "advise", "--group", "eager-vs-cooperative", "--strategies", "stiky")
    assert bad.returncode == 2 and "did you mean sticky" in bad.stderr


def test_a_count_under_optimal_is_said_below_it() -> None:
    assert against_optimal(-10) == "10 below optimal"  # was "-10 above optimal"
    assert against_optimal(1_200) == "1,200 above optimal"


def _simulated(tmp_path: Path) -> Path:
    """A store holding eager-vs-cooperative as recorded (a cooperative history)."""
    store = tmp_path / "s.duckdb"
    assert kstore(store, "init").returncode == 0
    scenario = EXAMPLES / "eager-vs-cooperative.yaml"
    assert kstore(store, "simulate", str(scenario), "--timeline", "recorded").returncode == 0
    return store


def _said_under_the_table(stdout: str) -> list[str]:
    """The lines ``advise`` prints after its table, the first of them "would have moved
    least" (a table drawn either way: a grid, or a block per row in a narrow terminal)."""
    return stdout[stdout.index("would have moved least: ") :].splitlines()


def test_the_reports_advice_says_what_the_cli_says_under_its_table(tmp_path: Path) -> None:
    """The report's Advice section had the table alone: not the least disruptive strategy
    of each protocol, the eager caveat nor "N above optimal" (user trial)."""
    store = _simulated(tmp_path)
    table = kstore(store, "advise", "--group", "eager-vs-cooperative")
    assert table.returncode == 0, table.stderr
    said = _said_under_the_table(table.stdout)
    assert said[0].startswith("would have moved least: ") and "above optimal" in said[0]
    assert said[1].startswith("least disruption by protocol: eager ")
    assert said[2].startswith("an eager rebalance also stops every partition")
    page = tmp_path / "r.html"
    made = kstore(store, "report", "--group", "eager-vs-cooperative", "--out", str(page))
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    start = text.index("<h2>Advice")
    section = text[start : text.index("<h2>", start + 1)]
    shown = [html.unescape(p) for p in re.findall(r"<p class='verdict'>(.*?)</p>", section)]
    assert shown == said


def test_csv_json_and_jsonl_keep_the_rows_clean_and_say_the_verdict_on_stderr(
    tmp_path: Path,
) -> None:
    """--format csv (json, jsonl) dropped the lines said under the table silently (user
    trial): standard output has the rows alone, standard error the verdict as notes."""
    store = _simulated(tmp_path)
    group = ("advise", "--group", "eager-vs-cooperative")
    table = kstore(store, *group)
    said = _said_under_the_table(table.stdout)
    assert len(said) == 3
    notes = [f"kstore: note: {line}" for line in said]
    as_csv = kstore(store, *group, "--format", "csv")
    assert as_csv.returncode == 0, as_csv.stderr
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert len(rows) == len(CATALOGUE) + 1  # every strategy, optimal among them, and recorded
    assert as_csv.stderr.splitlines() == notes
    as_json = kstore(store, *group, "--format", "json")
    assert [r["strategy"] for r in json.loads(as_json.stdout)] == [r["strategy"] for r in rows]
    assert as_json.stderr.splitlines() == notes
    as_jsonl = kstore(store, *group, "--format", "jsonl")
    lines = as_jsonl.stdout.splitlines()
    assert [json.loads(line)["strategy"] for line in lines] == [r["strategy"] for r in rows]
    assert as_jsonl.stderr.splitlines() == notes
    # the table's own standard error says none of it
    assert "would have moved least" not in table.stderr


def _stored(store: Store) -> dict[str, int]:
    """Timeline -> its events, of group g."""
    return {s.stream.timeline: s.events for s in store.streams() if s.stream.group == "g"}


def test_ctrl_c_during_advise_names_the_stored_replays_and_a_rerun_reuses_them(
    tmp_path: Path,
) -> None:
    """A real ``kstore advise`` sent SIGINT while its second replay runs said only
    ``kstore: interrupted`` (user trial); now one line names the replays stored complete
    and the one stopped part way, and says the same command again reuses them: it
    does, reading the whole ones as they are and continuing the other."""
    db = tmp_path / "ctrl-c.duckdb"
    store = initialised_store(db)
    store.append(list(group_events("g", 1000, seed=11)))
    command = [sys.executable, "-m", "kstore.cli", "--store", str(db), "advise", "--group", "g"]
    command += ["--strategies", "range,sticky,cooperative-sticky"]
    # once range is whole and sticky has stored a batch
    returncode, out, err = interrupted_when(command, lambda: "replay/sticky" in _stored(store), 120)
    assert returncode == 130, err
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    said = re.fullmatch(
        r"kstore: advise interrupted: (\d+) of 4 replays stored complete \(([^)]*)\)"
        r"(?:; (replay/\S+) stopped part way with ([\d,]+) events stored, continued next "
        r"time)?; the same command again reuses them: (.*)\n",
        err,
    )
    assert said is not None, err
    whole = said.group(2).split(", ")
    assert (
        int(said.group(1)) == len(whole)
        and whole == ["range", "sticky", "cooperative-sticky"][: len(whole)]
    )
    assert shlex.split(said.group(5))[1:] == command[3:]
    at_stop = _stored(store)
    if said.group(3) is not None:  # the replay at hand, its events as stored
        assert at_stop[said.group(3)] == int(said.group(4).replace(",", ""))
    # the timelines said whole are complete
    compared = json.loads(kstore(db, "compare", "--group", "g", "--format", "json").stdout)
    complete = {r["timeline"] for r in compared if r["complete"]}
    assert {f"replay/{name}" for name in whole} <= complete
    again = subprocess.run(command, capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    after = _stored(store)
    for name in whole:  # read as stored: nothing appended
        assert after[f"replay/{name}"] == at_stop[f"replay/{name}"]
    if said.group(3) is not None:  # continued from where it stopped
        assert after[said.group(3)] > at_stop[said.group(3)]
    rows = json.loads(
        kstore(
            db,
            "advise",
            "--group",
            "g",
            "--strategies",
            "range,sticky,cooperative-sticky",
            "--format",
            "json",
        ).stdout
    )
    assert len(rows) == 5 and all(r["complete"] for r in rows)
    assert _stored(store) == after


def test_advise_shows_a_bar_on_a_terminal_only(tmp_path: Path) -> None:
    """83 s of blank screen on a 2,000-rebalance history (user trial): a bar counting
    the source events replayed over every replay, with the time left; none piped."""
    db = tmp_path / "bar.duckdb"
    initialised_store(db).append(list(group_events("g", 200, seed=3)))
    command = [sys.executable, "-m", "kstore.cli", "--store", str(db), "advise", "--group", "g"]
    command += ["--strategies", "range,sticky"]
    returncode, text = on_a_terminal(command, columns=160)
    assert returncode == 0, text
    shown = plain(text)
    assert "advise default/g (3 replays)" in shown, shown
    counts = [
        (int(d.replace(",", "")), int(t.replace(",", "")))
        for d, t in re.findall(r"([\d,]+)/([\d,]+) source events", shown)
    ]
    assert counts, shown
    events = _stored(Store(db))["recorded"]
    assert {total for _, total in counts} == {3 * events}  # every replay reads the source
    piped = subprocess.run([*command, "--format", "csv"], capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr, piped.stderr
    assert all(line.startswith("kstore: note: ") for line in piped.stderr.splitlines())


def test_a_second_advise_reads_the_replays_stored_whole_and_resumes_those_a_rebalance_outgrew(
    tmp_path: Path,
) -> None:
    """advise again on a store whose replays were all complete decided the whole history
    again to check each against what was stored (25 s on 2,000 rebalances); now a replay
    of the source by its strategy that coverage says is complete is read as done (nothing
    read, decided or appended), and one the source outgrew by a rebalance is continued."""
    events = list(group_events("g", 60, seed=5))
    cut = max(i for i, e in enumerate(events) if isinstance(e.data, RebalanceStarted))
    store = initialised_store(tmp_path / "s.duckdb")
    store.append(events[:cut])
    names = ["range", "sticky", "cooperative-sticky"]
    first = replay_every(store, "g", "default", "recorded", names)
    assert [r.complete and not r.reused and r.events > 0 for r in first] == [True] * 4
    stored = _stored(store)
    told: list[tuple[int, int]] = []
    again = replay_every(
        store, "g", "default", "recorded", names, progress=lambda *a: told.append(a)
    )
    assert [(r.stream.timeline, r.reused, r.complete, r.events, r.rebalances) for r in again] == [
        (f"replay/{n}", True, True, 0, 0) for n in [*names, "optimal"]
    ]
    assert [r.resumed for r in again] == [stored[r.stream.timeline] for r in again]
    assert _stored(store) == stored
    assert told[-1] == (4 * stored["recorded"], 4 * stored["recorded"])
    # the source grows by a rebalance: each replay is partial, and continued
    store.append(events[cut:])
    assert set(replays(store, "default", "g")[("default", "g")].values()) == {False}
    grown = replay_every(store, "g", "default", "recorded", names)
    assert [(r.reused, r.complete, r.resumed) for r in grown] == [
        (False, True, stored[r.stream.timeline]) for r in grown
    ]
    assert all(r.events > 0 for r in grown)
    assert set(replays(store, "default", "g")[("default", "g")].values()) == {True}
    # ... as a replay of the whole source in one go stores them
    fresh = initialised_store(tmp_path / "fresh.duckdb")
    fresh.append(events)
    replay_every(fresh, "g", "default", "recorded", names)
    assert _stored(fresh) == _stored(store)


def _side_by_side(tmp_path: Path) -> Path:
    """A store holding eager-vs-cooperative twice, as its header says to run it: two
    timelines of one group that are no replay (sim/eager, sim/coop), no recorded."""
    store = tmp_path / "s.duckdb"
    assert kstore(store, "init").returncode == 0
    scenario = str(EXAMPLES / "eager-vs-cooperative.yaml")
    for protocol, name in (("eager", "sim/eager"), ("cooperative", "sim/coop")):
        made = kstore(store, "simulate", scenario, "--protocol", protocol, "--timeline", name)
        assert made.returncode == 0, made.stderr
    return store


def _sources(store: Path) -> dict[str, str]:
    """Timeline -> its source, as ``query timelines`` shows them."""
    shown = kstore(
        store, "query", "timelines", "--group", "eager-vs-cooperative", "--format", "json"
    )
    assert shown.returncode == 0, shown.stderr
    return {r["timeline"]: r["source"] for r in json.loads(shown.stdout)}


def test_two_advises_from_two_sources_of_one_group_each_replay_their_own(
    tmp_path: Path,
) -> None:
    """advise --from sim/coop after advise --from sim/eager failed (user trial): every
    replay was replay/<strategy> whatever its source, so the second found replay/range
    made from sim/eager, and its hint named --timeline, which advise has not. Now a
    source other than the group's default one replays into replay/<source>/<strategy>,
    each advice ranks its own source's replays, and each again reuses them."""
    store = _side_by_side(tmp_path)
    group = ("advise", "--group", "eager-vs-cooperative", "--strategies", "range,sticky")
    tables = {}
    for source in ("sim/eager", "sim/coop"):
        out = kstore(store, *group, "--from", source, "--format", "json")
        assert out.returncode == 0, out.stderr
        tables[source] = json.loads(out.stdout)
    sources = _sources(store)
    for source, rows in tables.items():
        assert sorted(r["timeline"] for r in rows) == sorted(
            [source, *(f"replay/{source}/{n}" for n in ("range", "sticky", "optimal"))]
        )
        assert {sources[r["timeline"]] for r in rows} == {source}
        assert all(r["complete"] for r in rows)
    streams = kstore(store, "streams", "--format", "json").stdout
    for source, rows in tables.items():  # again: the stored replays are read as done
        again = kstore(store, *group, "--from", source, "--format", "json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout) == rows
    assert kstore(store, "streams", "--format", "json").stdout == streams
    # kstore replay names its replays so too, and compare reads them
    one = kstore(
        store,
        "replay",
        "--group",
        "eager-vs-cooperative",
        "--from",
        "sim/coop",
        "--strategy",
        "cooperative-sticky",
    )
    assert one.returncode == 0, one.stderr
    assert "into timeline 'replay/sim/coop/cooperative-sticky'" in one.stdout
    assert _sources(store)["replay/sim/coop/cooperative-sticky"] == "sim/coop"


def test_the_default_sources_replays_keep_their_names_and_are_reused_after_another_source(
    tmp_path: Path,
) -> None:
    """The group's default source (recorded, else its one timeline that is no replay)
    keeps replay/<strategy>; a replay stored so while a simulated source was the
    group's only one stays that source's (reused) once a second one is simulated."""
    store = tmp_path / "s.duckdb"
    assert kstore(store, "init").returncode == 0
    scenario = str(EXAMPLES / "eager-vs-cooperative.yaml")
    made = kstore(store, "simulate", scenario, "--protocol", "eager", "--timeline", "sim/eager")
    assert made.returncode == 0, made.stderr
    group = ("advise", "--group", "eager-vs-cooperative", "--strategies", "range")
    first = kstore(store, *group, "--format", "json")  # sim/eager taken unasked
    assert first.returncode == 0, first.stderr
    rows = json.loads(first.stdout)
    assert {r["timeline"] for r in rows} == {"sim/eager", "replay/range", "replay/optimal"}
    made = kstore(store, "simulate", scenario, "--timeline", "sim/coop")
    assert made.returncode == 0, made.stderr
    streams = kstore(store, "streams", "--format", "json").stdout
    again = kstore(store, *group, "--from", "sim/eager", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == rows
    assert kstore(store, "streams", "--format", "json").stdout == streams
    other = kstore(store, *group, "--from", "sim/coop", "--format", "json")
    assert other.returncode == 0, other.stderr
    assert {r["timeline"] for r in json.loads(other.stdout)} == {
        "sim/coop",
        "replay/sim/coop/range",
        "replay/sim/coop/optimal",
    }


def test_advise_says_what_to_do_with_an_option_it_has_when_its_replays_name_is_taken(
    tmp_path: Path,
) -> None:
    """The error for a timeline holding another history under the name of advise's
    replay named --timeline (user trial), which advise has not: now --strategies."""
    store = _simulated(tmp_path)
    scenario = str(EXAMPLES / "eager-vs-cooperative.yaml")
    # a simulation that is no replay, named as advise's replay of recorded with range
    made = kstore(store, "simulate", scenario, "--protocol", "eager", "--timeline", "replay/range")
    assert made.returncode == 0, made.stderr
    group = ("advise", "--group", "eager-vs-cooperative")
    taken = kstore(store, *group, "--strategies", "range")
    assert taken.returncode == 2 and taken.stderr.count("\n") == 1, taken.stderr
    assert "timeline 'replay/range' of default/eager-vs-cooperative is not a prefix" in taken.stderr
    assert taken.stderr.endswith(
        "advise stores its replay of recorded with range there; leave range out of --strategies\n"
    )
    assert "--timeline" not in taken.stderr
    left = kstore(store, *group, "--strategies", "sticky", "--format", "json")
    assert left.returncode == 0, left.stderr
    # (the simulation named replay/range is ranked too: it reads as a replay stored by a
    # kstore before decisions named their source)
    assert {r["timeline"] for r in json.loads(left.stdout)} >= {
        "recorded",
        "replay/sticky",
        "replay/optimal",
    }


def _advice_section(page: Path) -> str:
    text = page.read_text()
    start = text.index("<h2>Advice")
    return text[start : text.index("<h2>", start + 1)]


def test_report_advises_from_the_source_given_with_from_or_says_which_to_give(
    tmp_path: Path,
) -> None:
    """kstore report said "no source timeline to advise from" on a group of two
    timelines that are no replay, and had no --from (user trial): now --from as advise's,
    and without it the line naming the candidates and --from, in the page and on stderr."""
    store = _side_by_side(tmp_path)
    page = tmp_path / "r.html"
    report = ("report", "--group", "eager-vs-cooperative", "--out", str(page))
    unsaid = kstore(store, *report)
    assert unsaid.returncode == 0, unsaid.stderr
    which = (
        "group default/eager-vs-cooperative has no 'recorded' timeline: give --from "
        "(one of: sim/coop, sim/eager)"
    )
    assert unsaid.stderr == f"kstore: note: no advice: {which}\n"
    assert html.unescape(_advice_section(page)).count(which) == 1
    # with --from, before advise: how to get the advice of that source
    before = kstore(store, *report, "--from", "sim/coop")
    assert before.returncode == 0 and before.stderr == "", before.stderr
    assert "kstore advise --group eager-vs-cooperative --from sim/coop" in html.unescape(
        _advice_section(page)
    )
    advised = kstore(store, "advise", "--group", "eager-vs-cooperative", "--from", "sim/coop")
    assert advised.returncode == 0, advised.stderr
    made = kstore(store, *report, "--from", "sim/coop")
    assert made.returncode == 0, made.stderr
    section = _advice_section(page)
    shown = [html.unescape(p) for p in re.findall(r"<p class='verdict'>(.*?)</p>", section)]
    assert shown == _said_under_the_table(advised.stdout)
    assert "replay/sim/coop/optimal" in section and "sim/eager" not in section
    # the same option as advise's, checked the same way
    wrong = kstore(store, *report, "--from", "sim/coo")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
    assert "no timeline 'sim/coo'" in wrong.stderr and "sim/coop" in wrong.stderr
    fleet = kstore(store, "report", "--fleet", "--out", str(tmp_path / "f"), "--from", "sim/coop")
    assert fleet.returncode == 2 and "--from" in fleet.stderr, fleet.stderr


def test_report_from_has_advises_help() -> None:
    import typer

    from kstore.cli import app

    commands = typer.main.get_group(app).commands
    helps = {
        name: [(p.opts, p.help) for p in commands[name].params if "--from" in p.opts]
        for name in ("advise", "report")
    }
    assert helps["report"] == helps["advise"] != []


def _advice_row(strategy: str, protocol: str, churn: int, above: int) -> tuple[object, ...]:
    values = {
        "strategy": strategy,
        "protocol": protocol,
        "timeline": f"replay/{strategy}",
        "complete": True,
        "rebalances": 30,
        "churn": churn,
        "unassigned": 0,
        "disruption": churn,
        "churn_above_optimal": above,
        "disruption_above_optimal": above,
        "stickiness": 0.9,
        "imbalance": 0.8,
    }
    return tuple(values.get(c, 0) for c in ADVICE_COLUMNS)


def test_a_verdict_below_optimal_says_why_a_strategy_can_be_below_it() -> None:
    """ "would have moved least: sticky ..., churn 51 (4 below optimal)" with no why
    (user trial): optimal is a bound per rebalance, not over a history; the line after
    it says so, in docs/analytics.md's words, and only where the verdict is below."""
    below = Result(
        list(ADVICE_COLUMNS),
        [_advice_row("sticky", "eager", 51, -4), _advice_row("optimal", "eager", 55, 0)],
    )
    said = verdict(below, "recorded")
    assert "(4 below optimal)" in said[0]
    assert said[1] == BELOW_OPTIMAL
    assert (
        "the fewest moves among the best-balanced assignments, decided rebalance by "
        "rebalance on its own previous assignment" in said[1]
    )
    docs = (Path(__file__).resolve().parents[2] / "docs" / "analytics.md").read_text()
    words = " ".join(docs.split()).replace("*", "")
    assert (
        "optimal is the fewest moves among the best-balanced assignments, decided rebalance "
        "by rebalance on its own previous assignment" in words
    )
    above = Result(
        list(ADVICE_COLUMNS),
        [_advice_row("optimal", "eager", 55, 0), _advice_row("sticky", "eager", 56, 1)],
    )
    assert not any("below" in line for line in verdict(above, "recorded"))


def test_the_cli_and_the_report_say_why_below_optimal_alike(tmp_path: Path) -> None:
    """A generated steady churn, where sticky ends below optimal over the history: the
    CLI's line after its verdict, and the report's Advice section the same."""
    store = tmp_path / "s.duckdb"
    assert kstore(store, "init").returncode == 0
    made = kstore(store, "simulate", "--generate", "steady-churn", "--steps", "30")
    assert made.returncode == 0, made.stderr
    group = "steady-churn-10-30-0"
    table = kstore(store, "advise", "--group", group, "--strategies", "sticky")
    assert table.returncode == 0, table.stderr
    said = _said_under_the_table(table.stdout)
    assert "below optimal" in said[0] and said[1] == BELOW_OPTIMAL, said
    page = tmp_path / "r.html"
    assert kstore(store, "report", "--group", group, "--out", str(page)).returncode == 0
    shown = re.findall(r"<p class='verdict'>(.*?)</p>", _advice_section(page))
    assert [html.unescape(p) for p in shown] == said


def test_advise_and_the_report_read_the_groups_strategies_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """strategies_of (a GROUP BY over every rebalance of the group) ran three times per
    advise and per report (review): stored_whole, advice and compare each read it. Now
    once, passed on; replay_every adds each replay it stores to it, so the advice read
    after the replays is the same as a fresh read's."""
    import kstore.analytics.advise as advise_module
    import kstore.analytics.pages as pages_module
    import kstore.analytics.report as report_module

    store = initialised_store(tmp_path / "s.duckdb")
    store.append(list(group_events("g", 40, seed=2)))
    runs: list[str] = []
    real = report_module.strategies_of

    def counted(store: Store, group: str, cluster: str) -> dict[str, str]:
        runs.append(group)
        return real(store, group, cluster)

    for module in (advise_module, pages_module, report_module):
        monkeypatch.setattr(module, "strategies_of", counted, raising=False)
    table = advise_module.advise(store, "g", "default", "recorded", ["range", "sticky"])
    assert len(runs) == 1
    runs.clear()
    assert advise_module.advice(store, "g", "default") == table  # a fresh read: the same
    runs.clear()
    pages_module.write_report(store, "g", ["recorded"], "default", tmp_path / "r.html")
    assert len(runs) == 1


def test_advise_and_the_report_read_the_groups_sources_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coverage query (a parse of every decision of the group) ran four times per
    kstore advise and eight per kstore report (review): the source, the replays' names,
    the advice's timelines and the report's replays each read it again. Now the group's
    Sources are read once per command, and once more by advise after its replays."""
    import kstore.analytics.pages as pages_module
    import kstore.analytics.scope as scope_module
    from kstore.commands.analytics import print_advice, report

    path = tmp_path / "s.duckdb"
    initialised_store(path).append(list(group_events("g", 40, seed=2)))
    runs: list[str] = []
    real = scope_module.run_query

    def counted(store: Store, name: str, params: Mapping[str, Any]) -> Result:
        runs.append(name)
        return real(store, name, params)

    for module in (scope_module, pages_module):
        monkeypatch.setattr(module, "run_query", counted)
    options = {"group": "g", "cluster": None, "source": None}
    print_advice(path, **options, strategies="range,sticky", output="json")
    assert runs.count("coverage") == 2
    runs.clear()
    report(path, **options, timelines=None, out=tmp_path / "r.html")
    assert runs.count("coverage") == 1
    assert "<h2>Advice" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_fleet_reads_every_groups_sources_in_one_coverage_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """report --fleet ran the coverage query once for the ranking, then once more per
    group for its report (review): a scan of the store's decisions per group. Now the
    ranking's one read gives each group's report its sources; the pages are the same."""
    import kstore.analytics.pages as pages_module
    import kstore.analytics.scope as scope_module

    store = initialised_store(tmp_path / "s.duckdb")
    for seed, name in enumerate(["a", "b", "c"]):
        store.append(list(group_events(name, 20, seed=seed)))
    replay_every(store, "b", "default", "recorded", ["range"])
    runs: list[str] = []
    real = scope_module.run_query

    def counted(store: Store, name: str, params: Mapping[str, Any]) -> Result:
        runs.append(name)
        return real(store, name, params)

    monkeypatch.setattr(scope_module, "run_query", counted)
    monkeypatch.setattr(pages_module, "run_query", counted)
    ranked, left_out = pages_module.write_fleet(store, tmp_path / "fleet")
    assert (ranked, runs.count("coverage")) == (3, 1)
    assert not any(left_out.values())
    index = (tmp_path / "fleet" / "index.html").read_text(encoding="utf-8")
    assert "<td>2</td></tr>" in index  # b's two replays, neither partial


def test_an_advise_reusing_its_replays_reads_their_sizes_with_the_groups_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """replay_every asked the store for the version of each replay read as done and of
    its source again, two reads of the store per replay (12 ms each on a busy host, a
    quarter of a second for the catalogue), where the group's Sources had them (review).
    Now none: the results are the same."""
    events = list(group_events("g", 30, seed=5))
    last = max(i for i, e in enumerate(events) if isinstance(e.data, AssignmentCompleted))
    store = initialised_store(tmp_path / "s.duckdb")
    store.append(events[: last + 1])  # its last event a decision: no copy to look for
    names = ["range", "sticky"]
    first = replay_every(store, "g", "default", "recorded", names)
    asked: list[StreamId] = []
    real = Store.version

    def counted(self: Store, stream: StreamId) -> int:
        asked.append(stream)
        return real(self, stream)

    monkeypatch.setattr(Store, "version", counted)
    again = replay_every(store, "g", "default", "recorded", names)
    assert asked == []
    assert [d.reused for d in again] == [True, True, True]
    assert [d.resumed for d in again] == [d.resumed + d.events for d in first]


def _replay_events(store: Store, timeline: str) -> list[object]:
    return [s.event for s in store.events(cluster="default", group="g", timeline=timeline)]


def test_a_replay_whose_source_gained_events_after_its_last_decision_is_continued_not_reused(
    tmp_path: Path,
) -> None:
    """stored_whole read a replay as done where coverage says complete: decided up to
    the source's last version, which events after the source's last decision (a member
    joining with no rebalance yet, a fact that a member did not take the decision up)
    do not change (review). The replay did not hold their copies, and advise reused it
    as it was: not what a replay of the source now stores. Now such a replay is
    continued, and ends as a fresh replay of the source does."""
    events = list(group_events("g", 30, seed=5))
    last = max(i for i, e in enumerate(events) if isinstance(e.data, AssignmentCompleted))
    store = initialised_store(tmp_path / "s.duckdb")
    store.append(events[: last + 1])
    names = ["range"]
    replay_every(store, "g", "default", "recorded", names)
    decided = events[last]
    assert isinstance(decided.data, AssignmentCompleted)
    topics = sorted({t for tps in decided.data.assignment.values() for t, _ in tps})
    joined = Event(
        cluster="default",
        group="g",
        at=decided.at + timedelta(seconds=1),
        data=MemberJoined(member_id="late", topics=topics),
    )
    store.append([joined])
    again = replay_every(store, "g", "default", "recorded", names)
    assert [(r.reused, r.complete) for r in again] == [(False, True), (False, True)]
    fresh = initialised_store(tmp_path / "fresh.duckdb")
    fresh.append([*events[: last + 1], joined])
    replay_every(fresh, "g", "default", "recorded", names)
    for timeline in ("replay/range", "replay/optimal"):
        assert _replay_events(store, timeline) == _replay_events(fresh, timeline)
    # whole now: read as done
    assert [r.reused for r in replay_every(store, "g", "default", "recorded", names)] == [
        True,
        True,
    ]
