"""The assignment contract (``docs/spec/assignment-contract.md``): request and result.

A request is parsed and validated once here; assignors receive a normalised
``AssignmentRequest`` (owned partitions that do not exist dropped, duplicate topics and
duplicate owned partitions removed) and return a plain mapping that ``AssignmentResult``
wraps. Everything in this module is pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from functools import lru_cache
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from kstore._errors import UsageError, invalid_field
from kstore._limits import (
    MAX_PARTITIONS,
    Int32,
    NonNegativeInt32,
    PartitionCount,
    TopicName,
    TopicRef,
)

__all__ = [
    "Assignment",
    "AssignmentRequest",
    "AssignmentResult",
    "ContractError",
    "MemberSubscription",
    "TopicPartition",
    "check_total",
    "normalise",
    "parse_request",
    "parse_requests",
    "partition_pairs",
    "sorted_assignment",
]

TopicPartition = tuple[str, int]


@lru_cache(maxsize=2)
def partition_pairs(topics: tuple[str, ...], counts: tuple[int, ...]) -> list[TopicPartition]:
    """Every partition of ``topics`` (``counts`` of each) in topic order, then partition
    order, as its (topic, partition) pair (not to be changed): made once for answers on
    the same topics, so that an assignor's consecutive answers list the very same pair
    objects. Who compares two answers' lists then stops at each pair's identity: the
    store's projection of a replay's sticky decisions, each compared with the one before
    (60 x 10,000 partitions: the replay's store part 0.80 -> 0.68 s); a simulated
    consumer group's members, each heartbeat after an epoch bump (its target against
    the last it took up). And the events of a run that keeps them share the pairs."""
    return [(topic, p) for topic, count in zip(topics, counts, strict=True) for p in range(count)]


"""A partition as the contract writes it: ``[topic, partition]``."""

Assignment = dict[str, list[TopicPartition]]
"""Member id -> its partitions."""


class MemberSubscription(BaseModel):
    """One member's part of a request: what it subscribes to and what it owned."""

    model_config = ConfigDict(frozen=True)

    topics: list[TopicName]
    owned: list[tuple[TopicRef, NonNegativeInt32]] = Field(default_factory=list)
    generation: Int32 | None = None
    rack: StrictStr | None = None
    instance_id: StrictStr | None = None


class AssignmentRequest(BaseModel):
    """One assignment request. ``members`` keeps the request's order (it matters to Kafka)."""

    model_config = ConfigDict(frozen=True)

    strategy: StrictStr
    topics: dict[TopicName, PartitionCount]
    partition_racks: dict[TopicName, list[list[StrictStr]]] | None = None
    members: dict[StrictStr, MemberSubscription]


class AssignmentResult(BaseModel):
    """An assignor's answer: every member, each list sorted by topic then partition.

    ``warnings`` are not part of the contract's JSON: they say where kstore answered a
    request on which Kafka's own assignor fails, and go to standard error.
    """

    assignment: Assignment
    warnings: list[str] = Field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"assignment": self.assignment}, separators=(",", ":"))


class ContractError(UsageError, ValueError):
    """A request that does not follow the contract; the message names the field (exit 2).

    Still a ``ValueError``, as it was before kstore had one error hierarchy.
    """


def _format_error(err: ValidationError) -> str:
    return invalid_field(err.errors()[0], where="request")


def parse_request(text: str | bytes) -> AssignmentRequest:
    """Parse and validate one JSON request; raises ``ContractError`` naming the field."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContractError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ContractError("not JSON kstore reads: nested too deeply") from None
    return validate_request(raw)


def validate_request(raw: Any) -> AssignmentRequest:
    """Validate an already decoded request."""
    if not isinstance(raw, dict):
        raise ContractError("request: must be a JSON object")
    try:
        request = AssignmentRequest.model_validate(raw)
    except ValidationError as exc:
        raise ContractError(_format_error(exc)) from None
    from kstore.assignors import strategies  # the registry; imported late to avoid a cycle

    if request.strategy not in strategies():
        from kstore.model.strategies import unknown_strategy

        raise ContractError(f"strategy: {unknown_strategy(request.strategy, strategies())}")
    check_total(request.topics)
    for topic, racks in (request.partition_racks or {}).items():
        count = request.topics.get(topic)
        if count is not None and len(racks) > count:
            raise ContractError(
                f"partition_racks.{topic}: {len(racks)} entries for {count} partitions"
            )
    return request


def check_total(topics: dict[str, int]) -> None:
    """Refuse a request of more partitions than kstore assigns (``MAX_PARTITIONS``)."""
    total = sum(topics.values())
    if total > MAX_PARTITIONS:
        raise ContractError(
            f"topics: {total:,} partitions in all; kstore assigns at most {MAX_PARTITIONS:,}"
        )


def parse_requests(lines: Iterable[str]) -> Iterator[AssignmentRequest]:
    """Parse JSON Lines; a bad line raises ``ContractError`` naming its line number."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield parse_request(line)
        except ContractError as exc:
            raise ContractError(f"line {number}: {exc}") from None


_TOPICS = attrgetter("topics")


def normalise(request: AssignmentRequest, *, owned: bool = True) -> AssignmentRequest:
    """Apply the contract's own rules before any assignor sees the request.

    Owned partitions that do not exist are dropped (as Kafka drops them), duplicate
    owned partitions and duplicate subscribed topics within one member are removed,
    order otherwise kept. A request that needs none of this is returned as it is.
    ``owned=False`` leaves owned partitions alone, for assignors that never read them.
    """
    topics = request.topics
    fixed: dict[str, MemberSubscription] = {}
    if not owned and max(map(len, map(_TOPICS, request.members.values())), default=0) < 2:
        return request  # no owned partitions to look at, no topic listed twice (maps)
    # Usually every owned partition exists and no two claims are the same, not even two
    # members': checked once over the request, then no member needs its own check.
    every = [tp for sub in request.members.values() for tp in sub.owned] if owned else []
    checked = _existing_once(every, topics) is every
    for member_id, sub in request.members.items():
        kept = sub.owned
        if owned and kept and not checked:
            kept = _existing_once(kept, topics)
        sub_topics = sub.topics
        if len(sub_topics) > 1 and len(set(sub_topics)) != len(sub_topics):
            sub_topics = list(dict.fromkeys(sub_topics))
        if kept is not sub.owned or sub_topics is not sub.topics:
            fixed[member_id] = sub.model_copy(update={"owned": kept, "topics": sub_topics})
    if not fixed:
        return request
    members = {member_id: fixed.get(member_id, sub) for member_id, sub in request.members.items()}
    return request.model_copy(update={"members": members})


def _existing_once(owned: list[TopicPartition], topics: dict[str, int]) -> list[TopicPartition]:
    """``owned`` without partitions that do not exist and without repeats; the list itself
    when it has neither, as it usually has (checked first, in two quick passes)."""
    get = topics.get
    if all([0 <= p < get(t, 0) for t, p in owned]) and len(set(owned)) == len(owned):
        return owned
    seen: set[TopicPartition] = set()
    kept: list[TopicPartition] = []
    for tp in owned:
        if 0 <= tp[1] < topics.get(tp[0], 0) and tp not in seen:
            seen.add(tp)
            kept.append(tp)
    return kept


def sorted_assignment(
    members: Iterable[str], assignment: dict[str, list[TopicPartition]]
) -> Assignment:
    """Every member present, each list sorted by topic then partition."""
    return {m: sorted(assignment.get(m, ())) for m in members}
