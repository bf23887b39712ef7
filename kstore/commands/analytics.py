"""``kstore query``, ``sql``, ``replay``, ``compare`` and ``report``."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from rich.progress import TextColumn

from kstore._errors import Interrupted, UsageError
from kstore._files import check_out_file, check_writable_folder
from kstore._text import counted
from kstore.analytics import Result, queries, run_query
from kstore.analytics._queries import check_query
from kstore.analytics.replay import VERDICTS, check_decisions, check_strategy, replay
from kstore.analytics.report import compare, partial, strategies_of, timelines_of
from kstore.analytics.scope import (
    Sources,
    check_params,
    resolve,
    source_timeline,
    sources_of,
)
from kstore.commands._output import (
    check_format,
    counting,
    done_of_total,
    print_rows,
    progress_bar,
)
from kstore.commands._stop import interrupted_says, stop_requested
from kstore.model.strategies import strategy
from kstore.store.log import Store

__all__ = [
    "check_group",
    "list_queries",
    "print_advice",
    "print_compare",
    "print_query",
    "print_sql",
    "replay_group",
    "report",
]


def print_result(result: Result, output: str, title: str | None = None) -> None:
    print_rows(result.columns, result.rows, output, title)


def list_queries(output: str = "table") -> None:
    rows = [
        (
            query.name,
            query.summary,
            ", ".join(
                f"{p}{' (required)' if p in query.required else ''}" for p in query.parameters
            )
            or "none",
        )
        for query in queries()
    ]
    print_rows(["query", "summary", "parameters"], rows, output)


def _params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param: expected KEY=VALUE, not {pair!r}")
        if key in params:  # the last one was taken, silently
            raise UsageError(
                f"--param {key} given twice ({params[key]!r}, {value!r}): give it once"
            )
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
    check_format(output)
    params: dict[str, Any] = _params(pairs)
    for key, value in (("group", group), ("cluster", cluster), ("timeline", timeline)):
        if value is not None:
            if params.get(key, value) != value:
                raise UsageError(f"--{key} and --param {key} differ")
            params[key] = value
    store = Store(path)
    check_query(name, params)
    names = [t.strip() for t in str(params.get("timelines") or "").split(",") if t.strip()]
    scope = resolve(
        store,
        cluster=params.get("cluster"),
        group=params.get("group"),
        timeline=params.get("timeline"),
        timelines=names,
    )
    if scope.cluster is not None:
        params["cluster"] = scope.cluster
    check_params(store, scope, params)
    print_result(run_query(store, name, params), output, title=name)


def print_sql(path: Path, sql: str, output: str, read_paths: list[Path]) -> None:
    check_format(output)
    if not sql.strip():
        raise UsageError("sql: the SQL text is empty")
    result = Store(path).query(sql, (), read_paths, json_text=True)
    rows = result.rows
    if output in ("json", "jsonl"):  # JSON as JSON (the events' data was a string of it)
        parsed = [kind == "JSON" for kind in result.types]
        rows = [
            tuple(
                json.loads(v) if is_json and isinstance(v, str) else v
                for v, is_json in zip(row, parsed, strict=True)
            )
            for row in rows
        ]
    print_rows(result.columns, rows, output)


def _source(store: Store, cluster: str | None, group: str, source: str | None) -> tuple[str, str]:
    """The group's cluster and the timeline to replay (``--from``, or the one it means)."""
    scope = resolve(store, cluster=cluster, group=group, timeline=source)
    assert scope.cluster is not None
    return scope.cluster, source if source is not None else source_timeline(store, scope)


def _sources(
    store: Store, cluster: str | None, group: str, source: str | None
) -> tuple[Sources, str]:
    """``_source``'s, with the group's ``Sources`` it was read from (read once: a replay's
    timeline is named from them too)."""
    scope = resolve(store, cluster=cluster, group=group, timeline=source)
    assert scope.cluster is not None
    sources = sources_of(store, scope.cluster, group)
    return sources, source if source is not None else sources.required()


def replay_group(
    path: Path,
    *,
    group: str,
    cluster: str | None,
    source: str | None,
    strategy: str,
    timeline: str | None,
    resume: bool = False,
) -> None:
    check_strategy(strategy)  # a typo named before the store is read
    store = Store(path)
    sources, source = _sources(store, cluster, group, source)
    cluster = sources.cluster
    if timeline is None:  # advise's name for it: two sources' replays never meet
        timeline = sources.replay_timeline(source, strategy)
    bar = progress_bar(
        "replaying {task.description}",
        done_of_total(),
        TextColumn("source events"),
        TextColumn("{task.fields[rate]}/s"),
        show=sys.stderr.isatty(),
    )
    task = bar.add_task(f"{cluster}/{group}/{source}", total=None, rate="-")
    started = time.perf_counter()
    read = [0, 0]

    def advance(done: int, total: int) -> None:
        read[:] = done, total
        rate = done / max(time.perf_counter() - started, 1e-9)
        bar.update(task, completed=done, total=total, rate=f"{rate:,.0f}")

    # Ctrl-C: the run stops after the source event at hand and stores what it decided.
    with stop_requested() as stopped, bar:
        done = replay(
            store,
            group=group,
            cluster=cluster,
            source=source,
            strategy=strategy,
            timeline=timeline,
            resume=resume,
            stop=stopped.is_set,
            progress=advance,
        )
    if not done.complete:
        again = f"kstore --store {shlex.quote(str(path))} replay --group {shlex.quote(group)}"
        again += f" --cluster {shlex.quote(cluster)} --from {shlex.quote(source)}"
        again += f" --strategy {shlex.quote(strategy)}"
        again += f" --timeline {shlex.quote(done.stream.timeline)} --resume"
        raise Interrupted(
            f"replay interrupted after {read[0]:,} of {read[1]:,} source events: "
            f"{done.resumed + done.events:,} replay events stored in timeline "
            f"{done.stream.timeline!r}; resume with: {again}"
        )
    rate = done.rebalances / done.seconds if done.seconds else 0.0
    resumed = f" after {done.resumed:,} stored already" if done.resumed else ""
    # The bar's count (source events) first; the replay's own events are more when it
    # adds follow-up rounds, and are named so (a trial read one as the other).
    print(
        f"replayed {cluster}/{group}/{source} with {strategy} into timeline "
        f"{done.stream.timeline!r}: {counted(read[0], 'source event')}; this run "
        f"{counted(done.events, 'replay event')}{resumed}, "
        f"{counted(done.rebalances, 'rebalance')} "
        f"({counted(done.follow_ups, 'follow-up round')}), "
        f"{rate:.1f} rebalances/s (assignor {done.assignor_seconds:.3f} s, store "
        f"{done.store_seconds:.3f} s of {done.seconds:.3f} s)"
    )
    for warning in done.warnings:
        print(f"kstore: warning: {cluster}/{group} {warning}", file=sys.stderr)


def check_group(
    path: Path,
    *,
    group: str,
    cluster: str | None,
    source: str | None,
    strategy: str,
    output: str,
) -> int:
    """``replay --check``: one row per source decision (one per member where it differs),
    a summary on stderr; 1 when any decision is neither the strategy's answer nor one
    the source says members did not take up."""
    check_format(output)
    check_strategy(strategy)  # a typo named before the store is read
    store = Store(path)
    cluster, source = _source(store, cluster, group, source)
    events = store.events(cluster=cluster, group=group, timeline=source)
    checks = list(check_decisions((stored.event for stored in events), strategy))
    rows = [
        (check.generation, check.strategy, check.verdict, member, decided, held)
        for check in checks
        for member, (decided, held) in (check.members.items() or [(None, (None, None))])
    ]
    columns = ["generation", "strategy", "verdict", "member", "decided", "held"]
    print_rows(columns, rows, output, title=f"{cluster}/{group}/{source}")
    verdicts = [check.verdict for check in checks]
    counts = ", ".join(f"{verdicts.count(v):,} {v}" for v in VERDICTS)
    print(f"{counted(len(checks), 'decision')} of {source}: {counts}", file=sys.stderr)
    return 0 if set(verdicts) <= {"same", "not-taken-up"} else 1


def _timelines(
    store: Store, group: str, cluster: str | None, given: str | None
) -> tuple[str, list[str] | None]:
    """The group's cluster and the timelines asked for (None: all of the group's)."""
    names = None if given is None else [n.strip() for n in given.split(",") if n.strip()]
    if names is not None and not names:
        raise UsageError("--timelines: give at least one timeline")
    scope = resolve(store, cluster=cluster, group=group, timelines=names or ())
    assert scope.cluster is not None
    return scope.cluster, names


def print_compare(
    path: Path, *, group: str, cluster: str | None, timelines: str | None, output: str
) -> None:
    check_format(output)
    store = Store(path)
    cluster, asked = _timelines(store, group, cluster, timelines)
    names = asked or timelines_of(store, group, cluster)
    table = compare(store, group, names, cluster)
    print_result(table, output, title=f"{cluster}/{group}")
    _notes(partial(table), output)


def _notes(lines: list[str], output: str) -> None:
    """Lines about a table: after it on a table's standard output, else on standard error
    (where they keep csv and json clean)."""
    for line in lines:
        if output == "table":
            print(line)
        else:
            print(f"kstore: note: {line}", file=sys.stderr)


def report(
    path: Path,
    *,
    group: str | None,
    cluster: str | None,
    timelines: str | None,
    out: str | Path,
    source: str | None = None,
    fleet: bool = False,
) -> None:
    from kstore.analytics.pages import unranked, write_fleet, write_report

    given, out = out, Path(out)
    store = Store(path)
    to_stdout = str(out) == "-"
    if fleet or group is None:
        if cluster is not None or timelines is not None or source is not None:
            raise UsageError(
                "--fleet: every group of the store; no --cluster, --timelines or --from"
            )
        if to_stdout:
            raise UsageError("--out -: --fleet writes a folder of pages; give a folder")
        # the folder (or the nearest one there, in which it is made) written before the
        # work: a read-only one was found after every group's report was made
        there = next(p for p in (out, *out.parents) if p.exists() or p == Path(p.anchor))
        if not there.is_dir():
            raise UsageError(f"--out {given}: cannot write: not a folder: {there}")
        check_writable_folder(there, f"--out {given}")
        with counting(f"report {out}", "groups") as progress:
            groups, left_out = write_fleet(store, out, progress=progress)
        theirs = "its report" if groups == 1 else "their reports"
        left = unranked(left_out)
        print(
            f"wrote {out / 'index.html'} ranking {counted(groups, 'group')}, and {theirs} "
            "beside it" + (f"; not ranked: {left}" if left else "")
        )
        return
    check_out_file(given)
    cluster, asked = _timelines(store, group, cluster, timelines)
    sources = sources_of(store, cluster, group)  # read once: the report reads them too
    names = asked or sources.ordered()
    if source is not None:  # an unknown one: the line naming the nearest
        resolve(store, cluster=cluster, group=group, timeline=source)
    elif sources.default() is None:
        # The report is written all the same (its Advice section says this too).
        print(f"kstore: note: no advice: {sources.which()}", file=sys.stderr)
    with counting(f"report {cluster}/{group}", "parts") as progress:
        plots = write_report(
            store, group, names, cluster, out, source, progress=progress, sources=sources
        )
    where = "the report to standard output" if to_stdout else out
    # the page itself may be what standard output carries
    print(
        f"wrote {where} ({counted(plots, 'plot')}, timelines {', '.join(names)})",
        file=sys.stderr if to_stdout else sys.stdout,
    )


def print_advice(
    path: Path,
    *,
    group: str,
    cluster: str | None,
    source: str | None,
    strategies: str | None,
    output: str,
) -> None:
    from kstore.analytics.advise import advice, replay_every, replayed, verdict

    check_format(output)
    given = None if strategies is None else [s.strip() for s in strategies.split(",") if s.strip()]
    for name in given or ():  # a typo named before the store is read
        strategy(name)
    names = replayed(given)
    store = Store(path)
    sources, source = _sources(store, cluster, group, source)
    cluster = sources.cluster
    # Ctrl-C: the replay at hand stops after its source event and stores what it decided.
    with (
        stop_requested() as stopped,
        counting(f"advise {cluster}/{group} ({len(names):,} replays)", "source events") as told,
    ):
        decided = strategies_of(store, group, cluster)  # read once: replay_every adds to it
        done = replay_every(
            store,
            group,
            cluster,
            source,
            names,
            stop=stopped.is_set,
            progress=told,
            decided=decided,
            sources=sources,
        )
    # The same command continues: a replay stored whole is read as done (advise's
    # stored_whole), a partial one resumed into its replay timeline.
    again = f"the same command again reuses them: {shlex.join(['kstore', *sys.argv[1:]])}"
    if len(done) < len(names) or not done[-1].complete:
        whole = [n for n, d in zip(names, done, strict=False) if d.complete]
        cut = done[-1] if not done[-1].complete else None
        said = f"advise interrupted: {len(whole):,} of {len(names):,} replays stored complete"
        said += f" ({', '.join(whole)})" if whole else ""
        if cut is not None:
            said += (
                f"; {cut.stream.timeline} stopped part way with "
                f"{cut.resumed + cut.events:,} events stored, continued next time"
            )
        raise Interrupted(f"{said}; {again}")
    with interrupted_says(f"advise interrupted while ranking: every replay is stored; {again}"):
        table = advice(store, group, cluster, source, decided)
    assert table is not None  # optimal was replayed above
    print_result(table, output, title=f"advice for {cluster}/{group} ({source})")
    _notes(verdict(table, source), output)
