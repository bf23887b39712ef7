"""Connection settings for the recorders' Kafka clients, with secrets kept out of sight.

One set of names for every recorder, whatever client library is under it: Kafka's and
librdkafka's dotted names (``bootstrap.servers``, ``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config``, ``sasl.username``, ``ssl.ca.location`` ...).
``KafkaSettings.confluent()`` and ``KafkaSettings.kafka_python()`` turn them into each
client's form; ``_KAFKA_PYTHON`` is the one table of that mapping. They come from, later
ones winning:

1. a config file (``--command-config FILE``, alias ``--config``): Java properties, read as
   Java reads them (``javaproperties``: ``\\`` continues a value on the next line, so a
   multi-line ``sasl.jaas.config`` is one value), or YAML (nested keys joined with dots);
2. the environment: ``KSTORE_KAFKA_SASL_PASSWORD=...`` is ``sasl.password``;
3. ``-X key=value`` (repeatable, as kcat);
4. ``--bootstrap-server``.

Secrets are masked deny-by-default: a value is shown (in the start-up line, an error, a
log record) only when its setting is on the known-safe list (``_SAFE``: servers,
protocol, mechanism, ids, timeouts ...). Every other value is a secret: ``redact`` blanks
it, and the parts of structured values (``clientSecret=...`` inside
``sasl.oauthbearer.config``, ``password="..."`` inside ``sasl.jaas.config``), out of any
text; a logging filter does the same for every log record.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kstore._errors import KstoreError, UsageError
from kstore._extras import missing_extra
from kstore._files import read_text
from kstore.record._failures import FirstAnswer

__all__ = [
    "ENV_PREFIX",
    "FIRST_ANSWER_MS",
    "KafkaSettings",
    "RedactingFilter",
    "is_safe",
    "load_settings",
]

ENV_PREFIX = "KSTORE_KAFKA_"
_MASK = "***"
_SHORT = 8

_SAFE = frozenset(
    {
        "bootstrap.servers",
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.kerberos.service.name",
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.token.endpoint.url",
        "client.id",
        "client.rack",
        "group.id",
        "group.instance.id",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.crl.location",
        "api.version.request",
        "broker.address.family",
        "client.dns.lookup",
        "enable.auto.commit",
        "auto.offset.reset",
        "partition.assignment.strategy",
        "group.protocol",
        "debug",
    }
)
"""Settings whose values may be printed; any other value is a secret (deny by default)."""

_SAFE_SUFFIXES = (".timeout.ms", ".interval.ms", ".backoff.ms", ".backoff.max.ms", ".age.ms")

# Kafka/librdkafka name -> kafka-python keyword and how the value converts.
_KAFKA_PYTHON: dict[str, tuple[str, str]] = {
    "bootstrap.servers": ("bootstrap_servers", "list"),
    "client.id": ("client_id", "str"),
    "security.protocol": ("security_protocol", "str"),
    "sasl.mechanism": ("sasl_mechanism", "str"),
    "sasl.mechanisms": ("sasl_mechanism", "str"),
    "sasl.username": ("sasl_plain_username", "str"),
    "sasl.password": ("sasl_plain_password", "str"),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", "str"),
    "ssl.ca.location": ("ssl_cafile", "str"),
    "ssl.certificate.location": ("ssl_certfile", "str"),
    "ssl.key.location": ("ssl_keyfile", "str"),
    "ssl.key.password": ("ssl_password", "str"),
    "ssl.crl.location": ("ssl_crlfile", "str"),
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", "https"),
    "request.timeout.ms": ("request_timeout_ms", "int"),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", "int"),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", "int"),
    "retry.backoff.ms": ("retry_backoff_ms", "int"),
    "metadata.max.age.ms": ("metadata_max_age_ms", "int"),
    "connections.max.idle.ms": ("connections_max_idle_ms", "int"),
}

# Kafka's names that kstore reads itself, passed to neither client.
_KSTORE_READS = frozenset({"default.api.timeout.ms"})
FIRST_ANSWER_MS = 15000
"""kstore's default of ``default.api.timeout.ms``, the bound on a recorder's wait for the
broker's first answer (Kafka's admin client: 60000; kafka-consumer-groups.sh's
``--timeout``: 5000). A first poll that reaches no broker is mostly a wrong address."""

# Java's login modules whose options librdkafka and kafka-python take as settings.
_JAAS_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM",
}
_JAAS = re.compile(r"\s*(\S+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.S)
_OPTION = re.compile(r"""([A-Za-z0-9_.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)""")


def is_safe(name: str) -> bool:
    """Whether the value of setting ``name`` may be printed (the known-safe list)."""
    return name in _SAFE or name.endswith(_SAFE_SUFFIXES)


def _options(text: str) -> dict[str, str]:
    """``key=value`` / ``key="value"`` pairs of a JAAS entry or ``sasl.oauthbearer.config``."""
    found = {}
    for key, raw in _OPTION.findall(text):
        value = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\") if raw[:1] == '"' else raw
        found[key] = value
    return found


def _jaas_login(text: str) -> tuple[str, dict[str, str]]:
    """The login module's kind and its options; an unsupported module is a usage error."""
    found = _JAAS.fullmatch(text)
    if found is None:
        raise UsageError(
            "sasl.jaas.config: not a JAAS entry like "
            '\'<LoginModule> required username="..." password="...";\''
        )
    module = found.group(1)
    kind = _JAAS_MODULES.get(module)
    if kind is None:
        raise UsageError(
            f"sasl.jaas.config: the login module {module} is not supported by kstore's "
            f"clients; supported: {', '.join(sorted(_JAAS_MODULES))} (or give sasl.username "
            "and sasl.password)"
        )
    return kind, _options(found.group(3))


_ADDRESS = re.compile(r"(?:[A-Za-z_]+://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+)(?::([^:]*))?")
"""A bootstrap address as both clients read it: an optional ``PROTOCOL://``, a host (an
IPv6 one in brackets) and an optional port (both clients default it to 9092)."""


def _bad_address(address: str) -> str | None:
    """What is wrong with one bootstrap address, or None: caught here, a port that is not
    a number would be retried as a broker that is down until the retries run out."""
    found = _ADDRESS.fullmatch(address)
    if found is None:
        return "not an address" if address else "an empty address"
    port = found.group(2)
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        return f"the port {port!r} is not a number from 1 to 65535"
    return None


@dataclass(frozen=True)
class KafkaSettings:
    """Client settings by Kafka/librdkafka name; ``source`` says where each came from."""

    values: Mapping[str, str]
    source: Mapping[str, str] = field(default_factory=dict)

    @property
    def bootstrap_servers(self) -> str:
        servers = self.values.get("bootstrap.servers")
        if not servers:
            raise UsageError(
                "no bootstrap servers: give --bootstrap-server, bootstrap.servers in "
                f"--command-config or -X, or {ENV_PREFIX}BOOTSTRAP_SERVERS"
            )
        for address in servers.split(","):
            if why := _bad_address(address.strip()):
                where = self.source.get("bootstrap.servers", "bootstrap.servers")
                raise UsageError(
                    f"bootstrap.servers ({where}): {address.strip()!r}: {why} "
                    "(host:port, comma-separated)"
                )
        return servers

    def secrets(self) -> list[str]:
        """Every value that may not be shown, longest first (a secret inside another is
        masked whole): the values of settings off the safe list, and the option values
        inside structured ones."""
        found: set[str] = set()
        for name, value in self.values.items():
            if is_safe(name) or not value:
                continue
            found.add(value)
            found.update(part for part in _options(value).values() if part)
        return sorted(found, key=len, reverse=True)

    def redact(self, text: str) -> str:
        for secret in self.secrets():
            if len(secret) >= _SHORT:
                text = text.replace(secret, _MASK)
            else:  # a short value is masked where it stands alone, not inside words
                text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", _MASK, text)
        return text

    def describe(self) -> str:
        """One line for the log: every setting's name, values only of safe ones."""
        shown = (
            f"{name}={value if is_safe(name) else _MASK}"
            for name, value in sorted(self.values.items())
        )
        return ", ".join(shown)

    def _client_values(self) -> dict[str, str]:
        """The values with ``sasl.jaas.config`` turned into the settings it stands for."""
        values = {k: v for k, v in self.values.items() if k not in _KSTORE_READS}
        jaas = values.pop("sasl.jaas.config", None)
        if jaas is not None:
            kind, options = _jaas_login(jaas)
            for option, name in (("username", "sasl.username"), ("password", "sasl.password")):
                if option in options:
                    values.setdefault(name, options[option])
            mechanism = values.get("sasl.mechanism") or values.get("sasl.mechanisms") or ""
            if kind == "SCRAM" and not mechanism.upper().startswith("SCRAM-"):
                raise UsageError(
                    "sasl.jaas.config: ScramLoginModule needs sasl.mechanism "
                    "SCRAM-SHA-256 or SCRAM-SHA-512"
                )
        if values.get("sasl.oauthbearer.method", "").lower() == "oidc" and not values.get(
            "sasl.oauthbearer.token.endpoint.url"
        ):
            raise UsageError(
                "sasl.oauthbearer.method=oidc needs sasl.oauthbearer.token.endpoint.url"
            )
        self.bootstrap_servers  # noqa: B018 - fail early with a clear message
        return values

    def milliseconds(self, name: str) -> int | None:
        """A setting in milliseconds (a positive whole number), or None when not given."""
        value = self.values.get(name)
        if value is None:
            return None
        if not value.strip().isdigit() or int(value) <= 0:
            where = self.source.get(name, name)
            raise UsageError(f"setting {name} ({where}): not a positive whole number of ms")
        return int(value)

    def first_answer(self) -> FirstAnswer:
        """The bound on the wait for the broker's first answer, by Kafka's names:
        ``default.api.timeout.ms`` (kstore's default ``FIRST_ANSWER_MS``; raised to
        ``request.timeout.ms`` when that is larger and the bound was not given, an error
        when it was, as Kafka's admin client does), tries spaced from
        ``reconnect.backoff.ms`` doubling to ``reconnect.backoff.max.ms`` (Kafka's 50 and
        1000 by default)."""
        given = self.milliseconds("default.api.timeout.ms")
        request = self.milliseconds("request.timeout.ms")
        if given is not None:
            where = self.source.get("default.api.timeout.ms", "")
            if request is not None and given < request:
                raise UsageError(
                    f"setting default.api.timeout.ms ({where}): {given} is less than "
                    f"request.timeout.ms ({request}); give it at least as large"
                )
            bound, why = given, f"default.api.timeout.ms={given} ({where})"
        elif request is not None and request > FIRST_ANSWER_MS:
            where = self.source.get("request.timeout.ms", "")
            bound, why = request, f"request.timeout.ms={request} ({where})"
        else:
            bound, why = (
                FIRST_ANSWER_MS,
                f"default.api.timeout.ms: kstore's default {FIRST_ANSWER_MS}",
            )
        backoff = self.milliseconds("reconnect.backoff.ms") or 50
        cap = self.milliseconds("reconnect.backoff.max.ms") or 1000
        pauses = (backoff / 1000, max(cap, backoff) / 1000)
        return FirstAnswer(bound / 1000, why, pauses, self.bootstrap_servers)

    def confluent(self, **extra: Any) -> dict[str, Any]:
        """A configuration for confluent-kafka (librdkafka takes the names as they are)."""
        config: dict[str, Any] = dict(self._client_values())
        config.update(extra)
        return config

    def kafka_python(self, **extra: Any) -> dict[str, Any]:
        """Keyword arguments for kafka-python's clients."""
        config: dict[str, Any] = {}
        for name, value in self._client_values().items():
            if name not in _KAFKA_PYTHON:
                raise UsageError(
                    f"setting {name} ({self.source.get(name, 'derived')}) has no kafka-python "
                    f"equivalent; known: {', '.join(sorted(_KAFKA_PYTHON))}"
                )
            keyword, kind = _KAFKA_PYTHON[name]
            if kind == "list":
                config[keyword] = [s.strip() for s in value.split(",") if s.strip()]
            elif kind == "https":
                config[keyword] = value.lower() == "https"
            elif kind == "int":
                try:
                    config[keyword] = int(value)
                except ValueError:
                    raise UsageError(f"setting {name}: not a whole number") from None
            else:
                config[keyword] = value
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
            if missing_extra(exc) is not None:  # named by main(), and holds no secret
                raise
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
            raise UsageError(
                f"--command-config {where}: {name}: must be a string, number or boolean"
            )
    return flat


def _read_file(path: Path) -> dict[str, str]:
    text = read_text(path, "--command-config")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError:
            # The parser's message quotes the offending line, which may hold a secret.
            raise UsageError(f"--command-config {path}: not valid YAML") from None
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise UsageError(f"--command-config {path}: must be a mapping of settings")
        return _flatten(raw, "", path)
    # Imported here: of the kafka extra, which `kstore record merge` does not need (it
    # named the missing extra before the missing --reports folder).
    import javaproperties

    try:
        return dict(javaproperties.loads(text))
    except javaproperties.InvalidUEscapeError:
        # Its message quotes the escape, which may be part of a secret.
        raise UsageError(f"--command-config {path}: an invalid \\u escape") from None


def _overrides(pairs: Sequence[str]) -> dict[str, str]:
    values = {}
    for number, pair in enumerate(pairs, 1):
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            # The word is not echoed: it may be a secret given without its name.
            raise UsageError(f"-X (the {number}. one): give key=value")
        values[name.strip()] = value
    return values


def load_settings(
    config: Path | None = None,
    bootstrap_servers: str | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
) -> KafkaSettings:
    """The settings from the file, the environment, ``-X`` and the command line."""
    values: dict[str, str] = {}
    source: dict[str, str] = {}
    if config is not None:
        for name, value in _read_file(config).items():
            values[name], source[name] = value, str(config)
    for variable, value in (os.environ if environ is None else environ).items():
        if variable.startswith(ENV_PREFIX) and len(variable) > len(ENV_PREFIX):
            name = variable[len(ENV_PREFIX) :].lower().replace("_", ".")
            values[name], source[name] = value, variable
    for name, value in _overrides(overrides).items():
        values[name], source[name] = value, "-X"
    if bootstrap_servers:
        values["bootstrap.servers"] = bootstrap_servers
        source["bootstrap.servers"] = "--bootstrap-server"
    return KafkaSettings(values, source)
