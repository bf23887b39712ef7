"""The main job (``make run``): kstore's story on an embedded default, end to end.

Today: answer the contract's example request, then put Kafka's strategies side by side
on the same small group before and after a member leaves.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from kstore.assignors import (
    AssignmentRequest,
    MemberSubscription,
    assign,
    parse_request,
    strategies,
)

__all__ = ["main"]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "request.json"

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


def main() -> None:
    console = Console()
    request = parse_request(EXAMPLE.read_text())
    result = assign(request)
    console.rule(f"kstore assign {EXAMPLE.name} ({request.strategy})")
    for member, partitions in result.assignment.items():
        console.print(f"{member}: {', '.join(f'{t}-{p}' for t, p in partitions) or '-'}")
    side_by_side(console)


if __name__ == "__main__":
    main()
