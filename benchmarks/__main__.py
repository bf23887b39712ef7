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
from typing import cast

from rich.console import Console

import benchmarks

__all__ = ["discover", "main"]

Benchmark = Callable[[bool], None]


def discover() -> list[str]:
    """The names of the benchmark modules, sorted (not imported yet)."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules(benchmarks.__path__)
        if not info.name.startswith("_") and not info.ispkg
    )


def _entry(name: str) -> Benchmark:
    main = getattr(importlib.import_module(f"benchmarks.{name}"), "main", None)
    if not callable(main):
        raise TypeError(f"benchmarks/{name}.py has no main(quick: bool) -> None")
    return cast(Benchmark, main)


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
    for name in args.names or available:
        console.rule(f"benchmarks.{name}" + (" (quick)" if args.quick else ""))
        try:
            _entry(name)(args.quick)
        except Exception:
            failed = True
            traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
