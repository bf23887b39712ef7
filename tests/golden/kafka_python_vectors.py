"""Vectors from kafka-python itself: its range and round-robin assignors (the installed
kafka-python, 3.0.12) run on the requests of the Java golden files.

    python -m tests.golden.kafka_python_vectors

writes ``tests/golden/kafka-python-{range,roundrobin}.jsonl``: each request (strategy
``kafka-python:<name>``) with kafka-python's answer, or ``kafka_python_error`` where it
raised. Members are passed in request order, as a JoinGroup response lists them.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

GOLDEN = Path(__file__).parent
ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}


class _Cluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self.counts.get(topic)
        return set(range(count)) if count else None


def answer(name: str, request: dict[str, Any]) -> dict[str, Any]:
    members = [
        SimpleNamespace(
            member_id=member,
            group_instance_id=sub.get("instance_id"),
            metadata=SimpleNamespace(topics=list(dict.fromkeys(sub["topics"])), user_data=b""),
        )
        for member, sub in request["members"].items()
    ]
    try:
        given = ASSIGNORS[name].assign(_Cluster(request["topics"]), members)
    except Exception as exc:  # what kafka-python raises is the vector
        return {"kafka_python_error": type(exc).__name__}
    assignment = {
        member: sorted([t, p] for t, ps in given[member].assignment for p in ps)
        for member in request["members"]
    }
    return {"result": {"assignment": assignment}}


def main() -> None:
    release = version("kafka-python")
    for name in ASSIGNORS:
        with (GOLDEN / f"kafka-python-{name}.jsonl").open("w") as out:
            for line in (GOLDEN / f"{name}.jsonl").read_text().splitlines():
                row = json.loads(line)
                request = {**row["request"], "strategy": f"kafka-python:{name}"}
                vector = {"request": request, **answer(name, row["request"])}
                vector.update(source=f"kafka-python-{release}/{row['source']}", line=row["line"])
                out.write(json.dumps(vector, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
