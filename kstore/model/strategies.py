"""The strategy catalogue: every assignment strategy kstore knows and the protocol it runs under.

One rule in one place: whoever needs to know whether a strategy rebalances eagerly,
cooperatively (KIP-429) or under the consumer protocol (KIP-848) asks here. The
assignors themselves live in ``kstore.assignors`` (its registry maps the same names to
their code; a test keeps the two lists equal).

``client`` names the library whose algorithm a classic strategy reproduces: ``kafka``
for Apache Kafka's Java clients (the plain names), other libraries under a prefix
(``librdkafka:cooperative-sticky``). Broker-side strategies have ``client`` ``broker``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from kstore._errors import UsageError, did_you_mean, nearest

__all__ = [
    "CATALOGUE",
    "CLASSIC_STRATEGIES",
    "CONSUMER_STRATEGIES",
    "COOPERATIVE_STRATEGIES",
    "SAME",
    "Protocol",
    "Strategy",
    "UnknownStrategy",
    "classic_protocol",
    "fitting",
    "flavour_of",
    "known_protocol",
    "protocol_of",
    "strategy",
    "unknown_strategy",
    "wire_protocol",
]

Protocol = Literal["eager", "cooperative", "consumer"]


@dataclass(frozen=True, slots=True)
class Strategy:
    """One strategy: its contract name, the protocol it runs under and whose algorithm it is."""

    name: str
    protocol: Protocol
    client: str
    """``kafka`` (Apache Kafka's Java clients), ``broker`` (KIP-848), ``kstore`` or a library."""

    @property
    def base(self) -> str:
        """The Kafka name this strategy is a flavour of (``librdkafka:range`` -> ``range``)."""
        return self.name.rsplit(":", 1)[-1]

    @property
    def classic(self) -> bool:
        return self.protocol != "consumer"


def _catalogue(*entries: Strategy) -> dict[str, Strategy]:
    return {entry.name: entry for entry in entries}


CATALOGUE: dict[str, Strategy] = _catalogue(
    Strategy("range", "eager", "kafka"),
    Strategy("roundrobin", "eager", "kafka"),
    Strategy("sticky", "eager", "kafka"),
    Strategy("cooperative-sticky", "cooperative", "kafka"),
    Strategy("uniform", "consumer", "broker"),
    Strategy("server-range", "consumer", "broker"),
    # kstore's own: the least movement any balanced assignment could have made. It is a
    # yardstick, replayed as an eager strategy (every decision free to move anything).
    Strategy("optimal", "eager", "kstore"),
    # librdkafka 2.16's client-side assignors (confluent-kafka, kcat, node-rdkafka ...).
    # librdkafka has no eager sticky: "librdkafka:sticky" is the target its
    # cooperative-sticky assignor computes before the cooperative step.
    Strategy("librdkafka:range", "eager", "librdkafka"),
    Strategy("librdkafka:roundrobin", "eager", "librdkafka"),
    Strategy("librdkafka:sticky", "eager", "librdkafka"),
    Strategy("librdkafka:cooperative-sticky", "cooperative", "librdkafka"),
    # kafka-python 3.0.12's own range, round-robin and sticky.
    Strategy("kafka-python:range", "eager", "kafka-python"),
    Strategy("kafka-python:roundrobin", "eager", "kafka-python"),
    Strategy("kafka-python:sticky", "eager", "kafka-python"),
)

CLASSIC_STRATEGIES = tuple(
    name for name, entry in CATALOGUE.items() if entry.classic and entry.client == "kafka"
)
"""Kafka's client-side assignors of the classic protocol (``partition.assignment.strategy``)."""

CONSUMER_STRATEGIES = tuple(name for name, entry in CATALOGUE.items() if not entry.classic)
"""Broker-side assignors of the consumer protocol (KIP-848, ``group.remote.assignor``)."""

COOPERATIVE_STRATEGIES = tuple(
    name for name, entry in CATALOGUE.items() if entry.protocol == "cooperative"
)
"""The strategies whose assignor supports COOPERATIVE rebalancing (KIP-429), every flavour."""


def classic_protocol(offers: Iterable[Iterable[str]]) -> Literal["eager", "cooperative"]:
    """The classic rebalance protocol of a group whose members offer these assignors
    (each member's list, in preference order): Kafka's consumer rebalances cooperatively
    when every assignor it is configured with supports COOPERATIVE (``ConsumerCoordinator``
    takes the highest protocol all of them support), so a group is ``cooperative`` when
    every member offers only cooperative strategies (``cooperative-sticky``), ``eager``
    otherwise (one eager assignor in a member's list, as in Kafka's upgrade path
    ``[cooperative-sticky, range]``, keeps that member eager). The consumer protocol
    (KIP-848) is never inferred: a group uses it only when configured to."""
    cooperative = set(COOPERATIVE_STRATEGIES)
    lists = [set(offer) for offer in offers]
    return "cooperative" if lists and all(o and o <= cooperative for o in lists) else "eager"


class UnknownStrategy(UsageError):
    """A strategy name the catalogue does not hold; the message names the nearest ones."""


def unknown_strategy(name: str, known: tuple[str, ...] | list[str]) -> str:
    """The one line for a strategy name not in ``known``: the nearest ones, else every
    known one (the list of 14 before the nearest buried it, and wrapped a terminal)."""
    if near := nearest(name, known):
        return f"unknown strategy {name!r}; {did_you_mean(near)}"
    return f"unknown strategy {name!r} (known: {', '.join(known)})"


def strategy(name: str) -> Strategy:
    """The catalogue's entry for ``name``, or ``UnknownStrategy`` naming the nearest names."""
    found = CATALOGUE.get(name)
    if found is None:
        raise UnknownStrategy(f"strategy: {unknown_strategy(name, list(CATALOGUE))}")
    return found


def fitting(name: str, protocol: str) -> str:
    """``name``, when a member of a group of ``protocol`` can offer it; else ``ValueError``
    naming the nearest names that fit (an unknown name) or saying which protocol's it is."""
    allowed = CONSUMER_STRATEGIES if protocol == "consumer" else CLASSIC_STRATEGIES
    if name in allowed:
        return name
    if name not in CATALOGUE:
        raise ValueError(unknown_strategy(name, allowed))
    raise ValueError(
        f"strategy {name} does not go with protocol {protocol} (one of {', '.join(allowed)})"
    )


SAME = "same"
"""The replay "strategy" that decides each generation with the flavour that decided it."""


def flavour_of(recorded: str, client: str | None) -> Strategy:
    """The strategy that reproduces a recorded decision: the recorded strategy name
    (a JoinGroup protocol name such as ``cooperative-sticky``) in the flavour of the
    client library that computed it (``client`` ``librdkafka 2.16.0`` ->
    ``librdkafka:cooperative-sticky``), Kafka's own where kstore has no flavour of that
    library or the client is not known. A recorded name that is a flavour already
    stays itself."""
    if client:
        library = client.split()[0].split("/")[0].lower()
        flavour = CATALOGUE.get(f"{library}:{recorded}")
        if flavour is not None:
            return flavour
    return strategy(recorded)


def protocol_of(name: str) -> Protocol:
    """The rebalance protocol ``name`` runs under: eager, cooperative or consumer."""
    return strategy(name).protocol


def known_protocol(name: str | None) -> Protocol | None:
    """The protocol of strategy ``name``, or None where the catalogue does not hold it."""
    found = CATALOGUE.get(name or "")
    return None if found is None else found.protocol


def wire_protocol(name: str | None) -> Protocol | None:
    """The protocol of a classic strategy named on the wire (a JoinGroup's protocol name),
    or None where the name is not one kstore knows."""
    found = CATALOGUE.get(name or "")
    return found.protocol if found is not None and found.classic else None
