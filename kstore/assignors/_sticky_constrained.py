"""The sticky assignors' constrained path: every member subscribes to the same topics.

Kafka's ``ConstrainedAssignmentBuilder`` in three steps: members keep their valid owned
partitions (ranked by partition number, then topic) up to ``minQuota`` or ``maxQuota``;
rack-aware round robin; plain round robin over the under-filled members sorted by id,
then one more partition each to members at ``minQuota`` in the order they got there.
The bulk steps run on numpy arrays, or on lists for a small group (``StickyGroup.small``:
the same steps, each numpy call's fixed cost being more than its work there); the round
robin is computed pass by pass rather than partition by partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

import numpy as np
import numpy.typing as npt

from kstore.assignors._sticky_group import NO_RACK, StickyGroup

__all__ = ["ConstrainedResult", "constrained_assign"]

IntArray = npt.NDArray[np.int64]


@dataclass
class ConstrainedResult:
    """``owner[pid]`` for every partition (a list for a small group); ``transferring``:
    Kafka's ``partitionsTransferringOwnership`` (pid -> new owner)."""

    owner: IntArray | list[int]
    transferring: dict[int, int]

    def withhold_transfers(self) -> None:
        """KIP-429: each partition changing owner is left unassigned this round."""
        if not self.transferring:
            return
        if isinstance(self.owner, list):
            for pid in self.transferring:
                self.owner[pid] = -1
        else:
            self.owner[np.fromiter(self.transferring, dtype=np.int64)] = -1


class _Quotas:
    def __init__(self, total: int, members: int) -> None:
        self.min = total // members
        self.max = -(-total // members)
        self.expected_over = total % members
        self.over = 0


def _keep_counts(per_member: list[int], quotas: _Quotas) -> tuple[list[int], list[int], list[int]]:
    """How many of its owned partitions each member keeps (its first ones in rank order),
    the members under minQuota and the members at minQuota that may take one more."""
    keep: list[int] = []
    under: list[int] = []
    at_min: list[int] = []
    for m, owned in enumerate(per_member):
        if owned < quotas.min:
            keep.append(owned)
            under.append(m)
        elif owned >= quotas.max and quotas.over < quotas.expected_over:
            quotas.over += 1
            if quotas.over == quotas.expected_over:
                at_min.clear()
            keep.append(quotas.max)
        else:
            keep.append(quotas.min)
            if quotas.over < quotas.expected_over:
                at_min.append(m)
    return keep, under, at_min


def _kept_owned_small(
    group: StickyGroup, quotas: _Quotas
) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """``_kept_owned`` on lists."""
    racks = group.racks
    tied = group.multiply_claimed
    rank_width = max(len(group.topics), 1)
    offsets = group.offsets
    pid_topic = group.pid_topic
    given_up: list[int] = []
    given_up_by: list[int] = []
    by_member: list[list[int]] = [[] for _ in group.member_ids]
    for pid, m in zip(group.claims.pid, group.claims.member, strict=True):
        if racks.enabled and racks.mismatch(m, pid):
            given_up.append(pid)
            given_up_by.append(m)
        elif pid not in tied:
            by_member[m].append(pid)

    def rank(pid: int) -> int:
        topic = pid_topic[pid]
        return (pid - offsets[topic]) * rank_width + topic

    for owned in by_member:
        if len(owned) > 1:
            owned.sort(key=rank)
    keep, under, at_min = _keep_counts(list(map(len, by_member)), quotas)
    kept_pid: list[int] = []
    kept_member: list[int] = []
    for m, (owned, count) in enumerate(zip(by_member, keep, strict=True)):
        kept_pid += owned[:count]
        kept_member += repeat(m, count)
        if len(owned) > count:
            given_up += owned[count:]
            given_up_by += repeat(m, len(owned) - count)
    return kept_pid, kept_member, given_up, given_up_by, under, at_min


def _kept_owned(
    group: StickyGroup, quotas: _Quotas
) -> tuple[IntArray, IntArray, IntArray, IntArray, list[int], list[int]]:
    """Step 1: kept pids and their members, given-up pids and their previous owners,
    the members under minQuota and the members at minQuota that may take one more."""
    n = len(group.member_ids)
    pid = np.asarray(group.claims.pid, dtype=np.int64)
    member = np.asarray(group.claims.member, dtype=np.int64)
    flat_count = len(pid)
    off_rack = pid[:0]
    off_rack_member = member[:0]
    racks = group.racks
    if flat_count and racks.enabled:
        member_rack = np.asarray(racks.member_rack, dtype=np.int64)[member]
        rack_set = np.asarray(racks.partition_rack_set, dtype=np.int64)[pid]
        width = max(racks.member_rack) + 1
        on_rack = np.zeros((len(racks.rack_sets), width), dtype=bool)
        for i, s in enumerate(racks.rack_sets):
            on_rack[i, [r for r in s if r < width]] = True
        has_rack = member_rack != NO_RACK
        matched = on_rack[rack_set, np.where(has_rack, member_rack, 0)]
        keep = ~has_rack | matched
        off_rack, off_rack_member = pid[~keep], member[~keep]
        pid, member = pid[keep], member[keep]
    if flat_count and group.multiply_claimed:
        keep = ~np.isin(pid, np.fromiter(group.multiply_claimed, dtype=np.int64))
        pid, member = pid[keep], member[keep]
    topic, partition = group.split(pid)
    rank_key = partition * max(len(group.topics), 1) + topic
    order = np.lexsort((rank_key, member))
    pid, member = pid[order], member[order]
    per_member = np.bincount(member, minlength=n)

    counts, under, at_min = _keep_counts(per_member.tolist(), quotas)
    keep_count = np.asarray(counts, dtype=np.int64)
    starts = np.cumsum(per_member) - per_member
    kept = (np.arange(len(pid)) - starts[member]) < keep_count[member]
    return (
        pid[kept],
        member[kept],
        np.concatenate([off_rack, pid[~kept]]),
        np.concatenate([off_rack_member, member[~kept]]),
        under,
        at_min,
    )


def _rack_round_robin(
    group: StickyGroup,
    unassigned: list[int],
    counts: list[int],
    under: list[int],
    at_min: list[int],
    quotas: _Quotas,
) -> tuple[list[int], list[int], list[int]]:
    """Step 2: (assigned pids, their members, still unassigned pids)."""
    racks = group.racks
    member_rack = racks.member_rack
    rack_sets = racks.rack_sets
    set_of = racks.partition_rack_set

    def next_on_rack(pid: int, candidates: list[int], first: int) -> int:
        replica_racks = rack_sets[set_of[pid]]
        if not replica_racks:
            return -1
        size = len(candidates)
        for i in range(size):
            index = (first + i) % size
            rack = member_rack[candidates[index]]
            if rack != NO_RACK and rack in replica_racks:
                return index
        return -1

    got_pid: list[int] = []
    got_member: list[int] = []
    left: list[int] = []
    cursor = 0
    for pid in unassigned:
        chosen = -1
        index = next_on_rack(pid, under, cursor)
        if index >= 0:
            chosen = under[index]
            new_count = counts[chosen] + 1
            if new_count >= quotas.min:
                del under[index]
                if new_count < quotas.max and quotas.over < quotas.expected_over:
                    at_min.append(chosen)
            else:
                index += 1
            cursor = index % len(under) if under else 0
        elif at_min:
            index = next_on_rack(pid, at_min, 0)
            if index >= 0:
                chosen = at_min[index]
                if counts[chosen] + 1 == quotas.max:
                    del at_min[index]
                    quotas.over += 1
                    if quotas.over == quotas.expected_over:
                        at_min.clear()
        if chosen >= 0:
            counts[chosen] += 1
            got_pid.append(pid)
            got_member.append(chosen)
        else:
            left.append(pid)
    return got_pid, got_member, left


def _round_robin_small(
    partitions: int, counts: list[int], under: list[int], at_min: list[int], quotas: _Quotas
) -> list[int]:
    """``_round_robin`` on lists: pass k serves the members missing more than k."""
    missing = [quotas.min - counts[m] for m in under]
    sequence: list[int] = []
    reached: list[int] = []
    for k in range(max(missing, default=0)):
        for m, short in zip(under, missing, strict=True):
            if short > k:
                sequence.append(m)
                if short == k + 1:
                    reached.append(m)
    if partitions <= len(sequence):
        return sequence[:partitions]
    queue = at_min + reached
    extra = partitions - len(sequence)
    if extra > len(queue):
        raise RuntimeError("sticky: partitions left over with every member at maxQuota")
    return sequence + queue[:extra]


def _round_robin(
    partitions: int, counts: list[int], under: list[int], at_min: list[int], quotas: _Quotas
) -> IntArray:
    """Step 3: the member of each of the next ``partitions`` unassigned partitions.

    Kafka cycles over the under-filled members; one drops out when it reaches minQuota
    and joins the queue of members at minQuota. Pass k of the cycle therefore serves, in
    order, the members still missing at least k partitions.
    """
    members = np.asarray(under, dtype=np.int64)
    missing = quotas.min - np.asarray([counts[m] for m in under], dtype=np.int64)
    served = int(missing.sum())
    if len(members) and (missing == missing[0]).all():
        sequence = np.tile(members, int(missing[0]))
        reached = members
    elif len(members):
        slot = np.repeat(np.arange(len(members)), missing)
        pass_no = np.arange(served) - np.repeat(np.cumsum(missing) - missing, missing)
        order = np.lexsort((slot, pass_no))
        sequence = members[slot[order]]
        last = pass_no[order] == missing[slot[order]] - 1
        reached = sequence[last]
    else:
        sequence = members
        reached = members
    if partitions <= served:
        return sequence[:partitions]
    queue = np.concatenate([np.asarray(at_min, dtype=np.int64), reached])
    extra = partitions - served
    if extra > len(queue):
        raise RuntimeError("sticky: partitions left over with every member at maxQuota")
    return np.concatenate([sequence, queue[:extra]])


def _constrained_small(group: StickyGroup) -> ConstrainedResult:
    """``constrained_assign`` on lists."""
    n = len(group.member_ids)
    owner = [-1] * group.total
    if n == 0:
        return ConstrainedResult(owner, {})
    quotas = _Quotas(group.total, n)
    kept_pid, kept_member, given_up, given_up_by, under, at_min = _kept_owned_small(group, quotas)
    counts = [0] * n
    for pid, m in zip(kept_pid, kept_member, strict=True):
        owner[pid] = m
        counts[m] += 1
    unassigned = [pid for pid, m in enumerate(owner) if m < 0]
    racks = group.racks
    if racks.rack_consumers is not None and unassigned:
        per_set, sets = racks.rack_consumers, racks.partition_rack_set
        unassigned.sort(key=lambda pid: per_set[sets[pid]])
    rank = group.name_rank
    under.sort(key=rank.__getitem__)
    at_min.sort(key=rank.__getitem__)
    pids: list[int] = []
    members: list[int] = []
    if racks.enabled:
        pids, members, unassigned = _rack_round_robin(
            group, unassigned, counts, under, at_min, quotas
        )
    pids += unassigned
    members += _round_robin_small(len(unassigned), counts, under, at_min, quotas)
    for pid, m in zip(pids, members, strict=True):
        owner[pid] = m
    # as below (KIP-429)
    transferring: dict[int, int] = {}
    tied = group.multiply_claimed
    if pids and (given_up or tied):
        previous = dict(zip(given_up, given_up_by, strict=True))
        for pid, m in zip(pids, members, strict=True):
            before = previous.get(pid, -1)
            if (before >= 0 and before != m) or pid in tied:
                transferring[pid] = m
    return ConstrainedResult(owner, transferring)


def constrained_assign(group: StickyGroup) -> ConstrainedResult:
    if group.small:
        return _constrained_small(group)
    n = len(group.member_ids)
    total = group.total
    owner = np.full(total, -1, dtype=np.int64)
    if n == 0:
        return ConstrainedResult(owner, {})
    quotas = _Quotas(total, n)
    kept_pid, kept_member, given_up, given_up_by, under, at_min = _kept_owned(group, quotas)
    owner[kept_pid] = kept_member

    unassigned = np.flatnonzero(owner < 0)
    racks = group.racks
    if racks.rack_consumers is not None and len(unassigned):
        per_set = np.asarray(racks.rack_consumers, dtype=np.int64)
        sets = np.asarray(racks.partition_rack_set, dtype=np.int64)
        unassigned = unassigned[np.argsort(per_set[sets[unassigned]], kind="stable")]
    rank = group.name_rank
    under.sort(key=rank.__getitem__)
    at_min.sort(key=rank.__getitem__)
    counts = np.bincount(kept_member, minlength=n).tolist()

    new_pid: list[IntArray] = []
    new_member: list[IntArray] = []
    if racks.enabled:
        got_pid, got_member, left = _rack_round_robin(
            group, unassigned.tolist(), counts, under, at_min, quotas
        )
        new_pid.append(np.asarray(got_pid, dtype=np.int64))
        new_member.append(np.asarray(got_member, dtype=np.int64))
        unassigned = np.asarray(left, dtype=np.int64)
    new_pid.append(unassigned)
    new_member.append(_round_robin(len(unassigned), counts, under, at_min, quotas))
    pids = np.concatenate(new_pid)
    members = np.concatenate(new_member)
    owner[pids] = members

    # A new owner other than the member that gave the partition up, or any owner of a
    # partition lost to a same-generation tie, must wait for the revocation (KIP-429).
    transferring: dict[int, int] = {}
    if len(pids) and (len(given_up) or group.multiply_claimed):
        previous = np.full(total, -1, dtype=np.int64)
        previous[given_up] = given_up_by
        before = previous[pids]
        hit = (before >= 0) & (before != members)
        if group.multiply_claimed:
            hit |= np.isin(pids, np.fromiter(group.multiply_claimed, dtype=np.int64))
        transferring = dict(zip(pids[hit].tolist(), members[hit].tolist(), strict=True))
    return ConstrainedResult(owner, transferring)
