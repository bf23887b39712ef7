"""Run a scenario on the simulated clock, appending its events to the store as it goes.

Resuming: the events a timeline already holds are the start of this run. The run is
replayed from the beginning (it is deterministic), each event it produces is checked
against the stored one, the assignor requests come from the fold of those stored
events, and only what comes after them is appended. A run killed halfway and started
again therefore ends with exactly the events of a run straight through.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kstore._apart import FORKS, Apart
from kstore._gc import cyclic_gc_paused
from kstore._text import counted
from kstore.model.events import AssignmentCompleted, Event, StreamId
from kstore.model.fold import GroupState
from kstore.protocol.classic import ClassicGroupSim
from kstore.protocol.consumer import ConsumerGroupSim
from kstore.protocol.group import GroupSim, MemberSpec, NotNow, ResumeMismatch
from kstore.simulate.scenario import MemberGroup, Scenario, ScenarioError, Step
from kstore.store.writer import Writer

if TYPE_CHECKING:
    from kstore.store.interface import EventStore

__all__ = ["RunResult", "build_sim", "initial_members", "run_scenario"]

FLUSH_EVERY = 2_000
"""Events an append takes at least. Into a store file, a batch is handed to a forked
copy that appends it while the run goes on, as soon as the last batch is stored (so
batches grow while the store is the slower). Into another store (in this process's
memory), the run's first append takes this many and each later one up to twice as
many as the one before, up to ``FLUSH_MOST``: each append costs time that grows with
what the store holds (docs/simulation.md#speed)."""
FLUSH_MOST = 16_000
"""Events per append at most, into a store that is not appended apart."""
FLUSH_HEAVY = 500_000
"""Members and partitions the assignments of a batch (its ``AssignmentCompleted`` events)
hold at most before it is appended, whatever its count of events: a rebalance of 1,000
members over 2,000 partitions is an assignment of 3,000 entries (84 KB of JSON), kept
with what the fold recorded of it (``GroupState.applied``) until stored, and appending
takes about four times what the batch holds; counted in events alone, batches growing
to 16,000 held the whole run of 4,000 steps (3.3 GB). A batch's memory is thus bounded
by this and the group's size, not by the run's length (docs/performance.md)."""


def _cpu_times() -> tuple[int, int] | None:
    """The machine's idle and total CPU time so far (``/proc/stat``, in ticks), or None
    where there is no such file."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return ticks[3] + ticks[4], sum(ticks[:8])  # idle + iowait; user .. steal


def _core_free(
    since: tuple[int, int] | None, made_apart: tuple[float, float] | None = None
) -> bool:
    """Whether to append a store file's batches in a forked process while the run goes
    on (``Writer.flush_apart``): ``KSTORE_APPEND_APART`` 1 or 0; else whether half a core
    or more was idle while the run made its first batch (``since``: ``_cpu_times`` at its
    start), or, where that cannot be read, whether the load average is a core below the
    machine's count. ``made_apart`` (the run's CPU seconds, the copy's): a forked copy
    created the store meanwhile, so the others' use is what was busy beyond those two,
    and half a core must be left beside it and the run's whole one.

    Appending apart costs a quarter to two fifths more CPU (more, smaller batches, pages
    copied on write), which a busy machine pays in wall time; the last minute's load
    average alone misjudged a run started right after another command."""
    forced = os.environ.get("KSTORE_APPEND_APART")
    if forced in ("0", "1"):
        return forced == "1"
    now = _cpu_times()
    if since is None or now is None or now[1] <= since[1]:
        return os.getloadavg()[0] <= (os.cpu_count() or 1) - 1
    cores, ticks = os.cpu_count() or 1, now[1] - since[1]
    if made_apart is not None:
        own = sum(made_apart) * os.sysconf("SC_CLK_TCK")
        others = max(ticks - (now[0] - since[0]) - own, 0) / ticks * cores
        return cores - 1 - others >= 0.5
    idle = (now[0] - since[0]) / ticks * cores
    return idle >= 0.5


@dataclass(frozen=True, slots=True)
class RunResult:
    sim: GroupSim
    stream: StreamId
    resumed: int
    """Events that were in the store already."""
    appended: int
    complete: bool = True
    """False when ``stop`` ended the run before the scenario's end."""


def _specs(group: MemberGroup, strategy: str, start: int) -> list[MemberSpec]:
    # The group's fields read once (each a pydantic attribute): a scale step's dozens of
    # new members.
    protocols = tuple(group.protocols) if group.protocols else (strategy,)
    named, prefix, topics, rack, racks = (
        group.name,
        group.prefix,
        tuple(group.topics),
        group.rack,
        group.racks,
    )
    static = group.static
    out = []
    for i in range(group.count):
        name = named or f"{prefix}{start + i:03d}"
        if racks:
            rack = racks[i % len(racks)]
        out.append(MemberSpec(name, topics, protocols, rack, name if static else None))
    return out


def initial_members(scenario: Scenario) -> list[MemberSpec]:
    specs: list[MemberSpec] = []
    for group in scenario.members:
        specs.extend(_specs(group, scenario.default_strategy, len(specs)))
    return specs


def build_sim(
    scenario: Scenario,
    stream: StreamId,
    seed: int,
    stored: list[Event],
    state: GroupState | None = None,
) -> GroupSim:
    common = {
        "start": scenario.start,
        "settings": scenario.settings,
        "seed": seed,
        "stored": stored,
        "state": state,
    }
    if (protocol := scenario.rebalance_protocol) == "consumer":
        return ConsumerGroupSim(stream, strategy=scenario.default_strategy, **common)  # type: ignore[arg-type]
    return ClassicGroupSim(stream, protocol=protocol, **common)  # type: ignore[arg-type]


class _Driver:
    """Turns a scenario's steps into calls on the simulation at their times."""

    def __init__(self, sim: GroupSim, scenario: Scenario) -> None:
        self.sim = sim
        self.scenario = scenario
        self.template = scenario.members[0]
        self.spawned = sum(g.count for g in scenario.members)

    def schedule(self) -> None:
        sim, scenario = self.sim, self.scenario
        for topic, topic_spec in scenario.topics.items():
            sim.set_topic(topic, topic_spec.partitions, topic_spec.racks)
        for member in initial_members(scenario):
            sim.start_client(member)
        for index, step in enumerate(scenario.steps):
            sim.queue.schedule(step.at, f"step:{index}", lambda i=index: self.step(i))  # type: ignore[misc]

    def step(self, index: int) -> None:
        """The scenario's step ``index``; what it cannot do then (a member that is not
        there, or running already) is named at its line."""
        step = self.scenario.steps[index]
        try:
            self.run(step)
        except NotNow as exc:
            where = self.scenario.where("steps", index, step.action)
            raise ScenarioError(f"{where} (at {step.at:,} ms): {exc}") from None

    def run(self, step: Step) -> None:
        sim = self.sim
        if step.join is not None:
            j = step.join
            protocols = tuple(j.protocols) if j.protocols else (self.scenario.default_strategy,)
            instance = j.name if j.static else None
            sim.start_client(MemberSpec(j.name, tuple(j.topics), protocols, j.rack, instance))
        elif step.leave is not None:
            sim.stop_client(step.leave, clean=True)
        elif step.crash is not None:
            sim.stop_client(step.crash, clean=False)
        elif step.restart is not None:
            sim.restart_client(step.restart.member, step.restart.down, clean=step.restart.clean)
        elif step.rolling_restart is not None:
            roll = step.rolling_restart
            for i, name in enumerate(self.sim.running()):
                sim.queue.schedule(
                    sim.now + i * roll.interval,
                    f"roll:{step.at}:{name}",
                    lambda n=name: sim.restart_client(n, roll.down, clean=roll.clean),  # type: ignore[misc]
                )
        elif step.scale is not None:
            self._scale(step.scale)
        elif step.subscribe is not None:
            sim.change_subscription(step.subscribe.member, tuple(step.subscribe.topics))
        elif step.partitions is not None:
            p = step.partitions
            sim.set_topic(p.topic, p.count, p.racks)
        elif step.slow is not None:
            sim.slow_down(step.slow.member, step.slow.duration)
        elif step.cut_off is not None:
            sim.cut_off(step.cut_off.member, step.cut_off.duration)
        else:
            sim.coordinator_failover()

    def _scale(self, target: int) -> None:
        alive = self.sim.running()
        if target < len(alive):
            self.sim.stop_each(alive[target:][::-1])
            return
        template = self.template.model_copy(update={"name": None, "count": target - len(alive)})
        self.sim.start_each(_specs(template, self.scenario.default_strategy, self.spawned))
        self.spawned += template.count


@cyclic_gc_paused()
def run_scenario(
    scenario: Scenario,
    *,
    store: EventStore | None,
    timeline: str,
    seed: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
    stop_after: int | None = None,
    new_store: bool = False,
) -> RunResult:
    """Run ``scenario`` into ``store`` (or only in memory when ``store`` is ``None``).

    ``new_store``: ``store`` is a store file that does not exist yet. It is created
    (``Store.init``) in a forked copy of this process while the run begins (a second of
    wall time on the critical path otherwise), its first append waiting for it; the run
    waits for it however it ends (a store half made would be a damaged file).

    ``progress(now_ms, end_ms, to_check)`` is called as simulated time advances;
    ``to_check``: of the events a resumed run found stored, those not yet made again
    (each is made again and checked before anything new is stored). ``stop``, asked as
    often, ends the run early: the events made so far are stored (a batch being stored
    apart is waited for) and the result is not ``complete``; the same run resumes it.
    ``stop_after``
    ends the run once that many events have been appended (for resume tests: a run cut
    short exactly as a killed one).
    """
    stream = StreamId(scenario.cluster, scenario.group_id, timeline)
    writer = None
    apart_if_free = False
    stored: list[Event] = []
    state = None
    began, began_cpu = _cpu_times(), time.process_time()
    making: Apart | None = None  # the store being created apart
    if store is not None:
        from kstore.store.log import Store

        # batches cut by the run (``ready``: ``FLUSH_HEAVY`` weighed there), not the writer
        writer = Writer(store, batch_events=None, batch_entries=None)
        apart_if_free = isinstance(store, Store)
        if new_store and isinstance(store, Store) and FORKS:
            making = Apart(store.init, "creating the store")
            stored = list(writer.stored(stream, 0))  # a new store holds nothing
        else:
            if new_store and isinstance(store, Store):
                store.init()
            stored = list(writer.stored(stream))
        state = writer.fold()
    sim = build_sim(scenario, stream, seed, stored, state)
    driver = _Driver(sim, scenario)
    appended = 0
    batch_size = FLUSH_EVERY
    weighed = weight = 0  # of ``sim.emitted``: the events weighed, their assignments' size
    made_apart: tuple[float, float] | None = None

    def made() -> None:
        """Wait for the store being created apart, if it is (its error raised)."""
        nonlocal making, made_apart
        if making is not None:
            creating, making = making, None
            creating.result()
            made_apart = (time.process_time() - began_cpu, creating.cpu)

    def flush(last: bool) -> None:
        nonlocal appended, batch_size, apart_if_free, weighed, weight
        if writer is None or not sim.emitted:
            return  # in memory, ``sim.emitted`` keeps the whole run
        made()
        if apart_if_free:  # decided once, at the first batch: how busy is the machine now
            writer.apart, apart_if_free = _core_free(began, made_apart), False
        batch, sim.emitted = sim.emitted, []
        weighed = weight = 0
        if stop_after is not None:
            batch = batch[: max(stop_after - appended, 0)]
        writer.add(batch, fold=sim.state)
        if last or not writer.apart:
            writer.flush()
        else:
            writer.flush_apart()
        appended += len(batch)
        batch_size = min(batch_size * 2, FLUSH_MOST)

    def heavy() -> bool:
        """Whether the events not yet handed over hold ``FLUSH_HEAVY`` members and
        partitions in their assignments (each event weighed once)."""
        nonlocal weighed, weight
        emitted = sim.emitted
        if len(emitted) > weighed:
            for event in emitted[weighed:]:  # one or none most ticks
                data = event.data
                if type(data) is AssignmentCompleted:  # exact: no pydantic metaclass check
                    shares = data.assignment
                    weight += len(shares) + sum(map(len, shares.values()))
            weighed = len(emitted)
        return weight >= FLUSH_HEAVY

    def ready() -> bool:
        """Whether to hand the events over now: apart, as soon as the last batch is
        stored (at least ``FLUSH_EVERY`` events), so the store is kept busy and the run
        never waits for it; else in batches growing to ``FLUSH_MOST``. Either way once
        its assignments hold ``FLUSH_HEAVY`` entries (apart, the last batch waited for)."""
        if writer is not None and heavy():
            return True
        if writer is not None and writer.apart:
            return len(sim.emitted) >= FLUSH_EVERY and not writer.appending
        return len(sim.emitted) >= batch_size

    driver.schedule()
    end = scenario.end
    ticks = 0
    try:
        while sim.queue.run_next(end):
            ticks += 1
            if ready():
                flush(last=False)
                if stop_after is not None and appended >= stop_after:
                    if writer is not None:
                        writer.wait()
                    return RunResult(sim, stream, len(stored), appended)
            if ticks % 256 == 0:
                if progress is not None:
                    progress(sim.now, end, max(len(stored) - sim.state.version, 0))
                if stop is not None and stop():
                    flush(last=True)
                    made()
                    if writer is not None:
                        writer.wait()
                    return RunResult(sim, stream, len(stored), appended, complete=False)
        sim.run_until(end)
        if sim.state.version < len(stored):
            raise ResumeMismatch(
                f"timeline {stream} holds {counted(len(stored), 'event')}, more than this "
                f"simulation writes ({sim.state.version}); use another --timeline"
            )
        flush(last=True)
        made()
    except ScenarioError as exc:  # a step the group cannot take then (``_Driver.step``)
        if writer is None:
            raise
        # As at Ctrl-C, the events before it are kept: the run goes on from them once
        # the step is mended (the same events again, checked, then the rest).
        flush(last=True)
        made()
        writer.wait()
        raise ScenarioError(
            f"{exc}; the {counted(len(stored) + appended, 'event')} before it are stored in "
            f"timeline {stream}: mend the step and run again to go on from them"
        ) from None
    except BaseException:
        if writer is not None:
            # The batch being appended apart is not stored: the store stays at the end
            # of the last one, where a resume starts (Ctrl-C ends the run at once).
            writer.abandon()
        if making is not None:  # the store is made whole all the same (a second)
            with contextlib.suppress(Exception):
                making.result()
        raise
    sim.finish()
    if progress is not None:
        progress(end, end, 0)
    return RunResult(sim, stream, len(stored), appended)
