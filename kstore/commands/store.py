"""``kstore init``, ``append``, ``events``, ``state``, ``streams``, ``rebuild``."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kstore._errors import UsageError
from kstore.model.events import StreamId, format_time, parse_event_lines
from kstore.store.log import Store

__all__ = [
    "append_events",
    "init_store",
    "print_events",
    "print_state",
    "print_streams",
    "rebuild_store",
]


def _console() -> Console:
    # Piped output is not cut to 80 columns: whole ids and times are what a script needs.
    return Console() if sys.stdout.isatty() else Console(width=1000)


def _time(option: str, text: str | None) -> datetime | None:
    """An ISO-8601 time; one without a zone is taken as UTC."""
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{option}: not an ISO-8601 time: {text!r}") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _format(option: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise UsageError(f"{option}: must be one of {', '.join(allowed)}, not {value!r}")
    return value


def init_store(path: Path) -> None:
    before, after = Store(path).init()
    if before is None:
        print(f"created {path} (schema {after})")
    elif before == after:
        print(f"{path} is up to date (schema {after})")
    else:
        print(f"upgraded {path} from schema {before} to {after}; projections rebuilt")


def append_events(path: Path, file: str) -> None:
    """Validate the whole input first: a malformed line stores nothing (exit 2)."""
    if file == "-":
        lines = sys.stdin.read().splitlines()
    else:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"{file}: {exc.strerror}") from None
    events = parse_event_lines(lines)
    result = Store(path).append(events)
    print(f"stored {result.stored}, already there {result.already}")


def print_events(
    path: Path,
    *,
    cluster: str | None,
    group: str | None,
    timeline: str | None,
    since: str | None,
    until: str | None,
    output: str,
) -> None:
    _format("--format", output, ("jsonl", "table"))
    found = Store(path).events(
        cluster=cluster,
        group=group,
        timeline=timeline,
        since=_time("--since", since),
        until=_time("--until", until),
    )
    if output == "jsonl":
        for stored in found:
            sys.stdout.write(stored.event.to_json() + "\n")
        return
    table = Table("position", "stream", "version", "at", "type", "data")
    for stored in found:
        event = stored.event
        table.add_row(
            str(stored.position),
            str(event.stream),
            str(stored.version),
            format_time(event.at),
            event.type,
            json.dumps(event.data.to_dict(), ensure_ascii=False),
        )
    _console().print(table)


def print_state(
    path: Path,
    stream: StreamId,
    *,
    at_version: int | None,
    at_generation: int | None,
    at: str | None,
    output: str,
) -> None:
    _format("--format", output, ("json", "table"))
    state = Store(path).state(
        stream, at_version=at_version, at_generation=at_generation, at=_time("--at", at)
    )
    if output == "json":
        print(json.dumps(state.to_dict(), ensure_ascii=False))
        return
    console = _console()
    rebalance = state.rebalance
    console.print(
        f"{stream}  version {state.version}  generation {state.generation}  "
        f"strategy {state.strategy}"
        + (f"  rebalance of generation {rebalance.generation} in progress" if rebalance else "")
    )
    members = Table("member", "topics", "rack", "instance id", "partitions")
    for member_id, member in state.members.items():
        owned = state.assignment.get(member_id, ())
        members.add_row(
            member_id,
            ", ".join(member.topics),
            member.rack or "",
            member.instance_id or "",
            " ".join(f"{t}-{p}" for t, p in owned),
        )
    console.print(members)
    topics = Table("topic", "partitions")
    for topic, count in state.topics.items():
        topics.add_row(topic, str(count))
    console.print(topics)


def print_streams(path: Path) -> None:
    table = Table("cluster", "group", "timeline", "events", "first", "last", "generation")
    for info in Store(path).streams():
        table.add_row(
            *info.stream,
            str(info.events),
            format_time(info.first_at),
            format_time(info.last_at),
            "" if info.generation is None else str(info.generation),
        )
    _console().print(table)


def rebuild_store(path: Path) -> None:
    store = Store(path)
    store.rebuild()
    print(f"rebuilt the projections and snapshots of {len(store.streams())} streams")
