"""The offsets tailer's loop: batches, checkpoint and resume, retries, bad records, --file."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kstore._errors import KstoreError
from kstore.model import fold
from kstore.record.offsets_events import OffsetsEventBuilder, RawRecord
from kstore.record.tail import OffsetsTailer, SourceError, checkpoint_key
from kstore.store.log import Store
from tests.record.test_offsets_events import CLASSIC, _dump_line


def expected_events(records: list[RawRecord]) -> list[dict[str, object]]:
    builder = OffsetsEventBuilder("prod")
    return [event for raw in records for event in builder.feed(raw)]


class FakeSource:
    """Serves the records after the given positions, ``batch`` at a time; can fail once."""

    opened: list[dict[int, int]]

    def __init__(self, records: list[RawRecord], batch: int, fail_after: int | None) -> None:
        self.records = records
        self.batch = batch
        self.fail_after = fail_after
        self.served = 0
        self.opened = []

    def open(self, positions: dict[int, int]) -> FakeSource:
        self.opened.append(positions)
        self.pending = [r for r in self.records if r.offset >= positions.get(r.partition, 0)]
        return self

    def poll(self, timeout: float) -> list[RawRecord]:
        if self.fail_after is not None and self.served >= self.fail_after:
            self.fail_after = None
            raise SourceError("broker gone")
        out, self.pending = self.pending[: self.batch], self.pending[self.batch :]
        self.served += len(out)
        return out

    def close(self) -> None:
        pass


def tailer(store: Store, source: FakeSource, **kwargs: object) -> OffsetsTailer:
    return OffsetsTailer(store, source.open, cluster="prod", backoff=(0.01, 0.05), **kwargs)  # type: ignore[arg-type]


def stored(store: Store) -> list[dict[str, object]]:
    return [s.event.to_dict() for s in store.events()]


@pytest.mark.parametrize("batch", [1, 2, 10])
def test_the_loop_stores_the_events_of_the_records(store: Store, batch: int) -> None:
    source = FakeSource(CLASSIC, batch, None)
    stats = tailer(store, source).run(until_idle=True)
    assert stored(store) == expected_events(CLASSIC)
    assert stats.records == len(CLASSIC)
    assert stats.stored == len(expected_events(CLASSIC))


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 5])
def test_a_restart_resumes_at_the_checkpoint_without_duplicates(store: Store, cut: int) -> None:
    first = FakeSource(CLASSIC[:cut], 1, None)
    tailer(store, first).run(until_idle=True)
    second = FakeSource(CLASSIC, 2, None)
    stats = tailer(store, second).run(until_idle=True)
    assert second.opened == [{7: CLASSIC[cut - 1].offset + 1}]
    assert stats.records == len(CLASSIC) - cut
    assert stored(store) == expected_events(CLASSIC)


def test_a_forgotten_position_replays_into_the_same_ids(store: Store) -> None:
    tailer(store, FakeSource(CLASSIC, 3, None)).run(until_idle=True)
    with duckdb.connect(str(store.path)) as connection:  # as after a schema downgrade
        connection.execute("DELETE FROM kstore_checkpoints")
    stats = tailer(store, FakeSource(CLASSIC, 3, None)).run(until_idle=True)
    assert stats.records == len(CLASSIC)
    assert stats.stored == 0
    assert stored(store) == expected_events(CLASSIC)


def test_a_failed_append_stores_neither_events_nor_position(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    tailer(store, FakeSource(CLASSIC[:2], 2, None)).run(until_idle=True)
    before = store.checkpoint(checkpoint_key("prod", "__consumer_offsets"))
    real = Store._store_heads

    def crash(self: Store, *args: Any) -> None:
        real(self, *args)
        raise RuntimeError("killed mid-append")

    monkeypatch.setattr(Store, "_store_heads", crash)
    with pytest.raises(RuntimeError, match="killed"):
        tailer(store, FakeSource(CLASSIC, 10, None)).run(until_idle=True)
    monkeypatch.undo()
    assert store.checkpoint(checkpoint_key("prod", "__consumer_offsets")) == before
    assert stored(store) == expected_events(CLASSIC[:2])
    source = FakeSource(CLASSIC, 10, None)
    tailer(store, source).run(until_idle=True)
    assert source.opened == [{7: CLASSIC[1].offset + 1}]
    assert stored(store) == expected_events(CLASSIC)


def test_a_lost_broker_is_retried_and_the_source_reopened_where_it_stopped(store: Store) -> None:
    source = FakeSource(CLASSIC, 2, fail_after=2)
    stats = tailer(store, source).run(until_idle=True)
    assert stats.retries == 1
    assert source.opened == [{}, {7: CLASSIC[1].offset + 1}]
    assert stored(store) == expected_events(CLASSIC)


def test_bad_records_are_counted_and_skipped(store: Store) -> None:
    broken = RawRecord(CLASSIC[-1].offset + 1, 7, 0, b"\x00\x02\x00", b"junk")
    stats = tailer(store, FakeSource([*CLASSIC, broken], 3, None)).run(until_idle=True)
    assert stats.bad == 1
    assert stored(store) == expected_events(CLASSIC)


def test_a_stop_request_ends_the_loop_after_the_batch(store: Store) -> None:
    stop = threading.Event()

    class Stopping(FakeSource):
        def poll(self, timeout: float) -> list[RawRecord]:
            out = super().poll(timeout)
            stop.set()
            return out

    stats = tailer(store, Stopping(CLASSIC, 2, None), stop=stop).run()
    assert stats.records == 2
    assert len(stored(store)) == len(expected_events(CLASSIC[:2]))


def test_a_second_tailer_of_the_same_topic_is_refused(store: Store) -> None:
    tailer(store, FakeSource(CLASSIC[:1], 1, None)).run(until_idle=True)
    one = tailer(store, FakeSource(CLASSIC, 1, None))
    two = tailer(store, FakeSource(CLASSIC, 1, None))  # both start from the same position
    one.run(until_idle=True)
    with pytest.raises(KstoreError, match="moved by another recorder"):
        two.run(until_idle=True)
    assert stored(store) == expected_events(CLASSIC)
    # Another topic, or another cluster, has a position of its own.
    other = tailer(store, FakeSource(CLASSIC, 2, None), topic="copy")
    assert other.run(until_idle=True).records == len(CLASSIC)


def test_the_group_selection_must_match_the_checkpoint(store: Store) -> None:
    tailer(store, FakeSource(CLASSIC, 1, None), groups=["g"]).run(until_idle=True)
    with pytest.raises(Exception, match=r"recorded into this store for groups \[.g.\], not all"):
        tailer(store, FakeSource(CLASSIC, 1, None))


def test_record_offsets_file_appends_the_dump_idempotently(store: Store, tmp_path: Path) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(_dump_line(raw) + "\n" for raw in CLASSIC))
    command = [sys.executable, "-m", "kstore.cli", "--store", str(store.path), "record"]
    command += ["offsets", "--file", str(dump), "--cluster", "prod", "--all-groups"]
    first = subprocess.run(command, capture_output=True, text=True, check=True)
    again = subprocess.run(command, capture_output=True, text=True, check=True)
    count = len(expected_events(CLASSIC))
    assert first.stdout.startswith(f"{count:,} events ({count:,} new, 0 already")
    assert again.stdout.startswith(f"{count:,} events (0 new, {count:,} already")
    assert stored(store) == expected_events(CLASSIC)
    state = fold(s.event for s in store.events())
    assert state.members == {}


def test_the_position_is_kept_in_the_store_and_nothing_beside_it(store: Store) -> None:
    tailer(store, FakeSource(CLASSIC, 10, None)).run(until_idle=True)
    raw = store.checkpoint(checkpoint_key("prod", "__consumer_offsets"))
    assert raw["positions"] == {"7": CLASSIC[-1].offset + 1}
    assert raw["groups"] is None
    assert OffsetsEventBuilder("prod", None, raw["builder"]).state() == raw["builder"]
    assert [p.name for p in store.path.parent.iterdir() if "offsets" in p.name] == []
