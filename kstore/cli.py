"""The command line: parses arguments and calls one function per command, nothing more."""

from __future__ import annotations

import copy
import io
import os
import stat
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from kstore._errors import KstoreError, UsageError
from kstore._extras import missing_extra
from kstore._gc import uncollected_to_exit
from kstore._lazy import one_blas_thread, without_pandas
from kstore.commands._stop import interrupted_says

__all__ = ["app", "main", "store_first"]


class _PipeClosed(Exception):
    """A broken pipe, past typer: it turns an ``OSError`` EPIPE into exit status 1."""


class _OutputFailed(OSError):
    """A write to standard output failed (``kstore events > /dev/full``): named as such,
    not as any ``OSError`` (it read ``OSError: [Errno 28] No space left on device``)."""


class _Output(io.RawIOBase):
    """Standard output's descriptor, its write errors but a closed pipe (that one ends a
    command quietly) raised as ``_OutputFailed``."""

    def __init__(self, descriptor: int) -> None:
        super().__init__()
        self._descriptor = descriptor

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._descriptor

    def isatty(self) -> bool:
        return os.isatty(self._descriptor)

    def write(self, data: Any) -> int:
        try:
            return os.write(self._descriptor, data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _OutputFailed(exc.errno, exc.strerror) from None


def _watched_stdout() -> None:
    """``sys.stdout`` written through ``_Output``, as it was otherwise (encoding, errors,
    line buffering); left alone when it is no descriptor (a test's stream)."""
    stream = sys.stdout
    if stream is not sys.__stdout__ or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):
        return
    stream.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_Output(descriptor)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
    )


def _output_failed(exc: OSError) -> NoReturn:
    """Standard output could not be written: one line, exit status 2 (as ``--out`` that
    cannot be written). What is still buffered goes to /dev/null, so that the
    interpreter's last flush says nothing more."""
    _stdout_to_devnull()
    _fail(f"cannot write to standard output: {exc.strerror}", 2)


def _stdout_to_devnull() -> None:
    """Standard output's descriptor pointed at /dev/null: the interpreter's last flush
    of what is still buffered says nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
    os.close(devnull)


class _Commands(TyperGroup):
    def invoke(self, ctx: Any) -> Any:  # typer names its Context only privately
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _PipeClosed from exc


app = typer.Typer(
    cls=_Commands,
    name="kstore",
    help="An event-sourced history store for Kafka consumer-group rebalances.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # click's help stops at 80 columns otherwise: at 100, each command's line was cut
    # short ("... kstore docs..."); the terminal's width, up to 120, is used.
    context_settings={"max_content_width": 120},
)

DEFAULT_STORE = "kstore.duckdb"


class _Context:
    store: Path = Path(DEFAULT_STORE)


ctx_state = _Context()


def _fail(message: str, code: int) -> NoReturn:
    # An interruption (130) is the user's stop, not a failure: no "error:" before it.
    said = "kstore: " if code == 130 else "kstore: error: "
    typer.echo(f"{said}{message}", err=True)
    sys.exit(code)


def _pipe_closed() -> NoReturn:
    """The reader of standard output went away (``kstore events | head -1``): the end,
    quietly and with status 0, as ``cat`` ends but for its signal's status. Standard
    output is pointed at /dev/null, so that the interpreter's last flush says nothing."""
    _stdout_to_devnull()
    sys.exit(0)


def _print_version(asked: bool) -> None:
    if asked:
        from kstore import __version__

        typer.echo(f"kstore {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            envvar="KSTORE_STORE",
            help="The DuckDB file of the store (default ./kstore.duckdb).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    ctx_state.store = store if store is not None else Path(DEFAULT_STORE)
    if ctx_state.store.is_dir():
        raise UsageError(
            f"--store {ctx_state.store}: a directory, not a store file "
            f"(give a file, e.g. {ctx_state.store / DEFAULT_STORE})"
        )
    if (kind := _special_file(ctx_state.store)) is not None:
        # Before any lock: /dev/null took a .lock beside it in /dev, and init failed in
        # DuckDB's fsync.
        raise UsageError(
            f"--store {ctx_state.store}: {kind}, not a store file "
            f"(give a file, e.g. {DEFAULT_STORE})"
        )


def _special_file(path: Path) -> str | None:
    """What ``path`` is when it is there but is no regular file nor folder (a device, a
    pipe, a socket), else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    kinds = (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((said for test, said in kinds if test(mode)), None)


# --- assignors -------------------------------------------------------------------------


@app.command("assign")
def assign_cmd(
    file: Annotated[
        str, typer.Argument(help="Request file (JSON or JSON Lines), or - for stdin.")
    ] = "-",
) -> None:
    """Answer assignment requests (the contract: kstore docs assignment-contract)."""
    from kstore.commands.assign import assign_requests

    assign_requests(file)


@app.command("partition")
def partition_cmd(
    key: Annotated[str, typer.Option("--key", help="The record key (UTF-8, as StringSerializer).")],
    partitions: Annotated[int, typer.Option("--partitions", help="The topic's partition count.")],
) -> None:
    """The partition Kafka's default partitioner gives KEY (first line: the number alone)."""
    from kstore.commands.assign import print_partition

    print_partition(key, partitions)


@app.command("coordinator")
def coordinator_cmd(
    group: Annotated[str, typer.Argument(help="The group id.")],
    partitions: Annotated[
        int, typer.Option("--partitions", help="offsets.topic.num.partitions.")
    ] = 50,
) -> None:
    """The __consumer_offsets partition that coordinates GROUP (first line: the number alone)."""
    from kstore.commands.assign import print_coordinator

    print_coordinator(group, partitions)


# --- store (kstore/store) ----------------------------------------------------------------

_ClusterOpt = Annotated[str | None, typer.Option("--cluster", help="Only this cluster.")]
_GroupOpt = Annotated[str | None, typer.Option("--group", help="Only this group.")]
_TimelineOpt = Annotated[str | None, typer.Option("--timeline", help="Only this timeline.")]
_GroupClusterOpt = Annotated[
    str | None,
    typer.Option("--cluster", help="The group's cluster (needed only if it is in several)."),
]
_FormatOpt = Annotated[str, typer.Option("--format", help="table, csv, json or jsonl.")]
_ListFormatOpt = Annotated[
    str | None, typer.Option("--format", help="Of the list: table, csv, json or jsonl.")
]


def _list_or_print(
    name: str | None,
    output: str | None,
    listed: Callable[[str], None],
    printed: Callable[[str], None],
    one: str,
    written: str,
) -> None:
    """``kstore docs`` and ``kstore examples``: the list (in ``--format``) without a name,
    the named one as it is written with one (a ``--format`` then refused, not ignored)."""
    if name is None:
        listed(output or "table")
    elif output is not None:
        raise UsageError(f"--format: {one} is printed as it is written ({written})")
    else:
        printed(name)


@app.command("init")
def init_cmd() -> None:
    """Create the store, or upgrade it to the newest schema."""
    from kstore.commands.store import init_store

    init_store(ctx_state.store)


@app.command("append")
def append_cmd(
    file: Annotated[str, typer.Argument(help="Events as JSON Lines, or - for stdin.")] = "-",
) -> None:
    """Append events (their form: kstore docs events); a malformed line stores nothing."""
    with uncollected_to_exit():
        from kstore.commands.store import append_events

        append_events(ctx_state.store, file)


@app.command("events")
def events_cmd(
    cluster: _ClusterOpt = None,
    group: _GroupOpt = None,
    timeline: _TimelineOpt = None,
    since: Annotated[str | None, typer.Option("--since", help="From this time.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Up to this time.")] = None,
    output: Annotated[str, typer.Option("--format", help="jsonl, json, table or csv.")] = "jsonl",
) -> None:
    """Stored events in log order (jsonl and json: the form of kstore docs events)."""
    from kstore.commands.store import print_events

    print_events(
        ctx_state.store,
        cluster=cluster,
        group=group,
        timeline=timeline,
        since=since,
        until=until,
        output=output,
    )


@app.command("state")
def state_cmd(
    group: Annotated[str, typer.Option("--group", help="The group.")],
    cluster: _GroupClusterOpt = None,
    timeline: Annotated[
        str | None,
        typer.Option(
            "--timeline",
            help="Default: recorded, or the group's one timeline that is no replay.",
        ),
    ] = None,
    at_version: Annotated[
        int | None, typer.Option("--at-version", help="After this stream version.")
    ] = None,
    at_generation: Annotated[
        int | None, typer.Option("--at-generation", help="After this generation's assignment.")
    ] = None,
    at: Annotated[str | None, typer.Option("--at", help="As it was at this time.")] = None,
    output: Annotated[
        str, typer.Option("--format", help="json (the whole state), table, csv or jsonl.")
    ] = "json",
) -> None:
    """A stream's state (the fold of its events)."""
    from kstore.commands.store import print_state

    print_state(
        ctx_state.store,
        cluster=cluster,
        group=group,
        timeline=timeline,
        at_version=at_version,
        at_generation=at_generation,
        at=at,
        output=output,
    )


@app.command("streams")
def streams_cmd(output: _FormatOpt = "table") -> None:
    """One row per stream: events, first and last time, latest generation."""
    from kstore.commands.store import print_streams

    print_streams(ctx_state.store, output)


@app.command("rebuild")
def rebuild_cmd() -> None:
    """Drop and rebuild every projection and snapshot from the log."""
    from kstore.commands.store import rebuild_store

    rebuild_store(ctx_state.store)


# --- simulation (kstore/simulate) ------------------------------------------------------


@app.command("simulate")
def simulate_cmd(
    scenario: Annotated[
        str | None,
        typer.Argument(
            help="Scenario file (YAML), or a shipped example's name (kstore examples); "
            "or use --generate."
        ),
    ] = None,
    generate: Annotated[
        str | None,
        typer.Option(
            "--generate",
            help="Generate a scenario: steady-churn, autoscaling, flapping-member, rolling-deploy.",
        ),
    ] = None,
    members: Annotated[int, typer.Option("--members", help="Members (generated).")] = 10,
    steps: Annotated[int, typer.Option("--steps", help="Steps (generated).")] = 100,
    strategy: Annotated[
        str | None, typer.Option("--strategy", help="The assignor every member uses.")
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            help="eager, cooperative or consumer (default: the scenario's protocol, else "
            "Kafka's rule: cooperative when every member offers only cooperative-sticky, "
            "eager otherwise).",
        ),
    ] = None,
    timeline: Annotated[
        str | None, typer.Option("--timeline", help="Default sim/<scenario name>.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same events.")] = 0,
    progress: Annotated[
        bool, typer.Option("--progress", help="Progress bar even when stderr is no terminal.")
    ] = False,
) -> None:
    """Run Kafka's group protocol through a scenario; append the events to the store."""
    from kstore.commands.simulate import simulate

    simulate(
        ctx_state.store,
        scenario,
        kind=generate,
        members=members,
        steps=steps,
        seed=seed,
        strategy=strategy,
        protocol=protocol,  # type: ignore[arg-type]
        timeline=timeline,
        progress=progress,
    )


@app.command("examples")
def examples_cmd(
    name: Annotated[
        str | None,
        typer.Argument(help="An example's name: its YAML is printed (without one: the list)."),
    ] = None,
    output: _ListFormatOpt = None,
) -> None:
    """The example scenarios shipped with kstore: `kstore simulate NAME` runs one."""
    from kstore.commands.examples import list_examples, print_example

    _list_or_print(name, output, list_examples, print_example, "an example", "YAML")


# --- analytics (kstore/analytics) ------------------------------------------------------


@app.command("query")
def query_cmd(
    name: Annotated[str | None, typer.Argument(help="The query (see --list).")] = None,
    group: _GroupOpt = None,
    cluster: _ClusterOpt = None,
    timeline: _TimelineOpt = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="KEY=VALUE, bound as $KEY.")
    ] = None,
    output: _FormatOpt = "table",
    list_all: Annotated[bool, typer.Option("--list", help="List the queries.")] = False,
) -> None:
    """Run a named query (--list names them; parameters are bound, never pasted)."""
    from kstore.commands.analytics import list_queries, print_query

    if list_all:
        list_queries(output)
        return
    if name is None:
        raise typer.BadParameter("give a query name, or --list")
    print_query(
        ctx_state.store,
        name,
        group=group,
        cluster=cluster,
        timeline=timeline,
        pairs=param or [],
        output=output,
    )


@app.command("sql")
def sql_cmd(
    sql: Annotated[str, typer.Argument(help="SQL over the store's views (kstore docs analytics).")],
    output: _FormatOpt = "table",
    read: Annotated[
        list[Path] | None,
        typer.Option("--read", help="A file or folder the SQL may read (repeatable)."),
    ] = None,
) -> None:
    """Run one read-only SELECT over the store (and the files named by --read)."""
    from kstore.commands.analytics import print_sql

    print_sql(ctx_state.store, sql, output, read or [])


_FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="The source timeline: the one to replay and advise from (default: recorded, "
        "or the group's one timeline that is no replay, e.g. sim/NAME).",
    ),
]


@app.command("replay")
def replay_cmd(
    group: Annotated[str, typer.Option("--group", help="The group.")],
    cluster: _GroupClusterOpt = None,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            help="The strategy to decide with (e.g. sticky, librdkafka:sticky); same: each "
            "generation with the strategy and client library that decided it.",
        ),
    ] = "same",
    source: _FromOpt = None,
    timeline: Annotated[
        str | None,
        typer.Option(
            "--timeline",
            help="The new timeline (default replay/S; replay/SOURCE/S from a --from other "
            "than the group's default source).",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue an interrupted replay into its timeline."),
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Store nothing: decide each rebalance on the timeline's own state just "
            "before it and print whether its assignment is that answer (exit 1 if any is not).",
        ),
    ] = False,
    output: Annotated[
        str, typer.Option("--format", help="With --check: table, csv, json or jsonl.")
    ] = "table",
) -> int:
    """Decide every rebalance of a timeline again with another strategy."""
    from kstore.commands.analytics import check_group, replay_group

    if check:
        if timeline is not None or resume:
            raise UsageError("--check stores nothing: it takes no --timeline or --resume")
        return check_group(
            ctx_state.store,
            group=group,
            cluster=cluster,
            source=source,
            strategy=strategy,
            output=output,
        )
    replay_group(
        ctx_state.store,
        group=group,
        cluster=cluster,
        source=source,
        strategy=strategy,
        timeline=timeline,
        resume=resume,
    )
    return 0


@app.command("compare")
def compare_cmd(
    group: Annotated[str, typer.Option("--group", help="The group.")],
    timelines: Annotated[
        str | None, typer.Option("--timelines", help="A,B,... (default: all of the group's).")
    ] = None,
    cluster: _GroupClusterOpt = None,
    output: _FormatOpt = "table",
) -> None:
    """Churn, stickiness and imbalance of a group's timelines side by side."""
    from kstore.commands.analytics import print_compare

    print_compare(ctx_state.store, group=group, cluster=cluster, timelines=timelines, output=output)


@app.command("advise")
def advise_cmd(
    group: Annotated[str, typer.Option("--group", help="The group.")],
    cluster: _GroupClusterOpt = None,
    source: _FromOpt = None,
    strategies: Annotated[
        str | None,
        typer.Option("--strategies", help="A,B,... (default: every strategy); optimal always."),
    ] = None,
    output: _FormatOpt = "table",
) -> None:
    """Which strategy and protocol would have moved least: replay with each, rank them.

    Under the table, the verdict: the strategy that moved least, the least disruptive of
    each protocol, the eager caveat. With --format csv, json or jsonl standard output has
    the rows alone and the verdict goes to standard error, each line after "kstore: note:".
    """
    from kstore.commands.analytics import print_advice

    print_advice(
        ctx_state.store,
        group=group,
        cluster=cluster,
        source=source,
        strategies=strategies,
        output=output,
    )


@app.command("report")
def report_cmd(
    out: Annotated[
        str,  # as typed: Path drops the "/" that says a folder
        typer.Option(
            "--out", help="The HTML file to write, - for standard output (--fleet: a folder)."
        ),
    ],
    group: Annotated[str | None, typer.Option("--group", help="The group.")] = None,
    timelines: Annotated[
        str | None, typer.Option("--timelines", help="A,B,... (default: all of the group's).")
    ] = None,
    cluster: _GroupClusterOpt = None,
    source: _FromOpt = None,
    fleet: Annotated[
        bool,
        typer.Option("--fleet", help="Rank every group of the store; a report per group."),
    ] = False,
) -> None:
    """Write a self-contained HTML report of a group, or of the whole fleet (--fleet)."""
    from kstore.commands.analytics import report

    if group is None and not fleet:
        raise typer.BadParameter("give --group G, or --fleet")
    report(
        ctx_state.store,
        group=group,
        cluster=cluster,
        timelines=timelines,
        source=source,
        out=out,
        fleet=fleet,
    )


# --- recorders (kstore/record) ---------------------------------------------------------

record_app = typer.Typer(help="Record real consumer groups into the store.", no_args_is_help=True)
app.add_typer(record_app, name="record")

_BootstrapOpt = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-server",
        "--bootstrap-servers",
        "-b",
        help="host:port[,host:port...] (-b as kcat).",
    ),
]
_ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        "--config",
        help="Client settings, Java properties or YAML (SASL, TLS ...), Kafka's names.",
    ),
]
_SettingOpt = Annotated[
    list[str] | None,
    typer.Option("-X", help="One client setting, key=value (repeatable, as kcat)."),
]
_GroupsOpt = Annotated[
    list[str] | None, typer.Option("--group", help="Record this group (repeatable).")
]
_AllGroupsOpt = Annotated[bool, typer.Option("--all-groups", help="Record every group.")]
_RecordClusterOpt = Annotated[str, typer.Option("--cluster", help="The cluster's name.")]
_MaxRetriesOpt = Annotated[
    int,
    typer.Option(
        "--max-retries",
        help="Give up after N failures in a row to reach the broker (-1: never); "
        "before its first answer, after -X default.api.timeout.ms (default 15000).",
    ),
]


@record_app.command("offsets")
def record_offsets_cmd(
    bootstrap_servers: _BootstrapOpt = None,
    config: _ConfigOpt = None,
    setting: _SettingOpt = None,
    group: _GroupsOpt = None,
    all_groups: _AllGroupsOpt = False,
    start: Annotated[
        str, typer.Option("--from", help="Where a first run starts: beginning or now.")
    ] = "beginning",
    file: Annotated[
        Path | None, typer.Option("--file", help="Read a dump of records instead.")
    ] = None,
    cluster: _RecordClusterOpt = "default",
    topic: Annotated[str, typer.Option("--topic", hidden=True)] = "__consumer_offsets",
    max_retries: _MaxRetriesOpt = 10,
) -> None:
    """Tail __consumer_offsets (until stopped) or read a dump; append the events."""
    from kstore.commands.record import record_offsets

    record_offsets(
        ctx_state.store,
        bootstrap_servers=bootstrap_servers,
        config=config,
        overrides=setting or [],
        groups=group,
        all_groups=all_groups,
        start=start,
        file=file,
        cluster=cluster,
        topic=topic,
        max_retries=max_retries,
    )


@record_app.command("poll")
def record_poll_cmd(
    bootstrap_servers: _BootstrapOpt = None,
    config: _ConfigOpt = None,
    setting: _SettingOpt = None,
    group: _GroupsOpt = None,
    all_groups: _AllGroupsOpt = False,
    interval: Annotated[str, typer.Option("--interval", help="e.g. 5s, 500ms.")] = "5s",
    cluster: _RecordClusterOpt = "default",
    polls: Annotated[
        int | None, typer.Option("--polls", help="Stop after N answered polls.")
    ] = None,
    max_retries: _MaxRetriesOpt = 10,
) -> None:
    """Poll the groups through the admin API (until stopped); append the differences."""
    from kstore.commands.record import poll_groups

    poll_groups(
        ctx_state.store,
        bootstrap_servers=bootstrap_servers,
        config=config,
        overrides=setting or [],
        groups=group,
        all_groups=all_groups,
        interval=interval,
        cluster=cluster,
        polls=polls,
        max_retries=max_retries,
    )


@record_app.command("merge")
def record_merge_cmd(
    reports: Annotated[Path, typer.Option("--reports", help="The members' reports directory.")],
    group: Annotated[str | None, typer.Option("--group", help="Only this group.")] = None,
    cluster: _RecordClusterOpt = "default",
    settle: Annotated[
        float,
        typer.Option(
            "--settle",
            help="Store a generation once its reports are this old (s) and every member its "
            "leader named has reported; 0: the group has stopped, store everything.",
        ),
    ] = 5.0,
) -> None:
    """Merge confluent-kafka members' rebalance reports into group events."""
    from kstore.commands.record import merge_reports_cmd

    merge_reports_cmd(ctx_state.store, reports=reports, group=group, cluster=cluster, settle=settle)


# --- spark (kstore/spark) --------------------------------------------------------------

spark_app = typer.Typer(
    help="The pipeline on Spark: ingest dumps, replay and metrics over Parquet "
    "(kstore docs spark).",
    no_args_is_help=True,
)
app.add_typer(spark_app, name="spark")

_MasterOpt = Annotated[
    str | None,
    typer.Option(
        "--master",
        help="Spark master: local[*] (default), yarn, k8s://..., spark://...; "
        "'none' leaves it to spark-submit.",
    ),
]
_ConfOpt = Annotated[
    list[str] | None, typer.Option("--conf", help="A Spark setting KEY=VALUE (repeatable).")
]
_InOpt = Annotated[
    list[str], typer.Option("--in", help="A folder with events/ (export/ingest/replay output).")
]
_OutOpt = Annotated[Path, typer.Option("--out", help="A new output folder.")]


def _master(value: str | None) -> str | None:
    if value is None:
        return "local[*]"
    return None if value == "none" else value


@app.command("export")
def export_cmd(out: _OutOpt) -> None:
    """The log and the assignment projection as Parquet, partitioned by cluster and group."""
    from kstore.commands.spark import export_parquet

    export_parquet(ctx_state.store, out)


@spark_app.command("ingest")
def spark_ingest_cmd(
    dumps: Annotated[
        list[str], typer.Option("--in", help="Dump files or folders of JSON Lines (repeatable).")
    ],
    out: _OutOpt,
    master: _MasterOpt = None,
    conf: _ConfOpt = None,
) -> None:
    """Validate dumps into the log's Parquet form; bad lines to a quarantine with reasons."""
    from kstore.commands.spark import spark_ingest

    spark_ingest(dumps, out, _master(master), conf or [])


@spark_app.command("replay")
def spark_replay_cmd(
    folders: _InOpt,
    strategies: Annotated[
        str, typer.Option("--strategies", help="Comma-separated, e.g. sticky,optimal.")
    ],
    out: _OutOpt,
    source: Annotated[str, typer.Option("--from", help="The timeline to replay.")] = "recorded",
    master: _MasterOpt = None,
    conf: _ConfOpt = None,
) -> None:
    """Replay every stream with each strategy, one task per stream (as `kstore replay`)."""
    from kstore.commands.spark import spark_replay

    spark_replay(folders, strategies, out, source, _master(master), conf or [])


@spark_app.command("metrics")
def spark_metrics_cmd(
    folders: _InOpt,
    out: _OutOpt,
    window: Annotated[str, typer.Option("--window", help="Summary window: hour or day.")] = "hour",
    master: _MasterOpt = None,
    conf: _ConfOpt = None,
) -> None:
    """The metrics of every rebalance (the `metrics` query's columns) and window summaries."""
    from kstore.commands.spark import spark_metrics

    spark_metrics(folders, out, window, _master(master), conf or [])


# --- documentation (docs/, shipped in the package) ----------------------------------------


@app.command("docs")
def docs_cmd(
    topic: Annotated[
        str | None, typer.Argument(help="A topic, e.g. metrics (without one: the list).")
    ] = None,
    output: _ListFormatOpt = None,
) -> None:
    """Read kstore's documentation (the specs, the guides) where kstore is installed."""
    from kstore.commands.docs import list_docs, print_doc

    _list_or_print(topic, output, list_docs, print_doc, "a doc", "Markdown")


def store_first(args: list[str]) -> list[str]:
    """``--store PATH`` (or ``--store=PATH``) moved to the front from wherever it stands,
    so that it is accepted before or after the subcommand (arguments after ``--`` are
    left alone)."""
    rest: list[str] = []
    store: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg == "--store" and i + 1 < len(args):
            store = ["--store", args[i + 1]]
            i += 2
            continue
        if arg.startswith("--store="):
            store = [arg]
        else:
            rest.append(arg)
        i += 1
    return store + rest


def _command(args: list[str]) -> str | None:
    """The command (or group) ``args``, as ``store_first`` gives them, name first."""
    rest = args[2:] if args[:1] == ["--store"] else args
    if rest[:1] and rest[0].startswith("--store="):
        rest = rest[1:]
    return rest[0] if rest else None


def _app_for(name: str | None) -> typer.Typer:
    """``app`` with only the command (or group) ``name``: typer makes the parser of every
    command an app has as it starts, reading each one's signature and annotations, 20 ms
    of CPU for the one that runs (about 2% of a small ``kstore append``). ``app`` itself
    when that is none of its own (no command, ``--help``, an unknown one), so that help
    and usage errors are as before."""
    commands = [info for info in app.registered_commands if info.name == name]
    groups = [info for info in app.registered_groups if info.name == name]
    if not commands and not groups:
        return app
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    return one


_WITH_PANDAS = frozenset({"spark"})
"""The commands that hand pandas data to a library (PySpark's Arrow conversions); every
other one runs ``without_pandas``: DuckDB's first query with parameters imported it, a
quarter of a second of every command's start-up."""


def _store_groups(shown: int = 8) -> str:
    """`` The store's groups: a, b`` after a missing ``--group`` (the names otherwise
    take another command to find); nothing when there is no store to read."""
    if ctx_state.store is None or not ctx_state.store.is_file():
        return ""
    from kstore.store.log import Store

    try:
        groups = sorted({info.stream.group for info in Store(ctx_state.store).streams()})
    except KstoreError:
        return ""
    if not groups:
        return ""
    more = f" and {len(groups) - shown:,} more (kstore streams)" if len(groups) > shown else ""
    return f" The store's groups: {', '.join(groups[:shown])}{more}"


def main() -> None:
    """Console entry point: user errors become one line on stderr and an exit status."""
    args = store_first(sys.argv[1:])
    name = _command(args)
    _watched_stdout()
    try:
        # A Ctrl-C that a library turned into another error (one that lands in an import
        # becomes "partially initialized module") is still reported as the interruption.
        with (
            interrupted_says("interrupted"),
            one_blas_thread(),
            nullcontext() if name in _WITH_PANDAS else without_pandas(),
        ):
            result = _app_for(name)(args=args, standalone_mode=False)
            sys.stdout.flush()  # a closed pipe found here, not at the interpreter's exit
    except (BrokenPipeError, _PipeClosed):
        _pipe_closed()
    except _OutputFailed as exc:
        _output_failed(exc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _fail("aborted", 130)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except KstoreError as exc:
        _fail(str(exc), exc.exit_code)
    except TyperException as exc:  # usage errors: unknown option, bad value ...
        said = exc.format_message().replace("\n", " ")
        if name == "query" and type(exc).__name__ == "NoSuchOption":  # --topic for --param
            said += "; a query's parameters are given as --param NAME=VALUE (kstore query --list)"
        missing = getattr(exc, "param", None) if type(exc).__name__ == "MissingParameter" else None
        if getattr(missing, "name", None) == "group":
            said += _store_groups()
        _fail(said, 2)
    except Exception as exc:
        if (hint := missing_extra(exc)) is not None:
            _fail(hint, 2)
        if os.environ.get("KSTORE_DEBUG"):
            raise
        _fail(f"{type(exc).__name__}: {exc}".replace("\n", " "), 1)
    if result == 130:  # typer ends a command Ctrl-C reached with 130 and no word
        _fail("interrupted", 130)
    if isinstance(result, int) and result:
        sys.exit(result)


if __name__ == "__main__":
    main()
