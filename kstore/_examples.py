"""The examples shipped inside the package (``kstore/examples``, a link to the
repository's top-level ``examples/``; a wheel copies the files): the scenarios
``kstore examples`` lists and ``kstore simulate NAME`` runs, and the assign request."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

from kstore._errors import nearest

__all__ = ["about", "near_examples", "request", "scenario_named", "scenarios"]


def _folder() -> Traversable:
    return files("kstore") / "examples"


def scenarios() -> dict[str, Traversable]:
    """Each example scenario by name (its file's name without ``.yaml``), sorted."""
    found = {
        entry.name.removesuffix(".yaml"): entry
        for entry in _folder().iterdir()
        if entry.name.endswith(".yaml")
    }
    return dict(sorted(found.items()))


def request() -> Traversable:
    """The example assign request (``kstore assign``'s JSON)."""
    return _folder() / "request.json"


def scenario_named(text: str) -> Traversable | None:
    """The shipped scenario ``text`` names: ``NAME``, ``NAME.yaml`` or, as the docs write
    it, ``examples/NAME.yaml``; None for anything else."""
    path = PurePosixPath(text)
    if str(path.parent) not in (".", "examples"):
        return None
    return scenarios().get(path.name.removesuffix(".yaml"))


def near_examples(text: str) -> list[str]:
    """The shipped scenarios ``text`` was likely meant to name (``NAME``, ``NAME.yaml``
    or ``examples/NAME.yaml`` mistyped), nearest first; none for another path."""
    path = PurePosixPath(text)
    if str(path.parent) not in (".", "examples"):
        return []
    return nearest(path.name.removesuffix(".yaml"), scenarios())


def about(text: str) -> str:
    """A scenario's leading comment, its lines joined: what the example shows."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(line for line in lines if line)
