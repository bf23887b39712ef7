"""One assignor measurement in a process of its own, so that peak memory is the case's own
and a slow call can be stopped from outside::

    python -m benchmarks._assignor_worker {kstore|kafka-python} CASE STRATEGY RUNS BUDGET

It builds the inputs, prints ``ready``, then one JSON line per timed call
(``{"seconds": ..., "digest": ...}``, the digest of the result on the first call only),
stopping early once the calls together took more than BUDGET seconds, and last
``{"peak_rss_mib": ...}``. A failure is one line ``{"error": ...}`` and exit status 3.

kafka-python gets what its consumer leader would hand it for the same request: a decoded
``ConsumerProtocolSubscription`` per member (sticky's previous assignment encoded in the
user data, cooperative-sticky's owned partitions and generation in the subscription) and
metadata listing every topic of the request.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import resource
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from benchmarks._cases import RawRequest, get_case

__all__ = ["KAFKA_PYTHON_STRATEGIES", "digest"]

KAFKA_PYTHON_STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")

# kafka-python's sticky assignors can take many GiB on the 1M-partition cases: stop them
# before they crowd out everyone else on the machine.
_KAFKA_PYTHON_MEMORY_LIMIT = 8 << 30

Canonical = dict[str, list[tuple[str, int]]]


def digest(members: Iterable[str], assignment: dict[str, list[tuple[str, int]]]) -> str:
    """A fingerprint of a result in the contract's form (every member, sorted lists)."""
    canonical = {m: sorted(assignment.get(m, ())) for m in members}
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _emit(line: object) -> None:
    print(line if isinstance(line, str) else json.dumps(line), flush=True)


def _kstore_call(raw: RawRequest) -> Callable[[], Canonical]:
    from kstore.assignors import assign, get_assignor, validate_request

    request = validate_request(raw)
    get_assignor(request.strategy)  # load the module before timing; fails if not built yet

    def call() -> Canonical:
        return assign(request).assignment

    return call


class _Metadata:
    """The two questions kafka-python's assignors ask ``ClusterMetadata``."""

    def __init__(self, topics: dict[str, int]) -> None:
        self._counts = topics

    def topics(self) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


def _by_topic(owned: list[list[Any]]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in owned:
        grouped.setdefault(topic, []).append(partition)
    return grouped


def _kafka_python_call(raw: RawRequest) -> Callable[[], Canonical]:
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.group import JoinGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as Subscription
    from kafka.structs import TopicPartition

    strategy = raw["strategy"]
    factories: dict[str, Callable[[], Any]] = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    if strategy not in factories:
        raise ValueError(f"kafka-python has no {strategy} assignor")

    def subscription(spec: dict[str, Any]) -> Any:
        topics = list(dict.fromkeys(spec["topics"]))
        owned = spec.get("owned", [])
        generation = spec.get("generation")
        if strategy == "sticky":
            previous = None
            if owned or generation is not None:
                previous = [TopicPartition(t, p) for t, p in owned]
            gen = -1 if generation is None else generation
            return StickyPartitionAssignor._metadata(topics, previous, gen)
        if strategy == "cooperative-sticky":
            return Subscription(
                version=3,
                topics=topics,
                user_data=b"",
                owned_partitions=[
                    Subscription.TopicPartition(topic=t, partitions=sorted(ps))
                    for t, ps in sorted(_by_topic(owned).items())
                ],
                generation_id=-1 if generation is None else generation,
                rack_id=spec.get("rack"),
            )
        return factories[strategy]().metadata(topics)

    # The leader receives the subscriptions as bytes and decodes them before assigning.
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=member_id,
            group_instance_id=spec.get("instance_id"),
            metadata=Subscription.decode(subscription(spec).encode()),
        )
        for member_id, spec in raw["members"].items()
    ]
    cluster = _Metadata(raw["topics"])
    logging.disable(logging.CRITICAL)  # as the Java anchors: logging off

    def call() -> Canonical:
        result = factories[strategy]().assign(cluster, members)
        return {m: [(tp.topic, tp.partition) for tp in a.partitions()] for m, a in result.items()}

    return call


def _measure(members: list[str], call: Callable[[], Canonical], runs: int, budget: float) -> None:
    spent = 0.0
    for run in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = call()
        seconds = time.perf_counter() - start
        _emit({"seconds": seconds, "digest": digest(members, result) if run == 0 else None})
        spent += seconds
        if spent > budget:
            break
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _emit({"peak_rss_mib": peak_kib / 1024})


def main(argv: list[str]) -> int:
    side, case_key, strategy, runs, budget = argv
    try:
        raw = get_case(case_key).request(strategy)
        if side == "kstore":
            call = _kstore_call(raw)
        else:
            resource.setrlimit(resource.RLIMIT_AS, (_KAFKA_PYTHON_MEMORY_LIMIT,) * 2)
            call = _kafka_python_call(raw)
        _emit("ready")
        _measure(list(raw["members"]), call, int(runs), float(budget))
    except Exception as exc:
        _emit({"error": _describe(exc)})
        return 3
    return 0


def _describe(exc: Exception) -> str:
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("kstore."):
        return "not built yet"
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
