"""Generated scenarios for load and exploration: ``--generate KIND --members N --steps K``."""

from __future__ import annotations

import random
from typing import Any

from kstore._errors import UsageError, near_or_known
from kstore._limits import MAX_MEMBER_STEPS, MAX_MEMBERS, MAX_STEPS
from kstore.model.strategies import Protocol
from kstore.simulate.scenario import Scenario

__all__ = ["KINDS", "check_kind", "generate"]

KINDS = ("steady-churn", "autoscaling", "flapping-member", "rolling-deploy")

_GAP_MS = 20_000


def _name(i: int) -> str:
    return f"c-{i:03d}"


def check_kind(kind: str) -> None:
    """Refuse a ``--generate`` KIND that is none of ``KINDS``."""
    if kind not in KINDS:
        raise UsageError(f"--generate: unknown kind {kind!r}{near_or_known(kind, KINDS)}")


def generate(
    kind: str, *, members: int, steps: int, seed: int, protocol: Protocol | None = None
) -> Scenario:
    """A scenario of ``steps`` timed steps over a group of ``members`` consumers (of
    ``protocol``; none: the strategy's, eager for the default ``range``).

    - ``steady-churn``: members leave, crash and join at random, the size staying near N;
    - ``autoscaling``: the group is scaled between N/2 and 2N (at most ``MAX_MEMBERS``)
      and back;
    - ``flapping-member``: one member is cut off, slowed and restarted over and over;
    - ``rolling-deploy``: members restart one after the other, round after round.
    """
    check_kind(kind)
    # Each named alone: "--members must be at least 1 and --steps at least 0" for
    # --members -5 sent the user looking at a --steps they had not given.
    if members < 1:
        raise UsageError(f"--members {members:,}: must be at least 1")
    if steps < 0:
        raise UsageError(f"--steps {steps:,}: must be at least 0")
    # Refused before anything is built: a list of 100,000,000 names grew with no end.
    if members > MAX_MEMBERS:
        raise UsageError(f"--members {members:,}: kstore simulates at most {MAX_MEMBERS:,} members")
    if steps > MAX_STEPS:
        raise UsageError(f"--steps {steps:,}: kstore generates at most {MAX_STEPS:,} steps")
    if members * steps > MAX_MEMBER_STEPS:
        raise UsageError(
            f"--members {members:,} with --steps {steps:,}: {members * steps:,} members times "
            f"steps; kstore simulates at most {MAX_MEMBER_STEPS:,} (fewer of either)"
        )
    rng = random.Random(seed)
    partitions = max(members * 2, 12)
    racks = ["r1", "r2", "r3"]
    alive = [_name(i) for i in range(members)]
    next_index = members
    plan: list[dict[str, Any]] = []
    at = 30_000
    for _ in range(steps):
        at += rng.randrange(_GAP_MS // 2, _GAP_MS * 3 // 2)
        step: dict[str, Any] = {"at": at}
        if kind == "steady-churn":
            roll = rng.random()
            if (roll < 0.45 or len(alive) <= 1) and len(alive) < members * 3 // 2 + 1:
                name = _name(next_index)
                next_index += 1
                alive.append(name)
                step["join"] = {"name": name, "topics": ["events"], "rack": rng.choice(racks)}
            elif roll < 0.75:
                step["leave"] = alive.pop(rng.randrange(len(alive)))
            else:
                step["restart"] = {
                    "member": rng.choice(alive),
                    "down": rng.randrange(1_000, 60_000),
                    "clean": rng.random() < 0.5,
                }
        elif kind == "autoscaling":
            step["scale"] = rng.randrange(max(members // 2, 1), min(members * 2, MAX_MEMBERS) + 1)
        elif kind == "flapping-member":
            action = rng.choice(["cut-off", "slow", "restart"])
            if action == "restart":
                step["restart"] = {"member": alive[0], "down": rng.randrange(1_000, 30_000)}
            else:
                step[action] = {"member": alive[0], "for": rng.randrange(5_000, 90_000)}
        else:
            step["restart"] = {"member": alive[len(plan) % len(alive)], "down": 8_000}
        plan.append(step)
    return Scenario.model_validate(
        {
            "name": f"{kind}-{members}-{steps}-{seed}",
            "protocol": protocol,
            "topics": {"events": partitions},
            "members": [{"count": members, "topics": ["events"], "racks": racks}],
            "steps": plan,
            "until": at + 300_000,
        }
    )
