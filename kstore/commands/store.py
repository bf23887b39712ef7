"""``kstore init``, ``append``, ``events``, ``state``, ``streams``, ``rebuild``.

What only some commands need (scopes, tables) is imported by them: ``kstore append``
starts without pandas or rich."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kstore._errors import UsageError
from kstore._files import named, read_text
from kstore._text import counted
from kstore.commands._stop import interrupted_says
from kstore.model.events import Event, EventError, parse_event_lines
from kstore.store.log import Store
from kstore.store.writer import Writer

if TYPE_CHECKING:
    from rich.progress import Progress

__all__ = [
    "append_events",
    "init_store",
    "print_events",
    "print_state",
    "print_streams",
    "rebuild_store",
]


def _time(option: str, text: str | None) -> datetime | None:
    """An ISO-8601 time; one without a zone is taken as UTC."""
    from kstore.analytics.scope import iso_time

    return None if text is None else iso_time(option, text)


def _range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """``--since`` and ``--until`` as times, the first not after the second."""
    start, end = _time("--since", since), _time("--until", until)
    if start is not None and end is not None and start > end:
        raise UsageError(f"--since {since} is after --until {until}: no time is in between")
    return start, end


def init_store(path: Path) -> None:
    before, after = Store(path).init()
    if before is None:
        print(f"created {path} (schema {after})")
    elif before == after:
        print(f"{path} is up to date (schema {after})")
    else:
        print(f"upgraded {path} from schema {before} to {after}; projections rebuilt")


def append_events(path: Path, file: str) -> None:
    """Validate the whole input first: a malformed line stores nothing (exit 2). On a
    terminal a bar counts the lines read, then says the events are being stored (one
    transaction, so no count): the store is checked before a big input is read."""
    store = Store(path)
    store.check()
    lines = read_text(file).splitlines()
    name = named(file)
    bar = _append_bar() if sys.stderr.isatty() else None  # rich: a terminal's start-up only
    with bar if bar is not None else contextlib.nullcontext():
        read: Iterable[str] = lines
        if bar is not None:
            task = bar.add_task(f"reading {name}", total=len(lines), count="")

            def told(done: int) -> None:
                bar.update(task, completed=done, count=f"{done:,}/{len(lines):,} lines")

            read = _counted(lines, told)
        try:
            with interrupted_says(f"interrupted while reading {name}: nothing stored"):
                events = parse_event_lines(read)
        except EventError as exc:
            raise EventError(f"{name}: {exc}") from None
        if bar is not None:
            bar.remove_task(task)
            bar.add_task(f"storing {len(events):,} events", total=None, count="one transaction")
        with interrupted_says(
            "interrupted while storing (one transaction: nothing of it is stored unless it "
            "had just committed); run the same command again: stored events are skipped, "
            "never stored twice"
        ):
            try:
                result = Writer(store).write(events)
            except EventError as exc:
                raise _placed(exc, name, lines, events) from None
    # The store keeps one of an event given twice: the rest are counted apart, so that
    # the counts add up to the events read.
    repeated = len(events) - result.stored - result.already
    said = f", repeated in the input {repeated:,}" if repeated else ""
    print(f"stored {result.stored:,}, already there {result.already:,}{said}")


def _placed(exc: EventError, name: str, lines: list[str], events: list[Event]) -> EventError:
    """The store's refusal of an event of the input (its id), naming the file and the
    lines of the event (an event given twice as two facts: both); other errors as they
    are."""
    if exc.event_id is None:
        return exc
    places = exc.events or next(
        ((n,) for n, event in enumerate(events, 1) if event.event_id == exc.event_id), ()
    )
    if not places:
        return exc
    numbers = [n for n, line in enumerate(lines, 1) if line.strip()]  # as read: blank skipped
    where = " and ".join(str(numbers[n - 1]) for n in places)
    return EventError(f"{name}: line{'s' if len(places) > 1 else ''} {where}: {exc.unplaced}")


def _append_bar() -> Progress:
    from rich.progress import TextColumn

    from kstore.commands._output import progress_bar

    return progress_bar("{task.description}", TextColumn("{task.fields[count]}"), show=True)


def _counted(lines: list[str], told: Callable[[int], None], every: int = 1000) -> Iterator[str]:
    """``lines`` as they are taken, ``told`` how many every ``every`` lines."""
    for start in range(0, len(lines), every):
        told(start)
        yield from lines[start : start + every]
    told(len(lines))


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
    """``jsonl`` and ``json`` give each event in the form of events.md."""
    from kstore.analytics.scope import resolve
    from kstore.commands._output import check_format, print_rows

    check_format(output)
    start, end = _range(since, until)
    store = Store(path)
    scope = resolve(store, cluster=cluster, group=group, timeline=timeline)
    found = store.events(
        cluster=scope.cluster, group=group, timeline=timeline, since=start, until=end
    )
    if output == "jsonl":
        for stored in found:
            sys.stdout.write(stored.event.to_json() + "\n")
        return
    if output == "json":
        sys.stdout.write("[" + ",".join(stored.event.to_json() for stored in found) + "]\n")
        return
    rows = [
        (
            stored.position,
            *stored.event.stream,
            stored.version,
            stored.event.at,
            stored.event.type,
            stored.event.data.to_dict(),
        )
        for stored in found
    ]
    columns = ["position", "cluster", "group", "timeline", "version", "at", "type", "data"]
    print_rows(columns, rows, output, empty="no events match")


def _sorted_state(whole: dict[str, Any]) -> dict[str, Any]:
    """The fold's JSON with members and topics (and every assignment's members and
    partitions, and the held-since maps) sorted, as the other formats list them; the fold keeps the
    order events gave them."""

    def shares(assignment: dict[str, list[list[Any]]]) -> dict[str, list[list[Any]]]:
        return {m: sorted(assignment[m]) for m in sorted(assignment)}

    previous = whole["previous"]
    return whole | {
        "members": dict(sorted(whole["members"].items())),
        "topics": dict(sorted(whole["topics"].items())),
        "assignment": shares(whole["assignment"]),
        "held_from": dict(sorted(whole["held_from"].items())),
        "previous": previous
        | {
            "assignment": shares(previous["assignment"]),
            "held_from": dict(sorted(previous["held_from"].items())),
        },
    }


def print_state(
    path: Path,
    *,
    cluster: str | None,
    group: str,
    timeline: str | None,
    at_version: int | None,
    at_generation: int | None,
    at: str | None,
    output: str,
) -> None:
    """``json`` is the fold's whole state; the other formats one row per member."""
    from kstore.analytics.scope import resolve, source_timeline
    from kstore.commands._output import check_format, json_indent, plain, print_rows

    check_format(output)
    store = Store(path)
    if timeline is None:  # replay's rule: a simulated group's state needed --timeline
        timeline = source_timeline(
            store, resolve(store, cluster=cluster, group=group), "--timeline"
        )
    stream = resolve(store, cluster=cluster, group=group, timeline=timeline).stream()
    when = _time("--at", at)
    # The store's answer past either end is the stream's first or last state (version 0:
    # the empty state before its first event, all nulls); asked on the command line, such
    # a point is a mistake to name, not an answer to give.
    if at_version is not None or when is not None:
        info = next(s for s in store.streams() if s.stream == stream)
        last, first = info.events, info.first_at  # ``events``: the stream's version
        if at_version is not None and not 1 <= at_version <= last:
            raise UsageError(f"--at-version {at_version}: {stream} has versions 1 to {last}")
        if when is not None and when < first:
            raise UsageError(f"--at {at}: before the first event of {stream} ({plain(first)})")
    state = store.state(stream, at_version=at_version, at_generation=at_generation, at=when)
    if output == "json":
        print(json.dumps(_sorted_state(state.to_dict()), ensure_ascii=False, indent=json_indent()))
        return

    def listed(items: list[str], sep: str) -> str | list[str]:
        # JSON Lines has arrays; a table and CSV a cell of text.
        return items if output == "jsonl" else sep.join(items)

    rows = [
        (
            member_id,
            listed(list(member.topics), ","),
            member.rack,
            member.instance_id,
            listed([f"{t}-{p}" for t, p in sorted(state.assignment.get(member_id, ()))], " "),
        )
        for member_id, member in sorted(state.members.items())
    ]
    rebalance = state.rebalance
    # What is known, no "None" (a state before its first rebalance has no generation)
    title = "  ".join(
        [
            str(stream),
            f"version {state.version}",
            *([f"generation {state.generation}"] if state.generation is not None else []),
            *([f"strategy {state.strategy}"] if state.strategy else []),
            *([f"rebalance of generation {rebalance.generation} in progress"] if rebalance else []),
            *(
                ["topics " + " ".join(f"{t}:{n}" for t, n in sorted(state.topics.items()))]
                if state.topics
                else []
            ),
        ]
    )
    columns = ["member", "topics", "rack", "instance_id", "partitions"]
    print_rows(
        columns, rows, output, title=title if output == "table" else None, empty="no members"
    )


def print_streams(path: Path, output: str = "table") -> None:
    from kstore.commands._output import check_format, print_rows

    check_format(output)
    rows = [
        (*info.stream, info.events, info.first_at, info.last_at, info.generation)
        for info in Store(path).streams()
    ]
    columns = ["cluster", "group", "timeline", "events", "first", "last", "generation"]
    empty = f"no streams in {path}: kstore append, simulate or record stores some"
    print_rows(columns, rows, output, empty=empty)


def rebuild_store(path: Path) -> None:
    from kstore.commands._output import counting

    store = Store(path)
    with (
        counting(f"rebuilding {path}", "events") as progress,
        interrupted_says(
            "interrupted: the projections are as they were (the rebuild is one transaction, "
            "undone unless it had just committed); run kstore rebuild again"
        ),
    ):
        store.rebuild(progress)
    print(f"rebuilt the projections and snapshots of {counted(len(store.streams()), 'stream')}")
