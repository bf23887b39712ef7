"""A column of projection rows that is cheap to build and converts to Arrow in bulk.

A 10,000-partition ``AssignmentCompleted`` adds tens of thousands of projection values,
most of them the same stream key repeated, or member and topic names that a few codes
stand for. Kept as Python lists, each value would cost a Python object on the way in
and a conversion on the way to Arrow; a ``Column`` keeps such runs and coded arrays as
they are and lets Arrow expand them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = ["Column"]


@dataclass(slots=True)
class _Run:
    value: Any
    count: int
    """Grown in place while the same value repeats (a batch's stream key)."""


@dataclass(frozen=True, slots=True)
class _Coded:
    codes: npt.NDArray[np.int64]  # -1: NULL
    names: Sequence[Any]


_Chunk = list[Any] | _Run | _Coded | npt.NDArray[np.int64]


class Column:
    """The values of one column, in chunks; a read-only sequence for Python readers."""

    __slots__ = ("_chunks", "_size")

    def __init__(self) -> None:
        self._chunks: list[_Chunk] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def _add(self, chunk: _Chunk, size: int) -> None:
        if size:
            self._chunks.append(chunk)
            self._size += size

    def extend(self, values: Iterable[Any]) -> None:
        chunk = list(values)
        self._add(chunk, len(chunk))

    def repeat(self, value: Any, count: int) -> None:
        last = self._chunks[-1] if self._chunks else None
        if type(last) is _Run and type(last.value) is type(value) and last.value == value:
            # One run for a whole batch's stream key: far fewer arrays to concatenate.
            last.count += count
            self._size += count
        else:
            self._add(_Run(value, count), count)

    def numbers(self, values: npt.NDArray[np.int64]) -> None:
        self._add(values, len(values))

    def coded(self, codes: npt.NDArray[np.int64], names: Sequence[Any]) -> None:
        """Add ``names[c]`` for each code ``c`` (-1: NULL)."""
        self._add(_Coded(codes, names), len(codes))

    def to_list(self) -> list[Any]:
        out: list[Any] = []
        for chunk in self._chunks:
            out.extend(_values(chunk))
        return out

    def __getitem__(self, index: int) -> Any:
        return self.to_list()[index]

    def to_arrow(self, kind: pa.DataType | None = None) -> pa.Array:
        """The column as one Arrow array (of type ``kind``; inferred when None).

        Small chunks (a small group's rows, event after event) are gathered into one
        Python list and converted in one call; a big run or coded array is expanded by
        Arrow itself. So the number of conversions stays small either way."""
        if kind is None:
            return pa.array(self.to_list())
        parts: list[pa.Array] = []
        gathered: list[Any] = []
        for chunk in self._chunks:
            if isinstance(chunk, list):
                gathered.extend(chunk)
            elif _size(chunk) < _SMALL:
                gathered.extend(_values(chunk))
            else:
                if gathered:
                    parts.append(pa.array(gathered, type=kind))
                    gathered = []
                parts.append(_arrow(chunk, kind))
        if gathered or not parts:
            parts.append(pa.array(gathered, type=kind))
        return pa.concat_arrays(parts) if len(parts) > 1 else parts[0]

    def __arrow_array__(self, type: pa.DataType | None = None) -> pa.Array:
        return self.to_arrow(type)


_SMALL = 512
"""Chunks of fewer values are converted together, as one Python list."""


def _size(chunk: _Chunk) -> int:
    if isinstance(chunk, _Run):
        return chunk.count
    if isinstance(chunk, _Coded):
        return len(chunk.codes)
    return len(chunk)


def _values(chunk: _Chunk) -> list[Any]:
    if isinstance(chunk, _Run):
        return [chunk.value] * chunk.count
    if isinstance(chunk, _Coded):
        names = chunk.names
        return [None if c < 0 else names[c] for c in chunk.codes.tolist()]
    return chunk.tolist() if isinstance(chunk, np.ndarray) else chunk


def _arrow(chunk: _Chunk, kind: pa.DataType) -> pa.Array:
    if isinstance(chunk, _Run):
        return pa.repeat(pa.scalar(chunk.value, type=kind), chunk.count)
    if isinstance(chunk, _Coded):
        codes = chunk.codes
        indices = pa.array(codes.astype(np.int32), mask=codes < 0)
        names = pa.array(list(chunk.names), type=kind)
        return pa.DictionaryArray.from_arrays(indices, names).dictionary_decode()
    return pa.array(chunk, type=kind)
