"""``kstore docs``: the documentation, readable where kstore is installed (a wheel has no
checkout beside it, and the help texts name these topics)."""

from __future__ import annotations

import os
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable

from kstore._errors import UsageError, known_hint
from kstore.commands._output import print_rows

__all__ = ["list_docs", "print_doc"]

# The measurements' diary stays in the repository: it is long and of no use to a user.
_LEFT_OUT = frozenset({"performance"})


_SECTIONS = ("guide", "spec", "assignors")
"""The list's sections in order: the guides (docs/'s own files), then each folder's."""


def _docs() -> dict[str, tuple[str, Traversable]]:
    """Each topic (a file's name without ``.md``: the names are unique) with its section
    (``guide`` for docs/'s own files, else its folder's name), guides first."""
    found: dict[str, tuple[str, Traversable]] = {}

    def walk(folder: Traversable, section: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, entry.name)
            elif entry.name.endswith(".md") and entry.name[:-3] not in _LEFT_OUT:
                found[entry.name[:-3]] = (section, entry)

    walk(files("kstore") / "docs", "guide")
    order = {name: i for i, name in enumerate(_SECTIONS)}
    return dict(
        sorted(found.items(), key=lambda item: (order.get(item[1][0], len(order)), item[0]))
    )


def _title(text: str) -> str:
    return next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")


def list_docs(output: str) -> None:
    """Each topic by the name ``kstore docs NAME`` takes, its title and section."""
    rows = [
        (topic, _title(entry.read_text(encoding="utf-8")), section)
        for topic, (section, entry) in _docs().items()
    ]
    print_rows(["topic", "title", "section"], rows, output)


def print_doc(topic: str) -> None:
    """The topic's Markdown: rendered and paged on a terminal, verbatim otherwise."""
    docs = _docs()
    if topic not in docs:
        raise UsageError(f"no doc {topic!r}{known_hint(topic, docs)}")
    text = docs[topic][1].read_text(encoding="utf-8")
    if not sys.stdout.isatty():
        sys.stdout.write(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    # As git does: less shows colours (R), leaves a page that fits at once (F) and
    # leaves it on the screen (X), unless the user set LESS (without R it printed the
    # colours' escape codes as text).
    os.environ.setdefault("LESS", "FRX")
    console = Console()
    with console.pager(styles=True):
        console.print(Markdown(text))
