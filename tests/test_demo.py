"""The main job (``make run``, ``python -m kstore.demo``) runs to its end in a fresh
folder, twice (its store is made afresh), and says what the advice says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb


def test_the_main_job_tells_the_whole_story_and_runs_again(tmp_path: Path) -> None:
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, "-m", "kstore.demo"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
    said = out.stdout
    for step in ("kstore assign request.json", "simulate eager-vs-cooperative.yaml", "compare"):
        assert step in said, said
    # the advice's verdict under its table, as `kstore advise` prints it (absent before)
    assert "would have moved least: " in said and "least disruption by protocol: " in said
    page = (tmp_path / "kstore-report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Advice" in page
    with duckdb.connect(str(tmp_path / "kstore-demo.duckdb"), read_only=True) as db:
        timelines = {t for (t,) in db.sql("SELECT DISTINCT timeline FROM kstore_events").fetchall()}
    assert {"recorded", "replay/range", "replay/sticky", "replay/optimal"} <= timelines
