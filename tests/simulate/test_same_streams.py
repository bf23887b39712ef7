"""Speed work must not change a single simulated event: the streams of the examples and of
a few generated scenarios, digested, are those of the simulator before it was made faster;
so are the run's ownership figures (the summary's) and every table of a store it fills.

A change that is meant to alter simulated histories updates these digests, saying why.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kstore.simulate import generate, load_scenario, run_scenario
from kstore.simulate.scenario import Scenario
from kstore.store.log import Store

EXAMPLES = Path(__file__).parents[2] / "examples"

DIGESTS = {
    "autoscaling-10-40-10": "c183a3620d04fedc",
    "consumer-protocol": "837f79f6e70ecaac",
    "eager-vs-cooperative": "3db01d65ca939673",
    "flapping-member": "c9938dd0cd6ad402",
    "mixed-subscriptions": "c8be57ba76562ab4",
    "partition-expansion": "8641d598e2bf956c",
    "rolling-deploy-30": "35d3f6cb51ce3623",
    "static-restart": "1bd57f34144352e7",
    "steady-churn/cooperative": "d3bff9511c4c81b6",
    "autoscaling/eager": "d2af16c71ba3ca47",
    "flapping-member/consumer": "0cb77a0ab1545d57",
    # The benchmark's other kinds (benchmarks/simulate.py), pinned at 09ffcb9 before the
    # sixteenth session's speed work on the eager join phase.
    "steady-churn/eager": "ee186e539a400df0",
    "rolling-deploy/eager": "8e06cf62ddd396ab",
    "rolling-deploy/cooperative": "5e661a909ceb1dc6",
    "steady-churn/consumer": "d63fd350d43c2bfb",
}

OWNERSHIP = {
    # Partition-time without an owner, the longest such gap, partitions that changed owner.
    "autoscaling-10-40-10": (436160, 3091, 160),
    "autoscaling/eager": (2027129, 3041, 996),
    "consumer-protocol": (186840, 45331, 34),
    "eager-vs-cooperative": (150008, 44144, 10),
    "flapping-member": (62620, 2195, 32),
    "flapping-member/consumer": (415461, 49950, 96),
    "mixed-subscriptions": (11499, 1722, 5),
    "partition-expansion": (133236, 4110, 0),
    "rolling-deploy-30": (900000, 15000, 0),
    "static-restart": (79839, 28627, 6),
    "steady-churn/cooperative": (959055, 47113, 92),
    "steady-churn/eager": (6597422, 72801, 361),
    "rolling-deploy/eager": (3645912, 3046, 1210),
    "rolling-deploy/cooperative": (611049, 3096, 226),
    "steady-churn/consumer": (1293229, 304209, 144),
}

STORES = {
    # Every kstore_* table and view of a store file the run appends to (in its own
    # process): main's at 7afe9f3 (assignments stored as spans) and the table
    # kstore_member_spans (the members at each decision as spans; without it, the
    # digests of 7afe9f3: kstore_members_at, now a view, holds the same rows). A
    # snapshot's state is hashed as the JSON it holds, not its text (c5de6b1 wrote it
    # compact; the three with snapshots were re-pinned then, equal to 47554e4~1's so read).
    "static-restart": "54704779ec391f92",
    "mixed-subscriptions": "46d0784aa431cc17",
    "partition-expansion": "f6b5b8546e8c9ee2",
    "steady-churn/cooperative": "87c9bb6581f46ff5",
    "autoscaling/eager": "285ce3ce3742977d",
    "flapping-member/consumer": "a3ded0fcf9913177",
}


def _scenario(name: str) -> tuple[Scenario, int]:
    if "/" not in name:
        return load_scenario(EXAMPLES / f"{name}.yaml"), 0
    kind, protocol = name.split("/")
    return generate(kind, members=12, steps=60, seed=1, protocol=protocol), 1  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_stream_is_unchanged(name: str) -> None:
    scenario, seed = _scenario(name)
    result = run_scenario(scenario, store=None, timeline="sim/check", seed=seed)
    digest = hashlib.sha256()
    for event in result.sim.emitted:
        digest.update(json.dumps(event.to_dict(), sort_keys=True).encode())
    assert digest.hexdigest()[:16] == DIGESTS[name]
    ledger = result.sim.ledger
    assert (ledger.unowned_ms, ledger.longest_unowned_ms, ledger.moves) == OWNERSHIP[name]


def _canonical(text: str) -> str:
    """A snapshot's JSON text in one form (keys sorted, default separators); other text
    as it is."""
    try:
        return json.dumps(json.loads(text), sort_keys=True)
    except ValueError:
        return text


def _store_digest(scenario: Scenario, seed: int, tmp: Path) -> str:
    store = Store(tmp / "store.duckdb")
    store.init()
    run_scenario(scenario, store=store, timeline="sim/check", seed=seed)
    names = store.query(
        "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'kstore_%' "
        "ORDER BY 1"
    ).rows
    digest = hashlib.sha256()
    for (name,) in names:
        rows = store.query(f"SELECT * FROM {name} ORDER BY ALL").rows
        if name == "kstore_snapshots":
            rows = sorted(
                tuple(_canonical(value) if isinstance(value, str) else value for value in row)
                for row in rows
            )
        digest.update(repr((name, rows)).encode())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(STORES))
def test_store_is_unchanged(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSTORE_APPEND_APART", "0")
    scenario, seed = _scenario(name)
    assert _store_digest(scenario, seed, tmp_path) == STORES[name]
