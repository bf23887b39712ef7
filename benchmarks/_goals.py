"""How a benchmark says whether a figure meets its goal, in one word for every table."""

from __future__ import annotations

__all__ = ["verdict"]


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"
