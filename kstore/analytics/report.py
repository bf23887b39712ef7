"""Comparisons of a group's timelines and the HTML report built from the queries.

``compare`` is the ``compare`` query, plus, when one of the timelines was decided by
``optimal``, each timeline's churn and disruption (churn + unassigned) above it.
``write_report`` writes one self-contained page (plotly.js inlined, nothing fetched)
with churn, stickiness and imbalance over time per timeline, an ownership heatmap
(partition by rebalance) per timeline, the rebalance reasons and the compare table.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from kstore._errors import UsageError
from kstore._files import write_text
from kstore.analytics._queries import Result, run_query
from kstore.store.log import Store

__all__ = ["HEATMAP_PARTITIONS", "compare", "strategies_of", "timelines_of", "write_report"]

HEATMAP_PARTITIONS = 200
"""The heatmap shows at most this many partitions (the first by topic and number)."""


def timelines_of(store: Store, group: str, cluster: str) -> list[str]:
    """The group's timelines, ``recorded`` first."""
    names = [
        info.stream.timeline
        for info in store.streams()
        if info.stream.group == group and info.stream.cluster == cluster
    ]
    if not names:
        raise UsageError(f"no timeline of group {group!r} in cluster {cluster!r}")
    return sorted(names, key=lambda name: (name != "recorded", name))


def compare(store: Store, group: str, timelines: Sequence[str], cluster: str) -> Result:
    """One row per timeline (the ``compare`` query), in the order asked for."""
    result = run_query(
        store, "compare", {"group": group, "cluster": cluster, "timelines": ",".join(timelines)}
    )
    order = {name: i for i, name in enumerate(timelines)}
    missing = [t for t in timelines if t not in {row[0] for row in result.rows}]
    if missing:
        raise UsageError(f"timeline {missing[0]!r} of {cluster}/{group} has no rebalance")
    rows = sorted(result.rows, key=lambda row: order[row[0]])
    churn, unassigned = (result.columns.index(c) for c in ("churn", "unassigned"))
    strategies = strategies_of(store, group, cluster)
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


def _series(metrics: Result, timeline: str, column: str) -> tuple[list[datetime], list[Any]]:
    at, name, value = (metrics.columns.index(c) for c in ("at", "timeline", column))
    rows = [row for row in metrics.rows if row[name] == timeline]
    return [row[at] for row in rows], [row[value] for row in rows]


def _heatmap(store: Store, group: str, cluster: str, timeline: str) -> Any:
    import plotly.graph_objects as go

    history = run_query(
        store, "partition_history", {"group": group, "cluster": cluster, "timeline": timeline}
    ).records()
    moments = sorted({row["since"] for row in history})
    partitions = sorted({(row["topic"], row["partition"]) for row in history})
    partitions = partitions[:HEATMAP_PARTITIONS]
    members = sorted({row["owner"] for row in history})
    code = {m: i for i, m in enumerate(members)}
    column = {at: i for i, at in enumerate(moments)}
    row_of = {tp: i for i, tp in enumerate(partitions)}
    z: list[list[int | None]] = [[None] * len(moments) for _ in partitions]
    names: list[list[str]] = [[""] * len(moments) for _ in partitions]
    for item in history:
        r = row_of.get((item["topic"], item["partition"]))
        if r is None:
            continue
        last = len(moments) if item["until"] is None else column[item["until"]]
        for c in range(column[item["since"]], last):
            z[r][c] = code[item["owner"]]
            names[r][c] = item["owner"]
    return go.Heatmap(
        z=z,
        x=moments,
        y=[f"{t}-{p}" for t, p in partitions],
        text=names,
        hovertemplate="%{y} at %{x}: %{text}<extra></extra>",
        colorscale="Turbo",
        showscale=False,
    )


def _table(result: Result) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return "" if value is None else html.escape(str(value))

    head = "".join(f"<th>{html.escape(c)}</th>" for c in result.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in result.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_report(
    store: Store, group: str, timelines: Sequence[str], cluster: str, out: Path
) -> int:
    """Write the report; returns the number of plots in it."""
    import plotly.graph_objects as go
    import plotly.io as pio

    metrics = run_query(store, "metrics", {"group": group, "cluster": cluster})
    table = compare(store, group, timelines, cluster)
    figures: list[tuple[str, go.Figure]] = []
    for column, title in (
        ("moved", "Churn: partitions moved per rebalance"),
        ("stickiness", "Stickiness: kept / retainable per rebalance"),
        ("imbalance", "Imbalance: max load - min load per rebalance"),
    ):
        figure = go.Figure()
        for timeline in timelines:
            x, y = _series(metrics, timeline, column)
            figure.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=timeline))
        figure.update_layout(title=title, height=380)
        figures.append((title, figure))
    for timeline in timelines:
        title = f"Ownership: partition by time ({timeline})"
        figure = go.Figure(_heatmap(store, group, cluster, timeline))
        figure.update_layout(title=title, height=520)
        figures.append((title, figure))
    reasons = run_query(store, "timeline", {"group": group, "cluster": cluster}).records()
    figure = go.Figure()
    for timeline in timelines:
        counts: dict[str, int] = {}
        for row in reasons:
            if row["timeline"] == timeline:
                key = row["reason"] or "(none recorded)"
                counts[key] = counts.get(key, 0) + 1
        figure.add_trace(go.Bar(x=list(counts), y=list(counts.values()), name=timeline))
    figure.update_layout(title="Rebalance reasons", barmode="group", height=380)
    figures.append(("Rebalance reasons", figure))

    parts = []
    for i, (_, fig) in enumerate(figures):
        parts.append(
            pio.to_html(fig, include_plotlyjs=i == 0, full_html=False, config={"responsive": True})
        )
    title = html.escape(f"kstore report: {cluster}/{group}")
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:right}</style></head><body>"
        f"<h1>{title}</h1><h2>Compare</h2>{_table(table)}" + "".join(parts) + "</body></html>"
    )
    write_text(out, page)
    return len(figures)
