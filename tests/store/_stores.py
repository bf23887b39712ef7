"""Stores for tests: a fresh initialised one per test, several in one test (hypothesis
examples, pairs).

``Store.init`` runs every alembic migration, 0.35-0.5 s wall a store on the 2-core CI
host, and the suite makes hundreds (a hypothesis example makes one or two). So the
first store a test process makes is initialised as a user's is, and the others are
byte-for-byte copies of its file: what ``init`` writes into a new file, at another path.
Tests of ``init`` and of the migrations themselves call ``Store.init`` on their own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from kstore.store.log import Store

__all__ = ["fresh_store", "initialised_store"]

_template: Path | None = None


def _remove(folder: Path, owner: int) -> None:
    """``folder`` removed, by the process that made it (not a forked copy exiting)."""
    if os.getpid() == owner:
        shutil.rmtree(folder, ignore_errors=True)


def _initialised_file() -> Path:
    """This process's store file just as ``Store.init`` leaves a new one (made once)."""
    global _template
    if _template is None:
        folder = Path(tempfile.mkdtemp(prefix="kstore-template-"))
        atexit.register(_remove, folder, os.getpid())
        made = Store(folder / "kstore.duckdb")
        made.init()
        # The file is the whole store: no write-ahead log left beside it to copy too.
        assert not list(folder.glob("*.wal")), sorted(p.name for p in folder.iterdir())
        _template = made.path
    return _template


def initialised_store(path: Path) -> Store:
    """A store at ``path`` (which must not exist) as ``Store(path).init()`` makes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(_initialised_file(), "rb") as source, open(path, "xb") as target:
        shutil.copyfileobj(source, target)
    return Store(path)


def fresh_store(path: Path) -> Store:
    """An initialised store at ``path``, whatever an earlier example left there removed."""
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    return initialised_store(path)
