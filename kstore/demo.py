"""The main job (``make run``): kstore's story on an embedded default, end to end.

Answer the contract's example request; put Kafka's strategies side by side on a small
group before and after a member leaves; then the whole story on a local store
(``kstore-demo.duckdb``, made afresh): simulate an example scenario, replay its history
with two other strategies and with ``optimal`` (each decision the fewest moves at the
best balance), print the compare table, the advice (every strategy replayed, ranked
against optimal, and what it says) and write the report (``kstore-report.html``).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from kstore._examples import request, scenarios
from kstore._text import counted
from kstore.assignors import (
    AssignmentRequest,
    MemberSubscription,
    assign,
    parse_request,
    strategies,
)

__all__ = ["main"]

EXAMPLE = request()  # the shipped examples: an install has no examples/ beside it
SCENARIO = scenarios()["eager-vs-cooperative"]
STORE = Path("kstore-demo.duckdb")
REPORT = Path("kstore-report.html")
REPLAYS = ["range", "sticky", "optimal"]

KAFKA_STRATEGIES = [
    "range",
    "roundrobin",
    "sticky",
    "cooperative-sticky",
    "uniform",
    "server-range",
]


def _group(strategy: str, members: dict[str, MemberSubscription]) -> AssignmentRequest:
    return AssignmentRequest(
        strategy=strategy, topics={"orders": 12, "payments": 6, "audit": 4}, members=members
    )


def side_by_side(console: Console) -> None:
    """Six members, then c3 leaves: how much each strategy moves and how even it stays."""
    subscriptions = {
        f"c{i}": ["orders", "payments", "audit"] if i % 2 == 0 else ["orders", "payments"]
        for i in range(6)
    }
    table = Table(title="Six members, then c3 leaves (second round uses the first as owned)")
    for column in ("strategy", "loads before", "loads after", "moved", "withheld"):
        table.add_column(column)
    for strategy in [s for s in KAFKA_STRATEGIES if s in strategies()]:
        first = assign(
            _group(strategy, {m: MemberSubscription(topics=t) for m, t in subscriptions.items()})
        ).assignment
        stay = {m: t for m, t in subscriptions.items() if m != "c3"}
        second = assign(
            _group(
                strategy,
                {
                    m: MemberSubscription(topics=t, owned=first[m], generation=1)
                    for m, t in stay.items()
                },
            )
        ).assignment
        before = {tp: m for m, tps in first.items() for tp in tps}
        after = {tp: m for m, tps in second.items() for tp in tps}
        moved = sum(1 for tp, m in after.items() if before.get(tp) not in (None, "c3", m))
        withheld = 22 - len(after)
        table.add_row(
            strategy,
            " ".join(str(len(first[m])) for m in subscriptions),
            " ".join(str(len(second[m])) for m in stay),
            str(moved),
            str(withheld),
        )
    console.print(table)


def story(console: Console) -> None:
    """Simulate, replay, compare, report."""
    from kstore.analytics.advise import advise, verdict
    from kstore.analytics.pages import write_report
    from kstore.analytics.replay import replay
    from kstore.analytics.report import compare
    from kstore.commands.analytics import print_result
    from kstore.simulate import parse_scenario, run_scenario
    from kstore.store.log import Store

    for stale in (STORE, STORE.with_name(STORE.name + ".lock"), REPORT):
        stale.unlink(missing_ok=True)
    store = Store(STORE)
    store.init()
    scenario = parse_scenario(SCENARIO.read_text(encoding="utf-8"), SCENARIO.name)
    console.rule(f"simulate {SCENARIO.name} into {STORE}")
    run = run_scenario(scenario, store=store, timeline="recorded")
    group, cluster = run.stream.group, run.stream.cluster
    timelines = ["recorded"]
    for strategy in REPLAYS:
        done = replay(store, group=group, cluster=cluster, strategy=strategy)
        timelines.append(done.stream.timeline)
        console.print(
            f"replay with {strategy}: {counted(done.rebalances, 'rebalance')} "
            f"({counted(done.follow_ups, 'cooperative follow-up')}) -> {done.stream.timeline}"
        )
    console.rule(f"compare ({cluster}/{group})")
    print_result(compare(store, group, timelines, cluster), "table")
    console.rule(f"advise ({cluster}/{group}): every strategy replayed, ranked")
    advice = advise(store, group, cluster)
    print_result(advice, "table")
    for line in verdict(advice, "recorded"):
        print(line)  # whole lines, as `kstore advise` prints them (rich wraps at 80)
    plots = write_report(store, group, timelines, cluster, REPORT)
    console.print(f"report: {REPORT} ({plots} plots; open it in a browser, works offline)")


def main() -> None:
    console = Console()
    request = parse_request(EXAMPLE.read_text())
    result = assign(request)
    console.rule(f"kstore assign {EXAMPLE.name} ({request.strategy})")
    for member, partitions in result.assignment.items():
        console.print(f"{member}: {', '.join(f'{t}-{p}' for t, p in partitions) or '-'}")
    side_by_side(console)
    story(console)


if __name__ == "__main__":
    main()
