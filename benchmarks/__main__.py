"""Run kstore's benchmarks: ``python -m benchmarks [NAME ...] [--quick]`` (``make bench``).

The convention: a benchmark is a module ``benchmarks/<name>.py`` (a name not starting
with ``_``) with a function ``main(quick: bool) -> None`` that measures and prints its
own table (with ``rich``). ``quick=True`` asks for a smoke run of a few seconds on the
small cases only; ``quick=False`` is the full measurement, which may take minutes.
Helpers shared by benchmarks live in ``benchmarks/_*.py``, data in ``benchmarks/data/``.

Without NAMEs every benchmark runs, in name order. The exit status is 1 if one of them
raised (the others still run), 2 for an unknown NAME.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import traceback
from collections.abc import Callable
from types import ModuleType

from rich.console import Console

import benchmarks

__all__ = ["discover", "main"]

Benchmark = Callable[[bool], None]


def discover() -> dict[str, Benchmark]:
    """Every benchmark module's ``main``, by module name."""
    found: dict[str, Benchmark] = {}
    for info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.ispkg:
            continue
        module: ModuleType = importlib.import_module(f"benchmarks.{info.name}")
        entry = getattr(module, "main", None)
        if callable(entry):
            found[info.name] = entry
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="small cases only, seconds")
    args = parser.parse_args(argv)

    available = discover()
    unknown = [name for name in args.names if name not in available]
    if unknown:
        parser.exit(2, f"unknown benchmark {', '.join(unknown)} (known: {', '.join(available)})\n")

    console = Console()
    failed = False
    for name in args.names or list(available):
        console.rule(f"benchmarks.{name}" + (" (quick)" if args.quick else ""))
        try:
            available[name](args.quick)
        except Exception:
            failed = True
            traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
