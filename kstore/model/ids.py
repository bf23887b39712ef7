"""Event ids: one recipe for every producer.

An event's id is a name-based UUID (version 5) of what identifies the fact to the
producer that saw it: a simulated stream and its version, a replay's target and source
event, a recorder's group and generation. The same fact seen again (a retry, a resumed
run, a second recorder of the same group) gets the same id, so the store's idempotent
append keeps it once.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable

__all__ = ["event_id", "event_ids", "uuid5_bytes", "uuid5_text"]

_NAMESPACE = uuid.UUID("6d1f3c52-8a54-4f0e-9a43-3f1b0e7c2a61")
_NAMESPACE_BYTES = _NAMESPACE.bytes
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}
"""The first hex digit of a UUID's fourth group, its top two bits set to the variant's."""


def uuid5_bytes(name: str) -> bytes:
    """``uuid.uuid5(namespace, name).bytes`` without building a ``UUID`` (a hot path)."""
    raw = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name.encode()).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


def uuid5_text(name: str) -> str:
    """``str(uuid.uuid5(namespace, name))``, from the digest's hex text with its version
    and variant digits set (each event's id: a hot path)."""
    h = hashlib.sha1(_NAMESPACE_BYTES + name.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def event_id(*parts: object) -> str:
    """The id of the fact named by ``parts`` (joined by ``#``): the same on every run."""
    return uuid5_text("#".join(map(str, parts)))


def event_ids(*parts: object) -> Callable[[object], str]:
    """``event_id(*parts, last)`` as a function of ``last``, the other parts joined once
    (a producer that numbers its events: each id is a hot path)."""
    prefix = "".join(f"{part}#" for part in parts)
    return lambda last: uuid5_text(f"{prefix}{last}")
