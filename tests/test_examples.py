"""The example scenarios ship in the package: ``kstore examples`` lists and prints them,
and ``kstore simulate`` runs one by name, as docs/simulation.md's first example is
written, from a folder with no ``examples/`` beside it (an install has no checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.test_cli_store import run

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "examples").glob("*.yaml"))


def first_simulation_example() -> list[str]:
    """The first command docs/simulation.md shows (an indented ``kstore simulate ...``)."""
    for line in (ROOT / "docs/simulation.md").read_text().splitlines():
        if line.startswith("    kstore simulate "):
            return line.split()[1:]
    raise AssertionError("docs/simulation.md shows no kstore simulate")


def test_the_list_names_every_example_scenario(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "examples", "--format", "json")
    assert code == 0
    listed = {row["example"]: row for row in json.loads(out)}
    assert list(listed) == [path.stem for path in SCENARIOS]
    assert listed["static-restart"]["run"] == "kstore simulate static-restart"
    assert listed["flapping-member"]["about"] == (
        "One member whose network keeps dropping: cut off longer than the session timeout, "
        "it is removed and rejoins; shorter cuts go unnoticed."
    )
    for output in ("csv", "jsonl", "table"):
        code, out, _ = run(capsys, monkeypatch, "examples", "--format", output)
        assert code == 0 and "rolling-deploy-30" in out


def test_an_example_is_printed_verbatim(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "examples", "rolling-deploy-30")
    assert (code, out) == (0, (ROOT / "examples/rolling-deploy-30.yaml").read_text())
    code, _, err = run(capsys, monkeypatch, "examples", "rolling-deploy")
    assert code == 2
    assert (
        err.startswith("kstore: error: no example 'rolling-deploy'") and "rolling-deploy-30" in err
    )
    assert err.count("\n") == 1


def _kstore(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KSTORE_STORE", None)
    command = [sys.executable, "-m", "kstore", "--store", str(cwd / "k.duckdb"), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_docs_first_example_runs_where_there_is_no_examples_folder(tmp_path: Path) -> None:
    args = first_simulation_example()
    assert args == ["simulate", "examples/rolling-deploy-30.yaml"]  # as the docs show it
    done = _kstore(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert "rebalances" in done.stdout
    # By its name too, into another timeline; the same events (same scenario, same seed).
    again = _kstore(tmp_path, "simulate", "rolling-deploy-30", "--timeline", "sim/again")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[1:-1] == done.stdout.splitlines()[1:-1]


def test_a_file_beside_wins_and_a_missing_one_names_the_examples(tmp_path: Path) -> None:
    mine = tmp_path / "examples"
    mine.mkdir()
    text = (ROOT / "examples/static-restart.yaml").read_text()
    (mine / "rolling-deploy-30.yaml").write_text(text.replace("static-restart", "mine"))
    done = _kstore(tmp_path, "simulate", "examples/rolling-deploy-30.yaml")
    assert done.returncode == 0, done.stderr
    assert "sim/mine" in _kstore(tmp_path, "streams").stdout
    missing = _kstore(tmp_path, "simulate", "no-such.yaml")
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1 and "kstore examples" in missing.stderr


@pytest.mark.parametrize("given", ["rolling-deploy", "examples/rolling-deploy.yaml"])
def test_a_mistyped_example_name_gets_the_nearest_example(given: str, tmp_path: Path) -> None:
    """``kstore simulate rolling-deploy`` said only "cannot read: No such file or
    directory; the shipped examples: kstore examples" (user trial), where ``kstore
    examples rolling-deploy`` names rolling-deploy-30."""
    done = _kstore(tmp_path, "simulate", given)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"kstore: error: {given}: no such file nor shipped example; "
        "did you mean rolling-deploy-30? (kstore examples lists them)\n"
    )
