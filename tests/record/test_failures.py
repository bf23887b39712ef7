"""One classification of the clients' errors and one retry rule (kstore/record/_failures.py).

The errors are the clients' own exception objects, as each client raises them; the live
paths (a broker down, a missing topic, a bad setting, SIGTERM) are in
test_failures_live.py.
"""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import errors

from kstore._errors import KstoreError, UsageError
from kstore.record._failures import (
    AUTHENTICATION,
    AUTHORIZATION,
    CONFIGURATION,
    MISSING_TOPIC,
    UNAVAILABLE,
    ClientError,
    FirstAnswer,
    GaveUp,
    Retries,
    Stopped,
    classify,
    interruptible,
)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (KafkaException(KafkaError(KafkaError._INVALID_ARG)), CONFIGURATION),
        (KafkaException(KafkaError(KafkaError._AUTHENTICATION)), AUTHENTICATION),
        (KafkaException(KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED)), AUTHENTICATION),
        (KafkaException(KafkaError(KafkaError._SSL)), AUTHENTICATION),
        (KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), AUTHORIZATION),
        (KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)), AUTHORIZATION),
        (KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)), MISSING_TOPIC),
        (KafkaException(KafkaError(KafkaError._TRANSPORT)), UNAVAILABLE),
        (KafkaException(KafkaError(KafkaError._ALL_BROKERS_DOWN)), UNAVAILABLE),
        (KafkaException(KafkaError(KafkaError._TIMED_OUT)), UNAVAILABLE),
        (KafkaException(KafkaError(KafkaError.COORDINATOR_NOT_AVAILABLE)), UNAVAILABLE),
        (errors.KafkaConfigurationError("Unrecognized configs: {'x'}"), CONFIGURATION),
        (errors.SaslAuthenticationFailedError(), AUTHENTICATION),
        (errors.UnsupportedSaslMechanismError(), AUTHENTICATION),
        (errors.TopicAuthorizationFailedError(), AUTHORIZATION),
        (errors.GroupAuthorizationFailedError(), AUTHORIZATION),
        (errors.ClusterAuthorizationFailedError(), AUTHORIZATION),
        (errors.UnknownTopicOrPartitionError(), MISSING_TOPIC),
        (errors.KafkaTimeoutError("Unable to bootstrap"), UNAVAILABLE),
        (errors.KafkaConnectionError(), UNAVAILABLE),
        (errors.NodeNotReadyError(), UNAVAILABLE),
        (FileNotFoundError(2, "No such file or directory", "/ca.pem"), CONFIGURATION),
        (ConnectionRefusedError(111, "Connection refused"), UNAVAILABLE),
        (ClientError(MISSING_TOPIC, "topic t does not exist"), MISSING_TOPIC),
    ],
)
def test_each_client_error_has_one_kind(exc: BaseException, kind: str) -> None:
    failure = classify(exc)
    assert failure is not None and failure.kind == kind
    assert failure.permanent == (kind != UNAVAILABLE)
    assert "\n" not in failure.line()


def test_what_is_no_client_error_is_not_classified() -> None:
    assert classify(ValueError("a bug")) is None
    assert classify(KeyError("a bug")) is None


def test_a_permanent_failure_is_one_line_exit_2_at_once() -> None:
    retries = Retries(5, threading.Event())
    started = time.monotonic()
    with pytest.raises(UsageError) as caught:
        retries.failed(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), "tail")
    assert time.monotonic() - started < 0.1 and retries.total == 0
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("authorization: TOPIC_AUTHORIZATION_FAILED")
    assert "Read on __consumer_offsets" in str(caught.value)
    with pytest.raises(ValueError, match="a bug"):
        retries.failed(ValueError("a bug"), "tail")


def test_a_lost_broker_is_retried_one_line_each_then_given_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    retries = Retries(2, threading.Event(), backoff=(0.01, 0.02))
    down = KafkaException(KafkaError(KafkaError._TRANSPORT))
    with caplog.at_level(logging.WARNING, "kstore.record"):
        retries.failed(down, "poll")
        retries.failed(down, "poll")
        with pytest.raises(GaveUp) as caught:
            retries.failed(down, "poll")
    assert [r.getMessage().split(";")[1] for r in caplog.records] == [
        " retry 1 of 2 in 0.0 s",
        " retry 2 of 2 in 0.0 s",
    ]
    assert caught.value.exit_code == 1 and isinstance(caught.value, KstoreError)
    assert "gave up after 2 retries (--max-retries 2): broker unavailable" in str(caught.value)
    # A success starts the count again; --max-retries 0 gives up at the first failure.
    again = Retries(1, threading.Event(), backoff=(0.01, 0.02))
    again.failed(down, "poll")
    again.succeeded()
    again.failed(down, "poll")
    with pytest.raises(GaveUp):
        Retries(0, threading.Event()).failed(down, "poll")


def test_a_retry_before_the_first_answer_says_its_time_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``record poll`` said ``retry 1 of 10`` where 15 s of default.api.timeout.ms ended
    the wait after two retries (a user trial): before the broker's first answer the line
    says the time left and where the bound comes from, --max-retries after it."""
    why = "default.api.timeout.ms: kstore's default 15000"
    first = FirstAnswer(15, why, (0.01, 0.01))
    down = KafkaException(KafkaError(KafkaError._TRANSPORT))
    for limit, also in ((10, " or after 10 retries"), (-1, "")):
        caplog.clear()
        retries = Retries(limit, threading.Event(), first=first)
        with caplog.at_level(logging.WARNING, "kstore.record"):
            retries.failed(down, "poll")
            retries.succeeded()  # answered: --max-retries alone counts from here
            retries.failed(down, "poll")
        said = [r.getMessage().split("; ", 1)[1] for r in caplog.records]
        assert re.fullmatch(
            rf"retry 1 in 0\.0 s; no answer yet: giving up in 1[45]\.\d s \({re.escape(why)}\)"
            + also,
            said[0],
        ), said
        assert said[1] == ("retry 1 forever in 0.5 s" if limit < 0 else "retry 1 of 10 in 0.5 s")


def test_minus_one_retries_forever_and_the_pause_doubles_to_its_cap() -> None:
    retries = Retries(-1, threading.Event(), backoff=(0.001, 0.004))
    down = errors.KafkaConnectionError()
    for _ in range(50):
        retries.failed(down, "poll")
    assert retries.total == 50
    with pytest.raises(UsageError, match="--max-retries: -1"):
        Retries(-2, threading.Event())


def test_a_stop_ends_a_blocked_client_call_at_once() -> None:
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    with pytest.raises(Stopped):
        interruptible(lambda: time.sleep(30), stop)
    assert time.monotonic() - started < 0.5
    assert interruptible(lambda: 7, threading.Event()) == 7
    with pytest.raises(errors.KafkaTimeoutError):
        interruptible(lambda: (_ for _ in ()).throw(errors.KafkaTimeoutError()), stop)
