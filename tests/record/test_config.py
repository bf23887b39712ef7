"""Connection settings: sources, client forms, and secrets kept out of every output."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kstore._errors import KstoreError, UsageError
from kstore.record.config import RedactingFilter, load_settings
from tests.broker import free_port

SECRET = "s3cr3t-Pa55word"


def test_file_then_environment_then_command_line(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "# comment\nbootstrap.servers=file:9092\nsecurity.protocol=SASL_SSL\n"
        "sasl.mechanism: PLAIN\nsasl.username=u\n"
    )
    env = {"KSTORE_KAFKA_SASL_PASSWORD": SECRET, "KSTORE_KAFKA_SASL_USERNAME": "env-user"}
    settings = load_settings(config, "cli:9092", env)
    assert settings.values == {
        "bootstrap.servers": "cli:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "env-user",
        "sasl.password": SECRET,
    }
    assert settings.kafka_python() == {
        "bootstrap_servers": ["cli:9092"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "env-user",
        "sasl_plain_password": SECRET,
    }
    assert settings.confluent()["sasl.password"] == SECRET
    assert SECRET not in settings.describe()


def test_yaml_nested_keys_are_dotted(tmp_path: Path) -> None:
    config = tmp_path / "client.yaml"
    config.write_text("bootstrap.servers: b:1\nssl:\n  ca:\n    location: /ca.pem\n")
    assert load_settings(config, environ={}).values["ssl.ca.location"] == "/ca.pem"


def test_an_unreadable_command_config_is_named_with_its_line(tmp_path: Path) -> None:
    """As every other input file (kstore/_files.py): the line where it stops being text."""
    config = tmp_path / "client.properties"
    config.write_bytes(b"bootstrap.servers=b:1\nsasl.password=\xff" + SECRET.encode() + b"\n")
    with pytest.raises(UsageError) as raised:
        load_settings(config, environ={})
    assert str(raised.value) == f"--command-config {config}: line 2: not UTF-8 text (byte 0xff)"
    with pytest.raises(UsageError, match="cannot read: No such file"):
        load_settings(tmp_path / "missing.properties", environ={})


def test_missing_servers_and_unknown_settings_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no bootstrap servers"):
        load_settings(environ={}).confluent()
    settings = load_settings(None, "b:1", {"KSTORE_KAFKA_FETCH_WAIT_MAX_MS": "5"})
    with pytest.raises(UsageError, match=r"fetch\.wait\.max\.ms"):
        settings.kafka_python()


@pytest.mark.parametrize(
    "servers",
    ["b:1", "b", "b:9092,c:9093", " b:1 , c ", "PLAINTEXT://b:1", "[::1]:9092", "10.0.0.1:65535"],
)
def test_bootstrap_addresses_as_the_clients_read_them(servers: str) -> None:
    assert load_settings(None, servers, environ={}).bootstrap_servers == servers


@pytest.mark.parametrize(
    ("servers", "why"),
    [
        ("nohost:abc", "'nohost:abc': the port 'abc' is not a number from 1 to 65535"),
        ("b:1,c:0", "'c:0': the port '0' is not a number from 1 to 65535"),
        ("b:70000", "'b:70000': the port '70000' is not a number from 1 to 65535"),
        ("b:1,,c:2", "'': an empty address"),
        ("b:1:2", "'b:1:2': not an address"),
        ("b c:1", "'b c:1': not an address"),
    ],
)
def test_a_bad_bootstrap_address_is_named_before_anything_starts(servers: str, why: str) -> None:
    """Not retried as a broker that is down: one line naming the address and its source."""
    with pytest.raises(UsageError) as raised:
        load_settings(None, servers, environ={}).confluent()
    assert str(raised.value) == (
        f"bootstrap.servers (--bootstrap-server): {why} (host:port, comma-separated)"
    )


def test_secrets_are_masked_in_errors_and_logs() -> None:
    settings = load_settings(None, "b:1", {"KSTORE_KAFKA_SSL_KEY_PASSWORD": SECRET})
    with pytest.raises(KstoreError) as caught, settings.scrubbed_errors():
        raise RuntimeError(f"bad login with {SECRET}")
    assert SECRET not in str(caught.value) and "***" in str(caught.value)
    record = logging.LogRecord("x", logging.INFO, "", 0, "using %s", (SECRET,), None)
    RedactingFilter(settings).filter(record)
    assert SECRET not in record.getMessage()


def test_no_secret_reaches_the_output_or_the_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    store = data / "kstore.duckdb"
    config = tmp_path / "client.properties"
    # Nothing listens on the port: the client fails, and says so without the password.
    config.write_text(
        f"bootstrap.servers=127.0.0.1:{free_port()}\nsasl.username=u\nsasl.password={SECRET}\n"
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nrequest.timeout.ms=1500\n"
    )
    base = [sys.executable, "-m", "kstore.cli", "--store", str(store)]
    subprocess.run([*base, "init"], check=True, capture_output=True)
    poll = subprocess.run(
        [
            *base,
            "record",
            "poll",
            "--command-config",
            str(config),
            "--all-groups",
            "--max-retries",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert poll.returncode != 0
    assert "kstore: error:" in poll.stderr
    assert "sasl.password=***" in poll.stderr  # the settings were logged, masked
    assert SECRET not in poll.stdout + poll.stderr
    for path in data.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path


JAAS_FILE = (
    "bootstrap.servers=b:9092\n"
    "security.protocol=SASL_SSL\n"
    "sasl.mechanism=SCRAM-SHA-512\n"
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
    '    username="alice" \\\n'
    f'    password="{SECRET}";\n'
)


def test_a_multi_line_jaas_config_is_one_value_as_java_reads_it(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(JAAS_FILE)
    settings = load_settings(config, environ={})
    assert set(settings.values) == {
        "bootstrap.servers",
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
    }
    assert settings.values["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{SECRET}";'
    )
    # One set of names: the JAAS entry becomes each client's own settings.
    confluent = settings.confluent()
    assert "sasl.jaas.config" not in confluent
    assert (confluent["sasl.username"], confluent["sasl.password"]) == ("alice", SECRET)
    python = settings.kafka_python()
    assert (python["sasl_plain_username"], python["sasl_plain_password"]) == ("alice", SECRET)
    assert python["sasl_mechanism"] == "SCRAM-SHA-512"
    line = settings.describe()
    assert "sasl.jaas.config=***" in line and SECRET not in line and "alice" not in line
    assert "bootstrap.servers=b:9092" in line and "security.protocol=SASL_SSL" in line


def test_java_escapes_and_separators(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers b:1\nclient.id : a\\u00e9\\\n  b\n! comment\n")
    assert load_settings(config, environ={}).values == {
        "bootstrap.servers": "b:1",
        "client.id": "aéb",
    }
    config.write_text("sasl.password=\\u12zz\n")
    with pytest.raises(UsageError, match=r"invalid \\u escape") as caught:
        load_settings(config, environ={})
    assert "12zz" not in str(caught.value)


def test_dash_x_settings_win_over_the_file_and_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=file:1\nclient.id=file\n")
    env = {"KSTORE_KAFKA_CLIENT_ID": "env"}
    settings = load_settings(config, None, env, ["client.id=x", "request.timeout.ms=1500"])
    assert settings.values["client.id"] == "x" and settings.source["client.id"] == "-X"
    assert settings.kafka_python()["request_timeout_ms"] == 1500
    with pytest.raises(UsageError, match=r"-X \(the 1\. one\): give key=value") as caught:
        load_settings(None, "b:1", {}, [SECRET])
    assert SECRET not in str(caught.value)


def test_jaas_modules_the_clients_cannot_use_are_named() -> None:
    krb = "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;"
    settings = load_settings(None, "b:1", {}, [f"sasl.jaas.config={krb}"])
    with pytest.raises(UsageError, match="Krb5LoginModule is not supported"):
        settings.confluent()
    with pytest.raises(UsageError, match="not a JAAS entry"):
        load_settings(None, "b:1", {}, ["sasl.jaas.config=nonsense"]).kafka_python()
    oidc = load_settings(None, "b:1", {}, ["sasl.oauthbearer.method=oidc"])
    with pytest.raises(UsageError, match=r"needs sasl\.oauthbearer\.token\.endpoint\.url"):
        oidc.confluent()


def test_secrets_are_masked_deny_by_default() -> None:
    passphrase, client_secret = "p4ss-phr4se", "cl13nt-s3cr3t"
    settings = load_settings(
        None,
        "b:1",
        {},
        [
            f"sasl.oauthbearer.assertion.private.key.passphrase={passphrase}",
            f"sasl.oauthbearer.config=clientId=kstore clientSecret={client_secret} scope=x",
            "sasl.oauthbearer.method=oidc",
            "sasl.oauthbearer.token.endpoint.url=https://idp/token",
            "session.timeout.ms=6000",
            "some.new.setting=value-1",
        ],
    )
    line = settings.describe()
    for hidden in (passphrase, client_secret, "value-1", "clientId=kstore"):
        assert hidden not in line
    assert "sasl.oauthbearer.assertion.private.key.passphrase=***" in line
    assert "session.timeout.ms=6000" in line and "bootstrap.servers=b:1" in line
    assert "token.endpoint.url=https://idp/token" in line
    # A client echoing one part of a structured value is masked too.
    assert client_secret not in settings.redact(f"auth failed: clientSecret={client_secret}")


def test_kafka_tool_flags_and_a_setting_the_client_lacks(tmp_path: Path) -> None:
    """``--bootstrap-server``, ``-X``: a setting the poller's client cannot take is one
    line naming it, exit 2, and neither the line nor the log shows its value."""
    store = tmp_path / "kstore.duckdb"
    secret = "cl13nt-s3cr3t"
    base = [sys.executable, "-m", "kstore.cli", "--store", str(store)]
    subprocess.run([*base, "init"], check=True, capture_output=True)
    poll = subprocess.run(
        [
            *base,
            "record",
            "poll",
            "--bootstrap-server",
            f"127.0.0.1:{free_port()}",
            "-X",
            f"sasl.oauthbearer.config=clientId=k clientSecret={secret}",
            "--all-groups",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (poll.returncode, poll.stdout) == (2, ""), poll.stderr
    # One line, before anything starts: it printed "polling every 5 s (...)" first and
    # "0 polls, 0 events stored, 0 retries" after (the first poll refused the setting).
    assert poll.stderr.startswith(
        "kstore: error: configuration: setting sasl.oauthbearer.config (-X) has no"
    )
    assert poll.stderr.endswith(
        "(check --command-config, -X and KSTORE_KAFKA_* (Kafka's setting names))\n"
    )
    assert poll.stderr.count("\n") == 1
    assert secret not in poll.stdout + poll.stderr


@pytest.mark.parametrize("option", ["--bootstrap-server", "-b"])
@pytest.mark.parametrize("command", ["poll", "offsets"])
def test_a_bad_bootstrap_address_ends_the_recorder_in_one_line(
    command: str, option: str, tmp_path: Path
) -> None:
    """Not retried as a broker that is down (it was, for ten retries, then exit 1); given
    as kcat's ``-b`` too ("No such option: -b" before)."""
    base = [sys.executable, "-m", "kstore.cli", "--store", str(tmp_path / "s.duckdb"), "record"]
    done = subprocess.run(
        [*base, command, "--all-groups", option, "nohost:abc"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kstore: error: bootstrap.servers (--bootstrap-server): 'nohost:abc': the port 'abc' "
        "is not a number from 1 to 65535 (host:port, comma-separated)\n"
    )


def test_the_recorders_log_lines_are_timed_in_iso_8601_utc(tmp_path: Path) -> None:
    """They were local times as Python's logging writes them, ``2026-11-27 17:25:08,627``."""
    base = [sys.executable, "-m", "kstore.cli", "--store", str(tmp_path / "s.duckdb")]
    subprocess.run([*base, "init"], check=True, capture_output=True)  # else refused at once
    poll = [*base, "record", "poll", "-b", f"127.0.0.1:{free_port()}", "--all-groups"]
    before = datetime.now(UTC)
    with subprocess.Popen(
        poll, stderr=subprocess.PIPE, text=True, env={**os.environ, "TZ": "Asia/Tokyo"}
    ) as run:
        assert run.stderr is not None
        first = run.stderr.readline()
        run.send_signal(signal.SIGINT)
        rest = run.stderr.read()
    assert run.returncode == 0, first + rest
    found = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z INFO polling every", first)
    assert found is not None, first
    at = datetime.fromisoformat(found[1]).replace(tzinfo=UTC)
    assert before - timedelta(seconds=1) <= at <= datetime.now(UTC), (at, before)
    assert all(re.match(r"\d{4}-\d\d-\d\dT[\d:.]{12}Z ", line) for line in rest.splitlines()[:-1])


def test_the_first_answers_bound_by_kafkas_names() -> None:
    def first(*pairs: str) -> tuple[float, str, tuple[float, float]]:
        found = load_settings(None, "h:1", {}, pairs).first_answer()
        return found.within, found.why, found.backoff

    assert first() == (15.0, "default.api.timeout.ms: kstore's default 15000", (0.05, 1.0))
    assert first("default.api.timeout.ms=3000", "reconnect.backoff.max.ms=200")[::2] == (
        3.0,
        (0.05, 0.2),
    )
    # As Kafka's admin client: a larger request.timeout.ms raises the default bound, and
    # is an error beside a smaller bound given.
    assert first("request.timeout.ms=40000")[:2] == (40.0, "request.timeout.ms=40000 (-X)")
    with pytest.raises(UsageError, match=r"default.api.timeout.ms \(-X\): 3000 is less than"):
        first("default.api.timeout.ms=3000", "request.timeout.ms=40000")
    with pytest.raises(UsageError, match="not a positive whole number of ms"):
        first("default.api.timeout.ms=soon")
    # Read by kstore, passed to neither client (neither knows the name).
    settings = load_settings(None, "h:1", {}, ["default.api.timeout.ms=3000"])
    assert "default.api.timeout.ms" not in settings.confluent()
    assert settings.kafka_python() == {"bootstrap_servers": ["h:1"]}
