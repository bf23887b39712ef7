"""Kafka's own bounds on what kstore reads, as pydantic types: one definition for the
events (``kstore.model``), the assignment contract (``kstore.assignors``), scenarios,
the recorders and Spark ingest. Here, not in ``kstore.model``, because the model's fold
imports the assignors.

- Generations, member epochs, partition numbers and counts, timeouts: Kafka's ``int32``.
- Partitions: at most ``MAX_PARTITIONS`` in one assignment request, kstore's own bound
  (Kafka's int32 lets a 2,000,000,000-partition topic through, which the log stores as
  the fact it is, but which no process could assign in memory).
- Names and ids (a member's, an instance's, a client's, a group's, a rack, a strategy):
  Kafka's wire strings, at most ``MAX_STRING`` (32,767) characters (an ``int16`` length);
  free text (a rebalance's reason, which the broker writes around up to three such
  strings) and a timeline (a replay's is named after its source's) at most ``MAX_TEXT``.
- Topic names as Kafka's ``Topic.validate``: 1 to 249 characters of ``[a-zA-Z0-9._-]``,
  not ``.`` or ``..``.
- Simulations: at most ``MAX_MEMBERS`` members, ``MAX_SIMULATED_PARTITIONS`` partitions
  (what ``--generate`` makes of that many members), ``MAX_STEPS`` generated steps and
  ``MAX_MEMBER_STEPS`` members times steps, what 2 cores and a few GB simulate in about two
  minutes (measured with ``kstore simulate --generate steady-churn``: 100,000 members for
  20 steps 122 s and 3.1 GB; 1,000 members for 4,000 steps 122 s and 3.3 GB; 10 members
  for 10,000 steps 10 s and 0.4 GB; a scenario file of 2 members and 10,000,000
  partitions ran out of 4 GB at its first rebalance). Memory grew with members times
  steps until a batch of events was bounded by its assignments' size (2026-11-27:
  1,000 members for 4,000 steps 0.8 GB, 40 s at load 2.6); it now grows with the group.
- Times: Kafka's are milliseconds since 1970 (``int64``); kstore takes 1970-01-01 to
  9999-12-31 UTC, what DuckDB, Arrow, Spark and Python all hold.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, Field, StrictInt, StrictStr, StringConstraints

__all__ = [
    "INT32_MAX",
    "MAX_MEMBERS",
    "MAX_MEMBER_STEPS",
    "MAX_PARTITIONS",
    "MAX_SIMULATED_PARTITIONS",
    "MAX_STEPS",
    "MAX_STRING",
    "MAX_TEXT",
    "Int32",
    "KafkaString",
    "NonNegativeInt32",
    "PartitionCount",
    "Text",
    "TopicName",
    "TopicRef",
    "check_instant",
    "check_topic",
]

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
MAX_PARTITIONS = 10_000_000
MAX_STRING = 32_767
MAX_TEXT = 100_000
MAX_MEMBERS = 100_000
MAX_STEPS = 10_000
MAX_MEMBER_STEPS = 2_000_000
MAX_SIMULATED_PARTITIONS = 2 * MAX_MEMBERS
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, tzinfo=UTC)

_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def check_topic(name: str) -> str:
    """``name`` if Kafka allows it as a topic name, else ``ValueError`` saying why."""
    if not _TOPIC.fullmatch(name):
        if not name:
            raise ValueError("a topic name cannot be empty")
        if len(name) > 249:
            raise ValueError(f"a topic name has at most 249 characters, not {len(name)}")
        bad = next(c for c in name if not _TOPIC.fullmatch(c))
        raise ValueError(f"a topic name is made of [a-zA-Z0-9._-], not {bad!r}")
    if name in (".", ".."):
        raise ValueError(f"a topic cannot be named {name!r}")
    return name


def check_instant(at: datetime) -> datetime:
    """``at`` (aware) if it lies in 1970-01-01 .. 9999-12-31 UTC, else ``ValueError``."""
    try:
        utc = at.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        raise ValueError("must lie between 1970-01-01 and 9999-12-31 UTC")
    return at


Int32 = Annotated[StrictInt, Field(ge=INT32_MIN, le=INT32_MAX)]
NonNegativeInt32 = Annotated[StrictInt, Field(ge=0, le=INT32_MAX)]
PartitionCount = Annotated[StrictInt, Field(ge=1, le=INT32_MAX)]
KafkaString = Annotated[StrictStr, StringConstraints(max_length=MAX_STRING)]
Text = Annotated[StrictStr, StringConstraints(max_length=MAX_TEXT)]
TopicName = Annotated[StrictStr, AfterValidator(check_topic)]
# The same rule as a pattern checked in pydantic's core, for the topic of every partition
# of an assignment (a million of them must cost no Python call each).
TopicRef = Annotated[
    StrictStr,
    StringConstraints(
        min_length=1,
        max_length=249,
        pattern=r"^(?:[a-zA-Z0-9._-]*[a-zA-Z0-9_-][a-zA-Z0-9._-]*|\.{3,})$",
    ),
]
