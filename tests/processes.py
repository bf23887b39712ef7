"""A process's children and whether a process still runs, read from Linux's /proc; a
command run on a pseudo-terminal; the kstore command run to its end; a command sent
Ctrl-C part way."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["alive", "children", "interrupted_when", "kstore_cli", "on_a_terminal", "plain"]


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name, or None when it is gone."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None


def children(parent: int) -> list[int]:
    """The processes whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(entry.name)
            if fields is not None and int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def on_a_terminal(
    command: list[str], columns: int, stdout: Any = subprocess.DEVNULL, *, both: bool = False
) -> tuple[int, str]:
    """The exit code and what ``command`` wrote to stderr, a terminal ``columns`` wide
    (its standard output to ``stdout``; to the terminal too when ``both``).

    The terminal is read while the command runs: a slow run (a loaded machine) redraws
    its bar more often than the terminal's buffer holds, and would block on it."""
    leader, follower = os.openpty()
    try:
        tty = subprocess.Popen(
            command,
            stdout=follower if both else stdout,
            stderr=follower,
            env={**os.environ, "COLUMNS": str(columns), "TERM": "xterm"},
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # every writer closed its end (Linux: EIO)
                break
            if not chunk:
                break
            shown += chunk
        returncode = tty.wait()
    finally:
        os.close(leader)
    return returncode, shown.decode(errors="replace")


def plain(shown: str) -> str:
    """What a terminal was sent, without colours and cursor moves."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)


def kstore_cli(
    store: Path,
    *args: str,
    cwd: Path | None = None,
    stdin: str = "",
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``kstore --store STORE ARGS...`` run to its end (within ``timeout`` seconds), its
    output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        input=stdin,
        env=env,
        timeout=timeout,
    )


def interrupted_when(
    command: list[str], ready: Callable[[], bool], within: float = 60
) -> tuple[int, str, str]:
    """``command`` sent SIGINT once ``ready()`` (asked while it runs, at most ``within``
    seconds): its exit code, standard output and standard error. SIGINT is as a terminal
    gives it even where the tests run as a shell's background job (which ignores it)."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + within
        while not ready():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"not ready within {within} s"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=within)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err
