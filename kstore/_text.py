"""Counts in prose: ``counted(1, "rebalance")`` is ``1 rebalance``, ``counted(2_000,
"rebalance")`` is ``2,000 rebalances`` (thousands separated, as every count kstore says)."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` (with thousands separators) and ``noun``, in the plural (``plural``, else
    ``noun`` + s) unless the count is one: "1 rebalances" read as a slip."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"
