"""The public surface, pinned: a change here is a change users see."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kstore
import kstore.errors
import kstore.store
from kstore.errors import KstoreError, UsageError

ROOT = Path(__file__).resolve().parents[1]

PUBLIC = {
    "kstore": [
        "AssignmentRequest",
        "AssignmentResult",
        "ContractError",
        "EventError",
        "KstoreError",
        "MemberSubscription",
        "OffsetsDecodeError",
        "UsageError",
        "__version__",
        "assign",
        "coordinator_partition",
        "get_assignor",
        "parse_request",
        "partition_for_key",
        "strategies",
    ],
    "kstore.errors": [
        "ContractError",
        "DumpFormatError",
        "EventError",
        "KstoreError",
        "OffsetsDecodeError",
        "ScenarioError",
        "UnknownStrategy",
        "UsageError",
    ],
    "kstore.store": [
        "AppendResult",
        "CheckpointWrite",
        "ConcurrencyError",
        "EventStore",
        "Folded",
        "MemoryStore",
        "QueryResult",
        "SchemaError",
        "Store",
        "StoredEvent",
        "StreamInfo",
        "Writer",
    ],
    "kstore.spark": [
        "METRIC_COLUMNS",
        "WINDOW_COLUMNS",
        "ExportResult",
        "IngestResult",
        "assignment_schema",
        "build_session",
        "event_schema",
        "export_store",
        "ingest_dumps",
        "metrics_of",
        "read_log",
        "replay_log",
        "summarise",
        "write_metrics",
        "write_replays",
    ],
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_public_surface_is_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(PUBLIC[module_name])
    for name in module.__all__:
        assert hasattr(module, name), name


def test_every_public_name_of_a_private_module_is_declared() -> None:
    # httpx style: modules say what they export; nothing private leaks through __all__.
    for module_name in [
        "kstore._java",
        "kstore._extras",
        "kstore.assignors",
        "kstore.assignors._contract",
        "kstore.partitioner",
        *PUBLIC,
    ]:
        module = importlib.import_module(module_name)
        exported = module.__all__
        assert all(not name.startswith("_") or name == "__version__" for name in exported)
        for name in exported:
            assert hasattr(module, name), f"{module_name}.{name}"


def test_every_error_is_a_kstore_error() -> None:
    errors = [getattr(kstore.errors, name) for name in kstore.errors.__all__]
    errors += [kstore.store.SchemaError, kstore.store.ConcurrencyError]
    for error in errors:
        assert issubclass(error, KstoreError), error
    # Bad input exits 2; the contract's error stays a ValueError for older callers.
    for name in ("ContractError", "EventError", "DumpFormatError", "ScenarioError"):
        assert getattr(kstore.errors, name).exit_code == 2, name
    assert issubclass(kstore.ContractError, UsageError | ValueError)
    assert issubclass(kstore.ContractError, ValueError)


def test_every_public_exception_of_every_module_is_a_kstore_error() -> None:
    # Private modules (``_name``) may keep exceptions that signal inside their package.
    modules = [
        info.name
        for info in pkgutil.walk_packages(kstore.__path__, "kstore.")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    assert "kstore.record.offsets_codec" in modules
    foreign = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            exception = isinstance(value, type) and issubclass(value, BaseException)
            if exception and not issubclass(value, KstoreError):
                foreign.append(f"{module_name}.{name}")
    assert not foreign


def test_the_spark_facade_imports_without_pyspark() -> None:
    # The base install has no pyspark: importing the facade must not need it.
    code = (
        "import sys\n"
        "for m in ('pyspark', 'py4j'): sys.modules[m] = None\n"
        "import kstore.spark\n"
        "print(kstore.spark.export_store.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "export_store\n", done.stderr


_DOC_PATH = re.compile(r"[\w./-]+/[\w.-]+\.md\b")


def test_every_doc_path_the_code_names_exists() -> None:
    # Docstrings, comments and --help send readers to docs/...; those files must exist.
    named: dict[str, str] = {}
    for source in sorted((ROOT / "kstore").rglob("*.py")) + sorted(
        (ROOT / "kstore" / "queries").glob("*.sql")
    ):
        for path in _DOC_PATH.findall(source.read_text(encoding="utf-8")):
            named.setdefault(path, str(source.relative_to(ROOT)))
    assert named, "no doc path found: the pattern is wrong"
    missing = {p: where for p, where in named.items() if not (ROOT / p).is_file()}
    assert not missing, missing
