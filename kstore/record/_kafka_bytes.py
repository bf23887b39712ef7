"""A reader of Kafka's primitive wire types, with a field path for every failure.

Covers what the ``__consumer_offsets`` records use: big-endian int8/16/32/64, strings
and byte arrays (``blob``) with an int16/int32 length (-1 for null where nullable), arrays with an
int32 count, the compact forms of flexible versions (unsigned varint of length + 1, 0
for null), UUIDs and tagged-field sections. Every read names its field; a read that runs
past the end or finds an impossible length raises ``BytesError`` with the full path
(e.g. ``members[1].subscription.topics[0]``).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["BytesError", "Reader", "uuid_string"]

T = TypeVar("T")

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class BytesError(ValueError):
    """A field that could not be read: ``field`` is its path, ``reason`` what went wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def uuid_string(raw: bytes) -> str:
    """A UUID as Kafka prints it (``Uuid.toString``): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class Reader:
    """Reads one buffer front to back; ``path`` prefixes every field name it reports."""

    def __init__(self, data: bytes, path: str = "") -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._path: list[str] = [path] if path else []

    # -- where we are ----------------------------------------------------------------

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def name(self, field: str) -> str:
        """The full path of ``field`` under the current scope."""
        return ".".join([*self._path, field]) if field else ".".join(self._path)

    @contextmanager
    def scope(self, field: str) -> Iterator[None]:
        """Reads inside the block report their fields under ``field``."""
        self._path.append(field)
        try:
            yield
        finally:
            self._path.pop()

    def fail(self, field: str, reason: str) -> BytesError:
        return BytesError(self.name(field), reason)

    def expect_end(self, what: str) -> None:
        if self.remaining:
            raise self.fail(what, f"{self.remaining} unexpected trailing byte(s)")

    def _take(self, size: int, field: str) -> memoryview:
        if size > self.remaining:
            raise self.fail(
                field, f"needs {size} byte(s) at position {self._pos}, {self.remaining} left"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    # -- fixed-size numbers ----------------------------------------------------------

    def int8(self, field: str) -> int:
        value = self._take(1, field)[0]
        return value - 256 if value > 127 else value

    def int16(self, field: str) -> int:
        value: int = _INT16.unpack(self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = _INT32.unpack(self._take(4, field))[0]
        return value

    def int64(self, field: str) -> int:
        value: int = _INT64.unpack(self._take(8, field))[0]
        return value

    def uuid(self, field: str) -> str:
        return uuid_string(bytes(self._take(16, field)))

    def uvarint(self, field: str) -> int:
        """An unsigned varint of at most 32 bits (Kafka's ``readUnsignedVarint``)."""
        value = 0
        for shift in range(0, 35, 7):
            byte = self._take(1, field)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value > 0xFFFFFFFF:
                    raise self.fail(field, "varint does not fit in 32 bits")
                return value
        raise self.fail(field, "varint longer than 5 bytes")

    # -- lengths -----------------------------------------------------------------------

    def _length(self, field: str, *, compact: bool, wide: bool, nullable: bool) -> int | None:
        """A length prefix; ``None`` for null. ``wide`` means int32 (bytes, arrays)."""
        if compact:
            length = self.uvarint(field) - 1
        elif wide:
            length = self.int32(field)
        else:
            length = self.int16(field)
        if length < 0:
            if length == -1 and nullable:
                return None
            if length == -1:
                raise self.fail(field, "null in a non-nullable field")
            raise self.fail(field, f"negative length {length}")
        if length > self.remaining:
            raise self.fail(field, f"length {length} exceeds the {self.remaining} byte(s) left")
        return length

    # -- strings and bytes -------------------------------------------------------------

    def nullable_string(self, field: str, *, compact: bool = False) -> str | None:
        length = self._length(field, compact=compact, wide=False, nullable=True)
        if length is None:
            return None
        raw = self._take(length, field)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(field, f"invalid UTF-8 ({exc.reason})") from None

    def string(self, field: str, *, compact: bool = False) -> str:
        value = self.nullable_string(field, compact=compact)
        if value is None:
            raise self.fail(field, "null in a non-nullable field")
        return value

    def nullable_blob(self, field: str, *, compact: bool = False) -> bytes | None:
        length = self._length(field, compact=compact, wide=True, nullable=True)
        return None if length is None else bytes(self._take(length, field))

    def blob(self, field: str, *, compact: bool = False) -> bytes:
        length = self._length(field, compact=compact, wide=True, nullable=False)
        assert length is not None
        return bytes(self._take(length, field))

    # -- arrays ------------------------------------------------------------------------

    def array(
        self, field: str, item: Callable[[str], T], *, compact: bool = False
    ) -> tuple[T, ...]:
        """A non-nullable array; ``item`` reads one element given its path (``field[i]``).

        Every element takes at least one byte, so a count larger than what is left is
        refused before any element is read.
        """
        count = self._length(field, compact=compact, wide=True, nullable=False)
        assert count is not None
        return tuple(item(f"{field}[{index}]") for index in range(count))

    def int32_array(self, field: str, *, compact: bool = False) -> tuple[int, ...]:
        return self.array(field, self.int32, compact=compact)

    def string_array(self, field: str, *, compact: bool = False) -> tuple[str, ...]:
        return self.array(field, lambda name: self.string(name, compact=compact), compact=compact)

    # -- flexible versions -------------------------------------------------------------

    def tagged_fields(self, field: str = "_tagged_fields") -> dict[int, bytes]:
        """A tagged-field section: tag -> raw bytes of that field."""
        count = self.uvarint(field)
        if count > self.remaining:
            raise self.fail(field, f"{count} tagged fields cannot fit in {self.remaining} byte(s)")
        tags: dict[int, bytes] = {}
        for _ in range(count):
            tag = self.uvarint(field)
            size = self.uvarint(f"{field}[{tag}]")
            tags[tag] = bytes(self._take(size, f"{field}[{tag}]"))
        return tags
