"""Partitions claimed by several members: who keeps them (KIP-341).

Used by the sticky assignors and by ``uniform`` (the contract applies the same rule to the
broker-side assignors, whose own inputs never conflict).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import chain, compress, repeat

__all__ = ["Claims", "settle_claims"]


@dataclass
class Claims:
    """Partitions claimed by members, flat: ``pid[i]`` is claimed by ``member[i]``, in
    member order and, within a member, in the order of its owned list.

    Plain lists: the groups kstore replays by the million are small, where each numpy
    call would cost more than the Python it replaces."""

    pid: list[int]
    member: list[int]
    members: int

    def by_member(self) -> list[list[int]]:
        split: list[list[int]] = [[] for _ in range(self.members)]
        for pid, member in zip(self.pid, self.member, strict=True):
            split[member].append(pid)
        return split

    @classmethod
    def from_lists(cls, owned: list[list[int]]) -> Claims:
        pid = list(chain.from_iterable(owned))
        member = list(chain.from_iterable(map(repeat, range(len(owned)), map(len, owned))))
        return cls(pid, member, len(owned))


def settle_claims(owned: Claims, generation: list[int]) -> tuple[Claims, set[int]]:
    """The claims still valid, and the partitions lost to a same-generation tie.

    KIP-341's rule, as Kafka's sticky assignors apply it: of several claims on one
    partition the strictly highest generation keeps it; a tie at the top drops it
    from every claimant.
    """
    pids = owned.pid
    if len(set(pids)) == len(pids):
        return owned, set()
    # Counted in C; then only the contested claims go through Python, in claim order.
    contested = {pid for pid, claims in Counter(pids).items() if claims > 1}
    members = owned.member
    last_claimant: dict[int, int] = {}
    holder: dict[int, int] = {}
    tied: set[int] = set()
    for pid, member in [pair for pair in zip(pids, members, strict=True) if pair[0] in contested]:
        other = last_claimant.get(pid)
        if other is None or generation[member] > generation[other]:
            holder[pid] = member
            last_claimant[pid] = member
        elif generation[member] == generation[other]:
            tied.add(pid)
            holder.pop(pid, None)
            last_claimant[pid] = member
    get = holder.get
    kept = [
        pid not in contested or get(pid) == member
        for pid, member in zip(pids, members, strict=True)
    ]
    return Claims(list(compress(pids, kept)), list(compress(members, kept)), owned.members), tied
