"""FIND_COORDINATOR: which ``__consumer_offsets`` partition (and so which broker) owns a group."""

from __future__ import annotations

from kstore._java import java_abs, string_hash

__all__ = ["DEFAULT_OFFSETS_PARTITIONS", "coordinator_partition"]

DEFAULT_OFFSETS_PARTITIONS = 50
"""Kafka's default ``offsets.topic.num.partitions``."""


def coordinator_partition(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``.

    ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 (``Math.abs`` would leave it negative).
    """
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    return java_abs(string_hash(group_id)) % partitions
