"""``kstore assign``, ``kstore partition``, ``kstore coordinator``."""

from __future__ import annotations

import json
import sys

from kstore._errors import UsageError
from kstore._files import read_text
from kstore.assignors import ContractError, assign, parse_requests, validate_request
from kstore.partitioner import partition_for_key
from kstore.protocol.find_coordinator import coordinator_partition

__all__ = ["assign_requests", "print_coordinator", "print_partition"]


def assign_requests(file: str) -> None:
    """Answer one request (a JSON object) or many (JSON Lines); all or nothing to stdout."""
    text = read_text(file)
    stripped = text.strip()
    if not stripped:
        raise ContractError("no request given")
    try:
        requests = [validate_request(json.loads(stripped))]
    except (json.JSONDecodeError, RecursionError):
        # Not one JSON document: JSON Lines, validated line by line.
        requests = list(parse_requests(text.splitlines()))
    out: list[str] = []
    for request in requests:
        result = assign(request)
        for warning in result.warnings:
            print(f"kstore: warning: {warning}", file=sys.stderr)
        out.append(result.to_json())
    sys.stdout.write("\n".join(out) + "\n")


def print_partition(key: str, partitions: int) -> None:
    if partitions < 1:
        raise UsageError("--partitions: must be at least 1")
    print(partition_for_key(key, partitions))
    print(f"toPositive(murmur2(utf8({key!r}))) % {partitions}")


def print_coordinator(group: str, partitions: int) -> None:
    if partitions < 1:
        raise UsageError("--partitions: must be at least 1")
    print(coordinator_partition(group, partitions))
    print(f"abs(hashCode({group!r})) % {partitions} (offsets.topic.num.partitions)")
