"""Who consumes each partition over simulated time: the numbers behind a run's summary."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from kstore.assignors import TopicPartition

__all__ = ["OwnershipLedger"]


_Hold = list[Any]
"""A member's hold on partitions, ``[member, since, partitions]``: live (``since`` None)
from its first acquisition until the member lets go of everything it holds (``since``:
then), each of its partitions pointing to it; or partitions let go of apart (or never
owned, ``member`` None), unowned since ``since``. A list: one is made per member and
rebalance. Its partitions are the tuple it was given until a set of them is needed
(``_held``): an eager member's hold never needs one (it ends whole); a cooperative
member's is the tuple again once it holds exactly the share it was given
(``acquire_each`` with ``exact``), so a share kept is one tuple comparison.

Each partition points to one hold, so a member letting go of all it holds (an eager
rebalance: every member) is one change, not one per partition.
"""

_Row = list[_Hold | None]
"""A topic's holds by partition number (``None``: a partition neither added nor
acquired yet): every rebalance reads and sets each partition's, and a list indexed by
number costs a fraction of a dictionary keyed by the ``(topic, partition)`` tuple,
whose hash is made anew on each look-up."""

_NOTHING: frozenset[TopicPartition] = frozenset()


@dataclass(slots=True)
class OwnershipLedger:
    """Partitions' owners as members really hold them (after revoking, before the next
    assignment arrives), not as the last assignment says.

    A partition without an owner accumulates ``unowned_ms``; one that gets an owner other
    than its previous one counts as a move.
    """

    rows: dict[str, _Row] = field(default_factory=dict)
    """Each known partition's hold, by topic and partition number: its owner, or its
    last owner and since when it has none."""
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
        added = self.counts
        unowned = None
        for topic, count in counts.items():
            known = added.get(topic, 0)
            if count <= known:
                continue
            added[topic] = count
            row = self._row(topic, count - 1)
            for p in range(known, count):
                if row[p] is None:
                    if unowned is None:
                        unowned = [None, now, None]
                    row[p] = unowned

    def _row(self, topic: str, partition: int) -> _Row:
        """``topic``'s row, grown to hold ``partition``."""
        row = self.rows.get(topic)
        if row is None:
            row = self.rows[topic] = []
        if partition >= len(row):
            row.extend([None] * (partition + 1 - len(row)))
        return row

    def _holds(self) -> Iterator[_Hold]:
        """Each known partition's hold (a hold once for each of its partitions)."""
        for row in self.rows.values():
            yield from filter(None, row)

    def held(self, member: str) -> Set[TopicPartition]:
        """The partitions ``member`` holds now: the ledger's own set, not to be changed."""
        hold = self.live.get(member)
        return _held(hold) if hold is not None else _NOTHING

    def holds_given(self, member: str, tps: tuple[TopicPartition, ...]) -> bool:
        """Whether ``member`` holds ``tps`` as it was given them: its hold is still the
        tuple it was given, equal to ``tps`` (a cooperative member that keeps its
        assignment, at every decision: no set made). False says nothing (``held``)."""
        hold = self.live.get(member)
        return hold is not None and hold[2] == tps

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
        held = _held(hold)
        if tps == held:
            self.release_all(member, now)
            return
        let_go = None
        for tp in tps:
            topic, p = tp
            row = self.rows.get(topic)
            if row is not None and p < len(row) and row[p] is hold:
                if let_go is None:
                    let_go = [member, now, None]
                row[p] = let_go
                held.discard(tp)

    def acquire(self, member: str, tps: Collection[TopicPartition], now: int) -> None:
        self.acquire_each(((member, tps),), now)

    def acquire_each(
        self,
        holdings: Iterable[tuple[str, Collection[TopicPartition]]],
        now: int,
        *,
        exact: bool = False,
    ) -> None:
        """Each ``(member, partitions)`` in turn: ``member`` now holds ``partitions``;
        ``exact``: and nothing else (it holds none but some of them already), so a hold
        keeps ``partitions`` as given when they are a tuple (``holds_given``)."""
        # Every rebalance passes each partition through here: locals, no calls per
        # partition but to grow a row, the row looked up again only at another topic
        # (partition numbers are never negative).
        rows, live = self.rows, self.live
        total, longest, moves = self.unowned_ms, self.longest_unowned_ms, self.moves
        topic: str | None = None
        row: _Row = []
        for member, tps in holdings:
            hold = live.get(member)
            if hold is None:
                hold = live[member] = [member, None, tps if type(tps) is tuple else set(tps)]
            elif exact and type(tps) is tuple:
                hold[2] = tps
            else:
                _held(hold).update(tps)
            for t, p in tps:
                if t is not topic:
                    topic, row = t, rows.get(t) or self._row(t, p)
                try:
                    current = row[p]
                except IndexError:  # a partition no row holds yet (never added)
                    row, current = self._row(t, p), None
                if current is not None:
                    since = current[1]
                    if since is None:
                        if current is hold:
                            continue
                        # Kafka never hands a partition over without its owner revoking it
                        # first; a simulator bug would show up here as a double owner.
                        raise AssertionError(
                            f"{(t, p)} given to {member} while {current[0]} still owns it"
                        )
                    gap = now - since
                    total += gap
                    if gap > longest:
                        longest = gap
                    previous = current[0]
                    if previous is not None and previous != member:
                        moves += 1
                row[p] = hold
        self.unowned_ms, self.longest_unowned_ms, self.moves = total, longest, moves

    def rename(self, old: str, new: str) -> None:
        """A static member replaced: its partitions carry on under the new id."""
        live = self.live
        for hold in {id(h): h for h in self._holds() if h[0] == old}.values():
            hold[0] = new
        held = live.pop(old, None)
        if held is None:
            return
        held[0] = new
        into = live.get(new)
        if into is None:
            live[new] = held
            return
        for topic, p in held[2]:  # the new id holds partitions already: one hold of both
            self.rows[topic][p] = into
        _held(into).update(held[2])

    def close(self, now: int) -> None:
        """Count the gaps still open at the end of a run up to ``now``."""
        unowned = [h for h in self._holds() if h[1] is not None]
        for hold in unowned:
            self._gap(now - hold[1])
        for hold in unowned:
            hold[1] = now

    def _gap(self, ms: int) -> None:
        self.unowned_ms += ms
        self.longest_unowned_ms = max(self.longest_unowned_ms, ms)


def _held(hold: _Hold) -> set[TopicPartition]:
    """A live hold's partitions as a set (made from the tuple it was given, and kept)."""
    held = hold[2]
    if type(held) is not set:
        held = hold[2] = set(held)
    return held
