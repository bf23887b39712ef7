"""What a command is asked about, checked against what the store holds.

An unknown cluster, group, timeline, member or topic, or a parameter value a query
cannot mean, is an error naming the nearest known names, never an empty answer. A group
found in exactly one cluster needs no cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kstore._errors import UsageError, known_hint
from kstore.analytics._queries import run_query, run_sql
from kstore.model._timelines import replay_name
from kstore.model.events import StreamId
from kstore.store.log import Store

__all__ = [
    "Scope",
    "Sources",
    "check_params",
    "every_source",
    "iso_time",
    "replays",
    "resolve",
    "source_timeline",
    "sources_of",
    "unknown",
]

WINDOWS = ("hour", "day")


def iso_time(option: str, text: str) -> datetime:
    """An ISO-8601 time given for ``option``; one without a zone is taken as UTC."""
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option}: not an ISO-8601 time: {text!r}") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def unknown(what: str, name: str, known: Iterable[str], where: str = "") -> UsageError:
    """``no <what> '<name>'<where>`` with the nearest known names (or all, when few)."""
    return UsageError(f"no {what} {name!r}{where}{known_hint(name, known)}")


@dataclass(frozen=True, slots=True)
class Scope:
    cluster: str | None
    group: str | None
    timeline: str | None
    streams: tuple[StreamId, ...]
    """The store's streams within the scope."""

    def stream(self) -> StreamId:
        assert self.cluster is not None and self.group is not None
        return StreamId(self.cluster, self.group, self.timeline or "recorded")


def resolve(
    store: Store,
    *,
    cluster: str | None = None,
    group: str | None = None,
    timeline: str | None = None,
    timelines: Iterable[str] = (),
) -> Scope:
    """Check each name given against the store's streams; infer a group's one cluster."""
    streams = [info.stream for info in store.streams()]
    if cluster is not None:
        if cluster not in {s.cluster for s in streams}:
            raise unknown("cluster", cluster, (s.cluster for s in streams))
        streams = [s for s in streams if s.cluster == cluster]
    where = "" if cluster is None else f" in cluster {cluster!r}"
    if group is not None:
        found = [s for s in streams if s.group == group]
        if not found:
            raise unknown("group", group, (s.group for s in streams), where)
        clusters = sorted({s.cluster for s in found})
        if cluster is None:
            if len(clusters) > 1:
                raise UsageError(
                    f"group {group!r} is in clusters {', '.join(clusters)}: give --cluster"
                )
            cluster = clusters[0]
        streams = found
        where = f" of {cluster}/{group}"
    for name in [*([timeline] if timeline is not None else []), *timelines]:
        if name not in {s.timeline for s in streams}:
            raise unknown("timeline", name, (s.timeline for s in streams), where)
    if timeline is not None:
        streams = [s for s in streams if s.timeline == timeline]
    return Scope(cluster, group, timeline, tuple(streams))


def replays(
    store: Store, cluster: str | None = None, group: str | None = None
) -> dict[tuple[str, str], dict[str, bool | None]]:
    """Per group with a replay, its replay timelines (``Sources.replays``) and whether
    each is complete (None: source gone)."""
    return {
        key: {name: found.complete.get(name) for name in sorted(found.replays())}
        for key, found in every_source(store, cluster, group).items()
        if found.replays()
    }


def source_timeline(store: Store, scope: Scope, option: str = "--from") -> str:
    """The timeline a replay of the group starts from when none is given (and ``state``
    shows): ``recorded`` if the group has it, else the group's one timeline that is no
    replay (a simulated group's ``sim/<name>``); an error naming the candidates and
    ``option`` when that is not one (``Sources.default``, ``Sources.which``)."""
    assert scope.cluster is not None and scope.group is not None
    return sources_of(store, scope.cluster, scope.group).required(option)


@dataclass(frozen=True, slots=True)
class Sources:
    """A group's timelines, each with its source (coverage.sql: a replay's decisions
    name it; any other timeline is its own) and whether it is complete (None: its source
    is gone; a timeline of no rebalance has neither)."""

    cluster: str
    group: str
    versions: Mapping[str, int]
    """Each timeline's last version (its number of events)."""
    source: Mapping[str, str]
    complete: Mapping[str, bool | None]

    @property
    def timelines(self) -> frozenset[str]:
        return frozenset(self.versions)

    def default(self) -> str | None:
        """The group's source timeline by ``source_timeline``'s rule; None where the rule
        finds none: ``recorded`` if the group has it, else its one timeline that is no
        replay."""
        if "recorded" in self.versions:
            return "recorded"
        candidates = self.timelines - self.replays()
        return next(iter(candidates)) if len(candidates) == 1 else None

    def required(self, option: str = "--from") -> str:
        """``default``, or the error saying which to give with ``option`` (``which``)."""
        found = self.default()
        if found is None:
            raise UsageError(self.which(option))
        return found

    def which(self, option: str = "--from") -> str:
        """The line saying which source to give with ``option`` where ``default`` finds
        none: the group's timelines that are no replay."""
        listed = ", ".join(sorted(self.timelines - self.replays()) or sorted(self.timelines))
        return (
            f"group {self.cluster}/{self.group} has no 'recorded' timeline: give {option} "
            f"(one of: {listed})"
        )

    def ordered(self) -> list[str]:
        """The group's timelines, its source (``default``) first, then the others by name."""
        first = self.default()
        return sorted(self.timelines, key=lambda name: (name != first, name))

    def replays(self) -> set[str]:
        """The timelines whose decisions name another timeline as their source."""
        return {t for t, s in self.source.items() if s != t}

    def replay_timeline(self, source: str, strategy: str) -> str:
        """The timeline a replay of ``source`` with ``strategy`` is stored in
        (docs/analytics.md, "Replay timelines"): ``replay/<strategy>`` for the group's
        default source, ``replay/<source>/<strategy>`` for any other, so two sources'
        replays never meet. One of the two holding a replay of ``source`` already is
        that replay (a simulated source replayed while it was its group's only one keeps
        its replays once another is simulated); a ``replay/<strategy>`` holding another
        source's replay is not the default source's (the default changed since), whose
        replay is then ``replay/<source>/<strategy>`` too."""
        plain = replay_name(source, strategy, default_source=True)
        own = replay_name(source, strategy, default_source=False)
        for name in (plain, own):
            if self.source.get(name) == source and name != source:
                return name
        # A replay/<strategy> that names no source (a replay stored by a kstore before
        # decisions named one) is the default source's, as it always was.
        held = self.source.get(plain, plain)
        if source == self.default() and held == plain:
            return plain
        return own


def sources_of(store: Store, cluster: str, group: str) -> Sources:
    """The group's ``Sources``: its streams and one coverage query."""
    found = every_source(store, cluster, group).get((cluster, group))
    return found if found is not None else Sources(cluster, group, {}, {}, {})


def every_source(
    store: Store, cluster: str | None = None, group: str | None = None
) -> dict[tuple[str, str], Sources]:
    """Per (cluster, group) of the store (of ``cluster``, ``group`` where given), by
    name, its ``Sources``: one read of the streams and one coverage query for them all
    (a fleet's)."""
    versions: dict[tuple[str, str], dict[str, int]] = {}
    for info in store.streams():
        key = (info.stream.cluster, info.stream.group)
        if cluster in (None, key[0]) and group in (None, key[1]):
            versions.setdefault(key, {})[info.stream.timeline] = info.events
    source: dict[tuple[str, str], dict[str, str]] = {}
    complete: dict[tuple[str, str], dict[str, bool | None]] = {}
    params = {"cluster": cluster, "group": group, "timelines": None}
    for row in run_query(store, "coverage", params).records():
        key = (row["cluster"], row["group"])
        source.setdefault(key, {})[row["timeline"]] = row["source"]
        complete.setdefault(key, {})[row["timeline"]] = row["complete"]
    return {
        key: Sources(*key, found, source.get(key, {}), complete.get(key, {}))
        for key, found in sorted(versions.items())
    }


def _where(scope: Scope, prefix: str = "") -> tuple[str, list[Any]]:
    clauses, params = ["TRUE"], []
    for column, value in (
        ("cluster", scope.cluster),
        ("group_id", scope.group),
        ("timeline", scope.timeline),
    ):
        if value is not None:
            clauses.append(f"{prefix}{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def _integer(name: str, value: Any, least: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise UsageError(f"--param {name}: not a whole number: {value!r}") from None
    if number < least:
        raise UsageError(f"--param {name}: must be at least {least}, not {number}")
    return number


def check_params(store: Store, scope: Scope, params: Mapping[str, Any]) -> None:
    """Each documented query parameter's value means something in ``scope``."""
    where, args = _where(scope)
    if (window := params.get("window")) is not None and window not in WINDOWS:
        raise unknown("window", str(window), WINDOWS)
    if (count := params.get("storm_count")) is not None:
        _integer("storm_count", count, 1)
    if (seconds := params.get("storm_seconds")) is not None:
        try:
            ok = float(str(seconds)) > 0
        except ValueError:
            ok = False
        if not ok:
            raise UsageError(f"--param storm_seconds: not a positive number: {seconds!r}")
    at = params.get("at")
    when = None if at is None else iso_time("--param at", str(at))
    if (member := params.get("member")) is not None:
        members = run_sql(
            store,
            f"SELECT DISTINCT member FROM kstore_member_events WHERE {where} "
            f"UNION SELECT DISTINCT member FROM kstore_assignments WHERE {where}",
            [*args, *args],
        )
        known = {str(row[0]) for row in members.rows if row[0] is not None}
        if member not in known:
            raise unknown("member", str(member), known)
    topic, partition = params.get("topic"), params.get("partition")
    if topic is None and partition is None:
        return
    sizes = run_sql(
        store,
        f'SELECT topic, max(partitions), min("at") FROM kstore_topic_events WHERE {where} '
        "GROUP BY topic",
        args,
    )
    known_topics = {str(t): int(n or 0) for t, n, _ in sizes.rows}
    if topic is not None:
        if topic not in known_topics:
            raise unknown("topic", str(topic), known_topics)
        first = next(f for t, _, f in sizes.rows if t == topic)
        # An answer from before the topic existed is empty; asked for, it is a mistake.
        if when is not None and when < first.replace(tzinfo=UTC):  # the store's: UTC
            raise UsageError(
                f"--param at {at}: before topic {topic!r} first appears here "
                f"({first.isoformat()}Z): nothing owned it yet"
            )
    if partition is None:
        return
    number = _integer("partition", partition, 0)
    if topic is not None:
        if number >= known_topics[topic]:
            raise UsageError(
                f"--param partition: topic {topic!r} has partitions 0 to "
                f"{known_topics[topic] - 1}, not {number}"
            )
    elif known_topics:
        # No topic named: a number past every topic's partitions gave an empty table
        # (a user trial, ``--param partition=99``), which the rule forbids.
        most = min(known_topics, key=lambda name: (-known_topics[name], name))
        if number >= known_topics[most]:
            raise UsageError(
                f"--param partition: no topic here has a partition {number} (the most: "
                f"topic {most!r}, partitions 0 to {known_topics[most] - 1})"
            )
