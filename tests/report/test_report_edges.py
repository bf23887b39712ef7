"""The report's edges a user trial found: a fleet of simulated groups, ``--out`` a
folder, a simulated group's source among its replays, many timelines on one page."""

from __future__ import annotations

import html
import json
import os
import re
import stat
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path

import pytest

from kstore.analytics.pages import BUCKETS, _ordinal, _rates
from tests.processes import kstore_cli
from tests.report.test_pages import chromium, figures_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def ok(store: Path, *args: str, cwd: Path | None = None) -> str:
    out = kstore_cli(store, *args, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout


def usage_error(out: subprocess.CompletedProcess[str]) -> str:
    """The one line of a usage error (exit 2, nothing on standard output)."""
    assert out.returncode == 2 and out.stdout == "", (out.returncode, out.stdout, out.stderr)
    assert out.stderr.startswith("kstore: error: ") and out.stderr.count("\n") == 1, out.stderr
    return out.stderr


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three simulated groups (timelines sim/<name>, no recorded)."""
    path = tmp_path_factory.mktemp("sim") / "kstore.duckdb"
    ok(path, "init")
    for example in ("eager-vs-cooperative", "flapping-member", "static-restart"):
        ok(path, "simulate", str(EXAMPLES / f"{example}.yaml"))
    return path


def test_the_fleet_ranks_simulated_groups_by_their_source_timeline(
    simulated: Path, tmp_path: Path
) -> None:
    said = ok(simulated, "report", "--fleet", "--out", str(tmp_path / "fleet"))
    assert "ranking 3 groups" in said, said  # 0 groups, without a word, before
    index = (tmp_path / "fleet" / "index.html").read_text()
    rows = re.findall(r"<a href='[^']+'>default/([^<]+)</a></td><td>([^<]+)</td>", index)
    assert sorted(rows) == [
        ("eager-vs-cooperative", "sim/eager-vs-cooperative"),
        ("flapping-member", "sim/flapping-member"),
        ("static-restart", "sim/static-restart"),
    ]


def test_the_fleet_line_names_the_groups_it_left_unranked(tmp_path: Path) -> None:
    """A user trial: a store of three groups said "ranking 1 groups" and nothing of the
    two it left out (each with two timelines and no 'recorded'); only the page said."""
    store = tmp_path / "kstore.duckdb"
    ok(store, "simulate", str(EXAMPLES / "static-restart.yaml"))
    for name in ("sim/a", "sim/b"):
        ok(store, "simulate", str(EXAMPLES / "flapping-member.yaml"), "--timeline", name)
    # A group that only came and went (a member joined; no rebalance yet, as a poller
    # records on a broker that describes no assignments): its report is refused, and
    # the whole fleet failed on it ("timeline 'recorded' of default/g has no rebalance").
    joined = {"type": "MemberJoined", "group": "g", "at": "2026-01-01T00:00:00Z"}
    joined["data"] = {"member_id": "m1", "topics": ["t"]}
    (tmp_path / "joined.jsonl").write_text(json.dumps(joined) + "\n")
    ok(store, "append", str(tmp_path / "joined.jsonl"))
    said = ok(store, "report", "--fleet", "--out", str(tmp_path / "fleet"))
    assert said == (
        f"wrote {tmp_path / 'fleet' / 'index.html'} ranking 1 group, and its report beside "
        "it; not ranked: default/flapping-member (no 'recorded' timeline, and more than one "
        "that is no replay); default/g (no rebalance in its source timeline)\n"
    )
    index = (tmp_path / "fleet" / "index.html").read_text()
    assert "default/g (no rebalance in its source timeline)" in index


def test_a_fleet_without_a_source_timeline_is_an_error(tmp_path: Path) -> None:
    store = tmp_path / "kstore.duckdb"
    ok(store, "init")
    said = usage_error(kstore_cli(store, "report", "--fleet", "--out", str(tmp_path / "empty")))
    assert "no group to rank: the store holds no group" in said
    for name in ("sim/a", "sim/b"):  # two timelines, neither a replay: no source
        ok(store, "simulate", str(EXAMPLES / "static-restart.yaml"), "--timeline", name)
    said = usage_error(kstore_cli(store, "report", "--fleet", "--out", str(tmp_path / "two")))
    assert "no group has a 'recorded' timeline or one timeline that is no replay" in said
    assert not (tmp_path / "two").exists()


FOLDER = "a folder; give a file name (e.g. {}/kstore-report.html)"


@pytest.mark.parametrize(
    ("out", "said"),
    [
        (".", FOLDER.format(".")),
        ("some/dir/", FOLDER.format("some/dir")),
        ("some/dir", FOLDER.format("some/dir")),
        ("new/", FOLDER.format("new")),
        ("nowhere/r.html", "cannot write: no such folder: nowhere"),
        ("store/r.html", "cannot write: not a folder: store"),
    ],
)
def test_out_a_folder_or_an_unwritable_path_is_one_line(
    simulated: Path, tmp_path: Path, out: str, said: str
) -> None:
    (tmp_path / "some" / "dir").mkdir(parents=True)
    (tmp_path / "store").write_text("a file")
    # a traceback's ValueError (exit 1) for ".", before
    found = usage_error(
        kstore_cli(simulated, "report", "--group", "static-restart", "--out", out, cwd=tmp_path)
    )
    assert found == f"kstore: error: --out {out}: {said}\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["dir", "some", "store"]


@pytest.fixture(scope="module")
def advised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated group (sim/flapping-member) replayed with every strategy (advise)."""
    path = tmp_path_factory.mktemp("advised") / "kstore.duckdb"
    ok(path, "init")
    ok(path, "simulate", str(EXAMPLES / "flapping-member.yaml"))
    ok(path, "advise", "--group", "flapping-member")
    return path


@pytest.fixture(scope="module")
def advised_page(advised: Path) -> str:
    """The advised group's report (15 timelines: the source and 14 replays)."""
    page = advised.parent / "report.html"
    ok(advised, "report", "--group", "flapping-member", "--out", str(page))
    return page.read_text()


def test_a_simulated_groups_report_puts_its_source_first_and_advises_from_it(
    advised_page: str,
) -> None:
    text = advised_page
    advice = text.split("Advice: which", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>\d+</td><td>([^<]*)</td><td>[^<]*</td><td>([^<]*)</td>", advice)
    # the source labelled as the source (it was replay/cooperative-sticky, the first by name)
    labelled = [(label, timeline) for label, timeline in rows if "(" in label]
    assert labelled == [("sim/flapping-member (range)", "sim/flapping-member")], rows
    compare = text.split("<h2>Compare</h2>", 1)[1].split("</table>", 1)[0]
    firsts = re.findall(r"<tr><td>([^<]*)</td>", compare)
    assert firsts[0] == "sim/flapping-member" and len(firsts) == 15
    by_id = {f["id"]: f["figure"] for f in figures_of(text)}
    assert by_id["rates"]["data"][0]["name"] == "sim/flapping-member"
    assert by_id["reasons"]["data"][0]["name"] == "sim/flapping-member"
    assert (
        by_id["own0"]["layout"]["title"]["text"]
        == "Ownership (sim/flapping-member): partition by time"
    )


def test_many_timelines_differ_in_colour_and_their_legend_stays_under_the_title(
    advised_page: str,
) -> None:
    """15 timelines drew 15 coloured bars per bucket (rates) and per kind (reasons),
    unreadable (a user trial). Now the source's rebalances are bars and each replay
    that counts otherwise a line over them; equal series (reasons too) are drawn once
    and named in a note; every timeline drawn has its own colour and legend entry."""
    by_id = {f["id"]: f["figure"] for f in figures_of(advised_page)}
    rates = by_id["rates"]["data"]
    (bars,) = [t for t in rates if t["type"] == "bar"]
    assert bars["name"] == "sim/flapping-member"
    counted = [t for t in rates if t["type"] == "scatter" and t["yaxis"] == "y"]
    assert 0 < len(counted) < 14, [t["name"] for t in counted]
    assert all(t["y"] != bars["y"] for t in counted)  # a replay equal to its source: no line
    assert len({tuple(t["y"]) for t in counted}) == len(counted)
    reasons = by_id["reasons"]["data"]
    assert 0 < len(reasons) < 15 and len({tuple(t["y"]) for t in reasons}) == len(reasons)
    note = re.search(
        r"<details class='note'><summary>equal series drawn once.*?</details>", advised_page
    )
    assert note is not None and "<li>rebalances: sim/flapping-member = " in note.group(0)
    for ident in ("rates", "reasons"):
        layout = by_id[ident]["layout"]
        named = [t for t in by_id[ident]["data"] if t.get("showlegend", True)]
        assert len({t["name"] for t in named}) == len(named)
        colours = [t["marker"]["color"] if t["type"] == "bar" else t["line"]["color"]
                   for t in named]  # fmt: skip
        assert len(set(colours)) == len(colours), colours  # 10 repeated before
        # title and legend placed in the figure's pixels: the title above, the legend
        # under it, its rows (at most 3 of these names a row) inside the top margin
        height, top = layout["height"], layout["margin"]["t"]
        title_px = (1 - layout["title"]["y"]) * height
        legend_px = (1 - layout["legend"]["y"]) * height
        assert layout["legend"]["yref"] == layout["title"]["yref"] == "container"
        assert title_px + 25 <= legend_px, (title_px, legend_px)
        assert top - legend_px >= 21 * -(-len(named) // 3) + 20, (top, legend_px)
    assert bars["marker"]["color"] == reasons[0]["marker"]["color"]


def test_rates_of_2000_rebalances_in_15_timelines_draw_the_distinct_series_once() -> None:
    """At scale: 2,000 rebalances of a source and 14 replays (11 counting as the source,
    3 adding follow-up rounds, 2 of those alike): one bar per bucket and two lines, where
    15 bars stood side by side in each of 300 buckets."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    names = ["recorded", *(f"replay/s{i:02}" for i in range(14))]
    rows = []
    for name in names:
        extra = 2 if name in ("replay/s00", "replay/s01") else 3 if name == "replay/s02" else 0
        for n in range(2000):
            row = {"timeline": name, "at": start + timedelta(seconds=40 * n), "moved": 5,
                   "imbalance": 1.0, "version": n}  # fmt: skip
            rows += [row] * (1 + (extra if n % 7 == 0 else 0))
    figure, step, drawn, legend = _rates(rows, names)
    data = [trace for trace in figure.data if trace.yaxis == "y"]
    assert [t.type for t in data] == ["bar", "scatter", "scatter"], [t.name for t in data]
    assert len(data[0].x) <= BUCKETS and step == "5 min"
    assert drawn["rebalances"] == [
        ["recorded", *names[4:]],
        ["replay/s00", "replay/s01"],
        ["replay/s02"],
    ]
    assert legend == ["recorded", "replay/s00", "replay/s02"]


def test_top_reasons_are_the_sources_not_its_replays_copies(advised_page: str) -> None:
    top = advised_page.split("<h3>Top reasons</h3>", 1)[1].split("</table>", 1)[0]
    listed = re.findall(r"<tr><td>([^<]*)</td>", top)
    assert listed and set(listed) == {"sim/flapping-member"}, listed
    assert "of sim/flapping-member (replays copy their source's reasons)" in top


@pytest.mark.parametrize(
    ("n", "said"),
    [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
     (13, "13th"), (21, "21st"), (22, "22nd"), (23, "23rd"), (101, "101st"), (111, "111th")],
)  # fmt: skip
def test_ordinals(n: int, said: str) -> None:
    assert _ordinal(n) == said  # "every 3th marked" before


def test_out_a_device_or_a_fifo_is_written_through_and_a_link_followed(
    simulated: Path, tmp_path: Path
) -> None:
    """A rename over ``--out`` replaced ``/dev/full`` (and a FIFO) with a regular file,
    and a link with a copy, before."""
    full = Path("/dev/full")
    assert full.is_char_device()
    said = usage_error(
        kstore_cli(simulated, "report", "--group", "static-restart", "--out", str(full))
    )
    assert said == "kstore: error: --out /dev/full: cannot write: No space left on device\n"
    assert full.is_char_device()

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    read: list[str] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_text()))
    reader.start()
    ok(simulated, "report", "--group", "static-restart", "--out", str(fifo))
    reader.join(timeout=60)
    assert read and read[0].startswith("<!DOCTYPE html>"), read[:1]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)

    target, link = tmp_path / "reports" / "r.html", tmp_path / "latest.html"
    target.parent.mkdir()
    target.write_text("old")
    link.symlink_to(target)
    ok(simulated, "report", "--group", "static-restart", "--out", str(link))
    assert link.is_symlink() and target.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.html"]


def test_equal_lines_of_many_timelines_are_drawn_once_and_named(advised_page: str) -> None:
    """15 timelines drew 15 moves lines one over another, widest first and dashed: at
    800 px a thick striped band where 3 distinct lines were (a user trial). Each distinct
    line is drawn once, in its first timeline's colour, and a note names the rest."""
    by_id = {f["id"]: f["figure"] for f in figures_of(advised_page)}
    lines = [t for t in by_id["rates"]["data"] if t["type"] == "scatter"]
    moved = [t for t in lines if t["yaxis"] == "y2"]
    distinct = {tuple(t["y"]) for t in moved}
    assert len(moved) == len(distinct) < 15, [t["name"] for t in moved]
    note = re.search(r"<li>moved: ([^<]*)</li>", advised_page)
    assert note is not None
    named = {n.strip() for part in note.group(1).split(";") for n in part.split("=")}
    assert named | {t["name"] for t in moved} >= {t["name"] for t in by_id["rates"]["data"]}
    # the names a click away, counts in sight: 15 timelines' names for each of three
    # panels stood as a wall of text above the plot
    details = re.search(r"<details class='note'><summary>([^<]*)</summary>(.*?)</details>",
                        advised_page)  # fmt: skip
    assert details is not None and note.group(0) in details.group(2)
    shown = details.group(1)
    timelines = len(named | {t["name"] for t in moved})
    assert f"moved: {timelines} timelines as {len(moved)} series" in shown
    assert len(shown) < 250 and "replay/" not in shown, shown


def test_counts_in_the_reports_prose_have_thousands_separators(tmp_path: Path) -> None:
    store, page = tmp_path / "kstore.duckdb", tmp_path / "report.html"
    ok(store, "simulate", "--generate", "steady-churn", "--members", "30", "--steps", "60")
    ok(store, "report", "--group", "steady-churn-30-60-0", "--out", str(page))
    text = page.read_text()
    prose = re.findall(r"<p class='(?:note|partial)'>(.*?)</p>|<h2>(.*?)</h2>", text)
    said = " ".join(note + heading for note, heading in prose)
    moves = re.search(r"([\d,]+) moves", said)
    assert moves is not None and int(moves[1].replace(",", "")) >= 1_000, said
    assert not re.findall(r"(?<![\w,.-])\d{4,}(?![\w,])", said), said  # "1378 moves" before


_KEY_PROBE = (
    "<script>window.addEventListener('load', () => setTimeout(() => {"
    "document.body.setAttribute('data-key', JSON.stringify({width: "
    "document.documentElement.clientWidth, names: [...document.querySelectorAll('.key span')]"
    ".map(s => { const r = s.getBoundingClientRect();"
    " return [r.left, r.top, r.right, r.bottom, s.scrollWidth, s.clientWidth]; })}))"
    "}, 200));</script></body>"
)


@pytest.mark.xdist_group("chromium")
def test_owner_names_at_800_px_are_whole_and_apart(advised_page: str, tmp_path: Path) -> None:
    """At 800 px the ownership view's colour bar cut the owners' names to 18 characters
    (a user trial). The key under each view names them whole: in Chromium at 800 px no
    name is cut or runs past the page, and no two overlap."""
    page = tmp_path / "probed.html"
    page.write_text(advised_page.replace("</body>", _KEY_PROBE))
    dom, _ = chromium(page, tmp_path / "profile", "--dump-dom", "--window-size=800,2000")
    found = re.search(r'data-key="([^"]*)"', dom)
    assert found is not None, dom[:2000]
    measured = json.loads(html.unescape(found.group(1)))
    names = measured["names"]
    assert len(names) >= 15 * 8, len(names)  # 15 views, unowned and 7 owners each
    for left, _, right, _, scroll, client in names:
        assert left >= 0 and right <= measured["width"] and scroll <= client
    for a, b in combinations(names, 2):
        apart = a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        assert apart, (a, b)


def test_a_rebalance_line_is_zero_where_nothing_rebalanced() -> None:
    """A replay's rebalances line went straight from one bucket to the next that had a
    rebalance, as if rebalances went on between: it is 0 in the buckets without one."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {"timeline": t, "at": at + timedelta(seconds=s), "moved": 1, "imbalance": 0.0}
        for t, seconds in (("recorded", (0, 60)), ("replay/x", (0, 1, 60)))
        for s in seconds
    ]
    figure, step, *_ = _rates(rows, ["recorded", "replay/x"])
    (line,) = [t for t in figure.data if t.type == "scatter" and t.yaxis == "y"]
    assert step == "5 s" and list(line.y) == [2, 0, 0, 1], line.y


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--group", "nosuch", "--out", "/dev/full"],
         "--out /dev/full: cannot write: No space left on device"),
        (["--group", "nosuch", "--out", "/proc/kstore-report.html"],
         "--out /proc/kstore-report.html: cannot write: No such file or directory"),
        (["--fleet", "--out", "/proc/kstore/fleet"],
         "--out /proc/kstore/fleet: cannot write: No such file or directory"),
        (["--fleet", "--out", "/dev/full/fleet"],
         "--out /dev/full/fleet: cannot write: not a folder: /dev/full"),
    ],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_refused_before_the_work(
    simulated: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    """``--out /dev/full`` (a read-only folder: ``/proc``) was refused only once the page
    was made, 29-43 s into a big group's report (a user trial). Now it is refused before
    the store is read: here before the unknown group is found (the fleet: before a store
    with no group to rank is)."""
    store = simulated
    if "--fleet" in args:
        store = tmp_path / "empty.duckdb"
        ok(store, "init")
    found = usage_error(kstore_cli(store, "report", *args))
    assert found == f"kstore: error: {said}\n"


def test_standard_output_that_cannot_be_written_is_refused_before_the_work(
    simulated: Path,
) -> None:
    command = [sys.executable, "-m", "kstore.cli", "--store", str(simulated), "report"]
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [*command, "--group", "nosuch", "--out", "-"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        "kstore: error: --out -: cannot write to standard output: No space left on device\n"
    )
