"""An event id names one fact: the same id with different content is an error naming both.

The same event again (a retried batch) is still "already there"; the same id with
another group, time or data (in the store, or twice in one batch) is refused, exit 2,
and nothing of the batch is stored. Both stores keep the rule.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from kstore._errors import UsageError
from kstore.model import MemberJoined, TopicChanged
from kstore.model.events import Event
from kstore.store import EventStore, MemoryStore, Store

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _event(event_id: str, **changes: object) -> Event:
    fields: dict[str, object] = {
        "event_id": event_id,
        "group": "g",
        "at": T0,
        "data": MemberJoined(member_id="a", topics=["t"]),
    }
    fields.update(changes)
    return Event(**fields)  # type: ignore[arg-type]


@pytest.fixture(params=["duckdb", "memory"])
def any_store(request: pytest.FixtureRequest, store: Store) -> EventStore:
    return store if request.param == "duckdb" else MemoryStore()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"group": "other"}, "group"),
        ({"at": T0 + timedelta(seconds=1)}, "at"),
        ({"data": MemberJoined(member_id="b", topics=["t"])}, "data.member_id"),
        ({"data": TopicChanged(topic="t", partitions=3)}, "type"),
    ],
)
def test_same_id_other_content_is_refused(
    any_store: EventStore, change: dict[str, object], field: str
) -> None:
    any_store.append([_event("e1")])
    fresh = _event("e2", data=MemberJoined(member_id="c", topics=["t"]))
    with pytest.raises(UsageError) as refused:
        any_store.append([fresh, _event("e1", **change)])
    message = str(refused.value)
    assert "'e1'" in message and field in message and "\n" not in message
    assert "stored" in message and "position 1" in message
    assert [s.event.event_id for s in any_store.events()] == ["e1"]  # e2 not stored either


def test_same_event_again_is_already_there(any_store: EventStore) -> None:
    any_store.append([_event("e1")])
    # the same instant written with another offset is the same fact
    same = _event("e1", at=T0.astimezone(timezone(timedelta(hours=2))))
    result = any_store.append([same, _event("e1")])
    assert (result.stored, result.already) == (0, 1)


def test_two_in_one_batch(any_store: EventStore) -> None:
    with pytest.raises(UsageError) as refused:
        any_store.append([_event("e1"), _event("x"), _event("e1", group="h")])
    message = str(refused.value)
    assert "'e1'" in message and "events 1 and 3 of the batch" in message
    assert list(any_store.events()) == []


def _append(store: Store, source: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store.path), "append", str(source)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_append_names_both(store: Store, tmp_path: Path) -> None:
    first = _event("e1").to_json()
    second = _event("e1", data=MemberJoined(member_id="z", topics=["t"])).to_json()
    (tmp_path / "a.jsonl").write_text(first + "\n")
    (tmp_path / "b.jsonl").write_text(second + "\n")

    assert _append(store, tmp_path / "a.jsonl").returncode == 0
    out = _append(store, tmp_path / "b.jsonl")
    assert out.returncode == 2, out
    assert out.stderr.count("\n") == 1 and "'e1'" in out.stderr and "member_id" in out.stderr
    assert "'a'" in out.stderr and "'z'" in out.stderr


def test_cli_append_names_the_file_and_lines_and_counts_every_line(
    store: Store, tmp_path: Path
) -> None:
    """A line repeating an earlier one was in no count (`stored 2, already there 0` for
    3 lines); an id stored already as another fact named no file nor line."""
    first, second = _event("e1").to_json(), _event("e2", group="h").to_json()
    other = _event("e2", group="h", data=MemberJoined(member_id="z", topics=["t"])).to_json()
    files = {
        "dup.jsonl": [first, second, second],
        "stored.jsonl": ["", first, other],  # a blank line is a line of the file
        "twice.jsonl": [_event("e3").to_json(), "", _event("e3", group="x").to_json()],
    }
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))

    out = _append(store, tmp_path / "dup.jsonl")
    assert (out.returncode, out.stdout) == (
        0,
        "stored 2, already there 0, repeated in the input 1\n",
    )
    out = _append(store, tmp_path / "stored.jsonl")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.startswith(
        f"kstore: error: {tmp_path / 'stored.jsonl'}: line 3: event id 'e2' is stored already "
        "(position 2, "
    ), out.stderr
    out = _append(store, tmp_path / "twice.jsonl")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        f"kstore: error: {tmp_path / 'twice.jsonl'}: lines 1 and 3: event id 'e3' given as two "
        "facts (group 'g' vs 'x'); nothing stored\n"
    )
    assert [s.event.event_id for s in store.events()] == ["e1", "e2"]
