"""Connection settings for the recorders' Kafka clients, with secrets kept out of sight.

Settings use the dotted names of librdkafka / the Java client (``bootstrap.servers``,
``security.protocol``, ``sasl.mechanism``, ``sasl.username``, ``sasl.password``,
``ssl.ca.location`` ...). They come from, later ones winning:

1. a config file (``--config FILE``): Java properties (``key=value``) or YAML (a flat or
   nested mapping; nested keys are joined with dots);
2. the environment: ``KSTORE_KAFKA_SASL_PASSWORD=...`` is ``sasl.password``;
3. ``--bootstrap-servers``.

Every value under a secret-looking name (password, secret, token, JAAS config, private
key) is a secret: ``redact`` blanks it out of any text, and a logging filter does the
same for every log record, so no secret reaches a log, an error message or the store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kstore._errors import KstoreError, UsageError

__all__ = ["ENV_PREFIX", "KafkaSettings", "RedactingFilter", "load_settings"]

ENV_PREFIX = "KSTORE_KAFKA_"
_SECRET_MARKERS = ("password", "secret", "token", "jaas", "key.pem", "credential")
_MASK = "***"

# librdkafka name -> kafka-python keyword, for the settings the recorders pass through.
_KAFKA_PYTHON_NAMES = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
    "request.timeout.ms": "request_timeout_ms",
    "session.timeout.ms": "session_timeout_ms",
    "heartbeat.interval.ms": "heartbeat_interval_ms",
}


def _is_secret(name: str) -> bool:
    return any(marker in name.lower() for marker in _SECRET_MARKERS)


@dataclass(frozen=True)
class KafkaSettings:
    """Client settings by librdkafka name; ``source`` says where each one came from."""

    values: Mapping[str, str]
    source: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        servers = self.values.get("bootstrap.servers")
        if not servers:
            raise UsageError(
                "no bootstrap servers: give --bootstrap-servers, bootstrap.servers in "
                f"--config, or {ENV_PREFIX}BOOTSTRAP_SERVERS"
            )
        return servers

    def secrets(self) -> list[str]:
        """The secret values, longest first (so a secret inside another is masked whole)."""
        found = {value for name, value in self.values.items() if _is_secret(name) and value}
        return sorted(found, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets():
            text = text.replace(secret, _MASK)
        return text

    def describe(self) -> str:
        """One line for the log: every setting, secrets masked."""
        shown = (
            f"{name}={_MASK if _is_secret(name) else value}"
            for name, value in sorted(self.values.items())
        )
        return ", ".join(shown)

    def confluent(self, **extra: Any) -> dict[str, Any]:
        """A configuration for confluent-kafka (librdkafka takes the names as they are)."""
        config: dict[str, Any] = dict(self.values)
        self.bootstrap_servers  # noqa: B018 - fail early with a clear message
        config.update(extra)
        return config

    def kafka_python(self, **extra: Any) -> dict[str, Any]:
        """Keyword arguments for kafka-python's clients."""
        config: dict[str, Any] = {}
        for name, value in self.values.items():
            keyword = _KAFKA_PYTHON_NAMES.get(name)
            if keyword is None:
                raise UsageError(
                    f"setting {name!r} ({self.source.get(name, 'config')}) has no kafka-python "
                    f"equivalent; known: {', '.join(sorted(_KAFKA_PYTHON_NAMES))}"
                )
            if keyword == "bootstrap_servers":
                config[keyword] = [s.strip() for s in value.split(",") if s.strip()]
            elif keyword == "ssl_check_hostname":
                config[keyword] = value.lower() == "https"
            elif keyword.endswith("_ms"):
                config[keyword] = int(value)
            else:
                config[keyword] = value
        self.bootstrap_servers  # noqa: B018
        config.update(extra)
        return config

    @contextmanager
    def scrubbed_errors(self) -> Iterator[None]:
        """Errors raised in the block reach the user with every secret masked."""
        try:
            yield
        except KstoreError as exc:
            if not any(secret in str(exc) for secret in self.secrets()):
                raise
            raise type(exc)(self.redact(str(exc))) from None
        except Exception as exc:
            message = self.redact(f"{type(exc).__name__}: {exc}")
            raise KstoreError(message) from None


class RedactingFilter(logging.Filter):
    """Masks the settings' secrets in every record that passes (message and arguments)."""

    def __init__(self, settings: KafkaSettings) -> None:
        super().__init__()
        self.settings = settings

    def filter(self, record: logging.LogRecord) -> bool:
        if self.settings.secrets():
            record.msg = self.settings.redact(record.getMessage())
            record.args = None
            if record.exc_info:
                record.exc_text = self.settings.redact(
                    logging.Formatter().formatException(record.exc_info)
                )
                record.exc_info = None
        return True


def _flatten(raw: Mapping[str, Any], prefix: str, where: Path) -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}.", where))
        elif isinstance(value, str | int | float | bool):
            flat[name] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            raise UsageError(f"{where}: {name}: must be a string, number or boolean")
    return flat


def _read_properties(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            values[line] = ""
        else:
            values[line[:cut].strip()] = line[cut + 1 :].strip()
    return values


def _read_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--config {path}: {exc.strerror}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError:
            # The parser's message quotes the offending line, which may hold a secret.
            raise UsageError(f"--config {path}: not valid YAML") from None
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise UsageError(f"--config {path}: must be a mapping of settings")
        return _flatten(raw, "", path)
    return _read_properties(text)


def load_settings(
    config: Path | None = None,
    bootstrap_servers: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> KafkaSettings:
    """The settings from the file, the environment and the command line, in that order."""
    values: dict[str, str] = {}
    source: dict[str, str] = {}
    if config is not None:
        for name, value in _read_file(config).items():
            values[name], source[name] = value, str(config)
    for variable, value in (os.environ if environ is None else environ).items():
        if variable.startswith(ENV_PREFIX) and len(variable) > len(ENV_PREFIX):
            name = variable[len(ENV_PREFIX) :].lower().replace("_", ".")
            values[name], source[name] = value, variable
    if bootstrap_servers:
        values["bootstrap.servers"] = bootstrap_servers
        source["bootstrap.servers"] = "--bootstrap-servers"
    return KafkaSettings(values, source)
