"""Compact per-rebalance facts for analytics, projected beside the assignment rows.

``queries/metrics.sql`` must answer over millions of assignment rows in well under a
second, which rules out partition-level joins at query time. So each
``AssignmentCompleted`` E adds, in the same pass that already follows ``prev(p)``
(``Projector``), the partition-level facts of shared/spec/metrics.md that need the
partitions themselves, and nothing that needs membership or subscriptions (the SQL
joins those):

- ``kstore_holdings``: per member and topic of E: ``partitions`` (distinct), ``shared``
  (of them, assigned by E to another member too), ``kept`` (of the others, those whose
  ``prev(p)`` is this member), ``missing`` (of the others, those that do not exist at
  E: unknown topic or number past its partition count);
- ``kstore_members_at``: the members of the group at E (the fold's), one row per
  subscribed topic (``topic`` NULL for a member subscribing to nothing);
- ``kstore_topics_at``: the topics that exist at E with their partition counts;
- ``kstore_double_assignments``: each (partition, member) of a partition E assigns to
  more than one member;
- ``kstore_revocations``: each (member, partition) of the previous
  ``AssignmentCompleted`` (MemberReplaced aliasing applied) that E does not repeat.
"""

from __future__ import annotations

from typing import Any

from kstore.assignors import TopicPartition
from kstore.store.events import AssignmentCompleted
from kstore.store.fold import GroupState

__all__ = ["ANALYTICS_COLUMNS", "AnalyticsRows"]

_KEY = ("cluster", "group_id", "timeline", "version")
ANALYTICS_COLUMNS: dict[str, tuple[str, ...]] = {
    "kstore_holdings": (
        *_KEY,
        "generation",
        "member",
        "topic",
        "partitions",
        "shared",
        "kept",
        "missing",
    ),
    "kstore_members_at": (*_KEY, "member", "topic"),
    "kstore_topics_at": (*_KEY, "topic", "partitions"),
    "kstore_double_assignments": (*_KEY, "topic", "partition", "member"),
    "kstore_revocations": (*_KEY, "member", "topic", "partition"),
}
"""Table -> its columns, in the order of the migration that creates it."""


class AnalyticsRows:
    """Collects the rows of the ``ANALYTICS_COLUMNS`` tables as columns."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, list[Any]]] = {
            table: {name: [] for name in names} for table, names in ANALYTICS_COLUMNS.items()
        }

    def rows(self) -> int:
        return sum(len(columns["version"]) for columns in self.tables.values())

    def _add(self, table: str, key: tuple[Any, ...], rows: list[tuple[Any, ...]]) -> None:
        columns = self.tables[table]
        names = ANALYTICS_COLUMNS[table]
        for name, value in zip(_KEY, key, strict=True):
            columns[name].extend([value] * len(rows))
        for offset, name in enumerate(names[len(_KEY) :]):
            columns[name].extend(row[offset] for row in rows)

    def assignment(
        self,
        state: GroupState,
        data: AssignmentCompleted,
        previous: dict[str, tuple[TopicPartition, ...]],
        last_owner: dict[TopicPartition, str],
    ) -> None:
        """Rows for E = ``data``: ``state`` is the fold after E, ``previous`` the
        assignment before it and ``last_owner`` gives ``prev(p)`` (not yet updated by E).
        """
        stream = state.stream
        assert stream is not None
        key = (*stream, state.version)
        held: dict[str, set[TopicPartition]] = {m: set(tps) for m, tps in data.assignment.items()}
        owners: dict[TopicPartition, list[str]] = {}
        for member, tps in held.items():
            for tp in tps:
                owners.setdefault(tp, []).append(member)
        topics = state.topics

        counts: dict[tuple[str, str], list[int]] = {}
        for member, tps in held.items():
            for tp in tps:
                cell = counts.setdefault((member, tp[0]), [0, 0, 0, 0])
                cell[0] += 1
                if len(owners[tp]) > 1:
                    cell[1] += 1
                    continue
                if last_owner.get(tp) == member:
                    cell[2] += 1
                if tp[1] >= topics.get(tp[0], 0):
                    cell[3] += 1
        self._add(
            "kstore_holdings",
            key,
            [(data.generation, m, t, *cell) for (m, t), cell in counts.items()],
        )
        self._add(
            "kstore_members_at",
            key,
            [
                (member_id, topic)
                for member_id, member in state.members.items()
                for topic in (dict.fromkeys(member.topics) or (None,))
            ],
        )
        self._add("kstore_topics_at", key, list(topics.items()))
        self._add(
            "kstore_double_assignments",
            key,
            [(tp[0], tp[1], m) for tp, ms in owners.items() if len(ms) > 1 for m in ms],
        )
        revoked = [
            (member, tp[0], tp[1])
            for member, tps in previous.items()
            for tp in dict.fromkeys(tps)
            if tp not in held.get(member, ())
        ]
        self._add("kstore_revocations", key, revoked)
