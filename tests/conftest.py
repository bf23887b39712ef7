"""The whole suite's hooks: ``xdist_group`` kept working under pytest 9.

``make test`` runs ``pytest -n 2 --dist loadgroup``: the tests of an ``xdist_group``
(``spark``: one Spark session; ``broker``: one Tansu broker, one test after the other;
``chromium``) run in one worker. pytest-xdist (3.8) tells its scheduler a test's group
by renaming the test ``NODEID@GROUP`` in the worker, through ``item._nodeid``; pytest 9
keeps a node's id in ``item._id`` and no longer reads ``_nodeid``, so the names went
out without their groups and every grouped test was scheduled as a test of its own:
the Spark tests ran in both workers, each starting (and warming up) a Spark session of
its own, and broker tests ran beside each other on two brokers.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each grouped test named ``NODEID@GROUP`` as pytest-xdist's loadgroup reads it,
    where its own renaming did not take (pytest 9); nothing otherwise."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        grouped = item.nodeid.rfind("@") > item.nodeid.rfind("]")  # xdist's own test
        if names and not grouped:
            item._id = _node_id(f"{item.nodeid}@{'_'.join(sorted(names))}")


def _node_id(text: str) -> object:
    from _pytest.nodeid import NodeId

    return NodeId.parse(text)
