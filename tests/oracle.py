"""Golden files of Apache Kafka's and librdkafka's own assignors, and the one helper
that checks them.

``tests/golden/<strategy>.jsonl`` holds, per strategy, every request of
``shared/oracle/vectors`` with the result Kafka's Java assignor gave (``source`` says
which vector file and ``line`` which line it came from). ``kafka-errors`` lines have no
result: Kafka throws on them, kstore must answer with a valid assignment and a warning.
``tests/golden/librdkafka-<name>.jsonl`` holds strategy ``librdkafka:<name>``: the
requests of ``shared/oracle/librdkafka/vectors.jsonl`` with librdkafka's own answers;
lines with ``librdkafka_abort`` and no result are requests on which librdkafka crashed;
lines with source ``live-2.16.0`` come from live groups (``tests/golden/librdkafka_live.py``).
``tests/golden/kafka-python-<name>.jsonl`` (``kafka-python:<name>``): kafka-python's own
answers to the Java files' requests (``tests/golden/kafka_python_vectors.py``); lines
with ``kafka_python_error`` are requests on which it raised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from kstore.assignors import AssignmentResult, assign, validate_request

GOLDEN = Path(__file__).parent / "golden"

__all__ = ["GOLDEN", "Golden", "expected_result", "golden", "golden_strategies", "validate_all"]


def golden_strategies() -> list[str]:
    """The strategies that have a golden file (``librdkafka-range`` holds ``librdkafka:range``)."""
    stems = sorted(p.stem for p in GOLDEN.glob("*.jsonl"))
    return [re.sub(r"^(librdkafka|kafka-python)-", r"\1:", s) for s in stems]


@dataclass(frozen=True)
class Golden:
    strategy: str
    source: str
    line: int
    name: str
    raw: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.source}:{self.line}" + (f":{self.name}" if self.name else "")


@cache
def golden(strategy: str) -> tuple[Golden, ...]:
    path = GOLDEN / f"{strategy.replace(':', '-', 1)}.jsonl"
    rows = []
    with path.open() as handle:
        for text in handle:
            raw = json.loads(text)
            rows.append(Golden(strategy, raw["source"], raw["line"], raw.get("name", ""), raw))
    return tuple(rows)


def expected_result(row: Golden) -> dict[str, list[list[Any]]] | None:
    """Kafka's answer under the contract's mapping (default topic ids); None if Kafka threw."""
    raw = row.raw
    if "result_with_default_topic_ids" in raw:
        return raw["result_with_default_topic_ids"]["assignment"]  # type: ignore[no-any-return]
    if "result" in raw:
        return raw["result"]["assignment"]  # type: ignore[no-any-return]
    return None


def run(row: Golden) -> AssignmentResult:
    return assign(validate_request(row.raw["request"]))


def _as_lists(assignment: dict[str, list[tuple[str, int]]]) -> dict[str, list[list[Any]]]:
    return {m: [list(tp) for tp in tps] for m, tps in assignment.items()}


def mismatches(strategy: str) -> Iterator[tuple[Golden, str]]:
    """Every golden row of ``strategy`` whose result differs from Kafka's, with a diff."""
    for row in golden(strategy):
        expected = expected_result(row)
        if expected is None:
            continue
        got = _as_lists(run(row).assignment)
        if got != expected:
            diff = []
            for member in sorted(set(got) | set(expected)):
                g, e = got.get(member), expected.get(member)
                if g != e:
                    diff.append(f"{member}: got {g} want {e}")
            yield row, "; ".join(diff)[:2000]


def validate_all(strategy: str) -> list[str]:
    """Ids (with a diff) of every golden row of ``strategy`` that kstore gets wrong."""
    return [f"{row.id}: {diff}" for row, diff in mismatches(strategy)]
