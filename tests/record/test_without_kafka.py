"""The record commands from an install without the kafka extra (as a wheel without it):
merge needs none of it; poll and offsets name the missing extra in one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kstore._extras import EXTRAS

_NOT_INSTALLED = [module for module, extra in EXTRAS.items() if extra == "kafka"]


def _kstore_without_kafka(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"for module in {_NOT_INSTALLED!r}:\n"
        "    sys.modules[module] = None  # not installed\n"
        "from kstore.cli import main\n"
        f"sys.argv = ['kstore', '--store', {str(store)!r}, *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_merge_needs_no_kafka_extra(tmp_path: Path) -> None:
    # It said "javaproperties is not installed: pip install 'kstore[kafka]'": the
    # mistake was the folder.
    done = _kstore_without_kafka(tmp_path / "s.duckdb", "record", "merge", "--reports", "nope")
    assert (done.returncode, done.stderr) == (2, "kstore: error: --reports nope: no such folder\n")


@pytest.mark.parametrize(
    "args",
    [
        ["record", "poll", "--bootstrap-server", "localhost:1", "--all-groups"],
        ["record", "offsets", "--bootstrap-server", "localhost:1", "--all-groups"],
    ],
)
def test_broker_commands_name_the_missing_extra(tmp_path: Path, args: list[str]) -> None:
    # With javaproperties imported only where Java properties are read, the poll met the
    # missing kafka module inside its retry loop: exit 1, "ModuleNotFoundError".
    done = _kstore_without_kafka(tmp_path / "s.duckdb", *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "kstore: error: kafka is not installed: pip install 'kstore[kafka]' (the 'kafka' extra)\n"
    )
