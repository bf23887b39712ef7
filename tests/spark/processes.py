"""``kstore`` and Spark's own launcher as processes of their own (a JVM each), for the
tests that need a fresh driver: another heap, a standalone cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

__all__ = ["SPARK_HOME", "kstore_process", "process_env"]

SPARK_HOME = Path(pyspark.__file__).parent


def process_env() -> dict[str, str]:
    """This interpreter and this checkout for Spark's processes and their Python workers."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="256m",
        PYSPARK_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p),
    )
    return env


def kstore_process(*args: str) -> str:
    """``kstore ARGS`` in a process of its own: its standard output (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-m", "kstore.cli", *args],
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[Stage" not in done.stderr  # no console progress bars in a file
    return done.stdout
