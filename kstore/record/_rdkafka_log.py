"""A librdkafka leader's assignor runs, read from its own debug log.

With the ``cgrp`` and ``assignor`` debug contexts on, a librdkafka consumer that leads
its group logs, for each run of its assignor: the generation (the JoinGroup answer
before it: ``JoinGroup response: GenerationId N``), then ``running S assignor for N
member(s)``, each member in its order with how many partitions it owned and its
subscription, and what the assignor gave each member (for cooperative-sticky, the target
before the cooperative step). These are the texts after ``]: `` of the facilities
``JOINGROUP`` and ``ASSIGN`` (librdkafka 2.16); ``LeaderLog`` reads them in order, one
client at a time, and hands out each run once it is complete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FACILITIES", "LeaderLog", "LeaderRun"]

FACILITIES = ("JOINGROUP", "ASSIGN")
"""The facilities of the lines ``LeaderLog`` reads."""

_RUN = re.compile(r"running (\S+) assignor for (\d+) member")
_JOINED = re.compile(r"JoinGroup response: GenerationId (-?\d+)")
_MEMBER = re.compile(
    r'Member "([^"]+)"(?: \(me\))? with (\d+) owned partition\(s\) and (\d+) subscribed'
)
_ASSIGNED = re.compile(r'Member "([^"]+)"(?: \(me\))? assigned (\d+) partition\(s\)')
_PART = re.compile(r"^\s+(\S+) \[(-?\d+)\]$")


@dataclass
class LeaderRun:
    """One assignor run of a leader."""

    at: float
    strategy: str
    size: int
    """How many members the run is for."""
    generation: int | None
    """The generation of the JoinGroup answer before the run (None: not logged)."""
    members: list[tuple[str, int, list[str]]] = field(default_factory=list)
    """Each member in the leader's order: its id, how many partitions it owned, its
    subscription."""
    assigned: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """What the assignor gave each member (cooperative-sticky: the target)."""
    _expected: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return len(self.members) == self.size == len(self.assigned) and all(
            len(self.assigned[m]) == n for m, n in self._expected.items()
        )


class LeaderLog:
    """Reads one client's log texts in order (``feed``) and gives each complete run."""

    def __init__(self) -> None:
        self._generation: int | None = None
        self._run: LeaderRun | None = None
        self._topics: list[str] | None = None
        self._partitions: list[tuple[str, int]] | None = None

    @staticmethod
    def starts_run(text: str) -> bool:
        """Whether ``text`` is the first line of an assignor run."""
        return _RUN.search(text) is not None

    def feed(self, at: float, text: str) -> LeaderRun | None:
        """The run this text completes, if any."""
        if found := _JOINED.search(text):
            self._generation, self._run = int(found.group(1)), None
        elif found := _RUN.search(text):
            size = int(found.group(2))
            self._run = LeaderRun(at, found.group(1), size, self._generation)
            self._topics = self._partitions = None
        elif self._run is None:
            return None
        elif found := _MEMBER.search(text):
            topics: list[str] = []
            self._run.members.append((found.group(1), int(found.group(2)), topics))
            self._topics, self._partitions = topics, None
        elif found := _ASSIGNED.search(text):
            partitions: list[tuple[str, int]] = []
            self._run.assigned[found.group(1)] = partitions
            self._run._expected[found.group(1)] = int(found.group(2))
            self._topics, self._partitions = None, partitions
        elif found := _PART.match(text):
            topic, partition = found.group(1), int(found.group(2))
            if self._topics is not None and partition < 0:
                self._topics.append(topic)
            elif self._partitions is not None and partition >= 0:
                self._partitions.append((topic, partition))
        else:
            return None
        if self._run is not None and self._run.complete:
            done, self._run = self._run, None
            self._topics = self._partitions = None
            return done
        return None
