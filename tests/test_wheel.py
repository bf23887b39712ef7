"""The built wheel, installed in a fresh virtualenv outside the checkout, works.

The wheel is built from a copy of the package's sources (so the build leaves nothing in
the checkout) and installed with pip into a new virtualenv. The base dependencies come
from the test's own environment, linked into the new one's site-packages (the machine
need not download them again); the extras (pyspark, the Kafka clients) and any kstore
other than the wheel's are left out. Every command then runs from an empty folder
elsewhere, through the ``kstore`` script pip wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kstore._extras import EXTRAS
from tests.test_examples import SCENARIOS, first_simulation_example

ROOT = Path(__file__).resolve().parents[1]

# One worker runs both tests, so the module's wheel and virtualenv are made once: under
# ``--dist loadgroup`` the two ran in both workers at once, each building its own, at
# the suite's end.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

# Not linked into the new environment: kstore (it must come from the wheel) and the extras.
_LEFT_OUT = ("kstore", "__editable__", *EXTRAS, "kafka_python")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _ok(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = _run(args, cwd, env)
    assert done.returncode == 0, f"{args}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    shutil.copytree(ROOT / "kstore", source / "kstore", ignore=shutil.ignore_patterns("*.pyc"))
    dist = base / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    clean = _env()  # a kstore on PYTHONPATH would count as installed already
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(dist), str(source)], check=True, env=clean, cwd=base
    )
    (wheel,) = dist.glob("kstore-*.whl")

    env = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(
        sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)})
    ).resolve()
    ours = Path(sysconfig.get_path("purelib"))
    for entry in ours.iterdir():
        name = entry.name.lower().replace("-", "_")
        if not name.startswith(_LEFT_OUT):
            (site / entry.name).symlink_to(entry)
    target = ["--python", str(env / "bin" / "python")]
    subprocess.run(
        [*pip, *target, "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
        env=clean,
        cwd=base,
    )
    return env


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KSTORE_STORE")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_the_installed_wheel_runs_every_command(venv: Path, tmp_path: Path) -> None:
    env = _env()
    python = str(venv / "bin" / "python")
    where = _ok([python, "-c", "import kstore, sys; print(kstore.__file__)"], tmp_path, env)
    assert Path(where.strip()).is_relative_to(venv), where  # not the checkout's kstore
    assert ROOT not in Path(where.strip()).parents

    kstore = str(venv / "bin" / "kstore")
    installed = _ok(
        [python, "-c", "import importlib.metadata as m; print(m.version('kstore'))"], tmp_path, env
    )
    assert _ok([kstore, "--version"], tmp_path, env) == f"kstore {installed.strip()}\n"
    first = [kstore, "--store", "first.duckdb"]
    store = [kstore, "--store", "kstore.duckdb"]
    assert "created" in _ok([*first, "init"], tmp_path, env)
    simulate = ["simulate", "--generate", "steady-churn", "--members", "4", "--steps", "6"]
    _ok([*first, *simulate, "--seed", "1", "--timeline", "recorded"], tmp_path, env)
    events = _ok([*first, "events"], tmp_path, env)
    (tmp_path / "events.jsonl").write_text(events)
    group = json.loads(events.splitlines()[0])["group"]

    _ok([*store, "init"], tmp_path, env)
    assert _ok([*store, "append", "events.jsonl"], tmp_path, env)
    streams = _ok([*store, "streams"], tmp_path, env)
    assert group in streams and str(len(events.splitlines())) in streams
    metrics = _ok([*store, "query", "metrics", "--format", "json"], tmp_path, env)
    assert len(json.loads(metrics)) == 7  # the 7 rebalances of this seed
    listed = _ok([*store, "query", "--list"], tmp_path, env)
    assert "partition_history" in listed and "anomalies" in listed
    _ok([*store, "replay", "--group", group, "--strategy", "sticky"], tmp_path, env)
    compare = _ok([*store, "compare", "--group", group, "--format", "json"], tmp_path, env)
    assert {row["timeline"] for row in json.loads(compare)} == {"recorded", "replay/sticky"}
    _ok([*store, "report", "--group", group, "--out", "report.html"], tmp_path, env)
    assert "<html" in (tmp_path / "report.html").read_text()[:2000].lower()
    # The docs the help texts name ship in the wheel (it has no checkout beside it).
    assert (
        _ok([kstore, "docs", "metrics"], tmp_path, env)
        == (ROOT / "docs/spec/metrics.md").read_text()
    )
    assert "performance" not in _ok([kstore, "docs", "--format", "csv"], tmp_path, env)
    # docs/simulation.md's first example runs as written, with no examples/ beside it;
    # the examples it comes from are listed (and the shipped one printed verbatim).
    first_example = first_simulation_example()
    assert not (tmp_path / "examples").exists()
    ran = _ok([kstore, "--store", "sim.duckdb", *first_example], tmp_path, env)
    assert "rebalances" in ran and "sim.duckdb" in ran
    listed = json.loads(_ok([kstore, "examples", "--format", "json"], tmp_path, env))
    assert [row["example"] for row in listed] == [p.stem for p in SCENARIOS]
    name = Path(first_example[-1]).stem
    assert _ok([kstore, "examples", name], tmp_path, env) == (ROOT / first_example[-1]).read_text()
    # Parquet export needs pyarrow only, not the spark extra.
    _ok([*store, "export", "--out", "parquet"], tmp_path, env)
    assert list((tmp_path / "parquet").rglob("*.parquet"))


def test_a_missing_extra_is_named_in_one_line(venv: Path, tmp_path: Path) -> None:
    env = _env()
    kstore = str(venv / "bin" / "kstore")
    for module in ("pyspark", "pandas"):  # the base install really has neither
        missing = _run([str(venv / "bin" / "python"), "-c", f"import {module}"], tmp_path, env)
        assert missing.returncode != 0, module
    for args, extra in [
        (["spark", "metrics", "--in", ".", "--out", "out"], "spark"),
        (["record", "poll", "--bootstrap-servers", "localhost:1", "--all-groups"], "kafka"),
    ]:
        done = _run([kstore, *args], tmp_path, env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert f"pip install 'kstore[{extra}]'" in done.stderr
