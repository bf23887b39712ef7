"""The command line: parses arguments and calls one function per command, nothing more."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from kstore._errors import KstoreError
from kstore.assignors import ContractError

__all__ = ["app", "main"]

app = typer.Typer(
    name="kstore",
    help="An event-sourced history store for Kafka consumer-group rebalances.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

DEFAULT_STORE = "kstore.duckdb"


class _Context:
    store: Path = Path(DEFAULT_STORE)


ctx_state = _Context()


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"kstore: error: {message}", err=True)
    sys.exit(code)


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
) -> None:
    ctx_state.store = store if store is not None else Path(DEFAULT_STORE)


# --- assignors -------------------------------------------------------------------------


@app.command("assign")
def assign_cmd(
    file: Annotated[str, typer.Argument(help="Request file (JSON or JSON Lines), or - for stdin.")] = "-",
) -> None:
    """Answer assignment requests (shared/spec/assignment-contract.md)."""
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

# --- simulation (kstore/simulate) ------------------------------------------------------

# --- analytics (kstore/analytics) ------------------------------------------------------

# --- recorders (kstore/record) ---------------------------------------------------------

# --- spark (kstore/spark) --------------------------------------------------------------


def main() -> None:
    """Console entry point: user errors become one line on stderr and an exit status."""
    try:
        app(standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except ContractError as exc:
        _fail(str(exc), 2)
    except KstoreError as exc:
        _fail(str(exc), exc.exit_code)
    except (typer.BadParameter, typer.Abort) as exc:
        _fail(str(exc), 2)
    except Exception as exc:  # click usage errors and friends
        import click

        if isinstance(exc, click.ClickException):
            _fail(exc.format_message().replace("\n", " "), 2)
        if os.environ.get("KSTORE_DEBUG"):
            raise
        _fail(f"{type(exc).__name__}: {exc}".replace("\n", " "), 1)


if __name__ == "__main__":
    main()
