"""Spark ingest of a dump larger than the driver's heap could hold whole.

The dump (about 130 MB, most of it lines of spaces that parse in no time) is ingested by
a ``kstore spark ingest`` process of its own with a 512 MB driver heap: read whole by one
task, as ingest once read each file, it ran out of memory. Its lines are numbered as
``kstore append`` numbers them (``str.splitlines``, across Spark's splits), and every
event and quarantined line must come out as ``kstore append`` reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from benchmarks._fleet import fleet
from kstore.model import EventError, parse_event_line
from kstore.spark._schema import arrow_to_events
from kstore.spark._session import C1_ONLY
from tests.spark.processes import kstore_process

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

_PAD = " " * 4095
"""A line of spaces: blank, so skipped, but it fills the file."""


def _dump(path: Path) -> str:
    events = [e.to_json() for e in fleet(3, 6)]
    lines: list[str] = []
    for index, event in enumerate(events):
        lines.extend([_PAD] * 500)
        if index % 10 == 3:
            # Breaks that Spark's reader does not cut at and ``str.splitlines`` does.
            lines.append(f"{event}\u2028not an event\x0c")
        elif index % 10 == 7:
            lines.append('{"group": "g", "type": "Nope", "at": "2026-11-21T10:00:00Z"}')
            lines.append(event)
        else:
            lines.append(event)
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def test_a_dump_larger_than_the_heap_streams_in_splits(tmp_path: Path) -> None:
    text = _dump(tmp_path / "dump.jsonl")
    assert len(text) > 130_000_000
    expected_events: dict[str, int] = {}
    expected_bad: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            expected_events[parse_event_line(line, number).event_id] = number
        except EventError as exc:
            expected_bad.append((number, str(exc), line))
    assert len(expected_bad) >= 10

    out = tmp_path / "out"
    conf = ["--master", "local[2]", "--conf", "spark.driver.memory=512m"]
    # C1 only, as for a small input (fit_jvm keeps C2 past 64 MiB): the heap, not the
    # JIT, is what this test is about.
    conf += ["--conf", f"spark.driver.extraJavaOptions={C1_ONLY}"]
    printed = kstore_process("spark", "ingest", "--in", str(tmp_path), "--out", str(out), *conf)
    assert f"ingested {len(expected_events):,} events" in printed
    assert f"quarantined {len(expected_bad)} lines" in printed

    table = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    rows = sorted(arrow_to_events(table), key=lambda row: row.position or 0)
    assert [row.event.event_id for row in rows] == list(expected_events)  # the file's order
    quarantined = [
        json.loads(line)
        for part in sorted((out / "quarantine").glob("*.json"))
        for line in part.read_text().splitlines()
    ]
    assert [(q["line"], q["reason"], q["text"]) for q in quarantined] == expected_bad
