"""Partitions claimed by several members: who keeps them (KIP-341).

Used by the sticky assignors and by ``uniform`` (the contract applies the same rule to the
broker-side assignors, whose own inputs never conflict).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Claims", "IntArray", "settle_claims"]

IntArray = npt.NDArray[np.int64]


@dataclass
class Claims:
    """Partitions claimed by members, flat: ``pid[i]`` is claimed by ``member[i]``, in
    member order and, within a member, in the order of its owned list."""

    pid: IntArray
    member: IntArray
    members: int

    def by_member(self) -> list[list[int]]:
        split: list[list[int]] = [[] for _ in range(self.members)]
        for pid, member in zip(self.pid.tolist(), self.member.tolist(), strict=True):
            split[member].append(pid)
        return split

    @classmethod
    def from_lists(cls, owned: list[list[int]]) -> Claims:
        lengths = [len(slots) for slots in owned]
        member = np.repeat(np.arange(len(owned), dtype=np.int64), lengths)
        pid = np.fromiter((p for slots in owned for p in slots), dtype=np.int64, count=sum(lengths))
        return cls(pid, member, len(owned))


def settle_claims(owned: Claims, generation: list[int], total: int) -> tuple[Claims, set[int]]:
    """The claims still valid, and the partitions lost to a same-generation tie.

    KIP-341's rule, as Kafka's sticky assignors apply it: of several claims on one
    partition the strictly highest generation keeps it; a tie at the top drops it
    from every claimant. ``total`` is the number of partition ids.
    """
    if not len(owned.pid):
        return owned, set()
    contested = np.flatnonzero(np.bincount(owned.pid, minlength=total) > 1)
    if not len(contested):
        return owned, set()
    in_dispute = np.isin(owned.pid, contested)
    last_claimant: dict[int, int] = {}
    holder: dict[int, int] = {}
    tied: set[int] = set()
    disputed = np.flatnonzero(in_dispute)
    for pid, member in zip(
        owned.pid[disputed].tolist(), owned.member[disputed].tolist(), strict=True
    ):
        other = last_claimant.get(pid)
        if other is None or generation[member] > generation[other]:
            holder[pid] = member
            last_claimant[pid] = member
        elif generation[member] == generation[other]:
            tied.add(pid)
            holder.pop(pid, None)
            last_claimant[pid] = member
    keep = ~in_dispute
    for i, pid, member in zip(
        disputed.tolist(),
        owned.pid[disputed].tolist(),
        owned.member[disputed].tolist(),
        strict=True,
    ):
        keep[i] = holder.get(pid) == member
    return Claims(owned.pid[keep], owned.member[keep], owned.members), tied
