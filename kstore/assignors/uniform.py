"""KIP-848 ``uniform``: the group coordinator's ``UniformAssignor`` (Kafka 4.0).

Sticky to each member's current assignment (``owned``) and balanced by partition count.
A group whose members all list the same topic names goes to the homogeneous builder,
any other group to the heterogeneous one; see ``docs/assignors/uniform.md``.
"""

from __future__ import annotations

from kstore.assignors._contract import AssignmentRequest, AssignmentResult
from kstore.assignors._uniform_heterogeneous import assign_heterogeneous
from kstore.assignors._uniform_homogeneous import assign_homogeneous
from kstore.assignors._uniform_model import build_group, to_result

__all__ = ["UNIFORM", "UniformAssignor"]


class UniformAssignor:
    """``org.apache.kafka.coordinator.group.assignor.UniformAssignor``."""

    name = "uniform"
    reads_owned = True

    def assign(self, request: AssignmentRequest) -> AssignmentResult:
        group = build_group(request)
        if not group.member_ids:
            assignment = []
        elif group.homogeneous:
            assignment = assign_homogeneous(group)
        else:
            assignment = assign_heterogeneous(group)
        return to_result(group, request, assignment)


UNIFORM = UniformAssignor()
