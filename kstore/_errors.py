"""Errors that reach the user as one line and an exit status, never a traceback."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "Interrupted",
    "KstoreError",
    "UsageError",
    "did_you_mean",
    "error_message",
    "field_path",
    "invalid_field",
    "known_hint",
    "near_or_known",
    "nearest",
]


class KstoreError(Exception):
    """An error the CLI reports as ``kstore: error: <message>`` with ``exit_code``."""

    exit_code = 1


class UsageError(KstoreError):
    """Bad input (a malformed request, event or argument): exit status 2."""

    exit_code = 2


class Interrupted(KstoreError):
    """Ctrl-C ended a command that stored what it had (exit 130, as a shell's SIGINT)."""

    exit_code = 130


def field_path(parts: Iterable[str | int]) -> str:
    """A location in JSON or YAML as a jq user writes it: names joined with dots, list
    positions in brackets, a key that is not a plain name quoted (one line whatever it
    holds): ``data.assignment."consumer-1-7c2e"[1][1]``."""
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part != "":
            name = part if part.isidentifier() else json.dumps(part, ensure_ascii=False)
            path += f".{name}" if path else name
    return path


def error_message(error: Mapping[str, Any]) -> str:
    """A pydantic error's message with its bound said as kstore counts (``less than or
    equal to 2,147,483,647``, not ``2147483647``)."""
    message = str(error["msg"])
    for key in ("le", "ge", "lt", "gt"):
        bound = (error.get("ctx") or {}).get(key)
        if isinstance(bound, int) and not isinstance(bound, bool):
            message = message.replace(f" {bound}", f" {bound:,}")
    return message


def invalid_field(error: Mapping[str, Any], *prefix: str, where: str = "") -> str:
    """A pydantic error (one of ``ValidationError.errors()``) as ``<path>: <message>``,
    the value given named when it is a single one (``got -1``); ``where`` stands for an
    empty path."""
    place = field_path((*prefix, *error["loc"])) or where
    given = error.get("input")
    if error["type"] == "string_too_long" and isinstance(given, str):
        # Its length, not its text (a 10 MB member id), counted as kstore counts.
        at_most = error.get("ctx", {}).get("max_length", 0)
        return f"{place}: at most {at_most:,} characters, not {len(given):,}"
    text = f"{place}: {error_message(error)}"
    if error["type"] != "missing" and isinstance(given, str | int | float | bool):
        counted = isinstance(given, int) and not isinstance(given, bool)
        shown = f"{given:,}" if counted else json.dumps(given, ensure_ascii=False)
        text += f" (got {shown if len(shown) <= 40 else shown[:37] + '...'})"
    return text


def nearest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The names of ``known`` that ``name`` was most likely meant to be (a typo of one,
    or the start of one), at most ``n``, nearest first."""
    names = sorted(set(known))
    near = difflib.get_close_matches(name, names, n=n, cutoff=0.5)
    return near + [k for k in names if k.startswith(name) and k not in near][: n - len(near)]


def did_you_mean(near: list[str]) -> str:
    """``did you mean a?``, ``did you mean a or b?``, ``did you mean a, b or c?``"""
    said = near[-1] if len(near) == 1 else f"{', '.join(near[:-1])} or {near[-1]}"
    return f"did you mean {said}?"


def near_or_known(name: str, known: Sequence[str], said: str = "known") -> str:
    """What to say after an unknown ``name`` of a short fixed list: the nearest of
    ``known``, else all of it in its own order (`` (known: a, b, c)``)."""
    if near := nearest(name, known):
        return f"; {did_you_mean(near)}"
    return f" ({said}: {', '.join(known) or 'none'})"


def known_hint(name: str, known: Iterable[str]) -> str:
    """What to say after "no such NAME": the nearest known names, or all when few."""
    names = sorted(set(known))
    if near := nearest(name, names):
        return f"; {did_you_mean(near)}"
    if names and len(names) <= 8:
        return f" (known: {', '.join(names)})"
    if names:
        return f" ({len(names)} known, e.g. {', '.join(names[:3])})"
    return " (there is none)"
