"""Issue 14, point 6: cooperative withholding is expected, not an anomaly; the simulate
summary's "moved" and compare's churn are one number (docs/spec/metrics.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def kstore(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_cooperative_withholding_is_expected(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    kstore(store, "init")
    scenario = str(EXAMPLES / "eager-vs-cooperative.yaml")
    kstore(store, "simulate", scenario, "--protocol", "cooperative", "--timeline", "coop")
    kstore(store, "simulate", scenario, "--protocol", "eager", "--timeline", "eager")
    rows = json.loads(kstore(store, "query", "anomalies", "--format", "json").stdout)
    coop = [r for r in rows if r["timeline"] == "coop"]
    withheld = [r for r in coop if r["kind"] == "withheld"]
    assert withheld and all(r["expected"] for r in withheld)
    assert not [r for r in coop if r["kind"] == "unassigned"]
    # each withheld partition is given to a member by a later rebalance of its generation's
    # follow-up, i.e. it was held back, not lost
    later = json.loads(
        kstore(store, "query", "partition_history", "--timeline", "coop", "--format", "json").stdout
    )
    for row in withheld:
        assert any(
            h["topic"] == row["topic"]
            and h["partition"] == row["partition"]
            and h["version"] > row["version"]
            for h in later
        )
    assert not [r for r in rows if r["expected"] and r["timeline"] == "eager"]


@pytest.mark.parametrize(
    "scenario", ["consumer-protocol.yaml", "eager-vs-cooperative.yaml", "flapping-member.yaml"]
)
def test_simulate_moved_is_compare_churn(tmp_path: Path, scenario: str) -> None:
    store = tmp_path / "s.duckdb"
    kstore(store, "init")
    out = kstore(store, "simulate", str(EXAMPLES / scenario), "--timeline", "t").stdout
    moved = int(re.search(r"^moved\s+(\d+)", out, re.M).group(1))  # type: ignore[union-attr]
    group = re.search(r"^timeline\s+(\S+)/(\S+)/t$", out, re.M)
    assert group is not None, out
    (row,) = json.loads(
        kstore(store, "compare", "--group", group.group(2), "--format", "json").stdout
    )
    assert moved == row["churn"]
