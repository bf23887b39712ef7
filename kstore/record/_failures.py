"""One classification of the Kafka clients' errors, one retry rule, for every recorder.

``classify`` turns what kafka-python or confluent-kafka raised into a ``ClientFailure`` of
one kind:

- ``configuration``, ``authentication``, ``authorization``, ``missing topic``: permanent.
  ``permanent_error`` makes the one line the recorder ends with, exit 2, at once.
- ``broker unavailable`` (network, broker down, timeouts, a coordinator moving): the
  recorder retries with backoff through ``Retries``, one line per retry, and gives up
  after ``--max-retries`` failures in a row (-1: never), with exit 1 after its summary.
  Before the broker's first answer a recorder may be given a ``FirstAnswer``: a bound on
  the time to that answer, retries and hanging calls included (a wrong address fails
  in seconds, not after every retry's back-off).

Broker error codes are Kafka's own numbers, the same in both clients (kafka-python's
``errno``, librdkafka's positive codes); librdkafka's local errors (negative codes) are
named. ``interruptible`` runs one blocking client call on a thread of its own, so that a
stop request (SIGINT/SIGTERM) is acted on within a tenth of a second, whatever the client
is waiting for.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

from kstore._errors import KstoreError, UsageError
from kstore._text import counted

__all__ = [
    "AUTHENTICATION",
    "AUTHORIZATION",
    "CONFIGURATION",
    "MISSING_TOPIC",
    "UNAVAILABLE",
    "ClientError",
    "ClientFailure",
    "FirstAnswer",
    "GaveUp",
    "Retries",
    "Stopped",
    "check_login",
    "check_max_retries",
    "classify",
    "close_within",
    "interruptible",
    "permanent_error",
    "raise_permanent",
]

log = logging.getLogger("kstore.record")
T = TypeVar("T")

CONFIGURATION = "configuration"
AUTHENTICATION = "authentication"
AUTHORIZATION = "authorization"
MISSING_TOPIC = "missing topic"
UNAVAILABLE = "broker unavailable"
OTHER = "broker error"

_HINTS = {
    CONFIGURATION: "check --command-config, -X and KSTORE_KAFKA_* (Kafka's setting names)",
    AUTHENTICATION: "check the sasl.* and ssl.* settings",
    AUTHORIZATION: (
        "the principal needs Describe on the groups and, for `record offsets`, "
        "Describe and Read on __consumer_offsets"
    ),
    MISSING_TOPIC: "the broker does not have it",
    OTHER: "the broker refused",
}

# Kafka's error codes (the protocol's numbers, shared by both clients).
_BROKER_CODES = {
    3: MISSING_TOPIC,  # UNKNOWN_TOPIC_OR_PARTITION
    5: UNAVAILABLE,  # LEADER_NOT_AVAILABLE
    6: UNAVAILABLE,  # NOT_LEADER_OR_FOLLOWER
    7: UNAVAILABLE,  # REQUEST_TIMED_OUT
    8: UNAVAILABLE,  # BROKER_NOT_AVAILABLE
    13: UNAVAILABLE,  # NETWORK_EXCEPTION
    14: UNAVAILABLE,  # COORDINATOR_LOAD_IN_PROGRESS
    15: UNAVAILABLE,  # COORDINATOR_NOT_AVAILABLE
    16: UNAVAILABLE,  # NOT_COORDINATOR
    29: AUTHORIZATION,  # TOPIC_AUTHORIZATION_FAILED
    30: AUTHORIZATION,  # GROUP_AUTHORIZATION_FAILED
    31: AUTHORIZATION,  # CLUSTER_AUTHORIZATION_FAILED
    33: AUTHENTICATION,  # UNSUPPORTED_SASL_MECHANISM
    34: AUTHENTICATION,  # ILLEGAL_SASL_STATE
    35: CONFIGURATION,  # UNSUPPORTED_VERSION
    40: CONFIGURATION,  # INVALID_CONFIG
    58: AUTHENTICATION,  # SASL_AUTHENTICATION_FAILED
    100: MISSING_TOPIC,  # UNKNOWN_TOPIC_ID
}
# librdkafka's local errors, by name.
_LOCAL_NAMES = {
    "_AUTHENTICATION": AUTHENTICATION,
    "_SSL": AUTHENTICATION,
    "_INVALID_ARG": CONFIGURATION,
    "_NOT_IMPLEMENTED": CONFIGURATION,
    "_UNSUPPORTED_FEATURE": CONFIGURATION,
    "_NOT_CONFIGURED": CONFIGURATION,
    "_UNKNOWN_TOPIC": MISSING_TOPIC,
    "_TRANSPORT": UNAVAILABLE,
    "_ALL_BROKERS_DOWN": UNAVAILABLE,
    "_RESOLVE": UNAVAILABLE,
    "_TIMED_OUT": UNAVAILABLE,
    "_TIMED_OUT_QUEUE": UNAVAILABLE,
    "_MSG_TIMED_OUT": UNAVAILABLE,
    "_WAIT_COORD": UNAVAILABLE,
}


@dataclass(frozen=True)
class ClientFailure:
    """What went wrong, of one kind; ``detail`` is the client's own words."""

    kind: str
    detail: str

    @property
    def permanent(self) -> bool:
        return self.kind != UNAVAILABLE

    def line(self) -> str:
        hint = _HINTS.get(self.kind)
        return f"{self.kind}: {self.detail}" + (f" ({hint})" if hint else "")


class ClientError(KstoreError):
    """A recorder's own finding about the broker (a missing topic, an ACL), classified."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.failure = ClientFailure(kind, detail)


class GaveUp(KstoreError):
    """The broker stayed unavailable for ``--max-retries`` attempts in a row: exit 1."""


class Stopped(Exception):
    """A stop was requested while a client call was in flight."""


def _confluent(exc: BaseException) -> ClientFailure | None:
    try:
        from confluent_kafka import KafkaError, KafkaException
    except ImportError:  # pragma: no cover - the kafka extra brings both clients
        return None
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    if not isinstance(error, KafkaError):
        return None
    code, name, text = error.code(), error.name(), error.str()
    kind = _BROKER_CODES.get(code) if code > 0 else _LOCAL_NAMES.get(name)
    if kind is None:
        kind = UNAVAILABLE if error.retriable() else OTHER
    return ClientFailure(kind, f"{name}: {text}")


def _kafka_python(exc: BaseException) -> ClientFailure | None:
    try:
        from kafka import errors
    except ImportError:  # pragma: no cover
        return None
    if not isinstance(exc, errors.KafkaError):
        return None
    name, text = type(exc).__name__, str(exc)
    detail = text if text.startswith(name) else f"{name}: {text}".rstrip(": ")
    if isinstance(exc, errors.KafkaConfigurationError):
        return ClientFailure(CONFIGURATION, detail)
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in _BROKER_CODES:
        return ClientFailure(_BROKER_CODES[code], detail)
    return ClientFailure(UNAVAILABLE if exc.retriable else OTHER, detail)


def classify(exc: BaseException) -> ClientFailure | None:
    """The failure ``exc`` stands for, or None when it is no client error (a bug: raise)."""
    if isinstance(exc, ClientError):
        return exc.failure
    if isinstance(exc, UsageError):  # the settings' own checks (config.py)
        return ClientFailure(CONFIGURATION, str(exc))
    found = _confluent(exc) or _kafka_python(exc)
    if found is not None:
        return found
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
        return ClientFailure(CONFIGURATION, f"{exc.filename}: {exc.strerror}")
    import ssl

    if isinstance(exc, ssl.SSLError):
        return ClientFailure(AUTHENTICATION, f"TLS: {exc}")
    if isinstance(exc, OSError | TimeoutError):
        return ClientFailure(UNAVAILABLE, f"{type(exc).__name__}: {exc}")
    return None


def check_login(config: dict[str, Any], timeout: float = 5.0) -> None:
    """Connect once with librdkafka (``config``: confluent-kafka's form of the settings)
    and raise a permanent failure it reports, e.g. a refused login, as ``ClientError``.

    kafka-python retries a refused login until its bootstrap times out, and says
    ``KafkaTimeoutError``, the same as a broker that is down; librdkafka names it (to
    ``error_cb``). The recorders on kafka-python ask librdkafka first.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    reported: list[Any] = []
    admin = AdminClient({"log_level": 2} | config | {"error_cb": reported.append})
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException:
        admin.poll(0)  # serves error_cb
        raise_permanent(reported)
        raise


def raise_permanent(errors: list[Any]) -> None:
    """Raise the first permanent one of librdkafka's errors (as ``error_cb`` reported
    them) as ``ClientError``; none permanent: return."""
    from confluent_kafka import KafkaException

    for error in errors:
        failure = classify(KafkaException(error))
        if failure is not None and failure.permanent:
            raise ClientError(failure.kind, failure.detail) from None


def permanent_error(failure: ClientFailure) -> KstoreError:
    """The error a recorder ends with at once: bad input exits 2, another refusal 1."""
    error: KstoreError = (
        KstoreError(failure.line()) if failure.kind == OTHER else UsageError(failure.line())
    )
    return error


@dataclass(frozen=True)
class FirstAnswer:
    """A bound on the wait for the broker's first answer: ``within`` seconds, retries and
    a hanging call included; ``why`` says where the bound comes from (the setting), and
    ``backoff`` is the pause between these first tries (first, cap in seconds);
    ``servers``: the addresses tried, named when no try ended with an error of its own."""

    within: float
    why: str
    backoff: tuple[float, float] = (0.05, 1.0)
    servers: str = "the bootstrap servers"


def check_max_retries(max_retries: int) -> int:
    """``--max-retries``, refused before a recorder starts when below -1."""
    if max_retries < -1:
        raise UsageError(f"--max-retries: -1 (forever), 0 or more, not {max_retries}")
    return max_retries


class Retries:
    """The one give-up rule: back off after each failure, give up after ``max_retries``
    failures in a row (-1: never); a success starts the count again. With ``first``, the
    broker must also answer once within ``first.within`` seconds (``remaining`` bounds
    each try until then); after that first answer only ``max_retries`` counts."""

    def __init__(
        self,
        max_retries: int,
        stop: threading.Event,
        backoff: tuple[float, float] = (0.5, 30.0),
        first: FirstAnswer | None = None,
    ) -> None:
        self.max_retries = check_max_retries(max_retries)
        self.stop = stop
        self.backoff = backoff
        self.first = first
        self.total = 0
        self._in_a_row = 0
        self._until = None if first is None else time.monotonic() + first.within
        self._last: ClientFailure | None = None

    def succeeded(self) -> None:
        self._in_a_row = 0
        self._until = None

    def remaining(self) -> float | None:
        """Seconds left for the broker's first answer; None once it answered (or unbound)."""
        return None if self._until is None else max(self._until - time.monotonic(), 0.0)

    def unanswered(self, what: str) -> GaveUp:
        """The error when the first answer's bound passed (the last failure named)."""
        assert self.first is not None
        last = self._last or ClientFailure(UNAVAILABLE, f"no answer from {self.first.servers}")
        return GaveUp(
            f"{what}: no broker answered within {self.first.within:g} s "
            f"({self.first.why}): {last.line()}"
        )

    def failed(self, exc: BaseException, what: str) -> None:
        """Handle one failure: raise it when permanent (or not a client error at all),
        else log one line and wait the backoff; raise ``GaveUp`` past the limit, or when
        the first answer's bound has passed."""
        failure = classify(exc)
        if failure is None:
            raise exc
        if failure.permanent:
            raise permanent_error(failure) from None
        self._last = failure
        if 0 <= self.max_retries <= self._in_a_row:
            raise GaveUp(
                f"{what}: gave up after {counted(self._in_a_row, 'retry', 'retries')} "
                "(--max-retries "
                f"{self.max_retries}): {failure.line()}"
            )
        left = self.remaining()
        if left is not None and left <= 0:
            raise self.unanswered(what)
        self._in_a_row += 1
        self.total += 1
        first, cap = self.backoff if left is None or self.first is None else self.first.backoff
        pause = min(first * 2 ** (self._in_a_row - 1), cap)
        if left is not None:
            pause = min(pause, left)
        log.warning(
            "%s: %s; retry %d %s", what, failure.line(), self._in_a_row, self._bound(pause, left)
        )
        self.stop.wait(pause)

    def _bound(self, pause: float, left: float | None) -> str:
        """What a retry line says of the limit: before the broker's first answer its time
        bound, which is what ends the wait (``retry 1 of 10`` read as ten tries to come,
        where 15 s of default.api.timeout.ms ended it after two: a user trial), with
        ``--max-retries`` where that may come first; after it, ``--max-retries`` alone."""
        if left is None or self.first is None:
            limit = "forever" if self.max_retries < 0 else f"of {self.max_retries}"
            return f"{limit} in {pause:.1f} s"
        said = f"in {pause:.1f} s; no answer yet: giving up in {left:.1f} s ({self.first.why})"
        if self.max_retries >= 0:
            said += f" or after {counted(self.max_retries, 'retry', 'retries')}"
        return said


def interruptible(call: Callable[[], T], stop: threading.Event, timeout: float | None = None) -> T:
    """``call()`` on a thread of its own; ``Stopped`` as soon as ``stop`` is set (or
    ``timeout`` passes) while it runs. A call left running is abandoned (daemon thread)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="kstore-client-call", daemon=True).start()
    waited = 0.0
    while not done.wait(0.05):
        waited += 0.05
        if stop.is_set() or (timeout is not None and waited >= timeout):
            raise Stopped()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def close_within(close: Callable[[], object], timeout: float = 1.0) -> None:
    """``close()``, waiting ``timeout`` seconds at most (a client may hang on a lost
    broker), its errors ignored."""
    with suppress(Exception):
        interruptible(close, threading.Event(), timeout=timeout)
