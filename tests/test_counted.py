"""Counts of one are said in the singular: "1 rebalance", not "1 rebalances"."""

from __future__ import annotations

from pathlib import Path

from kstore._text import counted
from tests.processes import kstore_cli


def test_counted_says_one_in_the_singular() -> None:
    assert counted(1, "rebalance") == "1 rebalance"
    assert counted(0, "rebalance") == "0 rebalances"
    assert counted(2_000, "rebalance") == "2,000 rebalances"
    assert counted(1, "follow-up round") == "1 follow-up round"
    assert counted(3, "entry", "entries") == "3 entries"


def test_a_group_of_one_rebalance_is_said_so_through_the_cli(tmp_path: Path) -> None:
    # replay said "1 rebalances (0 follow-up rounds)", simulate "1 members"
    scenario = tmp_path / "one.yaml"
    scenario.write_text("name: one\ntopics: {t: 1}\nmembers: [{topics: [t]}]\nuntil: 1m\n")
    store = tmp_path / "s.duckdb"
    done = kstore_cli(store, "simulate", str(scenario))
    assert done.returncode == 0, done.stderr
    assert "rebalances   1 (generation now 1), 1 member\n" in done.stdout
    done = kstore_cli(store, "replay", "--group", "one", "--strategy", "sticky")
    assert done.returncode == 0, done.stderr
    assert ", 1 rebalance (0 follow-up rounds), " in done.stdout, done.stdout
