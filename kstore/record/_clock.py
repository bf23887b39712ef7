"""The time a recorder stamps on what it sees."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["recorded_now"]


def recorded_now() -> datetime:
    """Now, in UTC, to the millisecond: Kafka's timestamps are milliseconds, and so are the
    times kstore prints; a microsecond part read as a precision nobody measured."""
    at = datetime.now(UTC)
    return at.replace(microsecond=at.microsecond // 1000 * 1000)
