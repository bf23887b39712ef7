"""Scenario files: YAML validated with pydantic; errors name the line they come from."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from kstore._errors import UsageError, error_message, field_path, known_hint, nearest
from kstore._files import read_text
from kstore._limits import (
    MAX_MEMBERS,
    MAX_SIMULATED_PARTITIONS,
    PartitionCount,
    TopicName,
    check_instant,
)
from kstore.assignors._contract import check_total
from kstore.model.strategies import (
    CLASSIC_STRATEGIES,
    COOPERATIVE_STRATEGIES,
    Protocol,
    classic_protocol,
    fitting,
)
from kstore.protocol.settings import ProtocolSettings

__all__ = [
    "MemberGroup",
    "Scenario",
    "ScenarioError",
    "Step",
    "TopicSpec",
    "load_scenario",
    "parse_duration",
    "parse_scenario",
]


class ScenarioError(UsageError):
    """A scenario that cannot be run; the message starts with ``FILE:LINE:``."""


MAX_SCENARIO_CHARS = 4 * 1024 * 1024
MAX_DURATION_MS = 100 * 365 * 86_400_000
_MAX_DEPTH = 64

_DEFAULT_STRATEGY = {"consumer": "uniform", "cooperative": "cooperative-sticky"}
_COOPERATIVE_ONES = ", ".join(s for s in CLASSIC_STRATEGIES if s in COOPERATIVE_STRATEGIES)

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")


def _bounded(ms: int) -> int:
    if ms > MAX_DURATION_MS:
        raise ValueError("a duration is at most 100 years")
    return ms


def parse_duration(value: Any) -> int:
    """Milliseconds from ``250`` (ms), ``"250ms"``, ``"10s"``, ``"5m"`` or ``"1h"``."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of ms or text like 10s, 5m, 1h")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return _bounded(value)
    if isinstance(value, str):
        found = _DURATION.match(value)
        if found:
            return _bounded(round(float(found.group(1)) * _UNITS[found.group(2)]))
    raise ValueError("a duration is a number of ms or text like 250ms, 10s, 5m, 1h")


Ms = Annotated[int, BeforeValidator(parse_duration)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class TopicSpec(_Model):
    partitions: PartitionCount
    racks: list[list[str]] | None = None
    """Per partition, the racks of its replicas (KIP-881 rack-aware assignment)."""


def _topic(value: Any) -> Any:
    return (
        {"partitions": value} if isinstance(value, int) and not isinstance(value, bool) else value
    )


def _each_once(protocols: list[str] | None) -> list[str] | None:
    """A member's assignors name each protocol once: Kafka's consumer refuses one named
    twice when it starts (``ConsumerPartitionAssignor.getAssignorInstances``), and the
    coordinator's vote would find no protocol every member supports."""
    if protocols is not None:
        twice = sorted({p for p in protocols if protocols.count(p) > 1})
        if twice:
            raise ValueError(
                f"{', '.join(twice)} listed twice: Kafka's consumer refuses it (the assignor "
                "name is used in more than one assignor)"
            )
    return protocols


class MemberGroup(_Model):
    """One member, or ``count`` alike ones named ``{prefix}{index}``."""

    name: str | None = None
    count: int = Field(1, ge=1, le=MAX_MEMBERS)
    prefix: str = "c-"
    topics: list[TopicName]
    protocols: list[str] | None = None
    """Assignors in preference order (default: the scenario's strategy)."""
    rack: str | None = None
    racks: list[str] | None = None
    """Racks handed out in turn to the members of a ``count``."""
    static: bool = False
    """Static members (KIP-345): ``group.instance.id`` = the member's name."""

    _protocols_once = field_validator("protocols")(_each_once)

    @model_validator(mode="after")
    def _one_name(self) -> MemberGroup:
        if self.name is not None and self.count != 1:
            raise ValueError("give either name (one member) or count (several)")
        return self


class _Named(_Model):
    member: str


class RestartAction(_Named):
    down: Ms = 10_000
    clean: bool = True


class SubscribeAction(_Named):
    topics: list[TopicName]


class ForAction(_Named):
    duration: Ms = Field(alias="for")


class RollingRestart(_Model):
    down: Ms = 10_000
    interval: Ms = 30_000
    clean: bool = True


class PartitionsAction(_Model):
    topic: TopicName
    count: PartitionCount
    racks: list[list[str]] | None = None


class JoinAction(_Model):
    name: str
    topics: list[TopicName]
    protocols: list[str] | None = None
    rack: str | None = None
    static: bool = False

    _protocols_once = field_validator("protocols")(_each_once)


ACTIONS = (
    "join",
    "leave",
    "crash",
    "restart",
    "rolling-restart",
    "scale",
    "subscribe",
    "partitions",
    "slow",
    "cut-off",
    "coordinator-failover",
)


class Step(_Model):
    """At ``at`` (from the start), exactly one action."""

    at: Ms
    join: JoinAction | None = None
    leave: str | None = None
    crash: str | None = None
    restart: RestartAction | None = None
    rolling_restart: RollingRestart | None = Field(None, alias="rolling-restart")
    scale: int | None = Field(None, ge=0, le=MAX_MEMBERS)
    subscribe: SubscribeAction | None = None
    partitions: PartitionsAction | None = None
    slow: ForAction | None = None
    cut_off: ForAction | None = Field(None, alias="cut-off")
    coordinator_failover: bool | None = Field(None, alias="coordinator-failover")

    @model_validator(mode="after")
    def _exactly_one(self) -> Step:
        given = [a for a in ACTIONS if getattr(self, a.replace("-", "_")) is not None]
        if len(given) != 1:
            raise ValueError(
                f"a step needs exactly one action of {', '.join(ACTIONS)} (got {len(given)})"
            )
        return self

    @property
    def action(self) -> str:
        return next(a for a in ACTIONS if getattr(self, a.replace("-", "_")) is not None)


class Scenario(_Model):
    name: str
    group: str | None = None
    cluster: str = "default"
    start: Annotated[AwareDatetime, AfterValidator(check_instant)] = datetime(
        2026, 1, 1, tzinfo=UTC
    )
    protocol: Protocol | None = None
    """The scenario's own protocol; when absent, the members' assignors decide it
    (``rebalance_protocol``)."""
    strategy: str | None = None
    """Default assignor: ``range`` (classic), ``cooperative-sticky`` (cooperative) or
    ``uniform`` (consumer)."""
    settings: ProtocolSettings = ProtocolSettings()
    topics: dict[TopicName, Annotated[TopicSpec, BeforeValidator(_topic)]]
    members: list[MemberGroup]
    steps: list[Step] = []
    until: Ms | None = None
    """Where the run stops (default: five minutes after the last step)."""
    _source: str = PrivateAttr("<scenario>")
    _lines: dict[tuple[Any, ...], int] = PrivateAttr(default_factory=dict)

    def where(self, *loc: str | int) -> str:
        """``SOURCE:LINE: path`` of a place in the scenario's text (line 1 when it was not
        read from text), for an error found while it runs."""
        return f"{self._source}:{_line_of(loc, self._lines)}: {field_path(loc)}"

    @field_validator("strategy")
    @classmethod
    def _fits_protocol(cls, strategy: str | None, info: ValidationInfo) -> str | None:
        # No protocol: a classic one (eager or cooperative), whichever the assignors make.
        return None if strategy is None else fitting(strategy, info.data.get("protocol") or "eager")

    def offers(self) -> list[list[str]]:
        """The assignors (in preference order) each ``members`` entry offers: its
        ``protocols``, else the scenario's ``strategy``, else the protocol's default."""
        own = [self.strategy or _DEFAULT_STRATEGY.get(self.protocol or "eager", "range")]
        return [group.protocols or own for group in self.members]

    @property
    def rebalance_protocol(self) -> Protocol:
        """The protocol the group runs: the scenario's own ``protocol``, else Kafka's rule
        for what the members it starts with offer (``classic_protocol``: cooperative when
        every one offers only cooperative strategies, eager otherwise; the consumer
        protocol only when named). Members that join later do not change it."""
        if self.protocol is not None:
            return self.protocol
        return classic_protocol(self.offers())

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        sizes = {t: spec.partitions for t, spec in self.topics.items()}
        check_total(sizes)
        if (total := sum(sizes.values())) > MAX_SIMULATED_PARTITIONS:
            raise ValueError(f"topics: {_too_many_partitions(total)}")
        if sum(group.count for group in self.members) > MAX_MEMBERS:
            raise ValueError(f"members: more than {MAX_MEMBERS:,} in all")
        if self.protocol == "cooperative":
            if self.strategy not in (None, *COOPERATIVE_STRATEGIES):
                raise ValueError(f"protocol cooperative needs strategy {_COOPERATIVE_ONES}")
            for offer in self.offers():
                if not set(offer) <= set(COOPERATIVE_STRATEGIES):
                    raise ValueError(
                        "protocol cooperative: Kafka's clients use COOPERATIVE only when all "
                        f"their assignors support it (here: {_COOPERATIVE_ONES} only)"
                    )
        return self

    @property
    def default_strategy(self) -> str:
        if self.strategy is not None:
            return self.strategy
        return _DEFAULT_STRATEGY.get(self.rebalance_protocol, "range")

    @property
    def group_id(self) -> str:
        return self.group or self.name

    @property
    def end(self) -> int:
        if self.until is not None:
            return self.until
        last = 0
        for step in self.steps:
            span = 0
            if step.rolling_restart is not None:
                span = step.rolling_restart.interval * sum(g.count for g in self.members)
            elif step.restart is not None:
                span = step.restart.down
            elif step.slow is not None or step.cut_off is not None:
                span = (step.slow or step.cut_off).duration  # type: ignore[union-attr]
            last = max(last, step.at + span)
        return last + 300_000


# --- YAML with line numbers ---------------------------------------------------------------


def _plain_yaml(text: str, source: str) -> None:
    """Refuse aliases and nesting deeper than ``_MAX_DEPTH``, reading YAML's event stream
    (linear, and no recursion) before any node is built."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if isinstance(event, yaml.AliasEvent):
            raise ScenarioError(f"{source}:{line}: YAML aliases (*name) are not allowed here")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > _MAX_DEPTH:
                raise ScenarioError(f"{source}:{line}: nested more than {_MAX_DEPTH} deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _to_data(node: yaml.Node, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> Any:
    """The data of ``node``; ``lines`` gets the line of each path (a key's own line)."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = yaml.safe_load(yaml.serialize(key_node))
            if isinstance(key, list | dict):  # YAML allows it; no scenario key is one
                kind = "a list" if isinstance(key, list) else "a mapping"
                raise yaml.constructor.ConstructorError(
                    problem=f"a key is a name, not {kind}", problem_mark=key_node.start_mark
                )
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _to_data(value_node, (*path, key), lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_to_data(item, (*path, i), lines) for i, item in enumerate(node.value)]
    return yaml.safe_load(yaml.serialize(node))


def _keys(model: type[BaseModel]) -> set[str]:
    """Every key a scenario's mappings may hold (names and aliases, nested models too)."""
    found: set[str] = set()
    for name, field in model.model_fields.items():
        found.add(field.alias or name)
        for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
            for inner in (arg, *getattr(arg, "__args__", ())):
                if isinstance(inner, type) and issubclass(inner, BaseModel) and inner is not model:
                    found |= _keys(inner)
    return found


def _line_of(loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int:
    path = tuple(
        part for part in loc if not (isinstance(part, str) and part.startswith("function-"))
    )
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path, 1)


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Validate a scenario's YAML text; ``ScenarioError`` names ``source:line``.

    Loaded safely: at most ``MAX_SCENARIO_CHARS`` characters, nested at most 64 deep,
    and no aliases (``*name``: nested ones expand exponentially, a few hundred bytes to
    billions of nodes), so loading takes time in proportion to the text.
    """
    if len(text) > MAX_SCENARIO_CHARS:
        raise ScenarioError(
            f"{source}:1: {len(text):,} characters; a scenario has at most {MAX_SCENARIO_CHARS:,}"
        )
    lines: dict[tuple[Any, ...], int] = {}
    try:
        _plain_yaml(text, source)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = None if node is None else _to_data(node, (), lines)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = str(getattr(exc, "problem", None) or exc).splitlines()[0]
        raise ScenarioError(f"{source}:{line}: not valid YAML: {problem}") from None
    if node is None:
        raise ScenarioError(f"{source}:1: empty scenario")
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}:1: a scenario is a mapping (name, topics, members, steps)")
    data.setdefault("name", Path(source).stem)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key also makes the key it stands for missing: name the typo.
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = tuple(first["loc"])
        where = field_path(loc) or "scenario"
        message = error_message(first).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            near = nearest(str(loc[-1]), _keys(Scenario), n=1)
            message = "unknown key" + (f"; did you mean {near[0]}?" if near else "")
        raise ScenarioError(f"{source}:{_line_of(loc, lines)}: {where}: {message}") from None
    scenario._source, scenario._lines = source, lines
    if (wrong := _undeclared_topic(scenario) or _bad_partitions_step(scenario)) is not None:
        loc, message = wrong
        raise ScenarioError(f"{scenario.where(*loc)}: {message}")
    return scenario


def _too_many_partitions(total: int) -> str:
    return f"{total:,} partitions in all; kstore simulates at most {MAX_SIMULATED_PARTITIONS:,}"


def _bad_partitions_step(scenario: Scenario) -> tuple[tuple[str | int, ...], str] | None:
    """The first ``partitions`` step that gives a topic fewer partitions than it has then
    (Kafka only adds partitions), or more than kstore simulates in all, and what to say of
    it: found before the run, which stopped there with exit 1 and no line (or ran out of
    memory)."""
    sizes = {topic: spec.partitions for topic, spec in scenario.topics.items()}
    total = sum(sizes.values())
    timed = sorted(enumerate(scenario.steps), key=lambda item: item[1].at)  # as they run
    for i, step in timed:
        if (grown := step.partitions) is None:
            continue
        have = sizes.get(grown.topic)
        if have is not None and grown.count < have:
            return ("steps", i, "partitions", "count"), (
                f"topic {grown.topic!r} has {have} partitions then; Kafka cannot reduce "
                f"them (to {grown.count})"
            )
        sizes[grown.topic] = grown.count
        total += grown.count - (have or 0)
        if total > MAX_SIMULATED_PARTITIONS:
            return ("steps", i, "partitions", "count"), _too_many_partitions(total)
    return None


def _undeclared_topic(scenario: Scenario) -> tuple[tuple[str | int, ...], str] | None:
    """The first subscription to a topic the scenario never has (not in ``topics``, made
    by no ``partitions`` step), and what to say of it. Kafka lets a consumer subscribe to
    a topic that does not exist; in a scenario, which names every topic it has, such a
    name is a typo, and the run would be of a group that never gets its partitions."""
    known = set(scenario.topics) | {s.partitions.topic for s in scenario.steps if s.partitions}
    places: list[tuple[tuple[str | int, ...], list[str]]] = [
        (("members", i, "topics"), group.topics) for i, group in enumerate(scenario.members)
    ]
    for i, step in enumerate(scenario.steps):
        for action, made in (("join", step.join), ("subscribe", step.subscribe)):
            if made is not None:
                places.append((("steps", i, action, "topics"), made.topics))
    for loc, topics in places:
        for j, topic in enumerate(topics):
            if topic not in known:
                return (*loc, j), (
                    f"topic {topic!r} is not one of the scenario's topics and no "
                    f"partitions step makes it{known_hint(topic, known)}"
                )
    return None


def load_scenario(path: Path | str) -> Scenario:
    file = Path(path)
    try:
        text = read_text(file)
    except UsageError as exc:
        raise ScenarioError(str(exc)) from None
    return parse_scenario(text, str(file))
