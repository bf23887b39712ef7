"""A writer process for the multi-process tests: ``python -m tests.store._writer``.

Arguments: STORE NAME BATCHES SIZE PARTITIONS. Appends BATCHES batches of SIZE
``AssignmentCompleted`` events of a PARTITIONS-partition topic to the stream of group
``shared``; event ids are ``NAME-batch-index``, so the parent can check every batch is
stored whole or not at all.
"""

from __future__ import annotations

import sys

from kstore.model import AssignmentCompleted
from kstore.store.log import Store
from tests.store.events_gen import make_event


def main() -> None:
    path, name, batches, size, partitions = sys.argv[1:6]
    store = Store(path)
    width = int(partitions)
    for batch in range(int(batches)):
        events = [
            make_event(
                AssignmentCompleted(
                    generation=batch,
                    strategy="range",
                    assignment={
                        f"{name}-{m}": [("t", p) for p in range(m, width, 4)] for m in range(4)
                    },
                ),
                batch,
                group="shared",
                event_id=f"{name}-{batch}-{index}",
            )
            for index in range(int(size))
        ]
        store.append(events)
        print(f"batch {batch}", flush=True)


if __name__ == "__main__":
    main()
