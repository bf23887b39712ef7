"""Errors that reach the user as one line and an exit status, never a traceback."""

from __future__ import annotations

__all__ = ["Interrupted", "KstoreError", "UsageError"]


class KstoreError(Exception):
    """An error the CLI reports as ``kstore: error: <message>`` with ``exit_code``."""

    exit_code = 1


class UsageError(KstoreError):
    """Bad input (a malformed request, event or argument): exit status 2."""

    exit_code = 2


class Interrupted(KstoreError):
    """Ctrl-C ended a command that stored what it had (exit 130, as a shell's SIGINT)."""

    exit_code = 130
