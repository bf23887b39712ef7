"""Java semantics that leak into Kafka's results: 32-bit hashes and HashMap order.

Kafka's assignors iterate ``java.util.HashMap``/``HashSet`` in several places, so the
order in which Java walks a hash table decides ties. This module reproduces
``String.hashCode``, ``Utils.abs``, ``Utils.murmur2`` and the iteration order of a
``HashMap`` built by a known sequence of insertions.

HashMap facts used here (OpenJDK 8-21): the table starts at 16 buckets and doubles
when ``size > 0.75 * capacity``; a key goes to bucket ``spread(hash) & (capacity - 1)``
with ``spread(h) = h ^ (h >>> 16)``; inside a bucket, entries keep insertion order
(resizing splits buckets without reordering). Bins with 8+ entries become trees in
tables of 64+ buckets; that changes order only for pathological collisions and is not
modelled.
"""

from __future__ import annotations

import functools
import heapq
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "HashSetOrder",
    "collection_copy_capacity",
    "copy_capacity",
    "hash_order",
    "hash_order_by",
    "java_abs",
    "java_sorted",
    "java_string_key",
    "murmur2",
    "spread",
    "string_hash",
    "string_order_key",
    "table_capacity",
    "to_int32",
    "to_positive",
    "topic_partition_hash",
    "uuid_hash",
]

K = TypeVar("K", bound=Hashable)

_MASK32 = 0xFFFFFFFF


def to_int32(value: int) -> int:
    """Wrap an int to Java's signed 32-bit range."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


_string_hash_cache: dict[str, int] = {}
_CACHED_MOST = 1_000_000
_powers: list[tuple[int, ...]] = [()]
"""``_powers[n]``: 31 ** (n - 1 - i) mod 2 ** 32 for each place i of an n-unit string."""


def _weights(n: int) -> tuple[int, ...]:
    while len(_powers) <= n:
        _powers.append((*(p * 31 & _MASK32 for p in _powers[-1]), 1))
    return _powers[n]


def string_hash(s: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units)."""
    cached = _string_hash_cache.get(s)
    if cached is not None:
        return cached
    # h = sum of unit[i] * 31 ** (n - 1 - i), mod 2 ** 32: one C-level pass.
    if s.isascii():
        units: bytes | list[int] = s.encode("ascii")
    else:
        data = s.encode("utf-16-be", "surrogatepass")
        units = [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]
    result = to_int32(sum(map(operator.mul, units, _weights(len(units)))) & _MASK32)
    if len(_string_hash_cache) < _CACHED_MOST:
        _string_hash_cache[s] = result
    return result


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0, not to itself."""
    return 0 if n == -(1 << 31) else abs(n)


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit."""
    return n & 0x7FFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c), as a signed 32-bit int."""
    length = len(data)
    m = 0x5BD1E995
    h = (0x9747B28C ^ length) & _MASK32
    n4 = length // 4
    for i in range(n4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = (h * m) & _MASK32
        h ^= k
    rest = length % 4
    base = n4 * 4
    if rest == 3:
        h ^= data[base + 2] << 16
    if rest >= 2:
        h ^= data[base + 1] << 8
    if rest >= 1:
        h ^= data[base]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return to_int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode``."""
    return to_int32(31 * (31 + partition) + string_hash(topic))


def spread(h: int) -> int:
    """``HashMap.hash``: the key's hash with its high half folded into the low half."""
    h &= _MASK32
    return h ^ (h >> 16)


def table_capacity(max_size: int, initial: int = 16) -> int:
    """Table size of a HashMap that has held at most ``max_size`` entries at once."""
    cap = initial
    while max_size > cap * 3 // 4:
        cap *= 2
    return cap


def _table_size_for(c: int) -> int:
    n = 1
    while n < c:
        n *= 2
    return n


def copy_capacity(size: int, source_capacity: int | None = None) -> int:
    """Table size of ``new HashMap<>(m)`` / ``new HashSet<>(c)`` for a source of ``size``.

    ``HashMap(Map)`` sizes its table for ``size / 0.75 + 1`` (float), which can be larger
    than the table the same entries would get by inserting them one by one.
    """
    if size == 0:
        return 16
    import struct

    ft = struct.unpack("f", struct.pack("f", size / 0.75))[0] + 1.0
    return max(_table_size_for(int(ft)), 1)


def hash_order_by(keys: Iterable[K], hashes: Sequence[int] | None, capacity: int) -> list[K]:
    """Order in which Java iterates a table of ``capacity`` holding ``keys``.

    ``keys`` must be given in insertion order; ``hashes`` are their Java hash codes.
    """
    ks = list(keys)
    if len(ks) < 2:
        return ks
    hs = hashes if hashes is not None else _string_hashes(ks)  # type: ignore[arg-type]
    mask = capacity - 1
    # spread(h) & mask, inline: the mask keeps the low bits of h as they are in 32 bits
    buckets = [(h ^ ((h & _MASK32) >> 16)) & mask for h in hs]
    order = sorted(range(len(ks)), key=buckets.__getitem__)  # stable: insertion order kept
    return [ks[i] for i in order]


_MANY = 8
"""New keys from which ``_string_hashes`` hashes them together (numpy's fixed cost is
that of hashing about four 42-character keys one by one)."""


def _string_hashes(keys: Sequence[str]) -> list[int]:
    """``string_hash`` of each key (the cached ones looked up without a call; many new
    ones cached first by ``_cache_hashes``)."""
    cache = _string_hash_cache
    new = [k for k in keys if k not in cache]
    if len(new) >= _MANY:
        _cache_hashes(new)
    return [cache[k] if k in cache else string_hash(k) for k in keys]


def _cache_hashes(keys: Sequence[str]) -> None:
    """``string_hash`` of ``keys``, cached (while the cache has room), in one numpy pass
    per length (one that holds a non-ASCII key: left to ``string_hash``): a sticky
    assignor orders its members by their hashes, and a scaled group brings it fifty new
    member ids a decision, 2.75 us each alone.

    ``string_hash``'s sum of products, in unsigned 64-bit arithmetic: it wraps modulo
    2 ** 64, which keeps the sum modulo 2 ** 32 exact however long the key."""
    import numpy as np

    keys = keys[: max(_CACHED_MOST - len(_string_hash_cache), 0)]
    lengths = set(map(len, keys))
    for n in lengths:
        same = keys if len(lengths) == 1 else [k for k in keys if len(k) == n]
        text = "".join(same)
        if text.isascii():
            units = np.frombuffer(text.encode("ascii"), np.uint8).reshape(len(same), n)
            sums = units @ _weight_array(n)
            hashes = (sums & _MASK32).astype(np.uint32).view(np.int32).tolist()
            _string_hash_cache.update(zip(same, hashes, strict=True))


@functools.lru_cache(maxsize=64)
def _weight_array(n: int) -> Any:
    """``_weights(n)`` as numpy's unsigned 64-bit integers."""
    import numpy as np

    return np.array(_weights(n), np.uint64)


def hash_order(keys: Sequence[str], capacity: int | None = None) -> list[str]:
    """Iteration order of a ``HashMap<String, ?>`` filled with ``keys`` in that order."""
    cap = capacity if capacity is not None else table_capacity(len(keys))
    return hash_order_by(keys, _string_hashes(keys), cap)


def string_order_key(s: str) -> bytes:
    """Sort key giving ``String.compareTo`` order (UTF-16 code units, not code points)."""
    return s.encode("utf-16-be", "surrogatepass")


def java_string_key(strings: Iterable[str]) -> Callable[[str], str | bytes]:
    """The cheapest sort key giving ``String.compareTo`` order over ``strings``.

    Code point order (Python's) and UTF-16 code unit order (Java's) differ only when a
    character beyond U+FFFF meets one in U+E000..U+FFFF, so plain ``str`` usually does.
    """
    items = strings if isinstance(strings, list) else list(strings)
    if all(map(str.isascii, items)):
        return str
    needs_utf16 = any(not s.isascii() and max(s) > "\uffff" for s in items)
    return string_order_key if needs_utf16 else str


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted as Java sorts them."""
    items = list(strings)
    key = java_string_key(items)
    return sorted(items) if key is str else sorted(items, key=key)


def uuid_hash(most_significant: int, least_significant: int) -> int:
    """``org.apache.kafka.common.Uuid.hashCode`` for the two 64-bit halves."""
    hilo = (most_significant ^ least_significant) & 0xFFFFFFFFFFFFFFFF
    return to_int32((hilo >> 32) ^ hilo)


def collection_copy_capacity(size: int) -> int:
    """Table size of ``new HashSet<>(collection)``: as ``copy_capacity`` but at least 16."""
    return max(copy_capacity(size), 16)


# HashMap bins: a bin that would hold more than this many entries is treeified, or the
# table is doubled instead while it has fewer than _MIN_TREEIFY_CAPACITY buckets.
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


class HashSetOrder(Generic[K]):
    """Which element ``java.util.HashSet.iterator().next()`` returns, under adds and removes.

    Java walks buckets in index order and each bucket's chain in insertion order (a removed
    and re-added key goes to the chain's end); the table starts at 16 buckets and never
    shrinks. It doubles when ``size > 0.75 * capacity`` and also when a bin grows past 8
    entries in a table of fewer than 64 buckets. A bin that grows past 8 entries in a larger
    table becomes a red-black tree with another order; that is not modelled, and
    ``treeified`` turns true so a caller can tell.
    """

    __slots__ = (
        "_bins",
        "_capacity",
        "_hash_of",
        "_hashes",
        "_heap",
        "_next_ticket",
        "_tickets",
        "_unplaced",
        "treeified",
    )

    def __init__(self, hash_of: Callable[[K], int] | None = None) -> None:
        self._capacity = 16
        self._hash_of = hash_of
        """Each key's ``hashCode()``, for keys added without one (``add``)."""
        self._hashes: dict[K, int] = {}
        """The placed keys' hashes."""
        self._tickets: dict[K, int] = {}
        self._unplaced: dict[K, int] = {}
        """Keys added without a hash to a table of 64 buckets or more, with their tickets:
        their buckets are found when the order is first asked for (``first``)."""
        self._bins: dict[int, int] = {}
        self._heap: list[tuple[int, int, K]] = []
        self._next_ticket = 0
        self.treeified = False

    def __len__(self) -> int:
        return len(self._tickets)

    def __contains__(self, key: K) -> bool:
        return key in self._tickets

    def add(self, key: K, java_hash: int | None = None) -> None:
        """``set.add(key)`` for a key whose ``hashCode()`` is ``java_hash`` (``None``: the
        set's ``hash_of(key)``).

        Without a hash, in a table of 64 buckets or more (which only the size doubles),
        the key's bucket is found only when the order is asked for, and a key removed
        before that is never hashed (a scaled group's members, fifty joins a decision,
        each a 42-character member id, while its leader stays). ``treeified`` counts a
        key's bin only once it is placed.
        """
        tickets = self._tickets
        if key in tickets:
            return
        ticket = tickets[key] = self._next_ticket
        self._next_ticket += 1
        capacity = self._capacity
        bucket = None
        if java_hash is not None or capacity < _MIN_TREEIFY_CAPACITY:
            bucket = self._place(key, self._hash(key) if java_hash is None else java_hash)
        else:
            self._unplaced[key] = ticket
        if len(tickets) > self._capacity * 3 // 4:
            self._capacity *= 2
        if self._capacity != capacity:
            self._rebuild()
        elif bucket is not None:
            heapq.heappush(self._heap, (bucket, ticket, key))

    def _hash(self, key: K) -> int:
        if self._hash_of is None:
            raise TypeError("a HashSetOrder made without hash_of takes each key's hash")
        return self._hash_of(key)

    def _place(self, key: K, java_hash: int) -> int:
        """The key's bucket in the table as it is, its hash kept and its bin counted: a
        bin past 8 entries doubles a table of fewer than 64 buckets, or is treeified."""
        capacity = self._capacity
        bucket = spread(java_hash) & (capacity - 1)
        self._hashes[key] = java_hash
        in_bin = self._bins.get(bucket, 0)
        self._bins[bucket] = in_bin + 1
        if in_bin >= _TREEIFY_THRESHOLD:
            if capacity < _MIN_TREEIFY_CAPACITY:
                self._capacity *= 2
            else:
                self.treeified = True
        return bucket

    def _place_unplaced(self) -> None:
        """Every key added without a hash gets its bucket (the table is 64 buckets or
        more: placing never doubles it)."""
        unplaced, heap = self._unplaced, self._heap
        for key, ticket in unplaced.items():
            heapq.heappush(heap, (self._place(key, self._hash(key)), ticket, key))
        unplaced.clear()

    def remove(self, key: K) -> None:
        """``set.remove(key)``; the key must be present."""
        del self._tickets[key]
        if key in self._unplaced:
            del self._unplaced[key]
        else:
            self._bins[spread(self._hashes.pop(key)) & (self._capacity - 1)] -= 1

    def first(self) -> K:
        """``set.iterator().next()``; the set must not be empty."""
        if self._unplaced:
            self._place_unplaced()
        heap = self._heap
        tickets = self._tickets
        while True:
            _, ticket, key = heap[0]
            if tickets.get(key) == ticket:
                return key
            heapq.heappop(heap)

    def signature(self) -> tuple[int, tuple[K, ...]]:
        """The table size and iteration order: all that decides the set's future answers."""
        if self._unplaced:
            self._place_unplaced()
        mask = self._capacity - 1
        hashes = self._hashes
        order = sorted((spread(hashes[k]) & mask, t, k) for k, t in self._tickets.items())
        return self._capacity, tuple(k for _, _, k in order)

    def _rebuild(self) -> None:
        # The placed keys (``_hashes``: each present key but those still unplaced).
        mask = self._capacity - 1
        tickets = self._tickets
        self._heap = [(spread(h) & mask, tickets[k], k) for k, h in self._hashes.items()]
        heapq.heapify(self._heap)
        bins: dict[int, int] = {}
        for bucket, _, _ in self._heap:
            bins[bucket] = bins.get(bucket, 0) + 1
        self._bins = bins
