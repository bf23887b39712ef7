"""kstore's errors: one hierarchy under ``KstoreError``.

Every error kstore raises to its callers is a ``KstoreError`` (a few private exceptions
signal inside one module and never leave it); the CLI prints it as one line
(``kstore: error: <message>``) and exits with its ``exit_code``. ``UsageError`` (exit 2)
is bad input: a request off the contract, an event, a scenario, a dump or a record that
cannot be decoded. The store's own errors (``SchemaError``, ``ConcurrencyError``,
``StoreBusyError``) are exported by ``kstore.store``, which this module does not import.
The errors of the other packages are loaded on first use (``kstore._lazy``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kstore._errors import KstoreError, UsageError
from kstore._lazy import lazy

if TYPE_CHECKING:
    from kstore.assignors._contract import ContractError
    from kstore.model.events import EventError
    from kstore.model.strategies import UnknownStrategy
    from kstore.record.offsets_codec import OffsetsDecodeError
    from kstore.record.offsets_events import DumpFormatError
    from kstore.simulate.scenario import ScenarioError

__all__ = [
    "ContractError",
    "DumpFormatError",
    "EventError",
    "KstoreError",
    "OffsetsDecodeError",
    "ScenarioError",
    "UnknownStrategy",
    "UsageError",
]

__getattr__ = lazy(
    __name__,
    {
        "ContractError": "kstore.assignors._contract",
        "EventError": "kstore.model.events",
        "UnknownStrategy": "kstore.model.strategies",
        "OffsetsDecodeError": "kstore.record.offsets_codec",
        "DumpFormatError": "kstore.record.offsets_events",
        "ScenarioError": "kstore.simulate.scenario",
    },
)
