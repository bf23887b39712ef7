"""kstore's assignors beside kafka-python's and Kafka's own (Java) timings.

For every case of ``benchmarks/_cases.py`` and every strategy: the median wall time of
``kstore.assignors.assign()`` on an already validated request, kstore's peak memory (the
whole measuring process: request and assignment), kafka-python's median on the same
request, the ratio, whether both results are identical, and Kafka's Java timing where the
oracle measured one. Each measurement runs in a process of its own
(``benchmarks/_assignor_worker.py``); kafka-python's calls get a time limit.

A full run writes its table as Markdown to ``benchmarks/results/assignors.md`` too, for
the README's Performance section.
"""

from __future__ import annotations

import json
import os
import platform
import queue
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from benchmarks._assignor_worker import KAFKA_PYTHON_STRATEGIES
from benchmarks._cases import CASES, STRATEGIES, Case

__all__ = ["main"]

_ROOT = Path(__file__).resolve().parent.parent
_RESULTS = Path(__file__).resolve().parent / "results" / "assignors.md"

# Kafka's Java assignors, assign() in-process: median ms (min-max), from the oracle's
# README, "Timing anchors" (2 cores, OpenJDK 17, Kafka trunk 1eb7644 of 2024-10-25).
_JAVA_MS: dict[tuple[str, str], tuple[float, float, float]] = {
    ("A", "sticky"): (140.9, 130.5, 211.3),
    ("A", "cooperative-sticky"): (114.0, 102.5, 135.8),
    ("A", "uniform"): (141.7, 118.1, 202.9),
    ("A'", "sticky"): (1821.5, 1680.4, 2258.2),
    ("A'", "cooperative-sticky"): (1237.2, 1015.7, 1247.8),
    ("A'", "uniform"): (249.6, 224.7, 313.9),
    ("B", "sticky"): (1831.9, 1724.2, 1988.1),
    ("B", "cooperative-sticky"): (994.0, 982.7, 1273.4),
    ("B", "uniform"): (361.1, 293.8, 407.4),
    ("D", "sticky"): (8662.6, 8080.0, 10888.5),
    ("D", "cooperative-sticky"): (7444.0, 6897.8, 7952.9),
    ("D", "uniform"): (11.7, 6.2, 16.9),
    ("D", "range"): (8.9, 7.3, 20.5),
    ("D", "roundrobin"): (6.5, 5.5, 18.2),
    ("D", "server-range"): (3.6, 2.5, 5.1),
    ("D'", "sticky"): (14.9, 14.1, 23.2),
    ("D'", "cooperative-sticky"): (15.9, 14.1, 22.6),
    ("D'", "uniform"): (7.4, 4.3, 11.1),
    ("D'", "range"): (10.7, 6.9, 26.5),
    ("D'", "roundrobin"): (8.3, 6.5, 12.8),
    ("D'", "server-range"): (5.1, 3.5, 8.7),
}

# The goals: kstore's time limit per case (and strategies, where only some).
_TIME_GOALS: dict[str, tuple[float, tuple[str, ...]]] = {
    "A": (1.0, STRATEGIES),
    "A'": (5.0, STRATEGIES),
    "B": (5.0, STRATEGIES),
    "D": (2.0, ("sticky", "cooperative-sticky")),
}
_MEMORY_GOAL_MIB = {"A": 4096.0}
_SPEEDUP_GOAL = 10.0


@dataclass(frozen=True)
class _Limits:
    call_seconds: float  # one kafka-python call; past it the process is stopped
    setup_seconds: float  # building the inputs, before the first call
    kstore_budget: float  # stop repeating calls once they took this long together
    kafka_python_budget: float


_FULL = _Limits(
    call_seconds=60.0, setup_seconds=900.0, kstore_budget=30.0, kafka_python_budget=30.0
)
_QUICK = _Limits(call_seconds=20.0, setup_seconds=120.0, kstore_budget=5.0, kafka_python_budget=2.0)


@dataclass
class _Measurement:
    seconds: list[float] = field(default_factory=list)
    digest: str | None = None
    peak_rss_mib: float | None = None
    problem: str | None = None  # why there is no (complete) figure
    timed_out: bool = False

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


def _pump(stream: IO[str], into: queue.Queue[str | None]) -> None:
    for line in iter(stream.readline, ""):
        into.put(line)
    into.put(None)


def _measure(side: str, case: Case, strategy: str, limits: _Limits) -> _Measurement:
    budget = limits.kstore_budget if side == "kstore" else limits.kafka_python_budget
    command = [sys.executable, "-m", "benchmarks._assignor_worker", side, case.key, strategy]
    command += [str(case.runs), str(budget)]
    proc = subprocess.Popen(
        command,
        cwd=_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out: queue.Queue[str | None] = queue.Queue()
    err: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True).start()
    threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True).start()

    result = _Measurement()
    limit = limits.setup_seconds
    while True:
        try:
            line = out.get(timeout=limit)
        except queue.Empty:
            proc.kill()
            result.timed_out = True
            result.problem = f"> {limit:.0f} s"
            break
        if line is None:
            if result.peak_rss_mib is None and result.problem is None:
                tail = "".join(iter(err.get, None))[-300:].strip()
                result.problem = f"crashed (exit {proc.wait()}): {tail}"
            break
        line = line.strip()
        if line == "ready":
            limit = limits.call_seconds if side == "kafka-python" else limits.setup_seconds
            continue
        report = _parse(line)
        if "error" in report:
            result.problem = str(report["error"])
        elif "seconds" in report:
            result.seconds.append(float(report["seconds"]))
            result.digest = result.digest or report.get("digest")
        elif "peak_rss_mib" in report:
            result.peak_rss_mib = float(report["peak_rss_mib"])
    proc.wait()
    return result


def _parse(line: str) -> dict[str, Any]:
    parsed = json.loads(line)
    assert isinstance(parsed, dict)
    return parsed


def _duration(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:,.2f} s"
    milliseconds = seconds * 1000
    return f"{milliseconds:.2f} ms" if milliseconds < 10 else f"{milliseconds:,.1f} ms"


@dataclass(frozen=True)
class _Row:
    case: str
    strategy: str
    kstore: str
    runs: str
    peak: str
    kafka_python: str
    ratio: str
    same: str
    java: str
    goals: str


def _row(case: Case, strategy: str, ks: _Measurement, kp: _Measurement | None) -> _Row:
    ks_median = ks.median
    kstore = _duration(ks_median) if ks_median is not None else _short(ks.problem)
    peak = f"{ks.peak_rss_mib:,.0f} MiB" if ks.peak_rss_mib is not None else "—"
    goals: list[str] = []

    kp_median = kp.median if kp is not None else None
    if kp is None:
        kafka_python = "no such assignor"
    elif kp_median is not None:
        kafka_python = _duration(kp_median)
    elif kp.timed_out:
        kafka_python = kp.problem or "timed out"
    else:
        kafka_python = "fails: " + _short(kp.problem)
    ratio = same = "—"
    if ks_median is not None and kp is not None and kp_median is not None:
        speedup = kp_median / ks_median
        ratio = f"{speedup:,.1f}×"
        same = "identical" if ks.digest == kp.digest else "differs"
        goals.append(_goal(speedup >= _SPEEDUP_GOAL, f"≥{_SPEEDUP_GOAL:.0f}×"))

    anchor = _JAVA_MS.get((case.key, strategy))
    java = f"{anchor[0]:,.1f} ms ({anchor[1]:,.1f}–{anchor[2]:,.1f})" if anchor else "—"

    time_goal = _TIME_GOALS.get(case.key)
    if ks_median is not None and time_goal is not None and strategy in time_goal[1]:
        goals.append(_goal(ks_median <= time_goal[0], f"≤{time_goal[0]:.0f} s"))
    memory_goal = _MEMORY_GOAL_MIB.get(case.key)
    if ks.peak_rss_mib is not None and memory_goal is not None:
        goals.append(_goal(ks.peak_rss_mib < memory_goal, f"<{memory_goal / 1024:.0f} GiB"))
    runs = str(len(ks.seconds)) if ks.seconds else "—"
    return _Row(
        case.key, strategy, kstore, runs, peak, kafka_python, ratio, same, java, " ".join(goals)
    )


def _short(problem: str | None, limit: int = 60) -> str:
    text = problem or "no result"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _goal(met: bool, text: str) -> str:
    return ("✓ " if met else "✗ ") + text


_HEADERS = (
    "case",
    "strategy",
    "kstore median",
    "runs",
    "kstore peak RSS",
    "kafka-python median",
    "ratio",
    "same result",
    "Java assign() median (min–max)",
    "goals",
)


def _environment() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"Python {platform.python_version()}, {os.cpu_count()} cores, load average {load} "
        f"at the start, {time.strftime('%Y-%m-%d')}"
    )


def _goals(limits: _Limits) -> str:
    return (
        f"Goals: ≥{_SPEEDUP_GOAL:.0f}× faster than kafka-python where it finishes (its calls "
        f"are stopped after {limits.call_seconds:.0f} s); A ≤ 1 s; A' and B ≤ 5 s; D ≤ 2 s "
        "for sticky and cooperative-sticky; peak memory < 4 GiB on A."
    )


def _markdown(rows: list[_Row], environment: str, goals: str) -> str:
    lines = [
        "| " + " | ".join(_HEADERS) + " |",
        "|" + "|".join("---" for _ in _HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(astuple(row)) + " |" for row in rows]
    legend = [f"- {case.key}: {case.title}" for case in CASES]
    return "\n".join([f"Measured with {environment}.", "", *lines, "", *legend, "", goals, ""])


def main(quick: bool) -> None:
    limits = _QUICK if quick else _FULL
    console = Console(width=None if sys.stdout.isatty() else 220)
    progress = Console(stderr=True)
    environment = _environment()
    table = Table(title=f"Assignors: kstore vs kafka-python 3.0.12 vs Kafka (Java)\n{environment}")
    for header in _HEADERS:
        table.add_column(header, justify="right" if header in ("runs", "ratio") else "left")

    rows: list[_Row] = []
    cases = [case for case in CASES if case.quick or not quick]
    for case in cases:
        for number, strategy in enumerate(STRATEGIES):
            progress.print(f"{case.key} {strategy}", style="dim")
            kstore = _measure("kstore", case, strategy, limits)
            kafka_python = None
            if strategy in KAFKA_PYTHON_STRATEGIES:
                kafka_python = _measure("kafka-python", case, strategy, limits)
            row = _row(case, strategy, kstore, kafka_python)
            rows.append(row)
            table.add_row(*astuple(row), end_section=number == len(STRATEGIES) - 1)

    console.print(table)
    for case in cases:
        console.print(f"{case.key}: {case.title}")
    console.print(_goals(limits))
    if not quick:
        _RESULTS.parent.mkdir(exist_ok=True)
        _RESULTS.write_text(_markdown(rows, environment, _goals(limits)))
        console.print(f"Markdown table written to {_RESULTS.relative_to(_ROOT)}")
