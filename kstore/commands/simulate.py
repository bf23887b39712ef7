"""``kstore simulate``: run a scenario (a file or a generated one) into the store."""

from __future__ import annotations

import shlex
import sys
from datetime import timedelta
from importlib.resources import as_file
from pathlib import Path

import typer
from rich.progress import TextColumn

from kstore._errors import Interrupted, UsageError, did_you_mean, near_or_known
from kstore._examples import near_examples, scenario_named
from kstore._text import counted
from kstore.analytics import run_query
from kstore.commands._output import progress_bar
from kstore.commands._stop import stop_requested
from kstore.model._timelines import new_timeline
from kstore.model.events import format_span
from kstore.model.strategies import (
    CLASSIC_STRATEGIES,
    CONSUMER_STRATEGIES,
    COOPERATIVE_STRATEGIES,
    Protocol,
    fitting,
)
from kstore.simulate import (
    Scenario,
    ScenarioError,
    generate,
    load_scenario,
    run_scenario,
    summarise,
)
from kstore.simulate.generate import check_kind
from kstore.store.log import Store

__all__ = ["simulate"]


def _scenario(
    file: str | None,
    kind: str | None,
    members: int,
    steps: int,
    seed: int,
    protocol: str | None,
) -> Scenario:
    if kind is not None:
        # First: `--generate --strategy X` takes --strategy as the kind, X as the file.
        check_kind(kind)
    if file is None and kind is None:
        raise UsageError(
            "give a SCENARIO file (or an example's name: kstore examples) or --generate KIND"
        )
    if file is not None and kind is not None:
        raise UsageError("give a SCENARIO file or --generate KIND, not both")
    if kind is not None:
        return generate(kind, members=members, steps=steps, seed=seed)
    assert file is not None
    if not Path(file).exists() and (shipped := scenario_named(file)) is not None:
        # The shipped example the docs name (examples/NAME.yaml) or NAME: an install has
        # no examples/ beside it; a file of that path, when there is one, comes first.
        with as_file(shipped) as path:
            return load_scenario(path)
    try:
        return load_scenario(Path(file))
    except ScenarioError as exc:
        if Path(file).exists():
            raise
        if near := near_examples(file):
            raise ScenarioError(
                f"{file}: no such file nor shipped example; "
                f"{did_you_mean(near)} (kstore examples lists them)"
            ) from None
        raise ScenarioError(f"{exc}; the shipped examples: kstore examples") from None


def _override(scenario: Scenario, strategy: str | None, protocol: str | None) -> Scenario:
    """``--protocol`` / ``--strategy``: every member then offers the group's strategy.

    The protocol run: ``--protocol`` when given, else the scenario's own ``protocol:``,
    else Kafka's rule for what the members offer (``Scenario.rebalance_protocol``:
    cooperative when that is only cooperative strategies, so ``--strategy
    cooperative-sticky`` alone runs the cooperative protocol)."""
    if protocol is None and strategy is None:
        return scenario
    proto = protocol or scenario.protocol
    protocols = ("eager", "cooperative", "consumer")
    if proto is not None and proto not in protocols:
        raise UsageError(f"--protocol: unknown protocol {proto!r}{near_or_known(proto, protocols)}")
    allowed = CONSUMER_STRATEGIES if proto == "consumer" else CLASSIC_STRATEGIES
    if strategy is not None:
        try:
            fitting(strategy, proto or "eager")
        except ValueError as exc:
            hint = ""
            if protocol is None and strategy in CONSUMER_STRATEGIES:
                # Kafka never infers the consumer protocol (group.protocol=consumer); say
                # how to ask for it.
                hint = "; add --protocol consumer for the consumer protocol (KIP-848)"
            raise UsageError(f"--strategy: {exc}{hint}") from None
        if proto == "cooperative" and strategy not in COOPERATIVE_STRATEGIES:
            said = (
                "--protocol cooperative" if protocol else f"{scenario.name}'s protocol cooperative"
            )
            raise UsageError(
                f"--strategy {strategy}: {said} needs a cooperative strategy "
                f"({', '.join(s for s in allowed if s in COOPERATIVE_STRATEGIES)})"
                + ("" if protocol else "; add --protocol eager to run it eager")
            )
        if protocol is None and proto == "eager" and strategy in COOPERATIVE_STRATEGIES:
            # Kafka allows it, but the user asking for cooperative-sticky on a scenario
            # that says eager got the eager numbers with no word.
            print(
                f"kstore: note: {scenario.name} sets protocol eager: {strategy} runs under "
                "it (--protocol cooperative for the cooperative protocol)",
                file=sys.stderr,
            )
    if strategy is None and scenario.strategy in allowed and proto != "cooperative":
        strategy = scenario.strategy
    raw = scenario.model_dump(by_alias=True)
    raw.update(protocol=proto, strategy=strategy)
    for group in raw["members"]:
        group["protocols"] = None
    return Scenario.model_validate(raw)


def simulate(
    store_path: Path,
    file: str | None,
    *,
    kind: str | None,
    members: int,
    steps: int,
    seed: int,
    strategy: str | None,
    protocol: Protocol | None,
    timeline: str | None,
    progress: bool,
) -> None:
    scenario = _override(_scenario(file, kind, members, steps, seed, protocol), strategy, protocol)
    timeline = new_timeline(timeline, f"sim/{scenario.name}")
    store = Store(store_path)
    new_store = not store_path.exists()  # created while the run begins (``run_scenario``)
    show = progress or sys.stderr.isatty()
    with progress_bar(
        "{task.description}",
        TextColumn("{task.percentage:>3.0f}% of simulated time"),
        show=show,
    ) as bar:
        task = bar.add_task(f"simulating {scenario.name}", total=scenario.end)

        def told(now: int, end: int, to_check: int) -> None:
            # A resumed run makes the stored events again first: its bar restarting near
            # 0% read as the work lost.
            said = (
                f"checking {counted(to_check, 'stored event')} of " if to_check else "simulating "
            )
            bar.update(task, completed=now, total=end, description=said + scenario.name)

        with stop_requested() as stopped:
            result = run_scenario(
                scenario,
                store=store,
                timeline=timeline,
                seed=seed,
                progress=told,
                stop=stopped.is_set,
                new_store=new_store,
            )
    if not result.complete:
        kept = result.resumed + result.appended
        raise Interrupted(
            f"simulation interrupted at {format_span(timedelta(milliseconds=result.sim.now))} "
            f"of {format_span(timedelta(milliseconds=scenario.end))} simulated: "
            f"{counted(kept, 'event')} stored in timeline {timeline!r}; resume with the same "
            f"command: {shlex.join(['kstore', *sys.argv[1:]])}"
        )
    cluster, group, timeline = result.stream
    compared = run_query(
        store, "compare", {"cluster": cluster, "group": group, "timelines": timeline}
    ).records()
    summary = summarise(result.sim, int(compared[0]["churn"]) if compared else 0)
    for line in summary.lines():
        typer.echo(line)
    stored = f"{counted(result.appended, 'event')} appended"
    if result.resumed:
        stored += f" (resumed after {result.resumed:,} already stored)"
    typer.echo(f"store        {stored} to {store_path}")
