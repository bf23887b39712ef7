"""Kafka's ``StickyAssignor`` and ``CooperativeStickyAssignor`` (Kafka 4.0, KIP-341/429/881).

Both run ``AbstractStickyAssignor``: the constrained path when every member subscribes
to the same topics (``_sticky_constrained``), the general path otherwise
(``_sticky_general``). The cooperative assignor then withholds each partition that
changes owner from its new owner for this round (KIP-429). See docs/assignors/sticky.md
for the quirks reproduced and the one Kafka crash answered instead.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kstore._gc import cyclic_gc_paused
from kstore.assignors._contract import (
    Assignment,
    AssignmentRequest,
    AssignmentResult,
    TopicPartition,
    partition_pairs,
)
from kstore.assignors._sticky_constrained import constrained_assign
from kstore.assignors._sticky_general import KafkaWouldThrow, general_assign
from kstore.assignors._sticky_group import StickyGroup, build_group
from kstore.model._construct import construct

__all__ = ["COOPERATIVE_STICKY", "STICKY", "StickyAssignor"]

IntArray = npt.NDArray[np.int64]


class StickyAssignor:
    """``sticky`` (eager) or ``cooperative-sticky``."""

    reads_owned = True

    def __init__(self, name: str, *, cooperative: bool) -> None:
        self.name = name
        self.cooperative = cooperative

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        with cyclic_gc_paused():
            return self.answer(request, build_group(request))

    def answer(self, request: AssignmentRequest, group: StickyGroup) -> AssignmentResult:
        """The answer to ``request``, whose group is ``group`` (``build_group``'s)."""
        warnings: list[str] = []
        owner: IntArray | list[int]
        if group.all_subscriptions_equal:
            constrained = constrained_assign(group)
            if self.cooperative:
                constrained.withhold_transfers()
            owner = constrained.owner
        else:
            try:
                general = general_assign(group)
            except KafkaWouldThrow as crash:
                warnings.append(self._crash_warning(group, crash))
                general = general_assign(group, kafka_claims=False)
            if general.looping:
                warnings.append(self._loop_warning(group, general.looping))
            if general.hash_sets_treeified:
                warnings.append(
                    f"{self.name}: a partition-movement HashSet grew a tree bin, whose "
                    "iteration order kstore does not model; the result may differ from Kafka's"
                )
            owner = general.owner
            if self.cooperative:
                _withhold_transfers(group, owner)
        return construct(
            AssignmentResult, assignment=_assignment(request, group, owner), warnings=warnings
        )

    def _crash_warning(self, group: StickyGroup, crash: KafkaWouldThrow) -> str:
        topic = group.topic_of(crash.pid)
        partition = crash.pid - group.offsets[topic]
        return (
            f"{self.name}: Kafka's assignor throws NullPointerException on this request: "
            f"member {group.member_ids[crash.claimant]!r} claims {group.topics[topic]}-"
            f"{partition} from an older generation but takes no part in reassignment; "
            "kstore ignored older-generation claims outside the claimant's subscription"
        )

    def _loop_warning(self, group: StickyGroup, moves: list[tuple[int, int, int]]) -> str:
        def name(pid: int) -> str:
            topic = group.topic_of(pid)
            return f"{group.topics[topic]}-{pid - group.offsets[topic]}"

        members = group.member_ids
        shown = ", ".join(
            f"{name(pid)} {members[old]!r} -> {members[new]!r}" for pid, old, new in moves[:4]
        )
        more = f" and {len(moves) - 4} more" if len(moves) > 4 else ""
        return (
            f"{self.name}: Kafka's assignor never returns on this request: its balancing "
            f"loop repeats the same moves forever ({shown}{more}); kstore stopped where the "
            "loop repeats and kept its moves only if they improved the balance, as Kafka "
            "decides after balancing"
        )


def _withhold_transfers(group: StickyGroup, owner: list[int]) -> None:
    """KIP-429 on the general path: a partition newly assigned to one member and owned
    by another is left out of the new owner's list this round."""
    owned = group.owned
    if not owned.pid:
        return
    kept_by_owner = {pid for pid, m in zip(owned.pid, owned.member, strict=True) if owner[pid] == m}
    for pid in owned.pid:
        if pid not in kept_by_owner:
            owner[pid] = -1


def _assignment(
    request: AssignmentRequest, group: StickyGroup, owner: IntArray | list[int]
) -> Assignment:
    """Each member's partitions, in (topic, partition) order as Python sorts them."""
    chunks = _chunks_small(group, owner) if group.small else _chunks_large(group, owner)
    index = {m: i for i, m in enumerate(group.member_ids)}
    in_python_order = group.topics == sorted(group.topics)
    result: Assignment = {}
    for member in request.members:
        chunk = chunks[index[member]]
        result[member] = chunk if in_python_order else sorted(chunk)
    return result


def _chunks_small(group: StickyGroup, owner: IntArray | list[int]) -> list[list[TopicPartition]]:
    """Each member's partitions in id order, a Python pass over ``owner`` (the pairs
    made once for answers on the same topics, as ``_chunks_large``'s: a replay's
    decisions of one group mostly are)."""
    chunks: list[list[TopicPartition]] = [[] for _ in group.member_ids]
    owners = owner.tolist() if isinstance(owner, np.ndarray) else owner
    pairs = partition_pairs(tuple(group.topics), tuple(group.partition_counts))
    for pid, m in enumerate(owners):
        if m >= 0:
            chunks[m].append(pairs[pid])
    return chunks


def _chunks_large(group: StickyGroup, owner: IntArray | list[int]) -> list[list[TopicPartition]]:
    """``_chunks_small`` for many partitions: a few numpy calls over all of them."""
    owner = np.asarray(owner, dtype=np.int64)
    pids = np.flatnonzero(owner >= 0)
    holders = owner[pids]
    order = np.argsort(holders, kind="stable")
    pids = pids[order]
    bounds = np.cumsum(np.bincount(holders, minlength=len(group.member_ids))).tolist()
    pairs = list(
        map(
            partition_pairs(tuple(group.topics), tuple(group.partition_counts)).__getitem__,
            pids.tolist(),
        )
    )
    return [pairs[bounds[i - 1] if i else 0 : bounds[i]] for i in range(len(bounds))]


STICKY = StickyAssignor("sticky", cooperative=False)
COOPERATIVE_STICKY = StickyAssignor("cooperative-sticky", cooperative=True)
