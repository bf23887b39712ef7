"""Every recorder's failures, live: real processes, the Tansu broker, a port nobody is on.

Permanent failures (a missing topic, a bad setting) are one line and exit 2 at once; a
broker that is down is retried one line per retry and given up after --max-retries
(summary, exit 1, no traceback); SIGTERM and SIGINT end a recorder within 2 s, with its
summary, whether it is idle, reading or stuck in a client call to a broker that is down.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kstore.store.log import Store
from tests.broker import Broker, free_port
from tests.record.test_offsets_events import CLASSIC
from tests.store._stores import initialised_store

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("broker")]
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def kstore(store: Store, *args: str) -> list[str]:
    return [sys.executable, "-m", "kstore.cli", "--store", str(store.path), "record", *args]


def run(command: list[str], timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=ENV)
    return done, time.monotonic() - started


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kstore: error:")]


def test_a_missing_topic_is_one_line_exit_2_at_once(broker: Broker, store: Store) -> None:
    # Tansu has no __consumer_offsets (and does not create it when asked, auto-create off).
    done, took = run(
        kstore(store, "offsets", "--bootstrap-server", broker.bootstrap, "--all-groups")
    )
    assert done.returncode == 2, done.stderr
    assert error_lines(done.stderr) == [
        "kstore: error: missing topic: topic __consumer_offsets does not exist on this "
        "cluster (the broker does not have it)"
    ]
    assert "retry 1" not in done.stderr and "Traceback" not in done.stderr
    assert took < 10


@pytest.mark.parametrize("recorder", [["offsets", "--all-groups"], ["poll", "--all-groups"]])
def test_a_bad_setting_is_one_line_exit_2_at_once(
    broker: Broker, store: Store, recorder: list[str]
) -> None:
    command = kstore(store, *recorder, "--bootstrap-server", broker.bootstrap)
    done, took = run([*command, "-X", "no.such.setting=1"])
    assert done.returncode == 2, done.stderr
    (line,) = error_lines(done.stderr)
    assert line.startswith("kstore: error: configuration:") and "no.such.setting" in line
    assert "retry 1" not in done.stderr and "Traceback" not in done.stderr
    assert took < 10


def test_a_broker_down_is_retried_then_given_up_with_the_summary(tmp_path: Path) -> None:
    """Both recorders at once, each with a store and a dead port of its own: each spends
    its ~10 s waiting out its retry's back-off (one recorder a test before, one after
    the other)."""
    recorders = [["poll", "--all-groups"], ["offsets", "--all-groups"]]
    stores = [initialised_store(tmp_path / f"{r[0]}.duckdb") for r in recorders]
    with ThreadPoolExecutor(len(recorders)) as pool:
        for done in pool.map(_given_up, stores, recorders):
            _assert_given_up(done)


def _given_up(store: Store, recorder: list[str]) -> subprocess.CompletedProcess[str]:
    command = kstore(store, *recorder, "--bootstrap-server", f"127.0.0.1:{free_port()}")
    done, _ = run([*command, "--max-retries", "1"], timeout=90)
    return done


def _assert_given_up(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, (done.args, done.stderr)
    assert "Traceback" not in done.stderr
    retries = [line for line in done.stderr.splitlines() if "retry 1 in" in line]
    assert len(retries) == 1 and "broker unavailable" in retries[0]
    assert "no answer yet: giving up in " in retries[0] and retries[0].endswith("after 1 retry")
    (line,) = error_lines(done.stderr)
    assert "gave up after 1 retry (--max-retries 1): broker unavailable" in line
    assert "1 retry" in done.stdout.splitlines()[-1]  # the summary ("1 retries" before)


def test_a_first_poll_that_reaches_no_broker_is_one_line_exit_1_within_its_bound(
    tmp_path: Path,
) -> None:
    """A port nobody listens on, the default --max-retries 10: the poller used to retry
    for minutes (~9 in a user's trial) before its line. Now each recorder gives up when
    no broker answered within default.api.timeout.ms: 3 s given with -X, and kstore's
    default of 15 s (the three run side by side, each on a store of its own)."""
    address = f"127.0.0.1:{free_port()}"
    transport = "_TRANSPORT: Failed to get metadata: Local: Broker transport failure"
    short, given = ["-X", "default.api.timeout.ms=3000"], "default.api.timeout.ms=3000 (-X)"
    default = "default.api.timeout.ms: kstore's default 15000"
    cases = [
        # 3 s: the first try (librdkafka's 5 s login check) still hangs: it is abandoned
        (["poll", "--group", "g", *short], 3, given, f"no answer from {address}"),
        (["poll", "--group", "g"], 15, default, transport),
        (["offsets", "--all-groups", *short], 3, given, f"no answer from {address}"),
    ]
    commands = [
        kstore(initialised_store(tmp_path / f"{i}.duckdb"), *args, "-b", address)
        for i, (args, *_) in enumerate(cases)
    ]
    with ThreadPoolExecutor(len(commands)) as pool:
        results = list(pool.map(run, commands))
    for (done, took), (args, bound, why, last) in zip(results, cases, strict=True):
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        what = "poll" if args[0] == "poll" else "tailing __consumer_offsets"
        (line,) = error_lines(done.stderr)
        assert line.startswith(
            f"kstore: error: {what}: no broker answered within {bound} s ({why}): "
        ), line
        assert line.endswith(f"): broker unavailable: {last}"), line
        assert bound - 1 < took < bound + 10, took  # + start-up, on a loaded machine
        assert done.stdout.startswith("0 polls, 0 events" if what == "poll" else "0 records")


def stop_within(
    command: list[str], ready: str, sig: signal.Signals, settle: float = 0.0
) -> tuple[float, str, str, int]:
    """Start ``command``, wait for ``ready`` on its stderr, send ``sig``: seconds to exit."""
    process = subprocess.Popen(
        command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in process.stderr], daemon=True)
    reader.start()
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while not any(ready in line for line in seen):
        try:
            seen.append(lines.get(timeout=max(deadline - time.monotonic(), 0.01)))
        except queue.Empty:
            process.kill()
            raise AssertionError(f"no {ready!r} in 30 s: {''.join(seen)}") from None
    time.sleep(settle)
    sent = time.monotonic()
    process.send_signal(sig)
    process.wait(timeout=30)
    took = time.monotonic() - sent
    assert process.stdout is not None
    out = process.stdout.read()
    reader.join(timeout=5)
    seen.extend(iter_queue(lines))
    return took, out, "".join(seen), process.returncode


def iter_queue(lines: queue.Queue[str]) -> list[str]:
    out = []
    while not lines.empty():
        out.append(lines.get_nowait())
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_reading_tailer_within_2_s(
    broker: Broker, store: Store, sig: signal.Signals
) -> None:
    from confluent_kafka import Producer

    topic = f"offsets-copy-{sig.name.lower()}"
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for raw in CLASSIC:
        producer.produce(topic, key=raw.key, value=raw.value, partition=0)
    assert producer.flush(10) == 0
    command = kstore(store, "offsets", "--bootstrap-server", broker.bootstrap, "--all-groups")
    took, out, err, code = stop_within([*command, "--topic", topic], "batch of", sig, settle=0.5)
    assert code == 0, err
    assert took < 2, f"{sig.name} took {took:.2f} s"
    assert out.startswith(f"{len(CLASSIC)} records")
    assert f"{sig.name}: finishing the batch in flight" in err


def test_sigterm_stops_a_poller_within_2_s_idle_or_stuck_on_a_down_broker(
    broker: Broker, store: Store
) -> None:
    idle = kstore(store, "poll", "--all-groups", "--interval", "30s")
    took, out, err, code = stop_within(
        [*idle, "--bootstrap-server", broker.bootstrap], "polling every", signal.SIGTERM, 1.0
    )
    assert code == 0 and took < 2, (took, err)
    assert out.strip().endswith("events stored, 0 retries")
    # Broker down: the poller is inside kafka-python's bootstrap (5 s a try).
    down = kstore(store, "poll", "--all-groups", "--bootstrap-server", f"127.0.0.1:{free_port()}")
    took, out, err, code = stop_within(down, "polling every", signal.SIGTERM, 1.0)
    assert code == 0 and took < 2, (took, err)
    assert out.startswith("0 polls, 0 events stored")


@pytest.mark.parametrize(("recorder", "jaas"), [("offsets", False), ("poll", True)])
def test_a_refused_login_is_one_line_exit_2_not_a_broker_down(
    tmp_path: Path, recorder: str, jaas: bool
) -> None:
    """Tansu with --authentication refuses a user it does not know. librdkafka tells only
    its error callback and reports the metadata request as a transport failure, and
    kafka-python says only that its bootstrap timed out; both recorders read librdkafka's
    callback and say authentication, at once."""
    from tests.broker import start_broker, tansu_binary

    binary = tansu_binary()
    assert binary is not None
    secured = start_broker(binary, tmp_path / "tansu.log", "--authentication")
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    secret = "n0t-her-Pa55word"
    try:
        command = kstore(store, recorder, "--all-groups", "--bootstrap-server", secured.bootstrap)
        login = ["security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512"]
        if jaas:  # Kafka's form: a multi-line sasl.jaas.config in a properties file
            config = tmp_path / "client.properties"
            config.write_text(
                "\n".join(login) + "\nsasl.jaas.config=org.apache.kafka.common.security.scram."
                'ScramLoginModule required \\\n  username="mallory" \\\n'
                f'  password="{secret}";\n'
            )
            command += ["--command-config", str(config)]
        else:
            login += ["sasl.username=mallory", f"sasl.password={secret}"]
            for setting in login:
                command += ["-X", setting]
        done, took = run(command)
    finally:
        secured.stop()
    assert done.returncode == 2, done.stderr
    (line,) = error_lines(done.stderr)
    assert line.startswith("kstore: error: authentication: _AUTHENTICATION:"), line
    assert "SASL authentication error" in line
    assert "retry 1" not in done.stderr and secret not in done.stderr + done.stdout
    assert took < 15


@pytest.mark.parametrize("recorder", [["offsets", "--all-groups"], ["poll", "--all-groups"]])
def test_a_missing_store_is_said_as_such_before_the_broker_is_asked(
    broker: Broker, tmp_path: Path, recorder: list[str]
) -> None:
    """No store at --store: the store's own line (create it with init), before any
    polling or tailing starts. It came as a client 'configuration' failure (check -X
    and --command-config) after the 'polling every' line, and only once there was an
    event to store: with no group to record, the recorder ran on storing nothing."""
    missing = Store(tmp_path / "none.duckdb")
    command = [*kstore(missing, *recorder), "--bootstrap-server", broker.bootstrap]
    done, took = run(command, timeout=30)
    assert done.returncode == 2, done.stderr
    assert error_lines(done.stderr) == [
        f"kstore: error: {missing.path}: no store here; create it with "
        f"`kstore --store {missing.path} init`"
    ]
    assert "polling every" not in done.stderr and "tailing" not in done.stderr
    assert not missing.path.exists()
    assert took < 10


def test_a_broker_gone_mid_poll_is_one_warning_a_retry_not_the_clients_log(
    tmp_path: Path,
) -> None:
    """The broker stopped after the poller's first answer: a user saw a dozen of
    kafka-python's own ERROR lines (``<KafkaConnection ...>: Connection lost``,
    ``Metadata refresh: failed``) per retry around kstore's one WARNING; the client's
    log is kept to critical lines, as librdkafka's is."""
    from tests.broker import start_broker, tansu_binary

    binary = tansu_binary()
    assert binary is not None
    gone = start_broker(binary, tmp_path / "tansu.log")
    store = initialised_store(tmp_path / "kstore.duckdb")
    command = kstore(store, "poll", "--all-groups", "--interval", "200ms")
    process = subprocess.Popen(
        [*command, "--bootstrap-server", gone.bootstrap],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        time.sleep(4)  # answered polls
        gone.stop()
        time.sleep(4)  # retries
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "events stored" in out, err
    assert "retry 1 of 10" in err, err
    lines = err.splitlines()
    assert [line for line in lines if " ERROR " in line] == [], err
    assert all(" INFO " in line or " WARNING " in line for line in lines), err


@pytest.mark.parametrize("polls", ["0", "-1"])
def test_polls_below_one_is_one_line_exit_2(broker: Broker, store: Store, polls: str) -> None:
    """``--polls -1`` polled nothing and exited 0 with "0 polls", as if it had run."""
    command = kstore(store, "poll", "--all-groups", "--bootstrap-server", broker.bootstrap)
    done, _ = run([*command, "--polls", polls])
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [f"kstore: error: --polls: 1 or more, not {polls}"]
    assert done.stdout == ""


@pytest.mark.parametrize("recorder", ["offsets", "poll"])
def test_a_bad_max_retries_is_one_line_before_the_recorder_starts(
    broker: Broker, store: Store, recorder: str
) -> None:
    """``--max-retries -2`` was refused after the recorder had started: its "tailing" or
    "polling" line and a summary of nothing came with the error."""
    command = kstore(store, recorder, "--all-groups", "--bootstrap-server", broker.bootstrap)
    done, _ = run([*command, "--max-retries", "-2"])
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        "kstore: error: --max-retries: -1 (forever), 0 or more, not -2"
    ]
    assert done.stdout == ""
