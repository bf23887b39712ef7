"""``kstore query``, ``sql``, ``replay``, ``compare`` and ``report``."""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kstore._errors import UsageError
from kstore.analytics import Result, queries, run_query, run_sql
from kstore.analytics.replay import replay
from kstore.analytics.report import compare, timelines_of, write_report
from kstore.store.log import Store

__all__ = ["list_queries", "print_compare", "print_query", "print_sql", "replay_group", "report"]

FORMATS = ("table", "csv", "json")


def _plain(value: Any) -> Any:
    """A JSON/CSV value: times in ISO-8601 (UTC, ``Z``), decimals as numbers."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text + "Z" if value.tzinfo is None else text
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _console() -> Console:
    return Console() if sys.stdout.isatty() else Console(width=1000)


def print_result(result: Result, output: str, title: str | None = None) -> None:
    if output not in FORMATS:
        raise UsageError(f"--format: must be one of {', '.join(FORMATS)}, not {output!r}")
    if output == "json":
        rows = [
            {c: _plain(v) for c, v in zip(result.columns, row, strict=True)} for row in result.rows
        ]
        json.dump(rows, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.columns)
        for row in result.rows:
            writer.writerow(["" if v is None else _plain(v) for v in row])
    else:
        table = Table(title=title)
        for column in result.columns:
            table.add_column(column)
        for row in result.rows:
            table.add_row(
                *(
                    "" if v is None else f"{v:.3f}" if isinstance(v, float) else str(_plain(v))
                    for v in row
                )
            )
        _console().print(table)


def list_queries() -> None:
    for query in queries():
        params = ", ".join(
            f"{p}{' (required)' if p in query.required else ''}" for p in query.parameters
        )
        print(f"{query.name}\t{query.summary}\tparameters: {params or 'none'}")


def _params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param: expected KEY=VALUE, not {pair!r}")
        params[key] = value
    return params


def print_query(
    path: Path,
    name: str,
    *,
    group: str | None,
    cluster: str | None,
    timeline: str | None,
    pairs: list[str],
    output: str,
) -> None:
    params: dict[str, Any] = _params(pairs)
    for key, value in (("group", group), ("cluster", cluster), ("timeline", timeline)):
        if value is not None:
            params[key] = value
    print_result(run_query(Store(path), name, params), output, title=name)


def print_sql(path: Path, sql: str, output: str) -> None:
    print_result(run_sql(Store(path), sql), output)


def replay_group(
    path: Path,
    *,
    group: str,
    cluster: str,
    source: str,
    strategy: str,
    timeline: str | None,
    resume: bool = False,
) -> None:
    done = replay(
        Store(path),
        group=group,
        cluster=cluster,
        source=source,
        strategy=strategy,
        timeline=timeline,
        resume=resume,
    )
    rate = done.rebalances / done.seconds if done.seconds else 0.0
    resumed = f" after {done.resumed} stored already" if done.resumed else ""
    print(
        f"replayed {cluster}/{group}/{source} with {strategy} into timeline "
        f"{done.stream.timeline!r}: this run {done.events} events{resumed}, "
        f"{done.rebalances} rebalances ({done.follow_ups} follow-up rounds), "
        f"{rate:.1f} rebalances/s (assignor {done.assignor_seconds:.3f} s of "
        f"{done.seconds:.3f} s)"
    )
    for warning in done.warnings:
        print(f"kstore: warning: {cluster}/{group} {warning}", file=sys.stderr)


def _timelines(store: Store, group: str, cluster: str, given: str | None) -> list[str]:
    if given is None:
        return timelines_of(store, group, cluster)
    names = [name.strip() for name in given.split(",") if name.strip()]
    if not names:
        raise UsageError("--timelines: give at least one timeline")
    return names


def print_compare(
    path: Path, *, group: str, cluster: str, timelines: str | None, output: str
) -> None:
    store = Store(path)
    names = _timelines(store, group, cluster, timelines)
    print_result(compare(store, group, names, cluster), output, title=f"{cluster}/{group}")


def report(path: Path, *, group: str, cluster: str, timelines: str | None, out: Path) -> None:
    store = Store(path)
    names = _timelines(store, group, cluster, timelines)
    plots = write_report(store, group, names, cluster, out)
    print(f"wrote {out} ({plots} plots, timelines {', '.join(names)})")
