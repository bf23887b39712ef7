"""``construct`` builds the very model ``model_construct`` builds, faster."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from kstore.assignors import MemberSubscription
from kstore.model import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    MemberLeft,
    MemberReplaced,
    RebalanceStarted,
    SubscriptionChanged,
    TopicChanged,
)
from kstore.model._construct import construct, constructor

AT = datetime(2026, 11, 26, tzinfo=UTC)

CASES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (TopicChanged, {"topic": "t", "partitions": 3}),
    (TopicChanged, {"racks": [["r1"]], "partitions": 1, "topic": "t"}),  # any order
    (MemberJoined, {"member_id": "m", "topics": ["t"], "rack": None, "session_timeout_ms": 1}),
    (MemberLeft, {"member_id": "m", "reason": "leave"}),
    (MemberReplaced, {"old_member_id": "a", "new_member_id": "b", "instance_id": "i"}),
    (SubscriptionChanged, {"member_id": "m", "topics": []}),
    (RebalanceStarted, {"generation": 2, "reason": "r"}),
    (AssignmentCompleted, {"generation": 1, "strategy": "range", "assignment": {"m": [("t", 0)]}}),
    (MemberSubscription, {"topics": ["t"], "owned": [], "generation": None}),
    (
        Event,
        {
            "event_id": "e",
            "cluster": "c",
            "group": "g",
            "timeline": "t",
            "at": AT,
            "data": MemberLeft(member_id="m", reason="leave"),
        },
    ),
    (
        Event,
        {
            "event_id": "e",
            "group": "g",
            "at": AT,
            "data": MemberLeft(member_id="m", reason="leave"),
        },
    ),
]


def _parts(model: BaseModel) -> tuple[object, ...]:
    return (
        type(model),
        list(model.__dict__.items()),  # the same keys in the same order
        model.model_fields_set,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


@pytest.mark.parametrize(("cls", "values"), CASES)
def test_construct_is_model_construct(cls: type[BaseModel], values: dict[str, Any]) -> None:
    made = construct(cls, **values)
    assert _parts(made) == _parts(cls.model_construct(**values))
    assert made == cls.model_construct(**values)
    assert made.model_dump_json() == cls.model_construct(**values).model_dump_json()


def test_construct_falls_back_where_a_field_is_missing_or_unknown() -> None:
    # Event's id has a default factory: without it, model_construct makes one.
    made = construct(Event, group="g", at=AT, data=MemberLeft(member_id="m", reason="leave"))
    assert len(made.event_id) == 36
    assert _parts(construct(MemberLeft, member_id="m")) == _parts(
        MemberLeft.model_construct(member_id="m")
    )
    assert _parts(construct(MemberLeft, member_id="m", reason="leave", other=1)) == _parts(
        MemberLeft.model_construct(member_id="m", reason="leave", other=1)
    )


def test_a_trusted_stamp_is_model_construct() -> None:
    from kstore.model.events import StreamId
    from kstore.model.ids import event_id
    from kstore.store.writer import stamp

    data = MemberLeft(member_id="m", reason="leave")
    made = stamp(StreamId("c", "g", "t"), AT, data, "c/g/t", 3, trusted=True)
    values = {
        "event_id": event_id("c/g/t", 3),
        "cluster": "c",
        "group": "g",
        "timeline": "t",
        "at": AT,
        "data": data,
    }
    assert _parts(made) == _parts(Event.model_construct(**values))
    assert made == stamp(StreamId("c", "g", "t"), AT, data, "c/g/t", 3)


def test_one_fields_set_for_every_field_given_is_never_changed() -> None:
    from kstore.model._construct import every_field, instance

    every = every_field(MemberSubscription)
    assert every is every_field(MemberSubscription)
    values = {"topics": ["t"], "owned": [("t", 0)], "generation": 1, "rack": None}
    values["instance_id"] = None
    made = instance(MemberSubscription, dict(values), every)
    assert _parts(made) == _parts(MemberSubscription.model_construct(**values))
    # A copy with a change gets a set of its own; the frozen original cannot be set.
    changed = made.model_copy(update={"generation": 2})
    assert changed.model_fields_set is not every
    with pytest.raises(ValueError):
        made.generation = 3  # type: ignore[misc]
    assert every == set(MemberSubscription.model_fields)


def test_a_stamper_stamps_as_stamp_does() -> None:
    from kstore.model.events import StreamId
    from kstore.store.writer import stamp, stamper

    stream = StreamId("c", "g", "t")
    made = stamper(stream, "c/g/t")
    for version, data in enumerate(
        [MemberLeft(member_id="m", reason="leave"), RebalanceStarted(generation=1, reason="r")]
    ):
        event = made(AT, data, version)
        assert _parts(event) == _parts(stamp(stream, AT, data, "c/g/t", version, trusted=True))
        assert event.model_fields_set is made(AT, data, 9).model_fields_set


def test_a_frozen_models_instances_given_the_same_names_share_one_fields_set() -> None:
    one = construct(MemberJoined, member_id="a", topics=["t"], rack="r")
    two = construct(MemberJoined, member_id="b", topics=["u"], rack=None)
    assert one.model_fields_set is two.model_fields_set == {"member_id", "topics", "rack"}
    copied = one.model_copy(update={"host": "h"})
    assert copied.model_fields_set == {"member_id", "topics", "rack", "host"}
    assert two.model_fields_set == {"member_id", "topics", "rack"}

    class Loose(BaseModel):  # not frozen: setting a field adds it to the set
        a: int
        b: int = 0

    first, second = construct(Loose, a=1), construct(Loose, a=2)
    first.b = 5
    assert first.model_fields_set == {"a", "b"}
    assert second.model_fields_set == {"a"}


@pytest.mark.parametrize(("cls", "values"), CASES)
def test_a_constructor_makes_what_construct_makes(
    cls: type[BaseModel], values: dict[str, Any]
) -> None:
    make = constructor(cls, *values)
    for _ in range(2):  # the second call as the first: nothing of one call kept
        made = make(*values.values())
        assert _parts(made) == _parts(construct(cls, **values))
        assert made.model_dump_json() == construct(cls, **values).model_dump_json()


def test_a_constructor_falls_back_where_construct_does() -> None:
    # Event's id has a default factory: without it, model_construct makes one each time.
    make = constructor(Event, "group", "at", "data")
    data = MemberLeft(member_id="m", reason="leave")
    first, second = make("g", AT, data), make("g", AT, data)
    assert len(first.event_id) == 36
    assert first.event_id != second.event_id
    # A name of no field: model_construct keeps it as an extra value (extra="forbid"
    # or not), as construct hands it on.
    odd = constructor(MemberLeft, "member_id", "reason", "nope")("m", "leave", 1)
    assert _parts(odd) == _parts(construct(MemberLeft, member_id="m", reason="leave", nope=1))
    with pytest.raises(ValueError):  # too few values: a mistake, not a model short of one
        constructor(MemberLeft, "member_id", "reason")("m")
