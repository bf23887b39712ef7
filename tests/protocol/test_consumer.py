"""The consumer protocol's quick paths do what its one-at-a-time paths do."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kstore.model.events import MemberLeft, StreamId
from kstore.protocol.clock import Due
from kstore.protocol.consumer import ConsumerGroupSim
from kstore.protocol.group import Client, MemberSpec
from kstore.protocol.settings import ProtocolSettings
from kstore.simulate import generate, run_scenario

STREAM = StreamId("default", "g", "sim/test")


def _outcome(kind: str, seed: int) -> tuple[list[dict[str, object]], tuple[int, int, int]]:
    scenario = generate(kind, members=12, steps=80, seed=seed, protocol="consumer")
    result = run_scenario(scenario, store=None, timeline="sim/check", seed=seed)
    ledger = result.sim.ledger
    events = [event.to_dict() for event in result.sim.emitted]
    return events, (ledger.unowned_ms, ledger.longest_unowned_ms, ledger.moves)


def _one_at_a_time(self: ConsumerGroupSim, due: Due[tuple[Client, int]]) -> None:
    """Every due heartbeat by ``_heartbeat``."""
    for client, life in due:
        self._heartbeat(client, life)


@pytest.mark.parametrize("kind", ["steady-churn", "flapping-member", "autoscaling"])
@pytest.mark.parametrize("seed", [1, 2])
def test_heartbeats_after_a_bump_in_one_pass_are_each_heartbeat(
    kind: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = _outcome(kind, seed)
    monkeypatch.setattr(ConsumerGroupSim, "_heartbeats", _one_at_a_time)
    assert _outcome(kind, seed) == quick


def test_a_heartbeat_in_the_batch_after_a_bump_keeps_a_reconnected_session() -> None:
    # c-1 is cut off for half its session, so its expiry is pending when it
    # reconnects; a member of another topic joins at that same moment (c-1's target
    # stays the same), and the epoch bump's batch of heartbeats takes the place of the
    # one the reconnection scheduled: that heartbeat must refresh the session (cancel
    # the expiry) as ``_heartbeat`` does.
    sim = ConsumerGroupSim(
        STREAM,
        strategy="uniform",
        start=datetime(2026, 1, 1, tzinfo=UTC),
        settings=ProtocolSettings(),
        seed=7,
    )
    sim.set_topic("t", 6)
    sim.set_topic("u", 2)
    for name in ("c-0", "c-1"):
        sim.start_client(MemberSpec(name, ("t",), ("uniform",)))
    sim.run_until(10_000)
    session = sim.settings.consumer_session_timeout_ms
    sim.cut_off("c-1", session // 2)
    back = sim.now + session // 2
    sim.queue.schedule(
        back, "join", lambda: sim.start_client(MemberSpec("c-2", ("u",), ("uniform",)))
    )
    sim.run_until(back + 3 * session)
    left = [e.data for e in sim.emitted if isinstance(e.data, MemberLeft)]
    assert left == []
    assert len(sim.state.members) == 3
