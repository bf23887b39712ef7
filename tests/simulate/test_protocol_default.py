"""Which protocol a simulation runs when ``--protocol`` is not given: Kafka's rule
(cooperative when every member offers only cooperative strategies), the scenario's own
``protocol:`` over it, and ``--protocol`` over both."""

from __future__ import annotations

from pathlib import Path

import pytest

from kstore.model.strategies import (
    CATALOGUE,
    COOPERATIVE_STRATEGIES,
    classic_protocol,
)
from kstore.simulate import generate, parse_scenario
from tests.processes import kstore_cli

GENERATED = ["simulate", "--generate", "steady-churn", "--members", "12", "--steps", "40"]


def _summary(store: Path, *args: str) -> list[str]:
    """The summary's lines but the store's (the file differs between runs)."""
    done = kstore_cli(store, *args)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("store ")]


def test_cooperative_sticky_alone_runs_the_cooperative_protocol(tmp_path: Path) -> None:
    # It ran eager ("protocol eager (cooperative-sticky)"): 9,433 partitions moved in the
    # user's trial where the cooperative protocol moves 448.
    strategy = ["--strategy", "cooperative-sticky"]
    alone = _summary(tmp_path / "alone.duckdb", *GENERATED, *strategy)
    asked = _summary(tmp_path / "asked.duckdb", *GENERATED, *strategy, "--protocol", "cooperative")
    eager = _summary(tmp_path / "eager.duckdb", *GENERATED, *strategy, "--protocol", "eager")
    assert alone[1].startswith("protocol     cooperative (cooperative-sticky)"), alone
    assert alone == asked  # the same run: moved, rebalances, events
    moved = [line for line in alone if line.startswith("moved")]
    assert moved and moved != [line for line in eager if line.startswith("moved")]
    # --protocol eager still runs cooperative-sticky under eager (Kafka allows it)
    assert eager[1].startswith("protocol     eager (cooperative-sticky)"), eager


def test_an_eager_strategy_alone_stays_eager(tmp_path: Path) -> None:
    for strategy in ("range", "sticky"):
        said = _summary(tmp_path / f"{strategy}.duckdb", *GENERATED, "--strategy", strategy)
        assert said[1].startswith(f"protocol     eager ({strategy})"), said
    said = _summary(tmp_path / "none.duckdb", *GENERATED)
    assert said[1].startswith("protocol     eager (range)"), said


def test_the_scenarios_protocol_wins_over_the_rule_and_the_flag_over_both(
    tmp_path: Path,
) -> None:
    eager = tmp_path / "eager.yaml"
    eager.write_text(
        "name: e\nprotocol: eager\nstrategy: range\ntopics: {t: 6}\n"
        "members: [{count: 3, topics: [t]}]\nsteps: [{at: 10s, crash: c-001}]\n"
    )
    done = kstore_cli(
        tmp_path / "a.duckdb", "simulate", str(eager), "--strategy", "cooperative-sticky"
    )
    assert done.returncode == 0, done.stderr
    assert "protocol     eager (cooperative-sticky)" in done.stdout
    # the user asking for cooperative-sticky gets eager's numbers: said, on one line
    assert done.stderr == (
        "kstore: note: e sets protocol eager: cooperative-sticky runs under it "
        "(--protocol cooperative for the cooperative protocol)\n"
    )
    flag = ["--strategy", "cooperative-sticky", "--protocol", "cooperative"]
    done = kstore_cli(tmp_path / "b.duckdb", "simulate", str(eager), *flag)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "protocol     cooperative (cooperative-sticky)" in done.stdout

    cooperative = tmp_path / "coop.yaml"
    cooperative.write_text(eager.read_text().replace("eager\nstrategy: range", "cooperative"))
    # was a pydantic ValidationError dumped on one long line
    done = kstore_cli(tmp_path / "c.duckdb", "simulate", str(cooperative), "--strategy", "range")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kstore: error: --strategy range: e's protocol cooperative needs a cooperative "
        "strategy (cooperative-sticky); add --protocol eager to run it eager\n"
    )
    done = kstore_cli(
        tmp_path / "c.duckdb", "simulate", str(cooperative), "--strategy", "range",
        "--protocol", "eager",
    )  # fmt: skip
    assert done.returncode == 0 and "protocol     eager (range)" in done.stdout, done.stderr
    done = kstore_cli(
        tmp_path / "d.duckdb", "simulate", str(cooperative), "--strategy", "range",
        "--protocol", "cooperative",
    )  # fmt: skip
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    assert done.stderr.startswith("kstore: error: --strategy range: --protocol cooperative needs")


@pytest.mark.parametrize(
    ("members", "strategy", "protocol"),
    [
        ("[{topics: [t], protocols: [cooperative-sticky]}]", None, "cooperative"),
        ("[{topics: [t]}]", "cooperative-sticky", "cooperative"),
        # Kafka's upgrade path: an eager assignor in the list keeps the member eager
        ("[{topics: [t], protocols: [cooperative-sticky, range]}]", None, "eager"),
        (
            "[{topics: [t], protocols: [cooperative-sticky]}, {topics: [t], protocols: [sticky]}]",
            None,
            "eager",
        ),
        ("[{topics: [t]}]", None, "eager"),
        ("[{topics: [t]}]", "sticky", "eager"),
    ],
)
def test_a_scenario_without_a_protocol_follows_its_members_assignors(
    members: str, strategy: str | None, protocol: str
) -> None:
    text = f"name: x\ntopics: {{t: 4}}\nmembers: {members}\n"
    if strategy is not None:
        text += f"strategy: {strategy}\n"
    scenario = parse_scenario(text, "x.yaml")
    assert scenario.rebalance_protocol == protocol
    assert scenario.default_strategy == (
        strategy or ("cooperative-sticky" if protocol == "cooperative" else "range")
    )


def test_a_generated_scenario_names_no_protocol_unless_given() -> None:
    made = generate("steady-churn", members=3, steps=2, seed=0)
    assert (made.protocol, made.rebalance_protocol) == (None, "eager")
    made = generate("steady-churn", members=3, steps=2, seed=0, protocol="cooperative")
    assert made.rebalance_protocol == "cooperative"


def test_the_rule_is_kafkas_and_its_list_the_catalogues() -> None:
    assert set(COOPERATIVE_STRATEGIES) == {
        name for name, entry in CATALOGUE.items() if entry.protocol == "cooperative"
    }
    assert "cooperative-sticky" in COOPERATIVE_STRATEGIES
    assert "librdkafka:cooperative-sticky" in COOPERATIVE_STRATEGIES
    assert classic_protocol([["cooperative-sticky"], ["cooperative-sticky"]]) == "cooperative"
    assert classic_protocol([["cooperative-sticky"], ["cooperative-sticky", "range"]]) == "eager"
    assert classic_protocol([]) == "eager"  # no member: nothing says cooperative
    assert classic_protocol([[]]) == "eager"
