"""The producer's default partitioner (seed 002), exactly as Kafka computes it.

- A record with a key goes to ``toPositive(murmur2(serialized key)) % partitions``
  (``BuiltInPartitioner.partitionForKey``; the same formula since Kafka 0.8.2).
- A record without a key:
  - before Kafka 2.4 (``DefaultPartitioner`` of old): round robin over the topic's
    *available* partitions (those with a leader), or over all partitions when none is
    available; the counter is per topic and starts at a random value.
  - Kafka 2.4-3.2 (KIP-480, ``UniformStickyPartitioner`` behaviour inside the default
    partitioner): stick to one random available partition until the current batch is
    sent, then pick another one (never the same one twice in a row when there is a
    choice).
  - Kafka 3.3+ (KIP-794, the built-in partitioner): stick to a partition until
    ``batch.size`` bytes have been produced to it, then switch; the next partition is
    chosen at random, weighted towards brokers with shorter queues
    (``partitioner.adaptive.partitioning.enable``), skipping brokers that lag
    (``partitioner.availability.timeout.ms``).

kstore needs the keyed formula (which member consumed key K) and models the two sticky
behaviours for simulations; queue-length weighting is approximated as uniform.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kstore._java import murmur2, to_positive

__all__ = [
    "RoundRobinPartitioner",
    "StickyPartitioner",
    "partition_for_key",
]


def partition_for_key(key: bytes | str, partitions: int) -> int:
    """The partition of a keyed record: ``toPositive(murmur2(key)) % partitions``.

    A ``str`` key is serialised as UTF-8, as Kafka's ``StringSerializer`` does.
    """
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    data = key.encode("utf-8") if isinstance(key, str) else key
    return to_positive(murmur2(data)) % partitions


class RoundRobinPartitioner:
    """Null keys before Kafka 2.4: a per-topic counter over the available partitions."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._counters: dict[str, int] = {}

    def partition(self, topic: str, partitions: int, available: Sequence[int] | None = None) -> int:
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._rng.getrandbits(31)
        self._counters[topic] = (counter + 1) & 0xFFFFFFFF
        value = to_positive(counter)
        if available:
            return sorted(available)[value % len(available)]
        return value % partitions


class StickyPartitioner:
    """Null keys from Kafka 2.4 on: one partition until the batch is done, then another.

    ``batch_bytes`` = ``batch.size`` switches the partition after that many bytes, as
    KIP-794 does; call ``new_batch`` to switch as KIP-480 does when a batch is sent.
    """

    def __init__(self, batch_bytes: int = 16384, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._batch_bytes = batch_bytes
        self._current: dict[str, int] = {}
        self._produced: dict[str, int] = {}

    def partition(
        self, topic: str, partitions: int, size: int = 0, available: Sequence[int] | None = None
    ) -> int:
        current = self._current.get(topic)
        if current is None or current >= partitions:
            current = self._switch(topic, partitions, available)
        produced = self._produced.get(topic, 0) + size
        if produced >= self._batch_bytes:
            self._produced[topic] = 0
            self._switch(topic, partitions, available)
        else:
            self._produced[topic] = produced
        return current

    def new_batch(self, topic: str, partitions: int, available: Sequence[int] | None = None) -> int:
        return self._switch(topic, partitions, available)

    def _switch(self, topic: str, partitions: int, available: Sequence[int] | None) -> int:
        choices = sorted(available) if available else list(range(partitions))
        previous = self._current.get(topic)
        if len(choices) > 1 and previous in choices:
            choices.remove(previous)
        chosen = self._rng.choice(choices)
        self._current[topic] = chosen
        self._produced[topic] = 0
        return chosen
