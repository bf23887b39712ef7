"""``kstore record ...``: the recorders of real groups (kstore/record)."""

from __future__ import annotations

import logging
import math
import re
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kstore._errors import UsageError
from kstore._extras import require
from kstore._text import counted
from kstore.commands._stop import stop_requested
from kstore.record._failures import (
    CONFIGURATION,
    ClientFailure,
    FirstAnswer,
    check_max_retries,
)
from kstore.record.config import KafkaSettings, RedactingFilter, load_settings

if TYPE_CHECKING:
    from kstore.model.events import Event, StreamId

__all__ = ["merge_reports_cmd", "parse_interval", "poll_groups", "record_offsets"]

log = logging.getLogger("kstore.record")


def parse_interval(text: str) -> float:
    """``5s``, ``500ms``, ``2m`` or a bare number of seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", text)
    if found is None or float(found.group(1)) <= 0:
        raise UsageError(f"--interval: not a positive duration like 5s or 500ms: {text!r}")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[found.group(2)]
    return float(found.group(1)) * scale


def _groups(groups: list[str] | None, all_groups: bool) -> list[str] | None:
    if all_groups and groups:
        raise UsageError("give --group or --all-groups, not both")
    if not all_groups and not groups:
        raise UsageError("give --group G (repeatable) or --all-groups")
    return None if all_groups else sorted(set(groups or []))


class _UtcFormatter(logging.Formatter):
    """``2026-11-27T17:25:08.627Z INFO ...``: times as everywhere in kstore, ISO-8601 in
    UTC (logging's own were local, ``2026-11-27 17:25:08,627``)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        at = datetime.fromtimestamp(record.created, UTC)
        return at.isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


def _first_answer(settings: KafkaSettings) -> FirstAnswer:
    """The bound on the wait for the broker's first answer (``default.api.timeout.ms``);
    a bad value is refused as the clients' own bad settings are."""
    try:
        return settings.first_answer()
    except UsageError as exc:
        raise UsageError(ClientFailure(CONFIGURATION, str(exc)).line()) from None


@contextmanager
def _running(settings: KafkaSettings | None) -> Iterator[threading.Event]:
    """INFO logs to stderr (secrets masked); SIGINT/SIGTERM set the returned stop event."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_UtcFormatter())
    if settings is not None:
        handler.addFilter(RedactingFilter(settings))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    # kafka-python's own log: critical lines only, as librdkafka's (a broker that is down
    # would otherwise add a handful of ERROR lines to each retry's WARNING), through the
    # same filter (else Python's last-resort handler would print them as they are).
    client_log = logging.getLogger("kafka")
    client_log.addHandler(handler)
    client_log.setLevel(logging.CRITICAL)
    try:
        with stop_requested(
            signal.SIGINT,
            signal.SIGTERM,
            heard=lambda sig: log.info("%s: finishing the batch in flight", sig.name),
        ) as stop:
            yield stop
    finally:
        log.removeHandler(handler)
        client_log.removeHandler(handler)


def record_offsets(
    store_path: Path,
    *,
    bootstrap_servers: str | None,
    config: Path | None,
    overrides: list[str],
    groups: list[str] | None,
    all_groups: bool,
    start: str,
    file: Path | None,
    cluster: str,
    topic: str,
    max_retries: int = 10,
) -> None:
    from kstore.model.events import parse_event
    from kstore.store.log import Store
    from kstore.store.writer import Writer

    store = Store(store_path)
    if file is not None:
        from kstore.record.offsets_events import events_from_dump

        if bootstrap_servers or config or overrides:
            raise UsageError("--file reads a dump: no broker settings with it")
        selected = None if all_groups or not groups else sorted(set(groups))
        with _running(None):
            raw_events, skipped, errors = events_from_dump(file, cluster, selected)
            for error in errors:
                log.warning("skipped a bad record: %s", error)
            result = Writer(store).write(parse_event(event) for event in raw_events)
        print(
            f"{len(raw_events):,} events ({result.stored:,} new, "
            f"{result.already:,} already stored), {skipped:,} records skipped ({len(errors):,} bad)"
        )
        return

    check_max_retries(max_retries)
    require("kafka")
    from kstore.record.tail import KafkaTopicSource, OffsetsTailer

    if start not in ("beginning", "now"):
        raise UsageError(f"--from: beginning or now, not {start!r}")
    selected = _groups(groups, all_groups)
    settings = load_settings(config, bootstrap_servers, overrides=overrides)
    with settings.scrubbed_errors(), _running(settings) as stop:
        settings.bootstrap_servers  # noqa: B018 - a clear error before anything starts
        first = _first_answer(settings)
        store.check()  # after the settings' own checks, before the broker is asked
        log.info("tailing %s (%s)", topic, settings.describe())
        tailer = OffsetsTailer(
            store,
            lambda positions: KafkaTopicSource(
                settings,
                topic,
                positions,
                "beginning" if start == "beginning" else "now",
            ),
            cluster=cluster,
            topic=topic,
            groups=selected,
            stop=stop,
            max_retries=max_retries,
            first=first,
        )
        try:
            tailer.run()
        finally:  # the summary, also when the broker stayed away (then exit 1)
            stats = tailer.stats
            print(
                f"{counted(stats.records, 'record')}, {counted(stats.events, 'event')} "
                f"({stats.stored:,} new), {counted(stats.bad, 'bad record')} skipped, "
                f"{counted(stats.retries, 'retry', 'retries')}"
            )


def poll_groups(
    store_path: Path,
    *,
    bootstrap_servers: str | None,
    config: Path | None,
    overrides: list[str],
    groups: list[str] | None,
    all_groups: bool,
    interval: str,
    cluster: str,
    polls: int | None,
    max_retries: int = 10,
) -> None:
    require("kafka")
    from kstore.record.poller import KafkaAdminView, Poller
    from kstore.store.log import Store

    seconds = parse_interval(interval)
    if polls is not None and polls < 1:
        raise UsageError(f"--polls: 1 or more, not {polls}")
    check_max_retries(max_retries)
    selected = _groups(groups, all_groups)
    store = Store(store_path)
    settings = load_settings(config, bootstrap_servers, overrides=overrides)
    with settings.scrubbed_errors(), _running(settings) as stop:
        settings.bootstrap_servers  # noqa: B018 - a clear error before anything starts
        # A setting kafka-python has no name for: refused before the "polling" line and
        # the summary of 0 polls (it was refused by the first poll, in the retry loop).
        try:
            settings.kafka_python()
        except UsageError as exc:  # said as the poll's own refusal said it
            raise UsageError(ClientFailure(CONFIGURATION, str(exc)).line()) from None
        first = _first_answer(settings)
        store.check()  # after the settings' own checks, before the broker is asked
        log.info("polling every %g s (%s)", seconds, settings.describe())
        poller = Poller(
            store,
            None,
            cluster=cluster,
            groups=selected,
            open_admin=lambda: KafkaAdminView(settings),
        )
        try:
            poller.run(seconds, stop, polls, max_retries=max_retries, first=first)
        finally:  # the summary, also when the broker stayed away (then exit 1)
            poller.close()
            print(
                f"{counted(poller.polls, 'poll')}, {counted(poller.stored, 'event')} stored, "
                f"{counted(poller.retries, 'retry', 'retries')}"
            )


def merge_reports_cmd(
    store_path: Path,
    *,
    reports: Path,
    group: str | None,
    cluster: str,
    settle: float,
) -> None:
    from kstore.record.confluent import merge_reports, read_reports
    from kstore.store.interface import ConcurrencyError
    from kstore.store.log import Store
    from kstore.store.writer import Writer

    if not 0 <= settle < math.inf:  # NaN too
        raise UsageError(f"--settle: not a number of seconds >= 0: {settle:g}")
    events = merge_reports(read_reports(reports, group), cluster=cluster, settle=settle)
    streams = sorted({event.stream for event in events})
    while True:  # checked and appended at the versions read; again if a writer came between
        writer = Writer(Store(store_path))
        for stream in streams:
            mine = [event for event in events if event.stream == stream]
            _refuse_another_record(stream, writer.stored(stream), mine)
        try:
            result = writer.write(events)
            break
        except ConcurrencyError:
            continue
    print(f"{len(events):,} events ({result.stored:,} new, {result.already:,} already stored)")


def _refuse_another_record(stream: StreamId, stored: Iterable[Event], events: list[Event]) -> None:
    """Refused, nothing stored, when appending the merge's new events would not put them
    where the merge has them (event ids follow a generation's content): a generation the
    stream holds as merged otherwise (by an earlier kstore, or from other reports) would
    be stored a second time, after the stream's end; a fact new to an earlier generation
    (one an earlier kstore did not write) would land after later generations."""
    from kstore.model.events import AssignmentCompleted

    ids: set[str] = set()
    generations: set[int] = set()
    for found in stored:
        ids.add(found.event_id)
        if isinstance(found.data, AssignmentCompleted):
            generations.add(found.data.generation)
    new = [event.event_id not in ids for event in events]
    start = new.index(True) if True in new else len(events)
    if all(new[start:]) and not any(
        isinstance(e.data, AssignmentCompleted) and e.data.generation in generations
        for e in events[start:]
    ):
        return
    numbered = [getattr(e.data, "generation", None) for e in events[start:]]
    generation = next((g for g in numbered if isinstance(g, int)), None)
    what = "a generation" if generation is None else f"generation {generation}"
    raise UsageError(
        f"group {stream.group} (cluster {stream.cluster}): these reports merge {what} "
        "otherwise than the record stored in this store (merged by an earlier "
        "kstore, or from other reports); nothing stored: merge them into a new store, or "
        "under another --cluster"
    )
