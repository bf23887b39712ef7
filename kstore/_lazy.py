"""Names of a package loaded on first use (PEP 562), so a command imports only what it runs.

``kstore append`` needs neither the assignors nor the recorders nor pandas; importing
them at start-up cost about as much as appending a small file. A package lists its
public names with the module each comes from, imports them under ``TYPE_CHECKING`` for
the type checker, and takes its ``__getattr__`` from ``lazy``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["lazy", "one_blas_thread", "without_pandas"]


def lazy(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving ``name`` from the module ``modules[name]``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__


class _PandasAbsent:
    """A finder that says pandas is not installed (see ``without_pandas``)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


@contextmanager
def without_pandas() -> Iterator[None]:
    """Within the block, pandas cannot be imported (unless it was already).

    pyarrow and DuckDB import pandas (when installed) on their first use, to tell
    DataFrames from other input: a third of a second, as much as the rest of a
    command's start-up. kstore hands them no DataFrame, so every command but Spark's
    says first that there is none (``cli.main``). After the block pandas imports again
    (pyarrow's conversions to pandas retry it).
    """
    hide = "pandas" not in sys.modules and _PandasAbsent not in sys.meta_path
    if hide:
        sys.meta_path.insert(0, _PandasAbsent)
    try:
        yield
    finally:
        if hide:
            sys.meta_path.remove(_PandasAbsent)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy, if first imported within the block, runs OpenBLAS on one thread (unless
    ``OPENBLAS_NUM_THREADS`` says otherwise).

    OpenBLAS starts a thread per core as numpy loads it, and each spins a while waiting
    for work: 35-40 ms of CPU (``blas_thread_server``) in every process, about 3% of a
    13,000-event ``kstore append``, taken from whatever else runs on the machine
    (``cli.main`` runs every command within the block).
    kstore does no linear algebra. The variable is read as the library loads: the
    environment is as before after the block.
    """
    key = "OPENBLAS_NUM_THREADS"
    given = os.environ.get(key)
    if given is None:
        os.environ[key] = "1"
    try:
        yield
    finally:
        if given is None:
            os.environ.pop(key, None)
