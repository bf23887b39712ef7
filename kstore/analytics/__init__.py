"""SQL analytics over the store: named queries, replays, comparisons and reports."""

from __future__ import annotations

from kstore.analytics._queries import Query, Result, get_query, queries, run_query, run_sql

__all__ = ["Query", "Result", "get_query", "queries", "run_query", "run_sql"]
