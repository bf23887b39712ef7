"""Advice: which strategy and protocol would have moved least over a group's history.

``advise`` replays the source timeline with every strategy of the catalogue and with
``optimal`` (the least movement any balanced assignment could have made), each into its
replay timeline (``Sources.replay_timeline``: ``replay/<strategy>`` for the group's
default source, ``replay/<source>/<strategy>`` for another; a replay of that source
stored already is reused: one stored whole is read as done, ``stored_whole``; the replay
continues a partial one), and ``advice`` reads the answer from the source and its
replays: one row per strategy, best first, with its protocol (from the catalogue) and
how far it is from optimal. Disruption is churn plus partitions left
without an owner for a round (what a cooperative round withholds): both stop a partition
being consumed. A partial replay (``complete`` false) is ranked with the others over the
prefix of the source it covers, as ``compare`` sums them. ``verdict`` says the table in
lines (the strategy that moved least, the least disruptive of each protocol, the eager
caveat): what ``kstore advise`` prints under its table and the report under its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kstore._errors import UsageError
from kstore.analytics._queries import Result
from kstore.analytics.replay import ReplayResult, holds_copy, replay
from kstore.analytics.report import compare, strategies_of
from kstore.analytics.scope import Sources, sources_of
from kstore.model.events import AssignmentCompleted, StreamId
from kstore.model.strategies import CATALOGUE, known_protocol
from kstore.store.log import Store

__all__ = [
    "ADVICE_COLUMNS",
    "BELOW_OPTIMAL",
    "advice",
    "advise",
    "against_optimal",
    "replay_every",
    "replayed",
    "stored_whole",
    "verdict",
]

ADVICE_COLUMNS = [
    "rank",
    "strategy",
    "protocol",
    "timeline",
    "complete",
    "rebalances",
    "churn",
    "unassigned",
    "disruption",
    "churn_above_optimal",
    "disruption_above_optimal",
    "stickiness",
    "imbalance",
]


def advice(
    store: Store,
    group: str,
    cluster: str,
    source: str = "recorded",
    decided: Mapping[str, str] | None = None,
    sources: Sources | None = None,
) -> Result | None:
    """The advice table from the group's stored timelines: ``source`` and its replays
    decided by one strategy throughout (a timeline whose decisions name ``source``, or
    the replay timeline of ``source`` by its strategy: a replay stored before decisions
    named their source), never another source or its replays; None without an
    ``optimal`` replay among them. ``decided``: the group's ``strategies_of``, if read
    already (``replay_every`` keeps it up to date); ``sources``: its ``sources_of``, if
    read already since its last replay was stored."""
    if decided is None:
        decided = strategies_of(store, group, cluster)
    if sources is None:
        sources = sources_of(store, cluster, group)
    names = [
        t
        for t in sources.ordered()
        if t == source
        or (
            t in decided
            and (
                sources.source.get(t) == source or sources.replay_timeline(source, decided[t]) == t
            )
        )
    ]
    if not any(decided.get(t) == "optimal" for t in names):
        return None
    table = compare(store, group, names, cluster, decided)
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    for row in rows:
        row["disruption"] = row["churn"] + row["unassigned"]
        name = decided.get(row["timeline"])
        row["strategy"] = name if row["timeline"] != source else f"{source} ({name or 'mixed'})"
        row["protocol"] = known_protocol(name)
    rows.sort(key=lambda r: (r["disruption"], r["churn"], r["timeline"] != source, r["strategy"]))
    # A replay cut short would look cheap: compare sums every timeline over the source
    # versions the partial ones cover, and `complete` says which are.
    out = [
        tuple(rank if c == "rank" else r[c] for c in ADVICE_COLUMNS)
        for rank, r in enumerate(rows, start=1)
    ]
    return Result(list(ADVICE_COLUMNS), out)


def replayed(strategies: Iterable[str] | None = None) -> list[str]:
    """The strategies ``advise`` replays: those given (default: the whole catalogue), and
    ``optimal`` always."""
    names: Sequence[str] = list(strategies) if strategies is not None else list(CATALOGUE)
    return list(names) if "optimal" in names else [*names, "optimal"]


def stored_whole(
    store: Store,
    group: str,
    cluster: str,
    source: str,
    strategies: Iterable[str],
    sources: Sources | None = None,
    decided: Mapping[str, str] | None = None,
) -> set[str]:
    """Those of ``strategies`` whose replay timeline (``Sources.replay_timeline``) is
    stored whole: a replay of ``source`` (its decisions name it) complete by
    queries/coverage.sql (decided up to the source's last version now), decided by
    that strategy throughout and, where the source's last event is no decision, holding
    its copy of it (``holds_copy``): coverage calls a replay complete when the source
    gained only events that decide nothing after its last decision (a member joining, a
    fact that a member did not take the decision up), but the replay has those to copy
    (and a fact changes what its last decision gives). ``advise`` reads such a replay as
    done instead of deciding the history again to check it (``replay``'s resume, 25 s
    for nine replays of 2,000 rebalances); a source grown since makes it partial, and
    it is continued. ``sources`` and ``decided`` (``strategies_of``): the group's, if
    read already."""
    found = sources if sources is not None else sources_of(store, cluster, group)
    if decided is None:
        decided = strategies_of(store, group, cluster)
    whole = set()
    for name in strategies:
        timeline = found.replay_timeline(source, name)
        if (
            timeline != source
            and found.source.get(timeline) == source
            and found.complete.get(timeline)
            and decided.get(timeline) == name
        ):
            whole.add(name)
    if whole:
        stream = StreamId(cluster, group, source)
        at_end = store.events(
            **stream._asdict(), from_version=found.versions[source], assignments=False
        )
        last = next(at_end, None)
        if last is not None and not isinstance(last.event.data, AssignmentCompleted):
            whole = {
                name
                for name in whole
                if holds_copy(
                    store, StreamId(cluster, group, found.replay_timeline(source, name)), last
                )
            }
    return whole


def replay_every(
    store: Store,
    group: str,
    cluster: str,
    source: str = "recorded",
    strategies: Iterable[str] | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
    decided: dict[str, str] | None = None,
    sources: Sources | None = None,
) -> list[ReplayResult]:
    """Replay ``source`` with each of ``replayed(strategies)``, in that order, each into
    its replay timeline (``Sources.replay_timeline``): one stored whole already
    (``stored_whole``) is read as done, its result ``reused``; one stopped part way, or
    outgrown by the source, is continued.
    ``stop``: asked after each source event; when it says so the replay at hand stores
    what it has and returns (``complete`` False, the last of the list) and no other
    starts. ``progress(done, total)``: the source events replayed over all the replays
    (each reads the whole source; one read as done counts as read). ``decided``: the
    group's ``strategies_of``, read once by the caller: each replay stored is added to
    it (all its decisions are its strategy's), so ``advice`` reads it as it is then.
    ``sources``: the group's ``sources_of``, if read already."""
    names = replayed(strategies)
    if sources is None:
        sources = sources_of(store, cluster, group)
    if decided is None:
        decided = strategies_of(store, group, cluster)
    whole = stored_whole(store, group, cluster, source, names, sources, decided)
    done: list[ReplayResult] = []
    for index, name in enumerate(names):

        def told(read: int, total: int, before: int = index) -> None:
            if progress is not None:
                progress(before * total + read, len(names) * total)

        timeline = sources.replay_timeline(source, name)
        if name in whole:
            target = StreamId(cluster, group, timeline)
            stored = sources.versions[timeline]
            result = ReplayResult(target, 0, 0, 0, 0.0, 0.0, resumed=stored, reused=True)
            total = sources.versions[source]  # read as done: the source read whole
            told(total, total)
        else:
            result = replay(
                store,
                group=group,
                cluster=cluster,
                strategy=name,
                source=source,
                timeline=timeline,
                resume=True,
                stop=stop,
                progress=told,
                instead=_instead(source, name),
            )
        done.append(result)
        decided[result.stream.timeline] = name
        if not result.complete or (stop is not None and stop()):
            break
    return done


def _instead(source: str, strategy: str) -> str:
    """What advise can do about a timeline holding another history under the name of
    its replay of ``source`` with ``strategy`` (an option advise has)."""
    said = f"advise stores its replay of {source} with {strategy} there"
    if strategy == "optimal":  # replayed always: no option leaves it out
        return f'{said} always (docs/analytics.md, "Replay timelines")'
    return f"{said}; leave {strategy} out of --strategies"


def advise(
    store: Store,
    group: str,
    cluster: str,
    source: str = "recorded",
    strategies: Iterable[str] | None = None,
) -> Result:
    """Replay ``source`` with each strategy (default: the whole catalogue) and ``optimal``
    (``replay_every``), then the advice table."""
    decided = strategies_of(store, group, cluster)
    replay_every(store, group, cluster, source, strategies, decided=decided)
    found = advice(store, group, cluster, source, decided)
    if found is None:  # cannot happen: optimal was replayed above
        raise UsageError(f"no optimal timeline of {cluster}/{group}")
    return found


BELOW_OPTIMAL = (
    "below optimal: optimal is the fewest moves among the best-balanced assignments, "
    "decided rebalance by rebalance on its own previous assignment, not a bound over a "
    "whole history: a strategy below it bought its fewer moves with balance (its "
    "imbalance, excess) or its own chain of decisions drifted to states cheaper to keep"
)
"""The line after the verdict's first "below optimal" (docs/analytics.md, ``optimal``)."""


def against_optimal(value: int) -> str:
    return f"{value:,} above optimal" if value >= 0 else f"{-value:,} below optimal"


def verdict(table: Result, source: str) -> list[str]:
    """What the advice ``table`` says, in lines: the strategy that moved least, then the
    least of each protocol (none without a strategy but optimal and ``source``).
    Disruption counts moved and unassigned partitions only, so an eager history pays
    nothing for its rebalances' pause (every partition revoked until each one ends): the
    lone verdict ranked eager sticky above cooperative-sticky, whose withheld partitions
    it does count (user trial). The protocols are said apart. A first line below optimal
    is followed by why a strategy can be (``BELOW_OPTIMAL``)."""
    ranked = [r for r in table.records() if r["strategy"] != "optimal" and r["timeline"] != source]
    if not ranked:
        return []
    best = ranked[0]
    lines = [
        f"would have moved least: {best['strategy']} ({best['protocol']} protocol), "
        f"churn {best['churn']:,} ({against_optimal(best['churn_above_optimal'])}), "
        f"disruption {best['disruption']:,} "
        f"({against_optimal(best['disruption_above_optimal'])})"
    ]
    if min(best["churn_above_optimal"], best["disruption_above_optimal"]) < 0:
        lines.append(BELOW_OPTIMAL)
    per: dict[str, dict[str, Any]] = {}
    for row in ranked:
        per.setdefault(row["protocol"], row)
    if len(per) > 1:
        said = ", ".join(f"{p} {r['strategy']} {r['disruption']:,}" for p, r in per.items())
        lines.append(f"least disruption by protocol: {said}")
        if "eager" in per:
            lines.append(
                "an eager rebalance also stops every partition of the group until it "
                "ends, which disruption does not count: compare protocols with that in mind"
            )
    return lines
