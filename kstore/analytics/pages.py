"""The HTML pages: a group's report and the fleet page, readable at any size.

A report is bounded whatever the history: time is cut into at most ``BUCKETS`` buckets
(rates per bucket, zoomable with a range slider), the ownership view shows at most
``OWNERSHIP_PARTITIONS`` partitions by ``OWNERSHIP_COLUMNS`` time columns and at most
``MOVE_MARKERS`` moves, reasons are grouped by kind, lists are cut to their first rows
(saying how many there are). plotly.js and the figures travel gzipped inside the page
(the browser's DecompressionStream unpacks them), so the page opens offline and stays
small.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import chain, groupby, pairwise
from pathlib import Path
from typing import Any

from kstore._errors import UsageError
from kstore._files import write_text
from kstore._text import counted
from kstore.analytics._queries import Result, run_query, run_sql
from kstore.analytics.report import compare, partial, strategies_of
from kstore.analytics.scope import Sources, every_source, sources_of
from kstore.model.events import format_span, format_time
from kstore.store.log import Store

__all__ = [
    "BUCKETS",
    "KEY_OWNERS",
    "MOVE_MARKERS",
    "OWNERSHIP_COLUMNS",
    "OWNERSHIP_PARTITIONS",
    "REASON_KINDS",
    "reason_kind",
    "reason_shape",
    "write_fleet",
    "write_report",
]

BUCKETS = 300
OWNERSHIP_PARTITIONS = 200
OWNERSHIP_COLUMNS = 300
MOVE_MARKERS = 3000
KEY_OWNERS = 30
LIST_ROWS = 50

# First match wins: Kafka's texts name a LeaveGroup for a poll timeout too.
_KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("follow-up", re.compile(r"follow-up|need to revoke partitions", re.I)),
    ("poll timeout", re.compile(r"poll timeout|max\.poll", re.I)),
    ("session timeout", re.compile(r"heartbeat expir|session timeout|session expir", re.I)),
    ("static rejoin", re.compile(r"static member|instance id .* rejoin|\] rejoined", re.I)),
    ("leave", re.compile(r"leavegroup|leav|left|closed", re.I)),
    ("metadata change", re.compile(r"metadata|subscription|partitions|topic", re.I)),
    ("join", re.compile(r"join|adding new member|new member", re.I)),
]
REASON_KINDS = [kind for kind, _ in _KINDS] + ["other"]


_INSTANCE = re.compile(r"(instance id )(?!None\b)[^\s;,]+")
_NUMBER = re.compile(r"\b\d+\b")
_WORD = re.compile(r"[^\s(),;]+")


def reason_shape(reason: str | None, members: Set[str]) -> str:
    """A reason as its kind of event: a word that is one of the group's member ids
    (``members``; a sentence's closing ``.`` or ``:`` aside) as ``<member>``, an
    instance id as ``<instance>``, numbers as ``<n>``. Kafka's texts name the member, so
    each rebalance's reason is otherwise unique."""
    if not reason:
        return "(none recorded)"

    def member(word: re.Match[str]) -> str:
        text = word.group()
        if text in members:
            return "<member>"
        if text[-1] in ".:" and text[:-1] in members:
            return "<member>" + text[-1]
        return text

    return _NUMBER.sub("<n>", _INSTANCE.sub(r"\1<instance>", _WORD.sub(member, reason)))


def _member_ids(store: Store, group: str, cluster: str) -> set[str]:
    """Every id a member of the group ever had."""
    rows = run_sql(
        store,
        "SELECT DISTINCT m FROM kstore_member_events, unnest([member, old_member]) AS u(m) "
        "WHERE cluster = ? AND group_id = ? AND m IS NOT NULL",
        [cluster, group],
    ).rows
    return {row[0] for row in rows}


# A reason that says no more than a generation (each recorder's: "generation 3",
# "from member reports", "__consumer_offsets: generation 3") gets the kind of the facts
# the recorder wrote before the rebalance, the first of these found among them.
_FACT_KINDS: list[tuple[str, set[tuple[str, str | None]]]] = [
    ("session timeout", {("MemberLeft", "session-timeout")}),
    ("poll timeout", {("MemberLeft", "poll-timeout")}),
    ("static rejoin", {("MemberReplaced", None)}),
    ("leave", {("MemberLeft", "leave"), ("MemberLeft", "fenced"), ("MemberLeft", "other")}),
    ("join", {("MemberJoined", None)}),
    (
        "metadata change",
        {("SubscriptionChanged", None), ("TopicChanged", None), ("TopicDeleted", None)},
    ),
]


def fact_kinds(store: Store, group: str, cluster: str) -> dict[tuple[str, int], str]:
    """(timeline, version of an AssignmentCompleted) -> the kind of the membership and
    topic facts since the timeline's rebalance before it (``_FACT_KINDS``), where any."""
    rows = run_sql(
        store,
        "WITH facts AS ("
        "SELECT timeline, version, type, reason FROM kstore_member_events "
        "WHERE cluster = ? AND group_id = ? UNION ALL "
        "SELECT timeline, version, type, NULL FROM kstore_topic_events "
        "WHERE cluster = ? AND group_id = ?), "
        "rebalances AS (SELECT timeline, version, "
        "lag(version, 1, 0) OVER (PARTITION BY timeline ORDER BY version) AS after "
        "FROM kstore_rebalances WHERE cluster = ? AND group_id = ?) "
        "SELECT DISTINCT r.timeline, r.version, f.type, f.reason FROM rebalances r "
        "JOIN facts f ON f.timeline = r.timeline AND f.version > r.after "
        "AND f.version < r.version",
        [cluster, group] * 3,
    ).rows
    found: dict[tuple[str, int], set[tuple[str, str | None]]] = {}
    for timeline, version, kind, reason in rows:
        found.setdefault((timeline, version), set()).add((kind, reason))
    return {
        rebalance: next(kind for kind, facts in _FACT_KINDS if facts & said)
        for rebalance, said in found.items()
        if any(facts & said for _, facts in _FACT_KINDS)
    }


def reason_kind(reason: str | None) -> str:
    """The kind of a rebalance reason: join, leave, session timeout, poll timeout,
    metadata change, follow-up, static rejoin, or other."""
    for kind, pattern in _KINDS:
        if reason and pattern.search(reason):
            return kind
    return "other"


_STEPS = [
    timedelta(seconds=s)
    for s in (1, 5, 10, 30, 60, 300, 600, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600)
] + [timedelta(days=d) for d in (1, 7, 30)]


_MARKED = 60
"""Up to this many buckets, the imbalance line shows a marker at each."""
_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]


def _lone(values: Sequence[float | None], size: int) -> list[int]:
    """Marker sizes: ``size`` at a value between gaps (no line is drawn to it), else 0."""
    return [
        size
        if value is not None
        and (i == 0 or values[i - 1] is None)
        and (i + 1 == len(values) or values[i + 1] is None)
        else 0
        for i, value in enumerate(values)
    ]


def _bucket(start: datetime, end: datetime, most: int) -> timedelta:
    span = end - start
    return next((step for step in _STEPS if span / step <= most), _STEPS[-1])


def _floor(at: datetime, start: datetime, step: timedelta) -> datetime:
    return start + step * ((at - start) // step)


def _table(result: Result, limit: int | None = None) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"<td>{value:.3f}</td>"
        if isinstance(value, datetime):  # as kstore prints times: ISO-8601, UTC, no 000
            text = format_time(value if value.tzinfo else value.replace(tzinfo=UTC))
        elif isinstance(value, timedelta):
            text = format_span(value)
        else:
            text = "" if value is None else str(value)
        # long text (a reason) wraps; numbers, ids and times stay whole on one line
        kind = " class='text'" if len(text) > 40 and " " in text else ""
        return f"<td{kind}>{html.escape(text)}</td>"

    if not result.rows:  # the heading says "(0)": an empty table's header says no more
        return ""
    rows = result.rows if limit is None else result.rows[:limit]
    # a column's name may break after an underscore: churn_above_optimal over 3 lines
    # rather than the widest cell of its column
    head = "".join(f"<th>{html.escape(c).replace('_', '_<wbr>')}</th>" for c in result.columns)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    more = (
        f"<p class='note'>first {limit:,} of {len(result.rows):,} rows</p>"
        if limit is not None and len(result.rows) > limit
        else ""
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _packed(text: str) -> str:
    """``text`` gzipped, in base64: what the page's ``kstoreUnpack`` reads back."""
    return base64.b64encode(gzip.compress(text.encode(), 9, mtime=0)).decode()


_CARTESIAN = ("4.1.1", "_plotly/plotly-cartesian-4.1.1.min.js.gz")
"""The plotly.js cartesian bundle kstore ships (its version, its gzipped file here)."""


@cache
def _plotly_gzip() -> str:
    """plotly.js, gzipped, in base64: the cartesian bundle (bar, scatter, heatmap: every
    trace the pages draw; 0.66 MB in the page where the whole library takes 1.96 MB)
    while plotly writes figures for its version, else the whole of plotly's own."""
    from importlib.resources import files

    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    version, name = _CARTESIAN
    bundle = files("kstore.analytics").joinpath(name)
    if get_plotlyjs_version() == version and bundle.is_file():
        return base64.b64encode(bundle.read_bytes()).decode()
    return _packed(get_plotlyjs())


_LOADER = """
async function kstoreUnpack(id) {
  const packed = document.getElementById(id).textContent;
  const bytes = Uint8Array.from(atob(packed), c => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return await new Response(stream).text();
}
async function kstoreDraw() {
  const tag = document.createElement('script');
  tag.textContent = await kstoreUnpack('plotly-gz');
  document.head.appendChild(tag);
  const figures = JSON.parse(await kstoreUnpack('figures-gz'));
  for (const f of figures) {
    for (const trace of f.figure.data) {
      if (trace.meta && trace.meta.names) {  // owners named from codes, in the browser
        const names = trace.meta.names;
        trace.text = trace.z.map(r => r.map(c => c === null ? '' : c < 0 ? 'unowned' : names[c]));
      }
    }
    await Plotly.newPlot(f.id, f.figure.data, f.figure.layout, {responsive: true});
  }
  document.body.setAttribute('data-drawn', String(figures.length));
}
// A table wider than the window shows each row as a card, each value beside its
// column's name (a table of 15 columns scrolled sideways at 800 px); one that fits
// stays a table. Measured again when the window's width changes.
function kstoreFit() {
  const tables = [...document.querySelectorAll('table')];
  for (const table of tables) table.classList.remove('cards');
  const wide = tables.filter(table => table.scrollWidth > table.clientWidth);
  for (const table of wide) {
    // a name may break after its underscores, as in the table's head
    const names = [...table.tHead.rows[0].cells].map(
      cell => cell.textContent.replaceAll('_', '_\u200b'));
    for (const row of table.tBodies[0].rows) {
      [...row.cells].forEach((cell, i) => { cell.dataset.name = names[i]; });
    }
    table.classList.add('cards');
  }
}
kstoreFit();
window.addEventListener('resize', kstoreFit);
kstoreDraw();
"""

_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1400px}"
    # A table may be wider than the text above it, up to the window (less the margins):
    # at 1600 px a table wider than the body's 1400 px scrolled beside 200 px to spare.
    "table{border-collapse:collapse;margin:0.5em 0;display:block;overflow-x:auto;"
    "width:max-content;max-width:calc(100vw - 4em)}"
    "td,th{border:1px solid #ccc;"
    "padding:3px 8px;text-align:left;vertical-align:top;white-space:nowrap}"
    "th{white-space:normal}"  # a long name breaks after its underscores (<wbr>)
    "td.text{white-space:normal;min-width:30em;max-width:60em;overflow-wrap:anywhere}"
    ".note{color:#555;font-size:90%}.plot{width:100%}"
    ".partial{color:#a40000;font-weight:bold}"
    # an ownership view's key: owners named whole, in columns as wide as its longest
    # name (--column, set on each key), as many as fit
    ".key{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,var(--column)),1fr));"
    "gap:2px 14px;font-size:85%;margin:0 0 0.5em 60px}"
    ".key span{overflow-wrap:anywhere}.key i{display:inline-block;width:11px;height:11px;"
    "margin-right:4px;vertical-align:-1px}"
    # A table wider than the page scrolls inside itself; a shadow on the side where more
    # of it is says so (the covers move with the content, the shadows stay at the edges).
    "table{background:linear-gradient(to right,#fff 30%,#fff0),"
    "linear-gradient(to left,#fff 30%,#fff0) 100% 0,"
    "radial-gradient(farthest-side at 0 50%,#0004,#0000),"
    "radial-gradient(farthest-side at 100% 50%,#0004,#0000) 100% 0;"
    "background-repeat:no-repeat;background-size:40px 100%,40px 100%,14px 100%,14px 100%;"
    "background-attachment:local,local,scroll,scroll}"
    "@media (max-width:900px){body{margin:1em}td.text{min-width:16em}"
    "table{max-width:calc(100vw - 2em)}}"
    # A table as cards (kstoreFit): the rows side by side as many as fit, each a card
    # of lines "name value"; a value wraps anywhere rather than run past its card.
    "table.cards,.cards tbody,.cards td{display:block;width:auto;min-width:0;max-width:none}"
    "table.cards{background:none}.cards thead{display:none}"
    ".cards tbody{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,22em),1fr));"
    "gap:0.5em}"
    ".cards tr{display:block;border:1px solid #ccc;padding:3px 0}"
    ".cards td{display:grid;grid-template-columns:minmax(6em,40%) 1fr;gap:0 8px;border:none;"
    "padding:1px 8px;white-space:normal;overflow-wrap:anywhere}"
    ".cards td::before{content:attr(data-name);color:#555;overflow-wrap:normal}"
    # the first cell, the card's title, across it: a timeline's name on one line
    ".cards td:first-child{display:block;font-weight:bold;background:#f4f4f4}"
    ".cards td:first-child::before{margin-right:8px}"
)


def _page(title: str, sections: list[str], figures: list[tuple[str, Any]]) -> str:
    # The figures travel gzipped too: an ownership view's cells are long runs of one
    # owner (1.25 MB of JSON for two became 0.31 MB).
    data = _packed(
        json.dumps(
            [{"id": ident, "figure": json.loads(fig.to_json())} for ident, fig in figures],
            separators=(",", ":"),
        )
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body data-drawn='0'><h1>{html.escape(title)}</h1>"
        + "".join(sections)
        + f"<script id='plotly-gz' type='application/octet-stream'>{_plotly_gzip()}</script>"
        + f"<script id='figures-gz' type='application/octet-stream'>{data}</script>"
        + f"<script>{_LOADER}</script></body></html>"
    )


def _plot(ident: str) -> str:
    return f"<div id='{ident}' class='plot'></div>"


# --- a group's report -------------------------------------------------------------------


MARGIN_RIGHT = 20
"""A report plot's right margin, px: plotly's 80 left a blank band beside every plot,
a tenth of an 800 px page (nothing is drawn there: the legends are above the plots)."""

_LEGEND_WIDTH = 600
"""The legend's width on a narrow page (800 px, less a margin): its rows are counted at
it (a wider page leaves a row blank)."""


def _legend_above(
    title: str, names: Sequence[str], height: int, subtitled: bool = True
) -> dict[str, Any]:
    """Layout of a figure whose plots are ``height`` px tall, ``title`` at its top and
    its timelines ``names`` named under it in rows above the plots: the top margin grows
    with the rows (16 timelines' legend overprinted the title in a fixed one), and the
    figure with it. To the plot's right, long names took a third of a narrow page.
    ``subtitled``: the first plot has a title of its own, under the legend (room for
    one where there was none stood as a blank band above the reasons' plot)."""
    rows, used = 1, 0.0
    for name in names:
        entry = 40 + 6.2 * len(name)  # its symbol and gap, and the name (measured)
        if used and used + entry > _LEGEND_WIDTH:
            rows, used = rows + 1, 0.0
        used += entry
    top = 50 + 21 * rows + (50 if subtitled else 20)  # the title, the legend, a plot's title
    total = height + top
    return {
        "title": {"text": title, "yref": "container", "yanchor": "top", "y": 1 - 12 / total},
        "legend": {"orientation": "h", "yref": "container", "yanchor": "top", "x": 0,
                   "y": 1 - 50 / total, "maxheight": 1},  # not cut to half the figure
        "showlegend": True,  # a lone timeline named too (its colour as in the rates)
        # plotly's bottom margin of 80 px stood as a blank band under the rates' range
        # slider and the reasons' kinds (each pushes the margin out as far as it needs)
        "margin": {"t": top, "r": MARGIN_RIGHT, "b": 20},
        "height": total,
    }  # fmt: skip


def _colour(index: int) -> str:
    """The ``index``-th timeline's colour: 48 apart (plotly's 10 repeated from the 11th
    of 16 timelines), Dark24's then Light24's."""
    import plotly.colors

    palette = [*plotly.colors.qualitative.Dark24, *plotly.colors.qualitative.Light24]
    return str(palette[index % len(palette)])


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd, 101st, 111th."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


def _equal_lines(series: Mapping[str, tuple[Sequence[Any], Sequence[Any]]]) -> list[list[str]]:
    """The timelines of ``series`` grouped by equal lines (the same points), in their
    order: 15 timelines of an advised group draw 3 or 4 distinct moves lines, and drawn
    one over another (widest first, dashed) they were a thick striped band at 800 px."""
    groups: dict[tuple[tuple[Any, Any], ...], list[str]] = {}
    for timeline, (x, y) in series.items():
        groups.setdefault(tuple(zip(x, y, strict=True)), []).append(timeline)
    return list(groups.values())


def _at_middles(
    step: timedelta, *parts: Iterable[tuple[datetime, float | None]]
) -> tuple[list[datetime], list[float | None]]:
    """The (bucket, value) points of ``parts`` as a line: by bucket, each at its
    bucket's middle (as its bars)."""
    points = sorted(chain(*parts), key=lambda point: point[0])
    return [b + step / 2 for b, _ in points], [v for _, v in points]


def _rates(
    metrics: list[dict[str, Any]], timelines: Sequence[str]
) -> tuple[Any, str, dict[str, list[list[str]]], list[str]]:
    """The rates figure, its bucket said as a reader says it, by panel (rebalances,
    moved, imbalance) the timelines of each series drawn (equal series drawn once, the
    first's), and the timelines the legend names (those drawn somewhere).

    Rebalances: the first timeline (the source) as bars, every other timeline whose
    counts differ from it as a line over them. 15 timelines' bars side by side were 15
    coloured slivers per bucket (a user trial); replays mostly count their source's
    rebalances (a cooperative one adds its follow-up rounds), so few lines remain."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    times = [row["at"] for row in metrics]
    start, end = min(times), max(times)
    # about one bucket per rebalance for short histories, so that bars stay visible
    step = _bucket(start, end, min(BUCKETS, max(20, len(times) // max(1, len(timelines)))))
    figure = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=(
            f"rebalances per {format_span(step)}",
            f"partitions moved per {format_span(step)} (log scale)",
            "average imbalance (max - min load)",
        ),
    )
    counts: dict[str, tuple[list[datetime], list[float | None]]] = {}
    moved: dict[str, tuple[list[datetime], list[float | None]]] = {}
    imbalance: dict[str, tuple[list[datetime], list[float | None]]] = {}
    for timeline in timelines:
        sums: dict[datetime, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0])
        for row in metrics:
            if row["timeline"] == timeline:
                bucket = sums[_floor(row["at"], start, step)]
                bucket[0] += 1
                bucket[1] += row["moved"]
                if row["imbalance"] is not None:
                    bucket[2] += row["imbalance"]
                    bucket[3] += 1
        x = sorted(sums)
        # the runs of buckets without a rebalance between two buckets with one
        empty = [(here, after) for here, after in pairwise(x) if after != here + step]
        # no rebalance in a bucket between two is a count of 0 there: a line drawn
        # straight across such buckets read as rebalances all along
        zeros = {edge for here, after in empty for edge in (here + step, after - step)}
        counts[timeline] = _at_middles(step, [(b, sums[b][0]) for b in x], [(b, 0) for b in zeros])
        # Moves span orders of magnitude (a sticky replay ~15 per bucket beside its
        # source's ~1,000): a log scale; no move is a gap (log 0 is no number), and so is
        # a bucket without a rebalance: its line was drawn across four such buckets, as
        # if partitions had moved for 45 s (a user trial).
        gaps = [(here + step, None) for here, _ in empty]
        moved[timeline] = _at_middles(step, [(b, sums[b][1] or None) for b in x], gaps)
        imbalance[timeline] = _at_middles(
            step, [(b, sums[b][2] / sums[b][3] if sums[b][3] else None) for b in x]
        )
    legend: list[str] = []

    def named(timeline: str) -> bool:
        """Whether ``timeline``'s trace is its first (the one the legend names)."""
        if timeline in legend:
            return False
        legend.append(timeline)
        return True

    # Bars sized in time: plotly sizes bars from the gaps between them, which one lone
    # bucket does not have.
    bucket_ms = step.total_seconds() * 1000
    source = timelines[0]
    x, y = counts[source]
    figure.add_trace(
        go.Bar(
            x=[m - step / 2 for m in x],
            y=y,
            width=bucket_ms * 0.8,
            offset=bucket_ms * 0.1,
            name=source,
            legendgroup=source,
            showlegend=named(source),
            marker_color=_colour(0),  # one colour per timeline in all three plots
            hovertemplate="%{y:,} rebalances<extra>%{fullData.name}</extra>",
        ),
        row=1,
        col=1,
    )
    plotted = [m for _, y in moved.values() for m in y if m]  # the log axis's ticks
    equal: dict[str, list[list[str]]] = {}
    for plot, series, what in ((1, counts, "rebalances"), (2, moved, "moved"),
                               (3, imbalance, "imbalance")):  # fmt: skip
        groups = equal[what] = _equal_lines(series)
        lines = [names for names in groups if plot > 1 or source not in names]
        for rank, names in enumerate(lines):
            x, y = series[names[0]]
            # Distinct lines that meet (a replay's imbalance and its source's, for a
            # while) are drawn widest first, the later ones dashed, each showing around
            # and between the dashes of the next: 1.5 px wider each, up to 9 px.
            line = {
                "color": _colour(timelines.index(names[0])),
                "width": 1.5 + min(1.5, 7.5 / max(1, len(lines) - 1)) * (len(lines) - 1 - rank),
                "dash": _DASHES[rank % len(_DASHES)],
            }
            also = f" (also {len(names) - 1:,} more: see the note)" if len(names) > 1 else ""
            figure.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    # a lone bucket (between gaps) draws no line: a marker shows it
                    mode="lines+markers",
                    marker={"size": 7 if len(x) <= _MARKED else _lone(y, 6)},
                    name=names[0],
                    legendgroup=names[0],
                    showlegend=named(names[0]),
                    line=line,
                    hovertemplate=f"%{{y:,}} {what}<extra>%{{fullData.name}}{also}</extra>",
                ),
                row=plot,
                col=1,
            )
    figure.update_layout(
        **_legend_above("Rates per time bucket (drag to zoom)", legend, 600),
    )
    figure.update_yaxes(
        type="log",
        title_text="moved (log)",
        tickvals=(ticks := _log_ticks(plotted)),
        ticktext=[f"{t:,}" for t in ticks],
        row=2,
        col=1,
    )
    figure.update_xaxes(rangeslider={"visible": True, "thickness": 0.05}, row=3, col=1)
    # a bucket's width either side, so that one bucket alone is not stretched edge to edge
    figure.update_xaxes(range=[start - step, _floor(end, start, step) + 2 * step])
    return figure, format_span(step), equal, legend


def _drawn_once(drawn: dict[str, list[list[str]]]) -> list[str]:
    """A note of the timelines whose series were drawn once (``_rates``, ``_reasons``), if
    any: a count per panel in sight, the names a click away, a line per panel (15
    timelines' names, three panels of them, stood as a wall of text above each plot)."""
    panels = {what: groups for what, groups in drawn.items() if any(len(g) > 1 for g in groups)}
    if not panels:
        return []
    counts = "; ".join(
        f"{html.escape(what)}: {counted(sum(map(len, groups)), 'timeline')} as "
        f"{counted(len(groups), 'series', 'series')}"
        for what, groups in panels.items()
    )
    said = [
        f"<li>{html.escape(what)}: "
        + html.escape("; ".join(" = ".join(names) for names in groups if len(names) > 1))
        + "</li>"
        for what, groups in panels.items()
    ]
    return [
        "<details class='note'><summary>equal series drawn once, as the first one (its bars "
        f"or its line, in its colour): {counts}</summary><ul>{''.join(said)}</ul></details>"
    ]


def _log_ticks(values: Sequence[float]) -> list[int]:
    """Ticks of a log axis over ``values`` (whole numbers from 1), labelled in full: a
    tick per power of ten (1, 10, 100) when they span two decades or more; 2 and 5
    between down to a span of 4; every digit within that (a tick per power of ten left
    one tick or none: moves of 4 to 10 sat beside a lone "10"). Plotly's own digit
    ticks label 20 as "2", which read as two above the 10."""
    low, high = (min(values), max(values)) if values else (1, 10)
    span = high / low
    # every digit crowds at a decade's top (8, 9, 10 on 15 px) beyond a span of 4
    digits = (1,) if span >= 100 else (1, 2, 5) if span >= 4 else range(1, 10)
    ticks = [d * 10**k for k in range(len(str(int(high))) + 1) for d in digits]
    below = max((t for t in ticks if t <= low), default=1)
    above = min(t for t in ticks if t >= high)
    return [t for t in ticks if below <= t <= above]


def _reasons(
    rows: list[dict[str, Any]],
    timelines: Sequence[str],
    members: Set[str],
    listed: Set[str],
    facts: Mapping[tuple[str, int], str],
) -> tuple[Any, Result, list[list[str]]]:
    """Reasons by kind, a bar per timeline (timelines of equal counts one bar: the
    groups are returned); the top reasons (by shape) of the timelines
    ``listed`` (those that are no replay: a replay copies its source's reasons, and 15
    replays' copies of one reason filled the list). A reason of no kind takes its
    facts' (``fact_kinds``): every recorder's reasons were all ``other`` (a user trial)."""
    import plotly.graph_objects as go

    def kind_of(row: dict[str, Any]) -> str:
        said = reason_kind(row["reason"])
        return facts.get((row["timeline"], row["version"]), said) if said == "other" else said

    shapes = Counter((r["timeline"], kind_of(r), reason_shape(r["reason"], members)) for r in rows)
    kinds = Counter[tuple[str, str]]()
    for (timeline, kind, _), n in shapes.items():
        kinds[timeline, kind] += n
    figure = go.Figure()
    # Timelines of equal counts (a replay copies its source's reasons) share one bar:
    # 15 timelines drew 15 slivers per kind, 14 of them the source's again.
    counted = {t: (REASON_KINDS, [kinds[t, k] for k in REASON_KINDS]) for t in timelines}
    groups = _equal_lines(counted)
    for names in groups:
        also = f" (also {len(names) - 1:,} more: see the note)" if len(names) > 1 else ""
        figure.add_trace(
            go.Bar(
                x=REASON_KINDS,
                y=counted[names[0]][1],
                name=names[0],
                legendgroup=names[0],  # the legend packed in rows as the rates' is
                marker_color=_colour(timelines.index(names[0])),  # as in the rates
                hovertemplate=f"%{{y:,}} rebalances<extra>%{{fullData.name}}{also}</extra>",
            )
        )
    figure.update_layout(
        barmode="group",
        **_legend_above(
            "Rebalance reasons by kind", [names[0] for names in groups], 260, subtitled=False
        ),
    )
    # a kind of two words on two lines: at 800 px "poll timeout session timeout" ran
    # together on one
    figure.update_xaxes(
        tickvals=REASON_KINDS, ticktext=[kind.replace(" ", "<br>") for kind in REASON_KINDS]
    )
    top = Result(
        ["timeline", "kind", "rebalances", "reason"],  # the count before the long text
        [(t, k, n, reason) for (t, k, reason), n in shapes.most_common() if t in listed][:15],
    )
    return figure, top, groups


def _owners(
    store: Store, group: str, cluster: str, timeline: str
) -> tuple[list[tuple[int, datetime, str, int, str | None]], list[tuple[int, datetime]], int]:
    """The first ``OWNERSHIP_PARTITIONS`` partitions' owners (the least member listing
    it; None: nobody) at the timeline's first rebalance and at each rebalance where that
    changes, in (version, topic, partition) order; the rebalances (version, at); and how
    many partitions the timeline assigned.

    From ``kstore_assignment_spans``, the runs the store keeps: a row per change, where
    ``kstore_assignments`` (the view over them) gave a row per rebalance and partition
    (532,400 for 2,662 rebalances of 200 partitions) to be folded in Python."""
    where = "cluster = ? AND group_id = ? AND timeline = ?"
    key = [cluster, group, timeline]
    versions = run_sql(
        store,
        f'SELECT version, "at", (SELECT count(DISTINCT (topic, "partition")) '
        f"FROM kstore_assignment_spans WHERE {where}) "
        f"FROM kstore_rebalances WHERE {where} ORDER BY version",
        key + key,
    ).rows
    spans = run_sql(
        store,
        f'WITH shown AS (SELECT DISTINCT topic, "partition" FROM kstore_assignment_spans '
        f'WHERE {where} ORDER BY topic, "partition" LIMIT {OWNERSHIP_PARTITIONS}) '
        'SELECT s.topic, s."partition", s.member, s.from_version, s.to_version '
        "FROM kstore_assignment_spans s SEMI JOIN shown w "
        'ON s.topic = w.topic AND s."partition" = w."partition" '
        f"WHERE s.{where.replace(' AND ', ' AND s.')} "
        'ORDER BY s.topic, s."partition", s.from_version, s.member',
        key + key,
    ).rows
    if not versions or not spans:
        return [], [], 0 if not versions else int(versions[0][2])
    at_of = {int(v): at for v, at, _ in versions}
    first = int(versions[0][0])
    grown = _grown(store, key, [int(v) for v, _, _ in versions])
    same = _static_owners(store, key)
    found: list[tuple[int, datetime, str, int, str | None]] = []
    for (topic, partition), listed in groupby(spans, key=lambda span: (span[0], span[1])):
        # a span is [from_version, to_version) of the rebalances, as the view reads it:
        # one that ends at no rebalance holds on, one that starts at none is not read
        runs = [
            (since, until if until in at_of else None, same.get(member, member))
            for _, _, member, since, until in listed
            if since in at_of
        ]
        if not runs:
            continue
        # from its topic's growth to it (or, where no count says so, its first owner):
        # before, the partition was not there to be owned, and no cell is drawn
        begin = max(first, min(grown(topic, partition), runs[0][0]))
        owner: str | None = None
        for version, now in _owner_changes(runs, begin):
            if version == begin or now != owner:
                found.append((version, at_of[version], topic, partition, now))
                owner = now
    found.sort()  # by version (and its time), topic, partition: one row for each
    return found, [(int(v), at) for v, at, _ in versions], int(versions[0][2])


def _static_owners(store: Store, key: list[str]) -> dict[str, str]:
    """Member id -> the owner it is shown as: a static member's ids, one after the other
    (``MemberReplaced``), as one, ``static <instance id>`` (whole in the colour bar,
    which cuts a name past 19 characters). A restart of a static member showed as a
    move to a new owner each time (a user trial: a member restarted by Tansu 7 times,
    "46 moves" where compare's churn said 18)."""
    rows = run_sql(
        store,
        "SELECT json_extract_string(data, '$.old_member_id'), "
        "json_extract_string(data, '$.new_member_id'), "
        "json_extract_string(data, '$.instance_id') FROM kstore_events "
        "WHERE cluster = ? AND group_id = ? AND timeline = ? AND type = 'MemberReplaced' "
        "ORDER BY version",
        key,
    ).rows
    shown: dict[str, str] = {}
    for old, new, instance in rows:
        shown[new] = shown.setdefault(old, f"static {instance}")
    return shown


def _grown(store: Store, key: list[str], rebalances: list[int]) -> Callable[[str, int], int]:
    """(topic, partition) -> the first rebalance at or after the timeline's first
    ``TopicChanged`` that counts the partition (a topic grew: a user trial found its new
    partitions drawn black, unowned, from the group's start); a large number where none
    does."""
    counts = run_sql(
        store,
        "SELECT topic, version, partitions FROM kstore_topic_events "
        "WHERE cluster = ? AND group_id = ? AND timeline = ? AND type = 'TopicChanged' "
        "ORDER BY topic, version",
        key,
    ).rows
    never = 1 << 62

    def grown(topic: str, partition: int) -> int:
        said = next((v for t, v, n in counts if t == topic and n > partition), None)
        if said is None:
            return never
        return next((r for r in rebalances if r >= said), never)

    return grown


def _owner_changes(
    runs: list[tuple[int, int | None, str]], first: int
) -> list[tuple[int, str | None]]:
    """A partition's owner (the least member listing it; None: nobody) at ``first``
    and at each version where who lists it may change, from its runs (from_version,
    to_version or None, member) in from_version order."""
    points: list[tuple[int, str | None]] = [] if runs and runs[0][0] == first else [(first, None)]
    if all(
        until is not None and until <= since for (_, until, _), (since, _, _) in pairwise(runs)
    ):  # one member at a time (the rule): each run, and nobody in the gaps
        for i, (since, until, member) in enumerate(runs):
            points.append((since, member))
            if until is not None and (i + 1 == len(runs) or runs[i + 1][0] != until):
                points.append((until, None))
        return points
    steps = sorted(
        [(since, 1, member) for since, _, member in runs]
        + [(until, -1, member) for _, until, member in runs if until is not None]
    )
    held: Counter[str] = Counter()
    for i, (version, step, member) in enumerate(steps):
        held[member] += step
        if not held[member]:
            del held[member]
        if i + 1 == len(steps) or steps[i + 1][0] != version:
            points.append((version, min(held, default=None)))
    return points


def _ownership(store: Store, group: str, cluster: str, timeline: str) -> tuple[Any, str, str]:
    """Partition by time, coloured by owner (named on hover and, for the
    ``KEY_OWNERS`` holding most, in the key: HTML under the plot), black where nobody
    owns it, an x where it moved; the figure, its note and its key."""
    import plotly.graph_objects as go

    found, moments, total = _owners(store, group, cluster, timeline)
    partitions = sorted({(t, p) for _, _, t, p, _ in found})
    row_of = {tp: i for i, tp in enumerate(partitions)}
    if not found:
        return None, "no assignment", ""
    start, end = moments[0][1], moments[-1][1]
    columns = min(OWNERSHIP_COLUMNS, max(50, 4 * len(moments)))
    width = max(end - start, timedelta(seconds=1)) / columns
    # each column at its middle: its cell drawn over its time, the last ending at the
    # last rebalance (drawn from each start, the cells stood half a column early)
    middles = [start + width * (i + 0.5) for i in range(columns)]
    # Per cell, the state held longest in the column's time: an owner, or unowned (-1).
    # The last rebalance's state holds for one column's time after it. Times are whole
    # microseconds from the start (exact: a run of rebalances that leave a partition
    # with its owner adds up as one span).
    us = timedelta(microseconds=1)
    column_us = width // us
    time_in: list[list[dict[int, int]]] = [
        [defaultdict(int) for _ in range(columns)] for _ in partitions
    ]
    members: dict[str, int] = {}
    current: dict[tuple[str, int], tuple[int, int]] = {}
    last: dict[tuple[str, int], str] = {}
    moves_x: list[datetime] = []
    moves_y: list[str] = []

    def spend(tp: tuple[str, int], until: int) -> None:
        since, code = current[tp]
        cells = time_in[row_of[tp]]
        while since < until:
            c = min(columns - 1, since // column_us)
            stop = min(until, column_us * (c + 1)) if c < columns - 1 else until
            cells[c][code] += stop - since
            since = stop

    for _, at, topic, partition, owner in found:
        tp = (topic, partition)
        offset = (at - start) // us
        if tp in current:
            spend(tp, offset)
        code = -1 if owner is None else members.setdefault(owner, len(members))
        current[tp] = (offset, code)
        if owner is not None:
            previous = last.get(tp)
            if previous is not None and previous != owner:
                moves_x.append(at)
                moves_y.append(f"{topic}-{partition}")
            last[tp] = owner
    for tp in current:
        spend(tp, (end - start) // us + column_us)
    z: list[list[int | None]] = [
        [max(cell, key=cell.__getitem__) if cell else None for cell in line] for line in time_in
    ]
    unowned_cells = sum(1 for line in z for code in line if code == -1)
    absent_cells = sum(1 for line in z for code in line if code is None)
    names = list(members)
    palette = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
        "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    ]  # fmt: skip
    n = len(names)
    colours = ["#000000"] + [palette[i % len(palette)] for i in range(n)]
    scale: list[list[Any]] = []
    for i, colour in enumerate(colours):
        scale += [[i / len(colours), colour], [(i + 1) / len(colours), colour]]
    held: dict[int, int] = defaultdict(int)
    for line in time_in:
        for cell in line:
            for code, spent in cell.items():
                held[code] += spent
    y = [f"{t}-{p}" for t, p in partitions]
    height = max(420, min(1400, 12 * len(y) + 160))
    # The owners holding most, named whole in a key under the plot (HTML, wrapping at any
    # width): a colour bar beside the plot cut the names (a member id's UUID took half
    # a narrow page) and took the plot's width at 800 px. In columns as wide as its
    # longest name and its swatch: a ragged flow of names read as a second column cut.
    keyed = sorted((c for c in held if c >= 0), key=held.__getitem__, reverse=True)[:KEY_OWNERS]
    labelled = [(-1, "unowned"), *((c, names[c]) for c in keyed)]
    key = "".join(
        f"<span><i style='background:{colours[code + 1]}'></i>{html.escape(label)}</span>"
        for code, label in labelled
    )
    column = max(len(label) for _, label in labelled) + 3
    step = max(1, -(-len(moves_x) // MOVE_MARKERS))
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=middles,
            y=y,
            zmin=-1.5,
            zmax=n - 0.5,
            colorscale=scale,
            meta={"names": names},
            hovertemplate="%{y} at %{x}: %{text}<extra></extra>",
            showscale=False,
        )
    )
    figure.add_trace(
        go.Scatter(
            x=moves_x[::step],
            y=moves_y[::step],
            mode="markers",
            marker={"symbol": "x-thin", "size": 6, "line": {"width": 1, "color": "white"}},
            name="moved",
            hovertemplate="%{y} moved at %{x}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Ownership ({timeline}): partition by time",
        height=height,
        showlegend=False,
        margin={"r": MARGIN_RIGHT},
    )
    # The axes span the cells: the moves' markers padded them, a blank band above the
    # partitions and beside the time.
    figure.update_xaxes(range=[start, start + width * columns])
    figure.update_yaxes(range=[-0.5, len(y) - 0.5])
    note = (
        f"{len(partitions):,} of {total:,} partitions, {counted(len(moments), 'rebalance')}, "
        f"{columns:,} columns of {format_span(width)} each showing who held the partition "
        "longest in it; "
        f"{len(names):,} owners (the key names the {len(keyed):,} holding most; hover names "
        f"every owner), {len(moves_x):,} moves"
        + (f" (every {_ordinal(step)} marked)" if step > 1 else "")
        + f"; black: unowned most of the column ({unowned_cells:,} cells)"
        + (f"; blank: a partition not there yet ({absent_cells:,} cells)" if absent_cells else "")
    )
    return figure, note, f"<div class='key' style='--column:{column}ch'>{key}</div>"


def _storms(rows: list[dict[str, Any]]) -> Result:
    episodes: list[list[Any]] = []
    for row in rows:
        if not row["storm"]:
            continue
        last = episodes[-1] if episodes else None
        if last and last[0] == row["timeline"] and last[3] == row["previous"]:
            last[2], last[3], last[4] = row["at"], row["version"], last[4] + 1
        else:
            episodes.append([row["timeline"], row["at"], row["at"], row["version"], 1])
    return Result(
        ["timeline", "from", "until", "last version", "rebalances"],
        [tuple(e) for e in episodes],
    )


def _counted(storms: Result, timelines: Sequence[str]) -> str:
    """How many storms, per timeline: one storm in each of three timelines read as three
    storms when the heading said ``(3)``; the count most timelines share is said once."""
    per = Counter(row[0] for row in storms.rows)
    if len(timelines) == 1:
        return f"{per[timelines[0]]:,}"
    counts = {per[t] for t in timelines}
    if len(counts) == 1:
        return f"{counts.pop():,} in each of the {len(timelines):,} timelines"
    by_count: dict[int, list[str]] = {}
    for timeline in timelines:
        by_count.setdefault(per[timeline], []).append(timeline)
    most = max(by_count, key=lambda count: len(by_count[count]))
    if len(by_count[most]) < 3:
        return ", ".join(f"{per[t]:,} in {t}" for t in timelines)
    # the commonest count said once: 15 timelines' counts one by one were a wall of a heading
    others = [
        f"{count:,} in {', '.join(named)}" for count, named in by_count.items() if count != most
    ]
    return "; ".join([*others, f"{most:,} in each of the other {len(by_count[most]):,}"])


def _anomalies_said(kinds: Counter[str], withheld: int) -> str:
    """The anomalies' note: what is odd by kind, then what is not listed and why (it read
    ``none; withheld by cooperative rounds (expected, not listed): 568``)."""
    said = ", ".join(f"{n:,} {kind}" for kind, n in kinds.items()) or "nothing unexpected"
    if withheld:
        said += (
            f"; not listed: {withheld:,} partitions withheld for a cooperative rebalance's "
            "follow-up round (taken from their owner, assigned in the next round: the "
            "protocol's way, KIP-429)"
        )
    return said


def _compared(store: Store, group: str, cluster: str, table: Result) -> set[tuple[str, int]] | None:
    """The (timeline, version) of the rebalances ``table`` (``compare``) sums, when it
    cuts a timeline to a partial one's prefix; None when every timeline is whole."""
    rows = table.records()
    if all(r["compared_to"] == r["decided_to"] for r in rows):
        return None
    upto = {r["timeline"]: r["compared_to"] for r in rows}
    scope = {"group": group, "cluster": cluster, "timelines": ",".join(upto)}
    return {
        (c["timeline"], c["version"])
        for c in run_query(store, "coverage", scope).records()
        if c["source_version"] is not None and c["source_version"] <= upto[c["timeline"]]
    }


def write_report(
    store: Store,
    group: str,
    timelines: Sequence[str],
    cluster: str,
    out: Path,
    source: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    sources: Sources | None = None,
) -> int:
    """Write the report; returns the number of plots in it. ``source``: the timeline the
    advice is of (``--from``; default: the group's source by ``source_timeline``'s rule,
    ``recorded``, else its one timeline that is no replay; where there is none the
    Advice section says which to give), first everywhere, then the others.
    ``progress(parts done, parts)`` after each part: the queries, rates and reasons,
    each timeline's ownership, the page. ``sources``: the group's ``sources_of``, if
    read already (the source, the replays and the advice's timelines are read from it)."""
    from kstore.analytics.advise import advice, verdict

    if sources is None:
        sources = sources_of(store, cluster, group)
    default = sources.default()
    if source is None:
        source = default
    timelines = sorted(timelines, key=lambda name: name != source)  # stable: given order
    parts = 3 + len(timelines)
    told = progress or (lambda done, total: None)

    scope = {"group": group, "cluster": cluster}
    metrics = [
        r for r in run_query(store, "metrics", scope).records() if r["timeline"] in timelines
    ]
    decided = strategies_of(store, group, cluster)  # read once: compare's, advice's
    table = compare(store, group, timelines, cluster, decided)
    rebalances = run_query(store, "timeline", scope).records()
    previous: dict[str, int] = {}
    for row in rebalances:  # storms are runs of consecutive storm rebalances
        row["previous"] = previous.get(row["timeline"])
        if row["storm"]:
            previous[row["timeline"]] = row["version"]
        else:
            previous.pop(row["timeline"], None)
    rebalances = [r for r in rebalances if r["timeline"] in timelines]
    # Rates and reasons compare timelines: over the rebalances the table compares.
    compared = _compared(store, group, cluster, table)
    rated, reasoned = metrics, rebalances
    if compared is not None:
        rated = [r for r in metrics if (r["timeline"], r["version"]) in compared]
        reasoned = [r for r in rebalances if (r["timeline"], r["version"]) in compared]
    cut = (
        ""
        if compared is None
        else "<p class='note'>over the rebalances compared above (a partial timeline's "
        "prefix); ownership, storms and anomalies below show each timeline whole</p>"
    )
    anomalies = run_query(store, "anomalies", scope).records()
    figures: list[tuple[str, Any]] = []
    sections = [
        "<h2>Compare</h2>",
        _table(table),
        *(f"<p class='partial'>{html.escape(line)}</p>" for line in partial(table)),
    ]
    found = advice(store, group, cluster, source, decided, sources) if source is not None else None
    sections.append("<h2>Advice: which strategy would have moved least</h2>")
    if source is None:
        said = sources.which()
        sections.append(
            f"<p class='note'>no source timeline to advise from: {html.escape(said)}</p>"
        )
    elif found is None:
        command = ["kstore", "advise", "--group", group]
        command += [] if source == default else ["--from", source]
        sections.append(
            f"<p class='note'>no optimal replay yet: <code>{html.escape(shlex.join(command))}"
            "</code> replays the history with every strategy.</p>"
        )
    else:  # the table, and what kstore advise says under it
        sections.append(_table(found))
        sections += [f"<p class='verdict'>{html.escape(v)}</p>" for v in verdict(found, source)]
    told(1, parts)
    if rated:
        rates, step, drawn, _ = _rates(rated, timelines)
        figures.append(("rates", rates))
        sections += [f"<h2>Rates (per {html.escape(step)})</h2>", cut, _plot("rates")]
        sections += _drawn_once(drawn)
    replayed = sources.replays()
    listed = [t for t in timelines if t not in replayed] or list(timelines)
    reasons, top, kinds_drawn = _reasons(
        reasoned,
        timelines,
        _member_ids(store, group, cluster),
        set(listed),
        fact_kinds(store, group, cluster),
    )
    figures.append(("reasons", reasons))
    sections += ["<h2>Reasons</h2>", cut, _plot("reasons")]
    sections += [*_drawn_once({"reasons": kinds_drawn}), "<h3>Top reasons</h3>"]
    sections += [
        f"<p class='note'>of {html.escape(', '.join(listed))}"
        + (" (replays copy their source's reasons)" if len(listed) < len(timelines) else "")
        + "; member ids shown as &lt;member&gt;, instance ids as &lt;instance&gt;, numbers as "
        "&lt;n&gt;</p>",
        _table(top),
    ]
    told(2, parts)
    sections.append("<h2>Ownership</h2>")
    for i, timeline in enumerate(timelines):
        figure, note, key = _ownership(store, group, cluster, timeline)
        if figure is not None:
            figures.append((f"own{i}", figure))
            sections += [_plot(f"own{i}"), key, f"<p class='note'>{html.escape(note)}</p>"]
        told(3 + i, parts)
    storms = _storms(rebalances)
    sections += [
        f"<h2>Storms ({html.escape(_counted(storms, timelines))})</h2>",
        "<p class='note'>runs of rebalances each with at least 3 in the 5 minutes up to it "
        "(the timeline query's storm)</p>",
        _table(storms, LIST_ROWS),
    ]
    odd = [a for a in anomalies if a["timeline"] in timelines and not a["expected"]]
    withheld = sum(1 for a in anomalies if a["timeline"] in timelines and a["expected"])
    kinds = Counter(a["kind"] for a in odd)
    sections += [
        f"<h2>Anomalies ({len(odd):,})</h2>",
        f"<p class='note'>{html.escape(_anomalies_said(kinds, withheld))}</p>",
        _table(
            Result(
                ["timeline", "at", "version", "kind", "topic", "partition", "members"],
                [
                    (a["timeline"], a["at"], a["version"], a["kind"], a["topic"],
                     a["partition"], a["members"])
                    for a in odd
                ],
            ),
            LIST_ROWS,
        ),
    ]  # fmt: skip
    write_text(out, _page(f"kstore report: {cluster}/{group}", sections, figures))
    told(parts, parts)
    return len(figures)


# --- the fleet ----------------------------------------------------------------------------


def _slug(cluster: str, group: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{cluster}__{group}")
    digest = hashlib.sha1(f"{cluster}\0{group}".encode()).hexdigest()[:8]
    return f"{text[:80]}-{digest}.html"


_NAME_SHOWN = 48
"""A fleet plot's group name is cut to this many characters (its rank keeps them apart)."""

NO_SOURCE = "no 'recorded' timeline, and more than one that is no replay"
NO_REBALANCE = "no rebalance in its source timeline"


def unranked(left_out: dict[str, list[str]]) -> str:
    """The groups a fleet left out, by why: ``a, b (why); c (why)`` ('' when none)."""
    return "; ".join(f"{', '.join(names)} ({why})" for why, names in left_out.items() if names)


def write_fleet(
    store: Store,
    out: Path,
    pages: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[int, dict[str, list[str]]]:
    """``out``/index.html ranks every group (its source timeline: ``recorded``, else
    its one timeline that is no replay, as ``kstore replay`` starts from) by churn,
    storms and imbalance, linking to each group's report (written beside it when
    ``pages``; ``progress(reports written, groups)`` after each). No group with a
    source timeline (or none with a rebalance in it) is an error, not a page ranking none.
    Returns the number of groups ranked and the groups left out (``CLUSTER/GROUP``), by
    why (``NO_SOURCE``, ``NO_REBALANCE``: a group that only came and went has no report)."""
    import plotly.graph_objects as go

    every = every_source(store)  # each group's report reads its own
    sourced = {key: found.default() for key, found in every.items()}
    sources = {key: name for key, name in sourced.items() if name is not None}
    left_out = {
        NO_SOURCE: [f"{c}/{g}" for (c, g), name in sourced.items() if name is None],
        NO_REBALANCE: [],
    }
    if not sources:
        raise UsageError(
            "--fleet: no group to rank: "
            + (
                "the store holds no group"
                if not sourced
                else "no group has a 'recorded' timeline or one timeline that is no replay "
                f"({len(sourced):,} groups)"
            )
        )
    stats: dict[tuple[str, str], dict[str, Any]] = {
        (cluster, group): {"cluster": cluster, "group": group, "timeline": timeline,
                           "rebalances": 0, "churn": 0, "storm_rebalances": 0,
                           "imbalances": [], "unassigned": 0}
        for (cluster, group), timeline in sources.items()
    }  # fmt: skip
    for timeline in sorted(set(sources.values())):
        for m in run_query(store, "metrics", {"timeline": timeline}).records():
            if sources.get((m["cluster"], m["group"])) != timeline:
                continue
            row = stats[(m["cluster"], m["group"])]
            row["rebalances"] += 1
            row["churn"] += m["moved"]
            row["unassigned"] += m["unassigned"]
            if m["imbalance"] is not None:
                row["imbalances"].append(m["imbalance"])
        for t in run_query(store, "timeline", {"timeline": timeline}).records():
            if t["storm"] and sources.get((t["cluster"], t["group"])) == timeline:
                stats[(t["cluster"], t["group"])]["storm_rebalances"] += 1
    for row in stats.values():
        group_sources = every[(row["cluster"], row["group"])]
        found = group_sources.replays()
        cut = sum(1 for name in found if not group_sources.complete.get(name))
        row["replays"] = f"{len(found)}" + (f", {cut} partial" if cut else "")
        values = row.pop("imbalances")
        row["imbalance"] = sum(values) / len(values) if values else None
    for key, row in list(stats.items()):
        if not row["rebalances"]:  # its report would be refused: nothing to show
            left_out[NO_REBALANCE].append(f"{key[0]}/{key[1]}")
            del stats[key]
    if not stats:
        raise UsageError(f"--fleet: no group to rank: {unranked(left_out)}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write: {exc.strerror}") from None
    ranked = sorted(
        stats.values(),
        key=lambda r: (-r["churn"], -r["storm_rebalances"], -(r["imbalance"] or 0), r["cluster"],
                       r["group"]),
    )  # fmt: skip
    rows = ranked
    links = []
    for rank, row in enumerate(rows, start=1):
        name = _slug(row["cluster"], row["group"])
        if pages:
            read = every[(row["cluster"], row["group"])]
            write_report(
                store,
                row["group"],
                read.ordered(),
                row["cluster"],
                out / name,
                row["timeline"],
                sources=read,
            )
            if progress is not None:
                progress(rank, len(rows))
        links.append(
            f"<tr><td>{rank}</td><td><a href='{html.escape(name)}'>"
            f"{html.escape(row['cluster'])}/{html.escape(row['group'])}</a></td>"
            f"<td>{html.escape(row['timeline'])}</td><td>{row['rebalances']}</td><td>{row['churn']}</td>"
            f"<td>{row['storm_rebalances']}</td>"
            f"<td>{'' if row['imbalance'] is None else format(row['imbalance'], '.3f')}</td>"
            f"<td>{row['unassigned']}</td><td>{row['replays']}</td></tr>"
        )
    top = rows[:50]
    named = [f"{r['cluster']}/{r['group']}" for r in top]
    # A bar a row, its group named beside it: upright bars' names turned on end ran into
    # each other (at 800 px plotly showed every other one). The rank keeps two names cut
    # alike apart; the whole name is in the hover and the table.
    shown = [name if len(name) <= _NAME_SHOWN else name[: _NAME_SHOWN - 1] + "…" for name in named]
    figure = go.Figure(
        go.Bar(
            x=[r["churn"] for r in top],
            y=[f"{rank}. {name}" for rank, name in enumerate(shown, start=1)],
            orientation="h",
            customdata=named,
            hovertemplate="%{customdata}: churn %{x:,}<extra></extra>",
            name="churn",
        )
    )
    figure.update_layout(
        title=f"Churn of the {len(top):,} groups that move most",
        height=120 + 20 * len(top),
        yaxis={"autorange": "reversed", "automargin": True},
        xaxis_title="churn (partitions moved)",
    )
    sections = [
        f"<p class='note'>{len(rows):,} groups, each its source timeline (recorded, else "
        "its one timeline that is no replay); ranked by churn, then storm rebalances, then "
        "average imbalance</p>",
        *(
            f"<p class='partial'>not ranked: {html.escape(left)}</p>"
            for left in [unranked(left_out)]
            if left
        ),
        _plot("fleet"),
        "<table><thead><tr><th>rank</th><th>group</th><th>timeline</th><th>rebalances</th>"
        "<th>churn</th>"
        "<th>storm rebalances</th><th>imbalance</th><th>unassigned</th>"
        "<th>replays (partial: not decided to the source's end)</th></tr></thead><tbody>"
        + "".join(links)
        + "</tbody></table>",
    ]
    write_text(out / "index.html", _page("kstore fleet", sections, [("fleet", figure)]))
    return len(rows), left_out
