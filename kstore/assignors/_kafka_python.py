"""``kafka-python:range`` and ``kafka-python:roundrobin``: the range and round-robin
assignors of kafka-python 3.0.12 (``kafka/coordinator/assignors/``), for groups whose
kafka-python leader ran its own assignors (kstore's recording assignor assigns with
kstore's Java-exact ones instead).

Both order members as static ones by (instance id, member id), then dynamic ones by
member id, Python string order. They split the members with ``itertools.groupby`` on
the members as listed and keep one run per kind: with static and dynamic members
interleaved, every run but the last of each kind is left out (those members get
nothing). Round-robin raises ``KeyError`` as soon as the member in turn does not
subscribe to the partition's topic; kstore then answers with Kafka's Java round-robin
and a warning (``java_instead``, which ``kafka-python:sticky`` uses too). Neither knows
racks.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import cycle, groupby

from kstore.assignors._contract import AssignmentRequest, AssignmentResult, sorted_assignment

__all__ = ["KAFKA_PYTHON_RANGE", "KAFKA_PYTHON_ROUNDROBIN", "java_instead"]

_Member = tuple[str | None, str]
"""(instance id, member id) as kafka-python sorts them."""


def _ordered(members: Iterable[_Member]) -> list[str]:
    runs = {static: list(run) for static, run in groupby(members, key=lambda m: m[0] is not None)}
    static = sorted(runs.get(True, []), key=lambda m: (m[0] or "", m[1]))
    dynamic = sorted(runs.get(False, []), key=lambda m: m[1])
    return [member for _, member in static + dynamic]


class KafkaPythonRange:
    name = "kafka-python:range"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        members = request.members
        subscribers: dict[str, list[_Member]] = {}
        for member, sub in members.items():
            for topic in sub.topics:
                subscribers.setdefault(topic, []).append((sub.instance_id, member))
        out: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        for topic, found in subscribers.items():
            count = request.topics.get(topic)
            if count is None:
                continue
            consumers = _ordered(found)
            base, extra = divmod(count, len(consumers))
            for i, member in enumerate(consumers):
                start = base * i + min(i, extra)
                out[member].extend((topic, p) for p in range(start, start + base + (i < extra)))
        return AssignmentResult(assignment=sorted_assignment(members, out))


class KafkaPythonRoundRobin:
    name = "kafka-python:roundrobin"
    reads_owned = False

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        members = request.members
        out: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        topics = {t for sub in members.values() for t in sub.topics if t in request.topics}
        circle = cycle(_ordered((sub.instance_id, m) for m, sub in members.items()))
        why = "KeyError on this request (a member in turn does not subscribe to the topic)"
        for topic in sorted(topics):
            for partition in range(request.topics[topic]):
                member = next(circle)
                if topic not in members[member].topics:
                    return java_instead(request, "roundrobin", why)
                out[member].append((topic, partition))
        return AssignmentResult(assignment=sorted_assignment(members, out))


def java_instead(request: AssignmentRequest, java_name: str, raises: str) -> AssignmentResult:
    """Where kafka-python raises (``raises``: what and where): Kafka's Java assignor
    ``java_name`` answers, with a warning saying so."""
    from kstore.assignors import assign

    java = assign(request.model_copy(update={"strategy": java_name}))
    warning = (
        f"kafka-python:{java_name}: kafka-python 3.0.12 raises {raises}; answered with "
        f"Kafka's Java {java_name} assignor"
    )
    return AssignmentResult(assignment=java.assignment, warnings=[warning])


KAFKA_PYTHON_RANGE = KafkaPythonRange()
KAFKA_PYTHON_ROUNDROBIN = KafkaPythonRoundRobin()
