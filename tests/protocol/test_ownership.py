"""The ownership ledger against a partition-by-partition account of the same moves."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kstore.assignors import TopicPartition
from kstore.protocol.ownership import OwnershipLedger

_MEMBERS = ("a", "b", "c", "d")
_TPS = [("t", p) for p in range(6)]


class _PerPartition:
    """Each partition's owner, last owner and since when it is unowned, kept one by one."""

    def __init__(self) -> None:
        self.owner: dict[TopicPartition, str | None] = {}
        self.last: dict[TopicPartition, str] = {}
        self.since: dict[TopicPartition, int] = {}
        self.unowned_ms = self.longest = self.moves = 0

    def add(self, count: int, now: int) -> None:
        for tp in _TPS[:count]:
            if tp not in self.owner:
                self.owner[tp] = None
                self.since[tp] = now

    def release(self, member: str, tps: set[TopicPartition], now: int) -> None:
        for tp in tps:
            if self.owner.get(tp) == member:
                self.owner[tp] = None
                self.since[tp] = now

    def acquire(self, member: str, tps: set[TopicPartition], now: int) -> bool:
        """False where the ledger refuses: a partition another member still owns."""
        if any(self.owner.get(tp) not in (None, member) for tp in tps):
            return False
        for tp in tps:
            if self.owner.get(tp) == member:
                continue
            gap = now - self.since.pop(tp, now)
            self.unowned_ms += gap
            self.longest = max(self.longest, gap)
            if self.last.get(tp) not in (None, member):
                self.moves += 1
            self.owner[tp] = self.last[tp] = member
        return True

    def rename(self, old: str, new: str) -> None:
        self.owner = {tp: new if m == old else m for tp, m in self.owner.items()}
        self.last = {tp: new if m == old else m for tp, m in self.last.items()}

    def close(self, now: int) -> None:
        for since in self.since.values():
            self.unowned_ms += now - since
            self.longest = max(self.longest, now - since)
        self.since = dict.fromkeys(self.since, now)

    def held(self, member: str) -> set[TopicPartition]:
        return {tp for tp, m in self.owner.items() if m == member}


_op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 6)),
    st.tuples(st.just("acquire"), st.sampled_from(_MEMBERS), st.sets(st.sampled_from(_TPS))),
    # A tuple (an assignment's share) is kept as given until a set of it is needed.
    st.tuples(st.just("acquire"), st.sampled_from(_MEMBERS), st.lists(st.sampled_from(_TPS))),
    st.tuples(st.just("release"), st.sampled_from(_MEMBERS), st.sets(st.sampled_from(_TPS))),
    st.tuples(st.just("release all"), st.sampled_from(_MEMBERS)),
    st.tuples(st.just("rename"), st.sampled_from(_MEMBERS), st.sampled_from(_MEMBERS)),
    # A cooperative member's new share: what it does not name given up, then the share
    # taken as exactly what the member holds (its hold the share's tuple again).
    st.tuples(st.just("share"), st.sampled_from(_MEMBERS), st.lists(st.sampled_from(_TPS))),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_op, max_size=30))
def test_ledger_counts_as_partition_by_partition(ops: list[tuple[object, ...]]) -> None:
    ledger, expected = OwnershipLedger(), _PerPartition()
    for now, op in enumerate(ops):
        match op:
            case ("add", int(count)):
                ledger.add_topics({"t": count}, now)
                expected.add(count, now)
            case ("acquire", str(member), set(tps) | list(tps)):
                given = tps if isinstance(tps, set) else tuple(dict.fromkeys(tps))
                if expected.acquire(member, set(tps), now):
                    ledger.acquire(member, given, now)
                else:
                    with pytest.raises(AssertionError, match="still owns it"):
                        ledger.acquire(member, given, now)
                    return
            case ("release", str(member), set(tps)):
                ledger.release(member, tps, now)
                expected.release(member, tps, now)
            case ("release all", str(member)):
                held = expected.held(member)
                ledger.release(member, held, now)
                expected.release(member, held, now)
            case ("rename", str(old), str(new)):
                ledger.rename(old, new)
                expected.rename(old, new)
            case ("share", str(member), list(tps)):
                share = tuple(dict.fromkeys(tps))
                revoked = expected.held(member) - set(share)
                ledger.release(member, revoked, now)
                expected.release(member, revoked, now)
                if not expected.acquire(member, set(share), now):
                    with pytest.raises(AssertionError, match="still owns it"):
                        ledger.acquire_each([(member, share)], now, exact=True)
                    return
                ledger.acquire_each([(member, share)], now, exact=True)
                assert ledger.holds_given(member, share)
        for member in _MEMBERS:
            assert ledger.held(member) == expected.held(member)
    ledger.close(len(ops))
    expected.close(len(ops))
    assert (ledger.unowned_ms, ledger.longest_unowned_ms, ledger.moves) == (
        expected.unowned_ms,
        expected.longest,
        expected.moves,
    )
