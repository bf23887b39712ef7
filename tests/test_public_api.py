"""The public surface, pinned: a change here is a change users see."""

from __future__ import annotations

import importlib

import kstore

PUBLIC = {
    "kstore": [
        "AssignmentRequest",
        "AssignmentResult",
        "ContractError",
        "MemberSubscription",
        "__version__",
        "assign",
        "coordinator_partition",
        "get_assignor",
        "parse_request",
        "partition_for_key",
        "strategies",
    ],
}


def test_top_level_surface_is_pinned() -> None:
    assert sorted(kstore.__all__) == sorted(PUBLIC["kstore"])
    for name in kstore.__all__:
        assert hasattr(kstore, name), name


def test_every_public_name_of_a_private_module_is_declared() -> None:
    # httpx style: modules say what they export; nothing private leaks through __all__.
    for module_name in [
        "kstore._java",
        "kstore.assignors",
        "kstore.assignors._contract",
        "kstore.partitioner",
        "kstore.store",
    ]:
        module = importlib.import_module(module_name)
        exported = module.__all__
        assert all(not name.startswith("_") or name == "__version__" for name in exported)
        for name in exported:
            assert hasattr(module, name), f"{module_name}.{name}"
