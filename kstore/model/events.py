"""The events of ``docs/spec/events.md``: an envelope and one data model per type.

An event is an ``Event`` (the envelope) whose ``data`` is an instance of one of the
``EventData`` subclasses below; the class name is the event's ``type``::

    Event(group="orders", at=now, data=MemberJoined(member_id="c-1", topics=["orders"]))

Each type carries a ``schema_version``. The store records it beside every event, and on
read ``EventData.upcast`` brings data written under an older version to today's shape,
so a later change of a type's fields never rewrites the log.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from operator import itemgetter
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, Union

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic_core import from_json

from kstore._errors import UsageError, invalid_field
from kstore._gc import cyclic_gc_paused
from kstore._limits import (
    KafkaString,
    NonNegativeInt32,
    PartitionCount,
    Text,
    TopicName,
    TopicRef,
    check_instant,
)
from kstore.model._construct import construct, every_field, instance
from kstore.model.ids import event_id

__all__ = [
    "EVENT_TYPES",
    "AssignmentCompleted",
    "AssignmentNotTakenUp",
    "Event",
    "EventData",
    "EventError",
    "MemberJoined",
    "MemberLeft",
    "MemberReplaced",
    "RebalanceStarted",
    "StreamId",
    "SubscriptionChanged",
    "TopicChanged",
    "TopicDeleted",
    "by_id",
    "conflict",
    "content_digest",
    "decode_json_line",
    "difference",
    "format_span",
    "format_time",
    "parse_event",
    "parse_event_line",
    "parse_event_lines",
    "parse_stored_event",
]


class EventError(UsageError):
    """A malformed event; the message names the line (when known) and the field.

    An event refused for its id (``by_id``, ``conflict``) says which: ``event_id``, and
    ``events``, its places in the batch (1 first) when known; ``unplaced`` is the
    message without them, for a caller that names the places its own way (a file's
    lines)."""

    def __init__(
        self,
        message: str,
        *,
        event_id: str | None = None,
        events: tuple[int, ...] = (),
        unplaced: str | None = None,
    ) -> None:
        super().__init__(message)
        self.event_id = event_id
        self.events = events
        self.unplaced = message if unplaced is None else unplaced


class StreamId(NamedTuple):
    """A stream: one timeline of one group of one cluster."""

    cluster: str
    group: str
    timeline: str

    def __str__(self) -> str:
        return f"{self.cluster}/{self.group}/{self.timeline}"


_NonNegative = NonNegativeInt32
_Partition = tuple[TopicRef, NonNegativeInt32]

EVENT_TYPES: dict[str, type[EventData]] = {}
"""Event type name -> its data model, in the order of events.md."""


class EventData(BaseModel):
    """The type-specific part of an event. Subclasses register under their class name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        EVENT_TYPES[cls.__name__] = cls

    @classmethod
    def type_name(cls) -> str:
        return cls.__name__

    @classmethod
    def upcast(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        """Data stored under schema ``version`` in today's shape.

        A type that changes shape raises its ``schema_version`` and overrides this to
        convert each older version; data from a newer version cannot be read.
        """
        if version > cls.schema_version:
            raise ValueError(
                f"{cls.__name__} schema version {version} is newer than this kstore's "
                f"({cls.schema_version}); upgrade kstore"
            )
        return data

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of events.md: optional fields that are absent are left out."""
        return self.model_dump(mode="json", exclude_none=True)

    def stored_json(self) -> str:
        """The data as the log stores it: pydantic's JSON, None fields left out (its
        ``model_dump_json(exclude_none=True)`` without the Python around the call:
        1.7 -> 1.0 us a small event, each event of an append)."""
        return self.__pydantic_serializer__.to_json(self, exclude_none=True).decode()

    @classmethod
    def trusted(cls, data: dict[str, Any]) -> EventData:
        """The model of ``data`` that kstore itself wrote (validated when it was stored),
        built without validating it again; equal to what validation would give.
        """
        return construct(cls, **data)


class TopicChanged(EventData):
    """A topic was created, or its partition count or replica placement changed."""

    topic: TopicName
    partitions: PartitionCount
    racks: list[list[KafkaString]] | None = None


class TopicDeleted(EventData):
    topic: TopicName


class MemberJoined(EventData):
    member_id: KafkaString
    topics: list[TopicName]
    instance_id: KafkaString | None = None
    client_id: KafkaString | None = None
    host: KafkaString | None = None
    rack: KafkaString | None = None
    protocols: list[KafkaString] | None = None
    session_timeout_ms: _NonNegative | None = None
    rebalance_timeout_ms: _NonNegative | None = None


class MemberLeft(EventData):
    member_id: KafkaString
    reason: Literal["leave", "session-timeout", "poll-timeout", "fenced", "other"]


class MemberReplaced(EventData):
    """A static member came back under a new id and took over the old id's place."""

    old_member_id: KafkaString
    new_member_id: KafkaString
    instance_id: KafkaString


class SubscriptionChanged(EventData):
    member_id: KafkaString
    topics: list[TopicName]


class RebalanceStarted(EventData):
    generation: _NonNegative
    reason: Text


class AssignmentCompleted(EventData):
    generation: _NonNegative
    strategy: KafkaString
    assignment: dict[KafkaString, list[_Partition]]
    leader: KafkaString | None = None
    protocol: Literal["eager", "cooperative", "consumer"] | None = None
    client: KafkaString | None = None
    """The library, and its version, whose assignor computed this assignment (a classic
    group's leader's): ``librdkafka 2.16.0``, ``kafka-python 3.0.12``, ``java 4.0.0``, or
    ``kstore 0.1.0`` where kstore's recording assignor computed it inside the leader;
    None where the recorder cannot tell. Optional, so older events read unchanged;
    ``kstore replay --strategy same`` reads it (``strategies.flavour_of``)."""
    source: Text | None = None
    """A replay's decision: the timeline it replays (same cluster and group); None for
    a decision that is no replay's."""
    source_version: _NonNegative | None = None
    """A replay's decision: the version of the source's ``AssignmentCompleted`` it
    answers (a follow-up round: the one its first round answers; an eager replay's
    decision whose source follow-up round it has not: that round's). Up to which source
    version a replay has decided is read from it (queries/coverage.sql)."""

    @classmethod
    def trusted(cls, data: dict[str, Any]) -> EventData:
        # JSON gives each partition as a list; validation makes it a tuple.
        assignment = {m: [(tp[0], tp[1]) for tp in tps] for m, tps in data["assignment"].items()}
        return super().trusted({**data, "assignment": assignment})


class AssignmentNotTakenUp(EventData):
    """kstore's own type: ``member_id`` did not take up the ``AssignmentCompleted`` of
    ``generation`` (its SyncGroup failed, or it never heard of the generation), so it
    still holds what it held before that generation, with that earlier generation.

    It follows that ``AssignmentCompleted`` in its stream. The fold gives the member its
    share of the assignment before it again (none: it holds nothing), and the next
    assignor request its owned partitions and generation from then; kstore's recorders
    and replays write the ``AssignmentCompleted`` with that share already.
    """

    generation: _NonNegative
    member_id: KafkaString
    reason: Text | None = None
    """Why, as the recorder saw it (e.g. ``called back in nothing``)."""


def _iso_text_or_datetime(value: Any) -> Any:
    # Pydantic would also take a number as a Unix time; events.md asks for ISO-8601 text.
    if isinstance(value, str | datetime):
        return value
    raise ValueError("must be an ISO-8601 time with a zone")


_new_stream: Callable[[type[StreamId], tuple[str, str, str]], StreamId] = tuple.__new__
_STREAM_FIELDS: Callable[[dict[str, Any]], tuple[str, str, str]] = itemgetter(
    "cluster", "group", "timeline"
)


class Event(BaseModel):
    """One fact about a group: the envelope of events.md around its typed ``data``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: Annotated[StrictStr, Field(min_length=1, max_length=200)] = Field(
        default_factory=lambda: str(uuid.uuid4())
    )
    cluster: KafkaString = "default"
    group: KafkaString
    timeline: Text = "recorded"
    at: Annotated[
        AwareDatetime, BeforeValidator(_iso_text_or_datetime), AfterValidator(check_instant)
    ]
    data: EventData

    @property
    def type(self) -> str:
        return self.data.type_name()

    @property
    def stream(self) -> StreamId:
        # The fields read at once from the model's dictionary (each attribute of a
        # pydantic model is a slow lookup: its ``__getattr__`` keeps CPython from
        # specialising it) and the tuple made without the named tuple's ``__new__``:
        # 1.06 -> 0.68 us, some 36,000 times in an append of 13,000 events.
        return _new_stream(StreamId, _STREAM_FIELDS(self.__dict__))

    def to_dict(self) -> dict[str, Any]:
        """The events.md form, keys in the order of the spec."""
        return {
            "event_id": self.event_id,
            "cluster": self.cluster,
            "group": self.group,
            "timeline": self.timeline,
            "type": self.type,
            "at": format_time(self.at),
            "data": self.data.to_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def difference(first: Event, second: Event) -> str | None:
    """How two events differ as facts (the first field that does, with both values), or
    None when they are the same fact: same stream, type, instant (offsets aside) and data.
    An event id names one fact, so two events with one id must not differ."""
    for name in ("cluster", "group", "timeline", "type"):
        a, b = getattr(first, name), getattr(second, name)
        if a != b:
            return f"{name} {_shown(a)} vs {_shown(b)}"
    if first.at != second.at:
        return f"at {format_time(first.at)} vs {format_time(second.at)}"
    one, two = first.data.to_dict(), second.data.to_dict()
    for key in dict.fromkeys([*one, *two]):
        if one.get(key) != two.get(key):
            return f"data.{key} {_shown(one.get(key))} vs {_shown(two.get(key))}"
    return None


def by_id(events: Iterable[Event]) -> dict[str, Event]:
    """A batch's events by id, in order, each once: a repeat of the same fact is dropped,
    a repeat that differs is an ``EventError`` naming both places."""
    unique: dict[str, Event] = {}
    place: dict[str, int] = {}
    for number, event in enumerate(events, 1):
        kept = unique.setdefault(event.event_id, event)
        if kept is event:
            place[event.event_id] = number
            continue
        why = difference(kept, event)
        if why is not None:
            first = place[event.event_id]
            raise EventError(
                f"event id {event.event_id!r}: events {first} and {number} "
                f"of the batch differ ({why}); nothing stored",
                event_id=event.event_id,
                events=(first, number),
                unplaced=f"event id {event.event_id!r} given as two facts ({why}); nothing stored",
            )
    return unique


def conflict(stored: Event, position: int, version: int, given: Event) -> EventError | None:
    """The error for ``given`` when its id is stored (at log ``position``, stream
    ``version``) as another fact; None when it is the same one."""
    why = difference(stored, given)
    if why is None:
        return None
    return EventError(
        f"event id {given.event_id!r} is stored already (position {position}, "
        f"{stored.stream} v{version}) as another fact ({why}, stored vs given); nothing stored",
        event_id=given.event_id,
    )


def format_time(at: datetime) -> str:
    """ISO-8601 with the zone kept: ``Z`` for UTC, milliseconds when that is exact."""
    if at.microsecond == 0:
        spec = "seconds"
    elif at.microsecond % 1000 == 0:
        spec = "milliseconds"
    else:
        spec = "microseconds"
    text = at.isoformat(timespec=spec)
    if at.utcoffset() == timedelta(0):
        return text.removesuffix("+00:00") + "Z"
    return text


def format_span(span: timedelta) -> str:
    """A length as a reader says it: ``5 min``, ``3 h``, ``1 day``; one not whole in its
    unit to three figures (``19.9 s``, ``2.52 min``), not ``0:00:19.872733`` nor
    ``39,236,977 ms``."""
    seconds = span.total_seconds()
    for unit, name in ((86400, "day"), (3600, "h"), (60, "min"), (1, "s")):
        if seconds >= unit or unit == 1:
            count = seconds / unit
            plural = "s" if name == "day" and count != 1 else ""
            if count == int(count):
                return f"{int(count)} {name}{plural}"
            return f"{count:.3g} {name}{plural}"
    raise AssertionError("unreachable")  # pragma: no cover


def _error_text(err: ValidationError, prefix: str) -> str:
    return invalid_field(err.errors()[0], prefix, where="event")


def parse_event(raw: Any, schema_version: int | None = None) -> Event:
    """Validate one decoded event; ``EventError`` names the field.

    ``schema_version`` is the version its data was written under (the store passes it
    on read, so ``upcast`` runs); ``None`` means today's.
    """
    if not isinstance(raw, Mapping):
        raise EventError("event: must be a JSON object")
    if "type" not in raw:
        raise EventError("type: Field required")
    kind = raw["type"]
    model = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise EventError(f"type: unknown event type {kind!r} (known: {', '.join(EVENT_TYPES)})")
    if "data" not in raw:
        raise EventError("data: Field required")
    data = raw["data"]
    if not isinstance(data, dict):
        raise EventError("data: must be a JSON object")
    try:
        if schema_version is not None:
            data = model.upcast(data, schema_version)
        typed = model.model_validate(data)
    except ValidationError as exc:
        raise EventError(_error_text(exc, "data")) from None
    except ValueError as exc:
        raise EventError(f"data: {exc}") from None
    envelope = {key: value for key, value in raw.items() if key != "type"}
    envelope["data"] = typed
    try:
        event = Event.model_validate(envelope)
    except ValidationError as exc:
        raise EventError(_error_text(exc, "")) from None
    if "event_id" in raw:
        return event
    # No id given: the fact's own content names it, so the same input appended again
    # (a retry) is the same event, kept once.
    fact = (event.cluster, event.group, event.timeline, event.at.timestamp(), content_digest(typed))
    return event.model_copy(update={"event_id": event_id("content", *fact)})


def content_digest(data: EventData) -> str:
    """A short digest of an event's type and data (ids of facts named by their content)."""
    body = json.dumps([data.type_name(), data.to_dict()], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def parse_stored_event(
    envelope: dict[str, Any], kind: str, data: dict[str, Any], schema_version: int
) -> Event:
    """An event as the store holds it (written by kstore, so valid), read without the
    validation ``parse_event`` runs: a 10,000-partition event would spend most of its
    reading time there. ``envelope`` has every field of ``Event`` but ``data``, in the
    fields' order (``event_id``, ``cluster``, ``group``, ``timeline``, ``at``), made for
    this call: it becomes the event's own fields (no copy per event; Spark's tasks read
    events by the million). Data of an older schema version goes through ``parse_event``.
    """
    model = EVENT_TYPES.get(kind)
    if model is None or schema_version != model.schema_version:
        # Unknown, or written under another version: upcast and validated as any input.
        return parse_event({**envelope, "type": kind, "data": data}, schema_version)
    envelope["data"] = model.trusted(data)
    return instance(Event, envelope, every_field(Event))


def _surrogate(value: Any, here: str = "event") -> str | None:
    """The place of the first string holding a lone surrogate (not Unicode text)."""
    if isinstance(value, str):
        return here if any("\ud800" <= c <= "\udfff" for c in value) else None
    inner: Iterable[tuple[Any, Any]] = ()
    if isinstance(value, dict):
        inner = value.items()
    elif isinstance(value, list):
        inner = enumerate(value)
    for key, item in inner:
        place = str(key) if here == "event" else f"{here}.{key}"
        if isinstance(key, str) and _surrogate(key) is not None:
            return place
        found = _surrogate(item, place)
        if found is not None:
            return found
    return None


def decode_json_line(line: str, where: str = "") -> Any:
    """One JSON line decoded, or ``EventError`` (``where`` first): not JSON, nested too
    deeply for the decoder, or a ``\\ud800``-style escape that is no Unicode text.

    Pydantic's parser reads it with 0.6 of the instructions of ``json`` (a small
    event); a line it refuses is read by ``json`` again, whose answer is the one given:
    its error, or the value of what it reads and pydantic's parser does not (a lone
    surrogate's escape, nesting deeper than 200)."""
    try:
        raw = from_json(line)
    except ValueError:
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            # json's "Unterminated string starting at" names the column itself
            problem = exc.msg.removesuffix(" at")
            if exc.msg.startswith("Unexpected UTF-8 BOM"):  # not at the file's start
                problem = "a byte order mark (U+FEFF), which only a file's start may have,"
            raise EventError(f"{where}not JSON: {problem} at column {exc.colno}") from None
        except RecursionError:
            raise EventError(f"{where}not JSON kstore reads: nested too deeply") from None
    if "\\u" in line:
        found = _surrogate(raw)
        if found is not None:
            raise EventError(f"{where}{found}: a lone surrogate is not Unicode text")
    return raw


def parse_event_line(line: str, number: int | None = None) -> Event:
    """Parse one JSON line; the error names ``line N`` when ``number`` is given."""
    where = f"line {number}: " if number is not None else ""
    raw = decode_json_line(line, where)
    try:
        return parse_event(raw)
    except EventError as exc:
        raise EventError(f"{where}{exc}") from None


@functools.cache
def _line_reader(types: tuple[type[EventData], ...]) -> Callable[[str], BaseModel]:
    """Pydantic's core reading a whole event line of one of ``types`` in one pass (JSON
    and validation): a model per type with ``Event``'s fields, ``type`` and its data."""
    envelope: dict[str, Any] = {
        name: (field.annotation, field)
        for name, field in Event.model_fields.items()
        if name != "data"
    }
    lines = tuple(
        create_model(
            f"_{model.__name__}Line",
            __config__=ConfigDict(extra="forbid"),
            **envelope,
            type=(Literal[model.__name__], ...),  # type: ignore[arg-type]
            data=(model, ...),
        )
        for model in types
    )
    union = Annotated[Union[lines], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
    return TypeAdapter[BaseModel](union).validate_json


_EVENT_FIELDS = tuple(Event.model_fields)


def _read_lines(lines: Iterable[str]) -> Iterable[Event]:
    """``parse_event_line`` of each line (blank ones skipped), its event read in one pass
    of pydantic's core where it can be: no dictionary of the decoded line first, nor a
    second validation of the envelope around the validated data (13,000 small events:
    a quarter of the reading's CPU). Those ``parse_event_line`` reads otherwise (an
    id made from the content, an escape, an unknown type) or refuses, and their error,
    it reads again. What the pass reads is the event it would have made, to the fields
    given (pydantic's JSON and the decoded line are validated alike)."""
    read = _line_reader(tuple(EVENT_TYPES.values()))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if "\\u" not in line:  # an escape: perhaps a lone surrogate (``decode_json_line``)
            try:
                whole = read(line)
            except ValidationError:
                pass
            else:
                given = whole.model_fields_set - {"type"}
                if "event_id" in given:
                    fields = whole.__dict__
                    yield instance(Event, {name: fields[name] for name in _EVENT_FIELDS}, given)
                    continue
        yield parse_event_line(line, number)


@cyclic_gc_paused()
def parse_event_lines(lines: Iterable[str]) -> list[Event]:
    """Validate a whole batch of JSON Lines (blank lines skipped) before any is stored.

    The first malformed line raises ``EventError`` naming its number and field. The
    cyclic collector is paused meanwhile: its passes over the events made so far were
    two fifths of the time (``kstore append`` of 13,000 small events).
    """
    return list(_read_lines(lines))
