"""The optional parts: which extra brings which module, and the one line that says so.

The base install has the store, the assignors, the simulator, analytics and the report;
``kstore[spark]`` adds PySpark and ``kstore[kafka]`` the Kafka clients. A command that
needs a module of a missing extra fails with ``missing_extra``'s line (exit 2).
"""

from __future__ import annotations

__all__ = ["EXTRAS", "missing_extra", "require"]

EXTRAS: dict[str, str] = {
    "pyspark": "spark",
    "py4j": "spark",
    "pandas": "spark",
    "kafka": "kafka",
    "confluent_kafka": "kafka",
    "javaproperties": "kafka",
}
"""Top-level module -> the extra that installs it (pyproject's optional-dependencies)."""


def missing_extra(exc: BaseException) -> str | None:
    """The line to print when ``exc`` is the import of a module of a missing extra."""
    if not isinstance(exc, ModuleNotFoundError) or exc.name is None:
        return None
    module = exc.name.split(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    return f"{module} is not installed: pip install 'kstore[{extra}]' (the {extra!r} extra)"


def require(extra: str) -> None:
    """Import every module of ``extra`` now: a command that needs it names a missing one
    before it starts (not inside a retry loop or a worker thread that would hide it)."""
    import importlib

    for module, of in EXTRAS.items():
        if of == extra:
            importlib.import_module(module)
