"""Rows on standard output, one convention for every command that prints rows.

``--format table|csv|json|jsonl``. Values are printed verbatim: a table cell is plain
text (never read as Rich markup or emoji codes), times are ISO-8601 (``Z`` for UTC).
A table fits the terminal by wrapping cells at spaces; a word (a number, an id, a time)
is never broken or cut. Into a pipe, the terminal is ``COLUMNS``, else standard error's
(the user's, reading through ``less``), else none: the table as wide as its content.
When even that cannot fit, a block per row is printed and standard error says to use
``--format csv``.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from uuid import UUID

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kstore._errors import UsageError
from kstore.model.events import format_time

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn

__all__ = [
    "FORMATS",
    "check_format",
    "counting",
    "json_indent",
    "plain",
    "print_rows",
    "progress_bar",
]

FORMATS = ("table", "csv", "json", "jsonl")
_PIPE_WIDTH = 1_000_000
"""Output with no terminal anywhere (a script's) is not fitted to any width: whole rows,
the table as wide as its content."""


def check_format(output: str, allowed: Sequence[str] = FORMATS) -> str:
    if output not in allowed:
        raise UsageError(f"--format: must be one of {', '.join(allowed)}, not {output!r}")
    return output


def plain(value: Any) -> Any:
    """A JSON/CSV value: times in ISO-8601 (UTC, ``Z``), decimals as numbers, a BLOB as
    DuckDB writes it as text, an interval or UUID as its text; lists, structs and maps
    of them too (a struct holding a time, or a BLOB, failed ``--format json``)."""
    if isinstance(value, datetime):  # DuckDB's TIMESTAMP is naive UTC
        return format_time(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return _blob(value)
    if isinstance(value, timedelta | UUID):
        return str(value)
    return value


def _blob(data: bytes) -> str:
    """A BLOB as DuckDB casts it to text: printable ASCII as it is, but for the quotes
    and the backslash, every other byte as ``\\xNN``."""
    return "".join(
        chr(b) if 32 <= b < 127 and b not in (34, 39, 92) else f"\\x{b:02X}" for b in data
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    value = plain(value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class _Console(Console):
    """rich's console, but a closed pipe is kstore's to end (quietly, status 0): rich's
    own ``on_broken_pipe`` exits 1, which ``kstore compare | head -1`` met whenever the
    table came after its title (the title read, the reader gone)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _terminal_width() -> int:
    """The width to fit a table to: standard output's terminal, else ``COLUMNS``, else
    the terminal the user reads at (standard error's: ``kstore query ... | less``, a
    table a user trial found laid out 600 columns wide), else none (``_PIPE_WIDTH``)."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console().width
    try:
        if sys.stderr.isatty():
            return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):  # no descriptor (a test's stream), or no size
        pass
    return _PIPE_WIDTH


def _fit(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths within ``room``: whole columns first, the narrowest needs first."""
    if sum(natural) <= room:
        return natural
    widths = list(least)
    spare = room - sum(least)
    order = sorted(range(len(natural)), key=lambda i: natural[i] - least[i])
    for done, i in enumerate(order):
        share = spare // (len(order) - done)
        grow = min(natural[i] - least[i], share)
        widths[i] += grow
        spare -= grow
    return widths


def _title_lines(title: str, width: int) -> list[str]:
    """``title``'s parts (apart by two spaces) filled into lines at most ``width`` wide,
    a part never cut (one wider than that wrapped at its spaces): rich wrapped a title
    to the table's width, anywhere, and a state's stream and generation were split."""
    lines: list[str] = []
    for part in title.split("  "):
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += "  " + part
        else:
            lines += textwrap.wrap(part, width, break_long_words=False, break_on_hyphens=False)
    return lines


def _blocks(columns: Sequence[str], cells: list[list[str]], title: str | None, width: int) -> None:
    """A table too wide for the terminal, as psql's expanded display: a block per row, a
    line per column (``name | value``), values verbatim, folded only at the edge."""
    name_width = max(len(name) for name in columns)
    room = max(width - name_width - 3, 8)
    out = _title_lines(title, width) if title else []
    for number, row in enumerate(cells, start=1):
        label = f"-[ row {number} ]"
        # the "+" over the "|" while the label leaves room for it; the line as wide as
        # the lines under it (it was wider by as much as the label is, and wrapped a "-")
        if len(label) <= name_width + 1:
            out.append(label.ljust(name_width + 1, "-") + "+" + "-" * (room + 1))
        else:
            out.append(label.ljust(name_width + room + 3, "-"))
        for name, value in zip(columns, row, strict=True):
            lines = [
                piece
                for line in value.splitlines() or [""]
                for piece in textwrap.wrap(
                    line, room, break_on_hyphens=False, drop_whitespace=False
                )
                or [""]
            ]
            for index, piece in enumerate(lines):
                out.append(f"{name if index == 0 else '':<{name_width}} | {piece}".rstrip())
    sys.stdout.write("\n".join(out) + "\n")


def _table(columns: Sequence[str], cells: list[list[str]], title: str | None) -> None:
    natural: list[int] = []
    least: list[int] = []
    whole: list[int] = []  # least, with every header word whole
    for i, name in enumerate(columns):
        values = [row[i] for row in cells]
        word = max((len(w) for v in values for w in v.split()), default=0)
        natural.append(max([len(name), *(len(line) for v in values for line in v.splitlines())]))
        header_word = max((len(w) for w in name.split()), default=0)
        least.append(max(word, min(header_word, max(word, 4)), 1))
        whole.append(max(word, header_word, 1))
    overhead = 3 * len(columns) + 1  # a space either side of each cell, and the borders
    width = _terminal_width()
    room = width - overhead
    if sum(whole) <= room:
        least = whole
    elif sum(least) > room:
        print(
            f"kstore: note: the table needs {sum(least) + overhead:,} columns, {width:,} here: "
            "a block per row (or --format csv)",  # 108 wide, it wrapped at 100
            file=sys.stderr,
        )
        _blocks(columns, cells, title, width)
        return
    widths = _fit(natural, least, room)
    table = Table()
    for name, w in zip(columns, widths, strict=True):
        table.add_column(Text(name), width=w, overflow="fold")
    for row in cells:
        table.add_row(*(Text(v) for v in row))
    console = _Console(
        width=sum(widths) + overhead if width == _PIPE_WIDTH else max(width, room + overhead),
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )
    if title:
        console.print(Text("\n".join(_title_lines(title, width))))
    console.print(table)


def json_indent() -> int | None:
    """``--format json``'s indent: 2 on a terminal, to be read (as jq prints), none into
    a pipe or a file, to be parsed (one long line at a terminal, a user trial)."""
    return 2 if sys.stdout.isatty() else None


def print_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    output: str,
    title: str | None = None,
    empty: str = "no rows",
) -> None:
    """Print ``rows`` (tuples in ``columns`` order) in ``output`` format; an empty table
    comes with a note on stderr saying so (``empty``): a box of headers alone reads as
    a command that failed."""
    check_format(output)
    if not rows and output == "table":
        print(f"kstore: note: {empty}", file=sys.stderr)
    if output in ("json", "jsonl"):
        records = [{c: plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        if output == "json":
            json.dump(records, sys.stdout, ensure_ascii=False, indent=json_indent())
            sys.stdout.write("\n")
        else:
            for record in records:
                sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(
                [
                    ""
                    if v is None
                    else json.dumps(plain(v), ensure_ascii=False)
                    if isinstance(v, list | tuple | dict)
                    else plain(v)
                    for v in row
                ]
            )
    else:
        _table(columns, [[_cell(v) for v in row] for row in rows], title)


_LEAST_BAR = 10
"""The bar's own width when the label would otherwise be shortened."""


def _time_left() -> ProgressColumn:
    """``ETA 0:00:12`` (``ETA -:--:--`` before the pace is known): rich's column is a
    bare ``0:00:12``, which read as a time taken as well as one left (a user trial)."""
    from rich.progress import TimeRemainingColumn

    class _TimeLeft(TimeRemainingColumn):
        def render(self, task: Any) -> Text:
            shown = super().render(task)  # nothing while the total is unknown
            return Text(f"ETA {shown.plain}" if shown.plain else "", style=shown.style)

    return _TimeLeft()


def progress_bar(label: str, *columns: ProgressColumn, show: bool) -> Progress:
    """A bar on stderr, gone when done: ``label`` (a template of the task's description),
    the bar, then ``columns``, then the time left (``ETA 0:00:12``: every bar's, here).
    The label is whole and the bar takes the rest of the line while the bar keeps
    ``_LEAST_BAR`` columns (it took half the room, cutting ``simulating
    payments-ledger-consum…`` on 100 columns); narrower, the bar keeps that and the label
    shortens, so the figures and the time left stay whole (a long group name used to cut
    the ETA to ``0:0…``)."""
    from rich.measure import Measurement
    from rich.progress import BarColumn, Progress, Task, TextColumn
    from rich.table import Column

    class _Fitted(Progress):
        def make_tasks_table(self, tasks: Iterable[Task]) -> Table:
            table = super().make_tasks_table(tasks)
            if not table.row_count or len(table.columns) < 2:  # no task yet (nor a console)
                return table
            words, bar, *figures = table.columns
            options = self.console.options

            def widest(column: Column) -> int:
                sizes = (Measurement.get(self.console, options, c).maximum for c in column.cells)
                return max(sizes, default=0)

            need = widest(words)
            rest = sum(widest(column) for column in figures) + len(table.columns) - 1
            if need + _LEAST_BAR + rest <= options.max_width:
                words.ratio, words.width = None, need  # whole; the bar takes what is left
            else:
                bar.ratio, bar.width = None, _LEAST_BAR  # the label takes what is left
            return table

    return _Fitted(
        TextColumn(label, table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")),
        BarColumn(bar_width=None, table_column=Column(ratio=1)),
        *columns,
        _time_left(),
        console=Console(stderr=True),
        disable=not show,
        transient=True,
        expand=True,
        # Standard output is data (a report's page with --out -, rows): rich would route
        # what is written there meanwhile to the bar's terminal, not to the pipe.
        redirect_stdout=False,
    )


def done_of_total() -> ProgressColumn:
    """``2,363/9,093``: a bar's count as kstore prints counts (rich's own column has no
    thousands separators: ``2363/9093`` beside ``1,229/s``)."""
    from rich.progress import TextColumn

    class _DoneOfTotal(TextColumn):
        def render(self, task: Any) -> Text:
            total = "?" if task.total is None else f"{int(task.total):,}"
            return Text(f"{int(task.completed):,}/{total}")

    return _DoneOfTotal("")


@contextmanager
def counting(label: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """On a terminal (stderr) a bar for ``label`` with the count of ``unit`` done and the
    time left, gone when done; yields the ``progress(done, total)`` that moves it."""
    from rich.progress import TextColumn

    bar = progress_bar(
        "{task.description}", done_of_total(), TextColumn(unit), show=sys.stderr.isatty()
    )
    with bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)
