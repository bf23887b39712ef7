"""The report and the fleet page at any size (issue 14, point 4), opened in headless
Chromium: they draw within a time bound; screenshots of a small and a big group are kept
in ``test-artifacts/`` (look at them)."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

import pytest

from kstore.analytics._queries import Result
from kstore.analytics.pages import (
    KEY_OWNERS,
    MOVE_MARKERS,
    REASON_KINDS,
    _anomalies_said,
    _counted,
    _log_ticks,
    _table,
    reason_kind,
    reason_shape,
    write_fleet,
)
from kstore.analytics.replay import replay
from kstore.model import (
    AssignmentCompleted,
    Event,
    MemberJoined,
    MemberLeft,
    RebalanceStarted,
    TopicChanged,
)
from kstore.store.log import Store
from tests.processes import on_a_terminal, plain

pytestmark = pytest.mark.xdist_group("chromium")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
EXAMPLES = ROOT / "examples"
T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
DRAW_SECONDS = 60
CARTESIAN_TRACES = {"bar", "scatter", "heatmap"}
"""Traces of plotly.js's cartesian bundle that the pages draw (it has more)."""


def kstore(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "kstore.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out


def chromium(page: Path, profile: Path, *args: str) -> tuple[str, float]:
    browser = shutil.which("chromium")
    assert browser is not None, "make test installs Debian's chromium"
    started = time.monotonic()
    out = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=30000",
            *args,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return out.stdout, time.monotonic() - started


def figures_of(text: str) -> list[dict[str, Any]]:
    """The figures a page draws (gzipped and in base64 inside it)."""
    found = re.search(r"id='figures-gz' type='application/octet-stream'>(.*?)</script>", text)
    assert found is not None
    figures: list[dict[str, Any]] = json.loads(gzip.decompress(base64.b64decode(found.group(1))))
    return figures


def drawn(page: Path, tmp_path: Path, screenshot: str | None = None) -> int:
    """Open ``page``; the number of figures it drew (and a screenshot, if named).

    One Chromium run dumps the DOM and takes the screenshot of the same load (it does
    both when given both), so the time bound covers the drawing and the picture."""
    shot = None
    args = ["--dump-dom"]
    if screenshot is not None:
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / screenshot
        shot.unlink(missing_ok=True)
        args += ["--window-size=1400,5600", f"--screenshot={shot}"]
    dom, seconds = chromium(page, tmp_path / "profile", *args)
    assert seconds < DRAW_SECONDS, seconds
    count = int(re.search(r"<body[^>]*data-drawn=\"(\d+)\"", dom).group(1))  # type: ignore[union-attr]
    assert dom.count('class="main-svg"') >= count
    if shot is not None:
        assert shot.stat().st_size > 50_000
    return count


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("Adding new member c-1 with group instance id None; client reason: not provided", "join"),
        ("explicit `LeaveGroup` request for (c-1) members; client reason: the consumer is "
         "being closed", "leave"),
        ("removing member c-1 on heartbeat expiration", "session timeout"),
        ("explicit `LeaveGroup` request for (c-1) members; client reason: consumer poll "
         "timeout has expired.", "poll timeout"),
        ("Updating metadata for member c-1 during Stable; client reason: not provided",
         "metadata change"),
        ("cooperative follow-up", "follow-up"),
        ("Leader c-1 re-joining group during Stable; client reason: need to revoke "
         "partitions and re-join", "follow-up"),
        ("Updating metadata for static member c-2 with instance id i-1; client reason: "
         "not provided", "static rejoin"),
        ("Optional[static-1] rejoined", "static rejoin"),
        ("group epoch bumped to 7", "other"),
        (None, "other"),
    ],
)  # fmt: skip
def test_reasons_have_kinds(reason: str | None, kind: str) -> None:
    assert reason_kind(reason) == kind
    assert kind in REASON_KINDS


@pytest.mark.parametrize(
    ("reason", "shape"),
    [
        ("explicit `LeaveGroup` request for (c-1-9f) members; client reason: the consumer "
         "is being closed", "explicit `LeaveGroup` request for (<member>) members; client "
         "reason: the consumer is being closed"),
        ("Leader c-1 re-joining group during Stable", "Leader <member> re-joining group "
         "during Stable"),  # c-1 is a member too, and c-1-9f begins with it
        ("removing member c-2.", "removing member <member>."),
        ("removing member c-22", "removing member c-<n>"),  # not a member: a word
        ("Updating metadata for static member c-2 with instance id i-1; client reason: not "
         "provided", "Updating metadata for static member <member> with instance id "
         "<instance>; client reason: not provided"),
        ("__consumer_offsets: generation 41", "__consumer_offsets: generation <n>"),
        ("member x joined", "member x joined"),
        (None, "(none recorded)"),
    ],
)  # fmt: skip
def test_reasons_are_counted_by_shape(reason: str | None, shape: str) -> None:
    members = {"c-1-9f", "c-2", "c-1"}
    assert reason_shape(reason, members) == shape


def _recorded_page(tmp_path: Path) -> str:
    """The report of a group as kstore's kafka-python assignor records one (a user trial):
    each reason ``generation N`` after the facts of the rebalance (joins, a leave, a
    static member replaced, its topic growing from 3 partitions to 4, a session
    timeout; generation 7's reason says its kind)."""
    base = {"cluster": "c", "group": "g", "timeline": "recorded"}
    owned = {"a": [["t", 0]], "b": [["t", 1]], "s-1": [["t", 2]]}
    facts: list[tuple[str, dict[str, Any]]] = [
        ("TopicChanged", {"topic": "t", "partitions": 3}),
        ("MemberJoined", {"member_id": "a", "topics": ["t"]}),
        ("MemberJoined", {"member_id": "b", "topics": ["t"]}),
        ("MemberJoined", {"member_id": "s-1", "topics": ["t"], "instance_id": "s"}),
        ("MemberLeft", {"member_id": "b", "reason": "other"}),
        ("MemberReplaced", {"old_member_id": "s-1", "new_member_id": "s-2", "instance_id": "s"}),
        ("TopicChanged", {"topic": "t", "partitions": 4}),
        ("MemberLeft", {"member_id": "a", "reason": "session-timeout"}),
    ]
    rounds = [[0, 1], [2], [3], [4], [5], [6], [7], []]  # facts before each rebalance
    assignments = [
        {"a": owned["a"] + owned["b"]},
        {"a": owned["a"], "b": owned["b"]},
        owned,
        {"a": owned["a"] + owned["b"], "s-1": owned["s-1"]},
        {"a": owned["a"] + owned["b"], "s-2": owned["s-1"]},
        {"a": owned["a"] + owned["b"], "s-2": owned["s-1"] + [["t", 3]]},
        {"s-2": owned["a"] + owned["b"] + owned["s-1"] + [["t", 3]]},
        {"s-2": owned["a"] + owned["b"] + owned["s-1"] + [["t", 3]]},
    ]
    lines, at = [], T0
    for generation, (taken, assignment) in enumerate(zip(rounds, assignments, strict=True)):
        said = "removing member a on heartbeat expiration" if generation == 7 else None
        started = {"generation": generation, "reason": said or f"generation {generation}"}
        done = {"generation": generation, "strategy": "range", "assignment": assignment}
        for kind, data in [facts[i] for i in taken] + [
            ("RebalanceStarted", started),
            ("AssignmentCompleted", done),
        ]:
            at += timedelta(seconds=5)
            lines.append({**base, "type": kind, "at": at.isoformat(), "data": data})
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    store = tmp_path / "s.duckdb"
    kstore(store, "init")
    kstore(store, "append", str(source))
    page = tmp_path / "r.html"
    kstore(store, "report", "--group", "g", "--out", str(page))
    return page.read_text()


def test_a_recorded_reason_of_no_kind_takes_the_kind_of_its_facts(tmp_path: Path) -> None:
    """A group recorded by kstore's kafka-python assignor (a user trial: joins, a member
    killed, a static member restarting, a topic growing) had every rebalance's reason
    ``generation N``, all of kind ``other`` in the report. A reason of no kind now takes
    the kind of the facts the recorder wrote before the rebalance; a reason that says
    its kind keeps it."""
    text = _recorded_page(tmp_path)
    (bars,) = {f["id"]: f["figure"] for f in figures_of(text)}["reasons"]["data"]
    kinds = {k: n for k, n in zip(bars["x"], bars["y"], strict=True) if n}
    # 7: its reason says a session timeout (of a, whose leave the facts say too)
    assert kinds == {
        "join": 3,
        "leave": 1,
        "static rejoin": 1,
        "metadata change": 1,
        "session timeout": 2,
    }, kinds
    top = text.split("<h3>Top reasons</h3>", 1)[1].split("</table>", 1)[0]
    assert "<td>recorded</td><td>join</td><td>3</td><td>generation &lt;n&gt;</td>" in top


def test_a_partition_is_drawn_from_when_its_topic_has_it(tmp_path: Path) -> None:
    """A user trial: a topic grown from 2 partitions to 4 had its new partitions drawn
    black ("unowned") from the group's start, and counted in the caption's unowned
    cells. A partition is drawn from the first rebalance its topic counts it at; one
    that was there and nobody held stays black."""
    text = _recorded_page(tmp_path)
    figure = {f["id"]: f["figure"] for f in figures_of(text)}["own0"]
    heat = figure["data"][0]
    rows = dict(zip(heat["y"], heat["z"], strict=True))
    grown = rows["t-3"]  # counted from generation 5, the sixth of eight rebalances
    assert grown[0] is None and grown[-1] is not None and -1 not in grown, grown
    assert rows["t-2"][0] == -1  # there from the start, held by nobody until generation 2
    blank = sum(1 for code in grown if code is None)
    assert f"; blank: a partition not there yet ({blank:,} cells)" in text


def test_a_static_members_restart_is_one_owner_and_no_move(tmp_path: Path) -> None:
    """A user trial: a static member restarted (``MemberReplaced``) showed in the
    ownership view as a move of its partitions to a new owner each time, in a new colour
    ("46 moves" where compare's churn said 18). Its ids are one owner, shown by its
    instance id (``static s``), and its partitions stay put."""
    text = _recorded_page(tmp_path)
    figure = {f["id"]: f["figure"] for f in figures_of(text)}["own0"]
    heat, moved = figure["data"]
    names = heat["meta"]["names"]
    assert "static s" in names and not {"s-1", "s-2"} & set(names), names
    held = dict(zip(heat["y"], heat["z"], strict=True))["t-2"]
    assert {names[code] for code in held if code is not None and code >= 0} == {"static s"}
    assert "t-2" not in moved["y"], moved  # held by s from generation 2 to the end
    assert ", 4 moves;" in text  # t-1 from a to b, back, then to s; t-0 from a to s


def _big(
    store: Store,
    group: str,
    rebalances: int,
    partitions: int,
    members: int,
    strategy: str = "cooperative-sticky",
) -> None:
    """A long history: a member joins or leaves before each rebalance (reasons carry its
    id), every fifth rebalance is a cooperative first round that withholds the partitions
    it takes from their owners (given by the next); the others decided by ``strategy``."""
    ids = [f"consumer-{group}-{i:03d}-{i * 7919 % 100000:05d}-0f9c8a7e" for i in range(members)]
    datas: list[object] = [TopicChanged(topic="events", partitions=partitions)]
    datas += [MemberJoined(member_id=m, topics=["events"]) for m in ids[: members // 2]]
    present = ids[: members // 2]
    owner: dict[int, str] = {}
    generation = 0
    for i in range(rebalances):
        if i % 2 and len(present) > 3:
            gone = present.pop(i % len(present))
            datas.append(MemberLeft(member_id=gone, reason="leave"))
            reason = f"removing member {gone} on heartbeat expiration"
        else:
            fresh = next(m for m in ids if m not in present)
            present.append(fresh)
            datas.append(MemberJoined(member_id=fresh, topics=["events"]))
            reason = f"Adding new member {fresh} with group instance id None"
        generation += 1
        datas.append(RebalanceStarted(generation=generation, reason=reason))
        target = {p: present[(p + i // 7) % len(present)] for p in range(partitions)}
        cooperative = i % 5 == 0
        given = {
            p: m
            for p, m in target.items()
            if not cooperative or owner.get(p) in (None, m) or owner.get(p) not in present
        }
        assignment: dict[str, list[tuple[str, int]]] = {m: [] for m in present}
        for p, m in given.items():
            assignment[m].append(("events", p))
        decided = "cooperative-sticky" if cooperative else strategy
        datas.append(
            AssignmentCompleted(generation=generation, strategy=decided, assignment=assignment)
        )
        owner.update(given)
        if cooperative and len(given) < partitions:
            generation += 1
            datas.append(RebalanceStarted(generation=generation, reason="cooperative follow-up"))
            assignment = {m: [] for m in present}
            for p, m in target.items():
                assignment[m].append(("events", p))
            datas.append(
                AssignmentCompleted(generation=generation, strategy="cooperative-sticky",
                                    assignment=assignment)
            )  # fmt: skip
            owner.update(target)
    events = [
        Event(group=group, at=T0 + timedelta(seconds=37 * i), data=d)  # type: ignore[arg-type]
        for i, d in enumerate(datas)
    ]
    for start in range(0, len(events), 2000):
        store.append(events[start : start + 2000])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a small simulated group (advised) and two big generated ones, the
    medium one replayed with range to the end and with sticky stopped early (partial)."""
    path = tmp_path_factory.mktemp("fleet") / "kstore.duckdb"
    store = Store(path)
    store.init()
    _big(store, "big", rebalances=2000, partitions=200, members=200)
    _big(store, "medium", rebalances=300, partitions=60, members=20)
    replay(store, group="medium", strategy="range")
    calls = iter(range(300))
    replay(store, group="medium", strategy="sticky", stop=lambda: next(calls, None) is None)
    kstore(path, "simulate", str(EXAMPLES / "eager-vs-cooperative.yaml"), "--timeline", "recorded")
    kstore(path, "advise", "--group", "eager-vs-cooperative")
    return path


def test_small_report_draws_with_advice(fleet: Path, tmp_path: Path) -> None:
    page = tmp_path / "small.html"
    out = kstore(fleet, "report", "--group", "eager-vs-cooperative", "--out", str(page))
    plots = int(re.search(r"\((\d+) plots", out.stdout).group(1))  # type: ignore[union-attr]
    text = page.read_text()
    assert "<script src=" not in text  # nothing fetched: opens offline
    assert "Advice: which strategy would have moved least" in text and "replay/optimal" in text
    assert drawn(page, tmp_path, "report-small.png") == plots


_PROBE = (  # once every plot is drawn
    "<script>const probe = setInterval(() => {"
    "if (document.body.dataset.drawn === '0') return; clearInterval(probe);"
    "const box = e => { const r = e.getBoundingClientRect();"
    " return [r.left, r.top, r.right, r.bottom]; };"
    "const reasons = document.getElementById('reasons');"
    "const legend = reasons.querySelector('.legend');"
    "document.body.setAttribute('data-widths', JSON.stringify({"
    "page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],"
    "tables: [...document.querySelectorAll('table')].map(t => ({"
    " widths: [t.scrollWidth, t.clientWidth], cards: t.classList.contains('cards'),"
    " names: [...t.tHead.rows[0].cells].map(c => c.textContent),"
    " said: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.dataset.name))})),"
    "ticks: [...reasons.querySelectorAll('.xtick text')].map(box),"
    "title: box(reasons.querySelector('.gtitle')), legend: legend && box(legend),"
    "plot: box(reasons.querySelector('.nsewdrag')),"
    "cells: box(document.querySelector('#own0 .hm image')),"
    "owned: box(document.querySelector('#own0 .nsewdrag')),"
    "key: [...document.querySelectorAll('#own0 + .key span')].map(box),"
    "beside: [...document.querySelectorAll('.plot')].map(p =>"
    " p.getBoundingClientRect().right - box(p.querySelector('.nsewdrag'))[2]),"
    "under: ['rates', 'reasons'].map(id => { const p = document.getElementById(id);"
    " const last = [...p.querySelectorAll('.rangeslider-bg, .xtick text')].map(box);"
    " return p.getBoundingClientRect().bottom - Math.max(...last.map(b => b[3])); })"
    "}))}, 100);</script></body>"
)


def measured(page: Path, tmp_path: Path, window: int) -> dict[str, Any]:
    """At ``window`` px wide: the page's [scrollWidth, clientWidth]; each table's, whether
    it shows its rows as cards, its column names and the name each cell was given; the
    reasons plot's x labels, title, legend and plot area, the first ownership view's cells
    and plot area, its key's names (left, top, right, bottom); the blank beside each
    plot's area, px; the blank under the rates' range slider and the reasons' kinds, px."""
    probed = tmp_path / f"probed-{window}.html"
    probed.write_text(page.read_text().replace("</body>", _PROBE))
    dom, _ = chromium(probed, tmp_path / "profile", "--dump-dom", f"--window-size={window},2000")
    found = re.search(r'data-widths="([^"]*)"', dom)
    assert found is not None, dom[:2000]
    said: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return said


def test_the_report_reads_at_800_px_without_sideways_scrolling(fleet: Path, tmp_path: Path) -> None:
    """A user trial at 800 px: the Compare and Advice tables (15 timelines, 15 columns)
    scrolled sideways, the reasons plot's kinds ran together ("poll timeout session
    timeout static rejoin"), a blank band stood above its plot, the ownership view's
    cells inside another and every plot beside 80 px of blank, and the key's names ran
    ragged. Now a table wider than the window shows each row as a card of its columns'
    names and values, a kind is named on two lines where it has two words, the reasons'
    plot starts under its legend, the cells fill their plot, 20 px beside it, the
    key's names stand in columns, and no blank band stands under the rates' range
    slider (63 px) or the reasons' kinds. At 1,600 px every table is a table (one takes the
    window less the margins, past the body's 1,400 px) and none scrolls."""
    page = tmp_path / "advised.html"
    kstore(fleet, "report", "--group", "eager-vs-cooperative", "--out", str(page))
    wide = measured(page, tmp_path, 1600)
    assert not any(t["cards"] for t in wide["tables"]), wide["tables"]
    assert all(scroll <= client for t in wide["tables"] for scroll, client in [t["widths"]])
    assert max(t["widths"][1] for t in wide["tables"]) > 1400, wide["tables"]
    narrow = measured(page, tmp_path, 800)
    assert narrow["page"][0] <= narrow["page"][1], narrow["page"]
    for table in narrow["tables"]:
        scroll, client = table["widths"]
        assert scroll <= client, table  # 1,454 px in 768 before
        if table["cards"]:  # each value beside its column's name (breaking after a _)
            names = [[name.replace("\u200b", "") for name in said] for said in table["said"]]
            assert all(said == table["names"] for said in names), table
    assert [t["names"][0] for t in narrow["tables"] if t["cards"]][:2] == ["timeline", "rank"]
    ticks = narrow["ticks"]
    assert len(ticks) == len(REASON_KINDS)
    for (_, _, right, _), (left, _, _, _) in pairwise(sorted(ticks)):
        assert right + 4 <= left, ticks  # apart
    # the plot under the legend (or the title): 42 px below it before, 100 with no legend
    above = narrow["legend"] or narrow["title"]
    assert 0 <= narrow["plot"][1] - above[3] <= 25, (above, narrow["plot"])
    # the ownership view's cells fill its plot: its moves' markers padded it, 60 px
    # blank above the partitions, 40 px either side of the time
    for edge, (cells, owned) in enumerate(zip(narrow["cells"], narrow["owned"], strict=True)):
        assert abs(cells - owned) <= 2, (edge, narrow["cells"], narrow["owned"])
    assert all(0 <= blank <= 30 for blank in narrow["beside"]), narrow["beside"]  # 80 before
    # no blank band under the rates' range slider and the reasons' kinds (63 and 45 px
    # before, plotly's bottom margin of 80 px), at either width
    for window in (wide, narrow):
        assert all(0 <= blank <= 20 for blank in window["under"]), window["under"]
    # the key's names in columns, each starting where the one above it does (a ragged
    # second column read as cut at 800 px): at most 3 columns, as many rows as it takes
    for window in (wide, narrow):
        starts = Counter(left for left, *_ in window["key"])
        rows = len({top for _, top, *_ in window["key"]})
        assert len(starts) <= (3 if window is narrow else 6), starts
        assert rows == -(-len(window["key"]) // len(starts)), (rows, starts)


def test_big_report_is_bounded_and_draws(fleet: Path, tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    out = kstore(fleet, "report", "--group", "big", "--out", str(page))
    plots = int(re.search(r"\((\d+) plots", out.stdout).group(1))  # type: ignore[union-attr]
    # plotly.js's cartesian bundle (0.66 MB) and the gzipped figures: 2.6 MB before
    assert page.stat().st_size <= 1_200_000, page.stat().st_size
    text = page.read_text()
    figures = figures_of(text)
    by_id = {f["id"]: f["figure"] for f in figures}
    # the cartesian bundle draws every trace the report has
    assert {t["type"] for f in figures for t in f["figure"]["data"]} <= CARTESIAN_TRACES
    # reasons grouped by kind, not one bar per distinct text (thousands carry member ids)
    (reason_bars,) = by_id["reasons"]["data"]
    assert len(reason_bars["x"]) == len(REASON_KINDS)
    kinds = dict(zip(reason_bars["x"], reason_bars["y"], strict=True))
    # every fifth rebalance of 2,000 is a first round, all but the first (nothing to take)
    assert kinds["follow-up"] == 399 and kinds["join"] + kinds["session timeout"] == 2000
    # the top reasons counted by their shape: the member's id named each one apart
    top = text.split("<h3>Top reasons</h3>", 1)[1].split("</table>", 1)[0]
    shapes = {s: n for n, s in re.findall(r"<td>(\d+)</td><td[^>]*>([^<]*)</td></tr>", top)}
    assert shapes == {
        "Adding new member &lt;member&gt; with group instance id None": str(kinds["join"]),
        "removing member &lt;member&gt; on heartbeat expiration": str(kinds["session timeout"]),
        "cooperative follow-up": str(kinds["follow-up"]),
    }
    # rates per bucket, not a point per rebalance; the bucket said as a reader says it
    assert all(len(trace["x"]) <= 300 for trace in by_id["rates"]["data"])
    said = re.search(r"<h2>Rates \(per (\d+ (?:s|min|h|days?))\)</h2>", text)
    assert said is not None, "a bucket said as a time delta (0:05:00)"
    titles = [a["text"] for a in by_id["rates"]["layout"]["annotations"]]
    assert f"rebalances per {said.group(1)}" in titles
    # the ownership view names every owner, marks moves, and shows unowned cells
    heatmap, moves = by_id["own0"]["data"]
    owners = kstore(fleet, "sql", "SELECT count(DISTINCT member) AS n FROM kstore_assignments "
                    "WHERE group_id = 'big'", "--format", "csv").stdout.split()[1]  # fmt: skip
    assert len(heatmap["meta"]["names"]) == int(owners) > 100
    assert len(heatmap["z"]) == 200 and all(len(row) <= 300 for row in heatmap["z"])
    assert any(-1 in row for row in heatmap["z"])
    # the owners holding most named whole in a key under the plot (a colour bar cut
    # them to 18 characters and took a narrow page's width), no colour bar
    assert heatmap["showscale"] is False and "colorbar" not in heatmap
    key = re.search(r"<div class='key'[^>]*>(.*?)</div>", text)
    assert key is not None
    keyed = [html.unescape(n) for n in re.findall(r"</i>([^<]*)</span>", key.group(1))]
    assert keyed[0] == "unowned" and len(keyed) == 1 + KEY_OWNERS
    assert set(keyed[1:]) <= set(heatmap["meta"]["names"]), keyed
    assert 0 < len(moves["x"]) <= MOVE_MARKERS
    assert "Storms (" in text and "Anomalies (0)" in text
    # lengths and times as a reader says them: "columns of 0:00:19.872733" before
    note = re.search(r"columns of ([^<]*?) each", text)
    assert note is not None and re.fullmatch(r"[\d.]+ (s|min|h|days?)", note.group(1))
    assert not re.search(r"\d:\d\d:\d\d\.\d{6}|<td>\d{4}-\d\d-\d\d \d", text)
    assert drawn(page, tmp_path, "report-big.png") == plots


def test_fleet_page_ranks_every_group(fleet: Path, tmp_path: Path) -> None:
    folder = tmp_path / "fleet"
    # on a terminal, a bar counts the groups' reports (one per group: long work)
    command = [sys.executable, "-m", "kstore.cli", "--store", str(fleet), "report", "--fleet"]
    code, shown = on_a_terminal([*command, "--out", str(folder)], columns=120)
    assert code == 0 and "3/3 groups" in plain(shown), plain(shown)
    index = (folder / "index.html").read_text()
    links = re.findall(r"<a href='([^']+)'>([^<]+)</a>", index)
    assert [name for _, name in links] == [
        "default/big",
        "default/medium",
        "default/eager-vs-cooperative",
    ]
    for target, _ in links:
        assert (folder / target).is_file()
    medium = re.search(r"default/medium</a>(.*?)</tr>", index).group(1)  # type: ignore[union-attr]
    assert medium.endswith("<td>2, 1 partial</td>"), medium
    assert drawn(folder / "index.html", tmp_path, "fleet.png") == 1


def test_a_report_whose_reader_left_early_is_not_said_written(fleet: Path) -> None:
    """``kstore report --out - | head -c 10`` said "wrote the report to standard output"
    (a user trial): the page went out in one write, which a pipe took 64 KiB of, and
    Python raised nothing. The reader gone ends the command as a closed pipe does."""
    command = f"{sys.executable} -m kstore.cli --store {fleet} report --group medium --out -"
    done = subprocess.run(
        f"{command} | head -c 10; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "<!DOCTYPE "), done
    whole = kstore(fleet, "report", "--group", "medium", "--out", "-")
    assert len(whole.stdout) > 200_000 and whole.stderr.startswith("wrote the report to")


def test_a_partial_replay_is_marked_and_compared_over_its_prefix(
    fleet: Path, tmp_path: Path
) -> None:
    page = tmp_path / "partial.html"
    out = kstore(fleet, "report", "--group", "medium", "--out", str(page))
    assert out.stderr == ""  # no bar in a pipe
    command = [sys.executable, "-m", "kstore.cli", "--store", str(fleet), "report"]
    code, shown = on_a_terminal([*command, "--group", "medium", "--out", str(page)], 120)
    # the queries, rates and reasons, three timelines' ownership, the page
    assert code == 0 and "report default/medium" in plain(shown)
    assert "6/6 parts" in plain(shown), plain(shown)
    # with the bar on the terminal, --out - still writes the page to standard output
    # (rich routed it to the terminal: a pipe got nothing)
    piped = tmp_path / "piped.html"
    with piped.open("wb") as out:
        code, shown = on_a_terminal([*command, "--group", "medium", "--out", "-"], 120, stdout=out)
    assert code == 0 and piped.read_bytes().startswith(b"<!DOCTYPE html>")
    assert "<!DOCTYPE" not in shown
    text = page.read_text()
    (line,) = re.findall(r"<p class='partial'>(.*?)</p>", text)
    assert line.startswith("replay/sticky is partial: it has decided up to version ")
    figures = figures_of(text)
    reasons = next(f["figure"]["data"] for f in figures if f["id"] == "reasons")
    # the reasons of the rebalances compared: as many in both replays, and in the source
    # those and its follow-up rounds, which an eager replay has not (issue 13)
    kinds = {t["name"]: dict(zip(t["x"], t["y"], strict=True)) for t in reasons}
    # replay/sticky's equal to replay/range's: one bar, and the note says so
    assert set(kinds) == {"recorded", "replay/range"}
    assert "<li>reasons: replay/range = replay/sticky</li>" in text
    assert kinds["replay/range"]["follow-up"] == 0 < kinds["recorded"]["follow-up"]
    assert kinds["recorded"] == kinds["replay/range"] | {
        "follow-up": kinds["recorded"]["follow-up"]
    }
    rows = json.loads(kstore(fleet, "compare", "--group", "medium", "--format", "json").stdout)
    assert {r["timeline"]: r["complete"] for r in rows} == {
        "recorded": True,
        "replay/range": True,
        "replay/sticky": False,
    }
    # one source range on every side: the prefix the partial replay covers (the source
    # with its follow-up rounds in it more)
    assert len({r["compared_to"] for r in rows}) == 1
    counts = {r["timeline"]: r["rebalances"] for r in rows}
    assert counts["replay/range"] == counts["replay/sticky"]
    assert counts["recorded"] == counts["replay/range"] + kinds["recorded"]["follow-up"]
    assert rows[0]["compared_to"] < rows[0]["source_last"]
    assert drawn(page, tmp_path, "report-partial.png") >= 3


def test_a_lone_rebalance_draws_visible_bars_inside_its_bucket() -> None:
    """One rebalance per timeline (a static rolling deploy): plotly sized the bars from
    the gaps between buckets, which one bucket has not, so they were a millisecond wide
    and the axis a millisecond long."""
    from kstore.analytics.pages import _rates

    at = datetime(2026, 1, 1, 0, 0, 6, tzinfo=UTC)
    metrics = [{"timeline": t, "at": at, "moved": 3, "imbalance": 0} for t in ("sim/a", "replay/b")]
    figure, step, drawn, legend = _rates(metrics, ["sim/a", "replay/b"])
    bucket_ms = timedelta(seconds=1) / timedelta(milliseconds=1)
    assert step == "1 s"
    # the source's rebalances; replay/b's are equal (no line); moves and imbalance are
    # lines with markers
    (bar,) = [t for t in figure.data if t.type == "bar"]
    assert bar.width >= bucket_ms / 4  # a visible share of its bucket
    assert 0 <= bar.offset < bar.offset + bar.width <= bucket_ms  # inside the bucket
    low, high = (datetime.fromisoformat(str(v)) for v in figure.layout.xaxis.range)
    assert low.replace(tzinfo=UTC) < at and high.replace(tzinfo=UTC) > at + timedelta(seconds=1)
    lines = [t for t in figure.data if t.type == "scatter"]
    # the two timelines' equal lines drawn once, the first's, and said so
    assert [line.name for line in lines] == ["sim/a", "sim/a"]
    assert all("markers" in line.mode for line in lines)
    both = [["sim/a", "replay/b"]]
    assert drawn == {"rebalances": both, "moved": both, "imbalance": both}
    assert legend == ["sim/a"]


def test_the_moved_line_has_a_gap_where_no_rebalance_was() -> None:
    """A user trial: the partitions-moved line joined a bucket at 04:02:30 to one at
    04:03:15 across four buckets in which nothing rebalanced (so nothing moved), reading
    as 45 s of moves. A bucket without a rebalance is a gap, as one of no move is."""
    from kstore.analytics.pages import _rates

    at = datetime(2026, 1, 1, tzinfo=UTC)
    seconds = [0, 10, 60, 70]
    metrics = [
        {"timeline": "recorded", "at": at + timedelta(seconds=s), "moved": 4, "imbalance": 1}
        for s in seconds
    ]
    figure, step, *_ = _rates(metrics, ["recorded"])
    moved, imbalance = (t for t in figure.data if t.type == "scatter")
    assert step == "5 s"
    # the buckets at 0 and 10 s have one without a rebalance between them: a gap each
    assert list(moved.y) == [4, None, 4, None, 4, None, 4], moved.y
    gap = [datetime.fromisoformat(str(x)) for x in moved.x][3]
    assert gap.replace(tzinfo=UTC) == at + timedelta(seconds=17.5)  # the middle of 15-20 s
    assert None not in imbalance.y  # the imbalance holds between rebalances: one line


def test_a_replays_few_moves_read_beside_its_sources_many() -> None:
    """A user trial: a sticky replay moved ~15 partitions per bucket beside the source's
    ~1,000, and its bars lay flat on zero. The moved row is a log scale, said so, each
    timeline a line of its own colour, every bucket with moves drawn."""
    from kstore.analytics.pages import _rates

    timelines = ["sim/a", "replay/sticky"]
    metrics = [
        {"timeline": t, "at": T0 + timedelta(minutes=5 * i), "moved": moved, "imbalance": 1}
        for i in range(200)
        for t, moved in zip(timelines, (1000 + i, 15 + i % 3), strict=True)
    ]
    figure, *_ = _rates(metrics, timelines)
    moved = [t for t in figure.data if t.yaxis == "y2"]
    assert [t.name for t in moved] == timelines
    assert figure.layout.yaxis2.type == "log"
    assert "log" in figure.layout.yaxis2.title.text
    assert any("moved" in a.text and "log" in a.text for a in figure.layout.annotations)
    small = next(t for t in moved if t.name == "replay/sticky")
    assert min(small.y) >= 15
    # equal lines both show: the first wider, the next dashed over it
    assert moved[0].line.width > moved[1].line.width and moved[1].line.dash != "solid"
    # a bucket of nothing moved is a gap on a log scale, not a point at 1 (log 0 = 0);
    # a bucket between two gaps, which no line reaches, is a marker
    metrics[1]["moved"] = metrics[5]["moved"] = 0
    figure, *_ = _rates(metrics, timelines)
    small = next(t for t in figure.data if t.yaxis == "y2" and t.name == "replay/sticky")
    assert small.y[0] is None and small.y[1] is not None and small.y[2] is None
    assert "markers" in small.mode and small.marker.size[1] > 0
    assert sum(small.marker.size) == small.marker.size[1]


@pytest.mark.parametrize(
    ("runs", "changes"),
    [
        # one member at a time, a gap between (nobody), then held to the end
        ([(1, 4, "a"), (4, 6, "b"), (8, None, "a")],
         [(1, "a"), (4, "b"), (6, None), (8, "a")]),
        # not listed at the first rebalance
        ([(3, 5, "b")], [(1, None), (3, "b"), (5, None)]),
        # two members at once (a double assignment): the least one owns it
        ([(1, 6, "b"), (3, 4, "a"), (4, 9, "c")],
         [(1, "b"), (3, "a"), (4, "b"), (6, "c"), (9, None)]),
        # listed twice by one member (two spans, listing 0 and 1)
        ([(1, 5, "a"), (2, 3, "a")], [(1, "a"), (2, "a"), (3, "a"), (5, None)]),
    ],
)  # fmt: skip
def test_owner_changes_from_spans(
    runs: list[tuple[int, int | None, str]], changes: list[tuple[int, str | None]]
) -> None:
    """The ownership view reads the store's spans: a partition's owner (the least member
    listing it) at the first rebalance and wherever it may change."""
    from kstore.analytics.pages import _owner_changes

    assert _owner_changes(runs, 1) == changes


def test_the_shipped_plotly_bundle_is_the_version_plotly_writes_for() -> None:
    """The pages embed plotly.js's cartesian bundle that kstore ships
    (kstore/analytics/_plotly/README.md says how to replace it) while the plotly package
    writes figures for its version; an upgraded plotly fails here until it is replaced."""
    from importlib.resources import files

    from plotly.offline import get_plotlyjs_version

    from kstore.analytics.pages import _CARTESIAN, _plotly_gzip

    version, name = _CARTESIAN
    assert version == get_plotlyjs_version()
    code = gzip.decompress(files("kstore.analytics").joinpath(name).read_bytes()).decode()
    assert code.startswith(f"/**\n* plotly.js (cartesian - minified) v{version}\n")
    for trace in CARTESIAN_TRACES:  # each registered in the bundle
        assert f'moduleType:"trace",name:"{trace}"' in code
    assert base64.b64decode(_plotly_gzip()) == files("kstore.analytics").joinpath(name).read_bytes()


def test_table_cells_print_times_as_kstore_does_and_an_empty_table_is_left_out() -> None:
    at = datetime(2026, 1, 1, 0, 1, 3, 622000)  # DuckDB's TIMESTAMP: naive, UTC
    cells = _table(Result(["at", "span"], [(at, timedelta(seconds=19.872733))]))
    assert "<td>2026-01-01T00:01:03.622Z</td><td>19.9 s</td>" in cells  # was 03.622000
    assert _table(Result(["timeline", "at"], [])) == ""  # the heading says (0)


def test_storms_are_counted_per_timeline() -> None:
    one_each = Result(["timeline"], [("a",), ("b",), ("c",)])
    assert _counted(one_each, ["a", "b", "c"]) == "1 in each of the 3 timelines"  # was "3"
    assert _counted(Result(["timeline"], [("a",), ("a",)]), ["a", "b"]) == "2 in a, 0 in b"
    assert _counted(Result(["timeline"], [("a",)]), ["a"]) == "1"
    # 15 timelines of an advised group: the heading named all 15 with their counts
    many = Result(["timeline"], [(t,) for t in "abcdefg"] + [("b",), ("e",)])
    assert _counted(many, list("abcdefg")) == "2 in b, e; 1 in each of the other 5"
    assert _counted(Result(["timeline"], [("a",), ("b",), ("b",)]), list("abcd")) == (
        "1 in a, 2 in b, 0 in c, 0 in d"
    )


def test_a_log_axis_within_two_decades_ticks_between_the_powers_of_ten() -> None:
    assert _log_ticks([4, 7, 10]) == [4, 5, 6, 7, 8, 9, 10]  # was one tick, 10
    assert _log_ticks([3, 18]) == [2, 5, 10, 20]  # 20 was labelled "2"; 8, 9, 10 crowded
    assert _log_ticks([3, 250]) == [2, 5, 10, 20, 50, 100, 200, 500]
    assert _log_ticks([3, 1_200]) == [1, 10, 100, 1_000, 10_000]  # no crowding
    assert _log_ticks([1_000_000]) == [1_000_000]
    assert _log_ticks([]) == [1, 2, 5, 10]


def test_the_anomalies_note_says_what_is_not_listed_and_why() -> None:
    said = _anomalies_said(Counter({"double-assigned": 3, "unassigned": 1}), 1_568)
    assert said.startswith("3 double-assigned, 1 unassigned; not listed: 1,568 partitions ")
    assert "follow-up round" in said
    assert _anomalies_said(Counter(), 0) == "nothing unexpected"  # was "none; withheld ...: 0"


_FLEET_PROBE = (  # once the plot is drawn: its bars' count, each shown label's box
    "<script>const probe = setInterval(() => {"
    "if (document.body.dataset.drawn === '0') return; clearInterval(probe);"
    "const plot = document.getElementById('fleet');"
    "const labels = [...plot.querySelectorAll('.yaxislayer-above .ytick text, "
    ".xaxislayer-above .xtick text')].map(e => { const r = e.getBoundingClientRect();"
    " return [e.textContent, r.left, r.top, r.right, r.bottom]; });"
    "document.body.setAttribute('data-fleet', JSON.stringify({labels,"
    " bars: plot.querySelectorAll('.bars .point').length,"
    " page: [document.documentElement.scrollWidth, document.documentElement.clientWidth]}));"
    "}, 200);</script></body>"
)


def test_a_fleet_of_many_long_named_groups_names_each_bar_at_800_px(tmp_path: Path) -> None:
    """The fleet page's churn of the 50 groups that move most stood as 50 upright bars,
    each group's name turned on end beneath it: at 800 px, 60 groups named as services
    name them ran into one another. Now each bar lies along its own row, the group's name
    beside it, the heaviest first, and every one of the 50 is named, apart from the next."""
    store = Store(tmp_path / "kstore.duckdb")
    store.init()
    names = [f"payments-settlement-consumers-eu-west-1-shard-{i:02d}" for i in range(60)]
    for i, name in enumerate(names):
        _big(store, name, rebalances=2 + i % 7, partitions=6, members=6, strategy="range")
    write_fleet(store, tmp_path / "fleet", pages=False)
    page = tmp_path / "fleet" / "index.html"
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", _FLEET_PROBE))
    dom, _ = chromium(probed, tmp_path / "profile", "--dump-dom", "--window-size=800,2000")
    found = re.search(r'data-fleet="([^"]*)"', dom)
    assert found is not None, dom[:2000]
    said = json.loads(html.unescape(found.group(1)))
    assert said["page"][0] <= said["page"][1], said["page"]
    assert said["bars"] == 50
    named = [label for label in said["labels"] if "payments" in label[0]]
    assert len(named) == 50, named
    for (_, *one), (_, *other) in combinations(named, 2):
        left, top, right, bottom = one
        apart = right <= other[0] + 0.5 or other[2] <= left + 0.5
        assert apart or bottom <= other[1] + 0.5 or other[3] <= top + 0.5, (one, other)
