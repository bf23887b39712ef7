"""Connection settings: sources, client forms, and secrets kept out of every output."""

from __future__ import annotations

import logging
import subprocess
import sys
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


def test_missing_servers_and_unknown_settings_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no bootstrap servers"):
        load_settings(environ={}).confluent()
    settings = load_settings(None, "b:1", {"KSTORE_KAFKA_FETCH_WAIT_MAX_MS": "5"})
    with pytest.raises(UsageError, match=r"fetch\.wait\.max\.ms"):
        settings.kafka_python()


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
        [*base, "record", "poll", "--config", str(config), "--all-groups", "--polls", "1"],
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
