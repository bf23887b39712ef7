"""Vectors from kafka-python itself: its range, round-robin and sticky assignors (the
installed kafka-python, 3.0.12) run on the requests of the Java golden files.

    python -m tests.golden.kafka_python_vectors

writes ``tests/golden/kafka-python-{range,roundrobin,sticky}.jsonl``: each request
(strategy ``kafka-python:<name>``) with kafka-python's answer, or ``kafka_python_error``
where it raised. Members are passed in request order, as a JoinGroup response lists them.
The sticky assignor reads each member's previous partitions and generation from its user
data: a member with ``owned`` partitions or a ``generation`` sends them (generation -1
when absent, partitions grouped by topic as kafka-python's own metadata groups them);
the others send none. kafka-python's sticky iterates Python sets, so its answers could
depend on the string hash seed: every request is run under several seeds and must give
one answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData

GOLDEN = Path(__file__).parent
ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}
HASH_SEEDS = ("0", "1", "2", "3")


class _Cluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def topics(self) -> set[str]:
        return set(self.counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self.counts.get(topic)
        return set(range(count)) if count else None


def user_data(sub: dict[str, Any]) -> Any:
    """What a kafka-python sticky member sends: its previous partitions and generation."""
    owned, generation = sub.get("owned") or [], sub.get("generation")
    if not owned and generation is None:
        return b""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in owned:
        by_topic.setdefault(topic, []).append(partition)
    return StickyAssignorUserData(
        previous_assignment=list(by_topic.items()),
        generation=-1 if generation is None else generation,
    )


def answer(name: str, request: dict[str, Any]) -> dict[str, Any]:
    members = [
        SimpleNamespace(
            member_id=member,
            group_instance_id=sub.get("instance_id"),
            metadata=SimpleNamespace(
                topics=list(dict.fromkeys(sub["topics"])),
                user_data=user_data(sub) if name == "sticky" else b"",
            ),
        )
        for member, sub in request["members"].items()
    ]
    try:
        given = ASSIGNORS[name]().assign(_Cluster(request["topics"]), members)
    except Exception as exc:  # what kafka-python raises is the vector
        return {"kafka_python_error": type(exc).__name__}
    assignment = {
        member: sorted([t, p] for t, ps in given[member].assignment for p in ps)
        for member in request["members"]
    }
    return {"result": {"assignment": assignment}}


def vectors(name: str) -> list[str]:
    release = version("kafka-python")
    lines = []
    for line in (GOLDEN / f"{name}.jsonl").read_text().splitlines():
        row = json.loads(line)
        request = {**row["request"], "strategy": f"kafka-python:{name}"}
        vector = {"request": request, **answer(name, row["request"])}
        vector.update(source=f"kafka-python-{release}/{row['source']}", line=row["line"])
        lines.append(json.dumps(vector, separators=(",", ":")) + "\n")
    return lines


def under_seed(name: str, seed: str) -> list[str]:
    """The vectors of ``name`` from a Python started with string hash seed ``seed``."""
    env = {**os.environ, "PYTHONHASHSEED": seed}
    code = (
        "import json; from tests.golden.kafka_python_vectors import vectors; "
        f"print(json.dumps(vectors({name!r})))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    given: list[str] = json.loads(found.stdout)
    return given


def main() -> None:
    for name in ASSIGNORS:
        lines = vectors(name)
        if name == "sticky":
            for seed in HASH_SEEDS:
                differ = [i for i, line in enumerate(under_seed(name, seed)) if line != lines[i]]
                if differ:
                    sys.exit(f"kafka-python {name}: hash seed {seed} changes lines {differ}")
        (GOLDEN / f"kafka-python-{name}.jsonl").write_text("".join(lines))


if __name__ == "__main__":
    main()
