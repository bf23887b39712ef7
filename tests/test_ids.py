"""Event and member ids: the UUIDs the standard library would make."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from kstore.model.ids import _NAMESPACE, event_id, event_ids, uuid5_bytes, uuid5_text


@given(st.text())
def test_uuid5_text_is_the_standard_librarys(name: str) -> None:
    expected = uuid.uuid5(_NAMESPACE, name)
    assert uuid5_text(name) == str(expected)
    assert uuid5_bytes(name) == expected.bytes


@given(st.lists(st.text() | st.integers()), st.text() | st.integers())
def test_event_ids_name_each_last_part_as_event_id_does(parts: list[object], last: object) -> None:
    assert event_ids(*parts)(last) == event_id(*parts, last)
