"""Names of a package loaded on first use (PEP 562), so a command imports only what it runs.

``kstore append`` needs neither the assignors nor the recorders nor pandas; importing
them at start-up cost about as much as appending a small file. A package lists its
public names with the module each comes from, imports them under ``TYPE_CHECKING`` for
the type checker, and takes its ``__getattr__`` from ``lazy``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy"]


def lazy(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` giving ``name`` from the module ``modules[name]``."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
