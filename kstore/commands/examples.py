"""``kstore examples``: the example scenarios shipped with kstore, listed or printed."""

from __future__ import annotations

import sys

from kstore._errors import UsageError, known_hint
from kstore._examples import about, scenarios
from kstore.commands._output import print_rows

__all__ = ["list_examples", "print_example"]


def list_examples(output: str) -> None:
    rows = [
        (name, about(entry.read_text(encoding="utf-8")), f"kstore simulate {name}")
        for name, entry in scenarios().items()
    ]
    print_rows(["example", "about", "run"], rows, output)


def print_example(name: str) -> None:
    """The scenario's YAML as it is written (to copy and change)."""
    found = scenarios()
    if name not in found:
        raise UsageError(f"no example {name!r}{known_hint(name, found)}")
    sys.stdout.write(found[name].read_text(encoding="utf-8"))
