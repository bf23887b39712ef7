"""``model_construct`` at a fraction of its cost, for models a producer builds by the million.

Pydantic's ``model_construct`` walks every field (aliases, defaults) on each call: a
simulation's events and their data were a seventh of its time. ``construct`` does the
same with a template of the class's defaults made once: the instance's ``__dict__``
has the same keys in the same (field) order, the same values and the same set of
fields given, so it is equal to, dumps and compares as ``model_construct``'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["construct", "constructor", "every_field", "instance"]

M = TypeVar("M", bound=BaseModel)

_UNSET: Any = object()
"""A field of the template that a call must give (required, or with a default factory)."""

_IMMUTABLE = (type(None), bool, int, float, str, bytes)

_Template = tuple[dict[str, Any], frozenset[str], int, dict[tuple[str, ...], set[str]] | None]

_templates: dict[type[BaseModel], _Template] = {}

_MOST_SETS = 64
"""Fields sets ``construct`` keeps for one class at most (one per way of calling it)."""

_new = object.__new__
_set_dict, _set_fields_set, _set_extra, _set_private = (
    BaseModel.__dict__[name].__set__
    for name in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
)
"""``BaseModel``'s slots, each set as ``object.__setattr__`` sets it, without looking the
slot up by name on each call."""


def _template(cls: type[BaseModel]) -> _Template | None:
    """Each field's plain default (``_UNSET`` for the others), the names a call must
    give, how many fields, and for a frozen model the fields sets its instances share
    (by the names a call gives, in its order); ``None`` for a model that ``construct``
    does not cover (private attributes, a root model, a post-init hook, extra fields
    allowed, aliases, a mutable default)."""
    if (
        cls.__private_attributes__
        or cls.__pydantic_root_model__
        or cls.__pydantic_post_init__
        or cls.model_config.get("extra") == "allow"
    ):
        return None
    template: dict[str, Any] = {}
    for name, field in cls.__pydantic_fields__.items():
        if field.alias not in (None, name) or field.validation_alias not in (None, name):
            return None
        if field.is_required() or field.default_factory is not None:
            template[name] = _UNSET
        elif isinstance(field.default, _IMMUTABLE):  # shared by every instance
            template[name] = field.default
        else:
            return None
    # A frozen model's fields set is never changed: setting a field fails before the set
    # is, and ``model_copy`` copies it first. Shared, each event's data no longer holds
    # one (a 9-field ``MemberJoined``'s: 728 bytes, a third of a simulated join's).
    sets: dict[tuple[str, ...], set[str]] | None = {} if cls.model_config.get("frozen") else None
    required = frozenset(n for n, v in template.items() if v is _UNSET)
    return template, required, len(template), sets


def construct(cls: type[M], **values: Any) -> M:
    """``cls.model_construct(**values)``, made faster for ``values`` that give every
    required field and every field with a default factory (else it is that call)."""
    known = _templates.get(cls)
    if known is None:
        made = _template(cls)
        if made is None:
            return cls.model_construct(**values)
        known = _templates[cls] = made
    template, required, size, sets = known
    fields = template.copy()
    fields.update(values)
    if len(fields) != size or not values.keys() >= required:
        return cls.model_construct(**values)  # an unknown name, or a field not given
    if sets is None:
        return instance(cls, fields, set(values))
    names = tuple(values)
    given = sets.get(names)
    if given is None:
        given = set(names)
        if len(sets) < _MOST_SETS:
            sets[names] = given
    return instance(cls, fields, given)


def constructor(cls: type[M], *names: str) -> Callable[..., M]:
    """``construct(cls, **dict(zip(names, values)))`` as a function of ``values``, given
    by position: for a frozen model the names are checked and its fields set chosen once
    (a simulated join's or leave's event, fifty a decision when a group is scaled: no
    keyword dictionary, no checks per call). Other models, and names ``construct`` would
    hand to ``model_construct`` (a field not given that must be, an unknown name), go
    through ``construct``."""
    made = _templates.get(cls) or _template(cls)
    sets = made[3] if made is not None else None
    if (
        made is None
        or sets is None
        or len(set(names)) != len(names)
        or not made[0].keys() >= set(names) >= made[1]
    ):
        return lambda *values: construct(cls, **dict(zip(names, values, strict=True)))
    _templates[cls] = made
    template = made[0]
    given = sets.setdefault(names, set(names))
    if names == tuple(template):  # every field, in field order: no template to copy
        return lambda *values: instance(cls, dict(zip(names, values, strict=True)), given)

    def make(*values: Any) -> M:
        fields = template.copy()
        fields.update(zip(names, values, strict=True))
        return instance(cls, fields, given)

    return make


def instance(cls: type[M], fields: dict[str, Any], given: set[str]) -> M:
    """A ``cls`` whose ``__dict__`` is ``fields`` (every field, in field order) and whose
    fields set is ``given``, unvalidated: what ``construct`` and ``model_construct``
    make, for a caller that has the whole dictionary already."""
    model = _new(cls)
    _set_dict(model, fields)
    _set_fields_set(model, given)
    _set_extra(model, None)
    _set_private(model, None)
    return model


@functools.cache
def every_field(cls: type[BaseModel]) -> set[str]:
    """The fields set of a ``cls`` made with every field given, one set for all of them
    (no set made per instance): pydantic only ever adds a field's name to a model's set
    (and copies it before a ``model_copy`` changes it), and this one names them all. Not
    for a model that allows extra fields: setting one would add its name to every
    instance's set."""
    assert cls.model_config.get("extra") != "allow", cls
    return set(cls.__pydantic_fields__)
