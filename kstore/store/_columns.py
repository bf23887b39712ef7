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


@dataclass(frozen=True, slots=True)
class _Run:
    value: Any
    count: int


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
        if isinstance(last, _Run) and type(last.value) is type(value) and last.value == value:
            # One run for a whole batch's stream key: far fewer arrays to concatenate.
            self._chunks[-1] = _Run(value, last.count + count)
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
            if isinstance(chunk, _Run):
                out.extend([chunk.value] * chunk.count)
            elif isinstance(chunk, _Coded):
                out.extend(None if c < 0 else chunk.names[c] for c in chunk.codes.tolist())
            else:
                out.extend(chunk.tolist() if isinstance(chunk, np.ndarray) else chunk)
        return out

    def __getitem__(self, index: int) -> Any:
        return self.to_list()[index]

    def to_arrow(self, kind: pa.DataType | None = None) -> pa.Array:
        """The column as one Arrow array (of type ``kind``; inferred when None)."""
        if kind is None:
            return pa.array(self.to_list())
        parts = [_arrow(chunk, kind) for chunk in self._chunks]
        return pa.concat_arrays(parts) if parts else pa.array([], type=kind)

    def __arrow_array__(self, type: pa.DataType | None = None) -> pa.Array:
        return self.to_arrow(type)


def _arrow(chunk: _Chunk, kind: pa.DataType) -> pa.Array:
    if isinstance(chunk, _Run):
        return pa.repeat(pa.scalar(chunk.value, type=kind), chunk.count)
    if isinstance(chunk, _Coded):
        codes = chunk.codes
        indices = pa.array(codes.astype(np.int32), mask=codes < 0)
        names = pa.array(list(chunk.names), type=kind)
        return pa.DictionaryArray.from_arrays(indices, names).dictionary_decode()
    return pa.array(chunk, type=kind)
