"""The one interface every strategy implements."""

from __future__ import annotations

from typing import Protocol

from kstore.assignors._contract import AssignmentRequest, AssignmentResult

__all__ = ["Assignor"]


class Assignor(Protocol):
    """A strategy: a pure function from a normalised request to a result.

    ``name`` is the strategy's Kafka name (``range``, ``cooperative-sticky`` ...).
    ``assign`` receives a request already passed through ``normalise`` and must return
    every member of the request, each list sorted by topic then partition.
    ``reads_owned`` says whether the result depends on owned partitions at all; when it
    does not, ``normalise`` leaves them as they are.
    """

    name: str
    reads_owned: bool

    def assign(self, request: AssignmentRequest) -> AssignmentResult: ...
