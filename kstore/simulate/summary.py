"""What a run did, in a few numbers: rebalances, partitions moved, time without an owner."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from kstore._text import counted
from kstore.model.events import StreamId, format_span
from kstore.protocol.group import GroupSim

__all__ = ["Summary", "summarise"]


@dataclass(frozen=True, slots=True)
class Summary:
    stream: StreamId
    protocol: str
    strategy: str | None
    coordinator_partition: int
    simulated_ms: int
    events: int
    rebalances: int
    """``RebalanceStarted`` events: the rebalances (group epochs for KIP-848) begun."""
    generation: int | None
    members: int
    partitions_moved: int
    """Churn as docs/spec/metrics.md defines it (what ``compare`` and the report show)."""
    unowned_ms: int
    """Sum over partitions of the time each spent without an owner."""
    longest_unowned_ms: int
    refused: tuple[str, ...]

    def lines(self) -> list[str]:
        def secs(ms: int) -> str:
            return format_span(timedelta(milliseconds=ms))

        out = [
            f"timeline     {self.stream}",
            f"protocol     {self.protocol} ({self.strategy or 'no assignment yet'}), "
            f"coordinator partition {self.coordinator_partition}",
            f"simulated    {secs(self.simulated_ms)}, {counted(self.events, 'event')}",
            f"rebalances   {self.rebalances:,} (generation now {self.generation}), "
            f"{counted(self.members, 'member')}",
            f"moved        {counted(self.partitions_moved, 'partition')} "
            "(churn: kstore docs metrics)",
            f"unowned      {secs(self.unowned_ms)} partition-time without an owner, "
            f"longest {secs(self.longest_unowned_ms)}",
        ]
        out.extend(f"refused      {line}" for line in self.refused)
        return out


def summarise(sim: GroupSim, moved: int) -> Summary:
    """``moved``: the run's churn, from the ``metrics`` query over its stream."""
    state = sim.state
    return Summary(
        stream=sim.stream,
        protocol=sim.protocol_name,
        strategy=state.strategy,
        coordinator_partition=sim.coordinator,
        simulated_ms=sim.now,
        events=state.version,
        rebalances=sim.rebalances,
        generation=state.generation,
        members=len(state.members),
        partitions_moved=moved,
        unowned_ms=sim.ledger.unowned_ms,
        longest_unowned_ms=sim.ledger.longest_unowned_ms,
        refused=tuple(sim.refused),
    )
