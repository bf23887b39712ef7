"""Who consumes each partition over simulated time: the numbers behind a run's summary."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from kstore.assignors import TopicPartition

__all__ = ["OwnershipLedger"]


_Hold = list[Any]
"""A member's hold on partitions, ``[member, since, partitions]``: live (``since`` None)
from its first acquisition until the member lets go of everything it holds (``since``:
then), each partition of the set pointing to it; or partitions let go of apart (or never
owned, ``member`` None), unowned since ``since``. A list: one is made per member and
rebalance.

Each partition points to one hold, so a member letting go of all it holds (an eager
rebalance: every member) is one change, not one per partition.
"""

_NOTHING: frozenset[TopicPartition] = frozenset()


@dataclass(slots=True)
class OwnershipLedger:
    """Partitions' owners as members really hold them (after revoking, before the next
    assignment arrives), not as the last assignment says.

    A partition without an owner accumulates ``unowned_ms``; one that gets an owner other
    than its previous one counts as a move.
    """

    holds: dict[TopicPartition, _Hold] = field(default_factory=dict)
    """Each known partition's hold: its owner, or its last owner and since when it has
    none."""
    live: dict[str, _Hold] = field(default_factory=dict)
    """Each member's live hold."""
    unowned_ms: int = 0
    longest_unowned_ms: int = 0
    moves: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    """Topic -> how many of its partitions ``add_topics`` has added."""

    def add_topics(self, counts: Mapping[str, int], now: int) -> None:
        """The partitions of ``counts`` (topic -> partition count) not known yet start
        unowned at ``now``; only partitions beyond a topic's last count are looked at."""
        holds, added = self.holds, self.counts
        unowned = None
        for topic, count in counts.items():
            known = added.get(topic, 0)
            if count <= known:
                continue
            added[topic] = count
            for p in range(known, count):
                tp = (topic, p)
                if tp not in holds:
                    if unowned is None:
                        unowned = [None, now, None]
                    holds[tp] = unowned

    def held(self, member: str) -> Set[TopicPartition]:
        """The partitions ``member`` holds now: the ledger's own set, not to be changed."""
        hold = self.live.get(member)
        return hold[2] if hold is not None else _NOTHING

    def release_all(self, member: str, now: int) -> None:
        """``member`` lets go of everything it holds: its hold ends."""
        hold = self.live.pop(member, None)
        if hold is not None:
            hold[1] = now

    def release(self, member: str, tps: Iterable[TopicPartition], now: int) -> None:
        """``member`` lets go of those of ``tps`` it holds."""
        hold = self.live.get(member)
        if hold is None:
            return
        if tps == hold[2]:
            self.release_all(member, now)
            return
        holds, let_go = self.holds, None
        for tp in tps:
            if holds.get(tp) is hold:
                if let_go is None:
                    let_go = [member, now, None]
                holds[tp] = let_go
                hold[2].discard(tp)

    def acquire(self, member: str, tps: Collection[TopicPartition], now: int) -> None:
        self.acquire_each(((member, tps),), now)

    def acquire_each(
        self, holdings: Iterable[tuple[str, Collection[TopicPartition]]], now: int
    ) -> None:
        """Each ``(member, partitions)`` in turn: ``member`` now holds ``partitions``."""
        # Every rebalance passes each partition through here: locals, no calls per partition.
        holds, live = self.holds, self.live
        total, longest, moves = self.unowned_ms, self.longest_unowned_ms, self.moves
        for member, tps in holdings:
            hold = live.get(member)
            if hold is None:
                hold = live[member] = [member, None, set(tps)]
            else:
                hold[2].update(tps)
            for tp in tps:
                current = holds.get(tp)
                if current is not None:
                    since = current[1]
                    if since is None:
                        if current is hold:
                            continue
                        # Kafka never hands a partition over without its owner revoking it
                        # first; a simulator bug would show up here as a double owner.
                        raise AssertionError(
                            f"{tp} given to {member} while {current[0]} still owns it"
                        )
                    gap = now - since
                    total += gap
                    if gap > longest:
                        longest = gap
                    previous = current[0]
                    if previous is not None and previous != member:
                        moves += 1
                holds[tp] = hold
        self.unowned_ms, self.longest_unowned_ms, self.moves = total, longest, moves

    def rename(self, old: str, new: str) -> None:
        """A static member replaced: its partitions carry on under the new id."""
        holds, live = self.holds, self.live
        for hold in {id(h): h for h in holds.values() if h[0] == old}.values():
            hold[0] = new
        held = live.pop(old, None)
        if held is None:
            return
        held[0] = new
        into = live.get(new)
        if into is None:
            live[new] = held
            return
        for tp in held[2]:  # the new id holds partitions already: one hold of both
            holds[tp] = into
        into[2] |= held[2]

    def close(self, now: int) -> None:
        """Count the gaps still open at the end of a run up to ``now``."""
        unowned = [h for h in self.holds.values() if h[1] is not None]
        for hold in unowned:
            self._gap(now - hold[1])
        for hold in unowned:
            hold[1] = now

    def _gap(self, ms: int) -> None:
        self.unowned_ms += ms
        self.longest_unowned_ms = max(self.longest_unowned_ms, ms)
