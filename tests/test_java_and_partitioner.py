"""Java's hashing as Kafka uses it: murmur2, the default partitioner, the coordinator lookup."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstore import _java
from kstore._java import hash_order, java_abs, murmur2, string_hash, to_int32, to_positive
from kstore.partitioner import RoundRobinPartitioner, StickyPartitioner, partition_for_key
from kstore.protocol.find_coordinator import coordinator_partition

# Kafka's UtilsTest.testMurmur2 vectors.
MURMUR2_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), MURMUR2_VECTORS)
def test_murmur2_matches_kafka(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_string_hash_matches_java() -> None:
    assert string_hash("") == 0
    assert string_hash("hello") == 99162322
    assert string_hash("Aa") == string_hash("BB")  # Java's classic collision
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE in Java.
    assert string_hash("polygenelubricants") == -(2**31)
    assert string_hash("é") == 0xE9
    assert string_hash("😀") == 31 * 0xD83D + 0xDE00  # two UTF-16 code units
    assert string_hash("\ud800x") == 31 * 0xD800 + ord("x")  # a lone surrogate, as Java


@given(st.text(max_size=40))
def test_string_hash_is_the_polynomial_over_utf16(s: str) -> None:
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = h * 31 + int.from_bytes(units[i : i + 2], "big")
    assert string_hash(s) == to_int32(h)


def test_abs_and_to_positive_mind_min_value() -> None:
    assert java_abs(-(2**31)) == 0
    assert java_abs(-5) == 5
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1


def test_partition_for_key_is_to_positive_murmur2_mod_n() -> None:
    assert partition_for_key("foobar", 10) == to_positive(-790332482) % 10
    assert partition_for_key(b"21", 3) == to_positive(-973932308) % 3


@given(st.binary(max_size=64), st.integers(1, 10_000))
def test_partition_for_key_in_range(key: bytes, n: int) -> None:
    assert 0 <= partition_for_key(key, n) < n


def test_coordinator_lookup() -> None:
    assert coordinator_partition("polygenelubricants") == 0  # Utils.abs(MIN_VALUE) = 0
    assert coordinator_partition("my-group") == java_abs(string_hash("my-group")) % 50
    assert coordinator_partition("my-group", 1) == 0


def test_round_robin_null_keys_cycle_over_available_partitions() -> None:
    rr = RoundRobinPartitioner(seed=1)
    got = [rr.partition("t", 6, available=[1, 3, 5]) for _ in range(6)]
    assert sorted(got[:3]) == [1, 3, 5] and got[:3] == got[3:]
    every = [rr.partition("u", 4) for _ in range(8)]
    assert sorted(every[:4]) == [0, 1, 2, 3]


def test_sticky_partitioner_sticks_for_a_batch_then_switches() -> None:
    sp = StickyPartitioner(batch_bytes=100, seed=3)
    first = [sp.partition("t", 8, size=10) for _ in range(10)]
    assert len(set(first)) == 1  # 100 bytes in one batch
    after = sp.partition("t", 8, size=10)
    assert after != first[0]


def test_hash_map_order_of_the_oracle_example() -> None:
    # oracle README quirk 3: consumer-0's bucket (14) comes after consumer-1's (13).
    assert hash_order(["consumer-1", "consumer-0"]) == ["consumer-1", "consumer-0"]
    assert hash_order(["consumer-1", "consumer-2"]) == ["consumer-2", "consumer-1"]


def _kstore(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_partition_and_coordinator_print_the_number_first() -> None:
    out = _kstore("partition", "--key", "foobar", "--partitions", "10")
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == str(partition_for_key("foobar", 10))
    out = _kstore("coordinator", "polygenelubricants")
    assert out.stdout.splitlines()[0] == "0"


def test_cli_rejects_bad_partition_count() -> None:
    out = _kstore("partition", "--key", "k", "--partitions", "0")
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1


@given(st.lists(st.text(max_size=12), max_size=30))
def test_many_new_keys_hashed_together_as_one_by_one(keys: list[str]) -> None:
    keys += ["", "polygenelubricants", "x" * 300, "é" * 9]  # empty, MIN_VALUE, long
    _java._string_hash_cache.clear()
    together = _java._string_hashes(keys)
    cached = dict(_java._string_hash_cache)
    _java._string_hash_cache.clear()
    assert together == [string_hash(k) for k in keys]
    # The ASCII ones were hashed together (numpy), the others one by one, all cached.
    assert cached == {k: string_hash(k) for k in keys}


def test_keys_hashed_together_are_cached_only_while_there_is_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _java._string_hash_cache.clear()
    monkeypatch.setattr(_java, "_CACHED_MOST", 3)
    keys = [f"member-{i}" for i in range(10)]
    _java._cache_hashes(keys)
    assert _java._string_hash_cache == {k: string_hash(k) for k in keys[:3]}
    assert _java._string_hashes(keys) == [string_hash(k) for k in keys]
    _java._string_hash_cache.clear()
