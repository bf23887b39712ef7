"""Who consumes each partition over simulated time: the numbers behind a run's summary."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kstore.assignors import TopicPartition

__all__ = ["OwnershipLedger"]


@dataclass(slots=True)
class OwnershipLedger:
    """Partitions' owners as members really hold them (after revoking, before the next
    assignment arrives), not as the last assignment says.

    A partition without an owner accumulates ``unowned_ms``; one that gets an owner other
    than its previous one counts as a move.
    """

    owner: dict[TopicPartition, str | None] = field(default_factory=dict)
    last_owner: dict[TopicPartition, str] = field(default_factory=dict)
    unowned_since: dict[TopicPartition, int] = field(default_factory=dict)
    unowned_ms: int = 0
    longest_unowned_ms: int = 0
    moves: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    """Topic -> how many of its partitions ``add_topics`` has added."""

    def add_topics(self, counts: Mapping[str, int], now: int) -> None:
        """The partitions of ``counts`` (topic -> partition count) not known yet start
        unowned at ``now``; only partitions beyond a topic's last count are looked at."""
        owner, unowned_since, added = self.owner, self.unowned_since, self.counts
        for topic, count in counts.items():
            known = added.get(topic, 0)
            if count <= known:
                continue
            added[topic] = count
            for p in range(known, count):
                tp = (topic, p)
                if tp not in owner:
                    owner[tp] = None
                    unowned_since[tp] = now

    def release(self, member: str, tps: Iterable[TopicPartition], now: int) -> None:
        owner, unowned_since = self.owner, self.unowned_since
        for tp in tps:
            if owner.get(tp) == member:
                owner[tp] = None
                unowned_since[tp] = now

    def acquire(self, member: str, tps: Iterable[TopicPartition], now: int) -> None:
        self.acquire_each(((member, tps),), now)

    def acquire_each(
        self, holdings: Iterable[tuple[str, Iterable[TopicPartition]]], now: int
    ) -> None:
        """Each ``(member, partitions)`` in turn: ``member`` now holds ``partitions``."""
        # Every rebalance passes each partition through here: locals, no calls per partition.
        owner, last_owner, unowned_since = self.owner, self.last_owner, self.unowned_since
        total, longest, moves = self.unowned_ms, self.longest_unowned_ms, self.moves
        for member, tps in holdings:
            for tp in tps:
                current = owner.get(tp)
                if current == member:
                    continue
                if current is not None:
                    # Kafka never hands a partition over without its owner revoking it
                    # first; a simulator bug would show up here as a double owner.
                    raise AssertionError(f"{tp} given to {member} while {current} still owns it")
                gap = now - unowned_since.pop(tp, now)
                total += gap
                if gap > longest:
                    longest = gap
                previous = last_owner.get(tp)
                if previous is not None and previous != member:
                    moves += 1
                owner[tp] = member
                last_owner[tp] = member
        self.unowned_ms, self.longest_unowned_ms, self.moves = total, longest, moves

    def rename(self, old: str, new: str) -> None:
        """A static member replaced: its partitions carry on under the new id."""
        for tp, owner in self.owner.items():
            if owner == old:
                self.owner[tp] = new
        for tp, owner in self.last_owner.items():
            if owner == old:
                self.last_owner[tp] = new

    def owned_by(self, member: str) -> set[TopicPartition]:
        return {tp for tp, owner in self.owner.items() if owner == member}

    def close(self, now: int) -> None:
        """Count the gaps still open at the end of a run up to ``now``."""
        for since in self.unowned_since.values():
            self._gap(now - since)
        self.unowned_since = dict.fromkeys(self.unowned_since, now)

    def _gap(self, ms: int) -> None:
        self.unowned_ms += ms
        self.longest_unowned_ms = max(self.longest_unowned_ms, ms)
