"""Comparisons of a group's timelines; the HTML report and the fleet page.

``compare`` is the ``compare`` query, plus, when one of the timelines was decided by
``optimal``, each timeline's churn and disruption (churn + unassigned) above it; a
partial timeline (a replay that has not decided up to its source's last version) is
compared over the prefix it covers, and ``partial`` says so in a line each.
``write_report`` writes one self-contained page (kstore/analytics/pages.py) that reads
at any size; ``write_fleet`` a page ranking every group of the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kstore._errors import UsageError
from kstore.analytics._queries import Result, run_query
from kstore.analytics.scope import sources_of
from kstore.store.log import Store

__all__ = ["compare", "partial", "strategies_of", "timelines_of"]


def timelines_of(store: Store, group: str, cluster: str) -> list[str]:
    """The group's timelines, its source first (``recorded``, else its one timeline that
    is no replay: ``scope.source_timeline``'s rule), then the others by name
    (``Sources.ordered``)."""
    names = sources_of(store, cluster, group).ordered()
    if not names:
        raise UsageError(f"no timeline of group {group!r} in cluster {cluster!r}")
    return names


def compare(
    store: Store,
    group: str,
    timelines: Sequence[str],
    cluster: str,
    decided: Mapping[str, str] | None = None,
) -> Result:
    """One row per timeline (the ``compare`` query), in the order asked for.
    ``decided``: the group's ``strategies_of``, if read already."""
    result = run_query(
        store, "compare", {"group": group, "cluster": cluster, "timelines": ",".join(timelines)}
    )
    order = {name: i for i, name in enumerate(timelines)}
    missing = [t for t in timelines if t not in {row[0] for row in result.rows}]
    if missing:
        raise UsageError(f"timeline {missing[0]!r} of {cluster}/{group} has no rebalance")
    rows = sorted(result.rows, key=lambda row: order[row[0]])
    churn, unassigned = (result.columns.index(c) for c in ("churn", "unassigned"))
    strategies = decided if decided is not None else strategies_of(store, group, cluster)
    optimal = [row for row in rows if strategies.get(row[0]) == "optimal"]
    if not optimal:
        return Result(result.columns, rows)
    # Against the best optimal timeline: moves alone, and moves plus partitions left
    # without an owner (each of those also stops being consumed); see docs/analytics.md.
    moves = min(row[churn] for row in optimal)
    disruption = min(row[churn] + row[unassigned] for row in optimal)
    return Result(
        [*result.columns, "churn_above_optimal", "disruption_above_optimal"],
        [(*row, row[churn] - moves, row[churn] + row[unassigned] - disruption) for row in rows],
    )


def partial(table: Result) -> list[str]:
    """One line per partial timeline of a ``compare`` table: how far it has decided and
    the source versions the table compares."""
    lines = []
    for row in table.records():
        if row["complete"] is False:
            lines.append(
                f"{row['timeline']} is partial: it has decided up to version "
                f"{row['decided_to']} of its source's {row['source_last']}; the timelines "
                f"answering that source are compared over its versions 1-{row['compared_to']}"
            )
        elif row["complete"] is None:
            lines.append(
                f"{row['timeline']} replays a timeline that is not in the store: how far "
                "it has decided is not known"
            )
    return lines


def strategies_of(store: Store, group: str, cluster: str) -> dict[str, str]:
    """Timeline -> its strategy, when all its rebalances used one."""
    from kstore.analytics._queries import run_sql

    found = run_sql(
        store,
        "SELECT timeline, min(strategy) FROM kstore_rebalances "
        "WHERE group_id = ? AND cluster = ? GROUP BY timeline "
        "HAVING count(DISTINCT strategy) = 1",
        [group, cluster],
    )
    return {str(t): str(s) for t, s in found.rows}
