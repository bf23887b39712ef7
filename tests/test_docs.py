"""``kstore docs``: the documentation the help texts name, readable from an install."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from kstore.cli import app
from tests.store.test_cli_store import run

ROOT = Path(__file__).resolve().parents[1]


def test_the_list_names_every_shipped_doc_and_not_the_diary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, monkeypatch, "docs", "--format", "json")
    assert code == 0
    listed = {row["topic"]: row for row in json.loads(out)}
    on_disk = {p.stem for p in (ROOT / "docs").rglob("*.md")} - {"performance"}
    assert set(listed) == on_disk
    # By the name `kstore docs NAME` takes, and no docs/... path (an install has none).
    assert listed["metrics"] == {
        "topic": "metrics",
        "title": (ROOT / "docs/spec/metrics.md").read_text().splitlines()[0][2:],
        "section": "spec",
    }
    assert "docs/" not in out
    sections = [row["section"] for row in json.loads(out)]
    assert sections == sorted(sections, key=["guide", "spec", "assignors"].index)
    assert listed["simulation"]["section"] == "guide"
    assert listed["sticky"]["section"] == "assignors"


def test_a_topic_is_printed_verbatim_into_a_pipe(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "docs", "metrics")
    assert (code, err) == (0, "")
    assert out == (ROOT / "docs/spec/metrics.md").read_text()


def test_an_unknown_topic_is_one_line_naming_the_nearest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "docs", "metric")
    assert (code, out) == (2, "")
    assert err.startswith("kstore: error: no doc 'metric'; did you mean metrics")
    assert err.count("\n") == 1


def test_a_format_for_a_doc_is_refused_not_ignored(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(capsys, monkeypatch, "docs", "metrics", "--format", "json")
    assert (code, out) == (2, "")
    assert err == "kstore: error: --format: a doc is printed as it is written (Markdown)\n"


def _helps(command: Any) -> Iterator[str]:
    """The help of a command (typer's own click), its options' and its subcommands'."""
    yield command.help or ""
    for param in command.params:
        yield getattr(param, "help", None) or ""
    for sub in getattr(command, "commands", {}).values():
        yield from _helps(sub)


def test_every_topic_kstore_names_is_there() -> None:
    """The help texts (and messages) say ``kstore docs TOPIC`` where they said a path of
    the repository, which an install does not have."""
    named = {
        topic
        for source in (ROOT / "kstore").rglob("*.py")
        for topic in re.findall(r"kstore docs ([a-z-]+)", source.read_text())
    }
    assert {"metrics", "events", "assignment-contract", "analytics", "spark"} <= named
    for topic in named:
        assert list((ROOT / "docs").rglob(f"{topic}.md")), topic
    helps = list(_helps(typer.main.get_command(app)))
    assert len(helps) > 100
    assert [text for text in helps if "docs/" in text or ".md" in text] == []
    # "Run a named query of queries/": a folder of the repository, not of an install
    assert [text for text in helps if _REPOSITORY_QUERIES.search(text)] == []


_REPOSITORY_QUERIES = re.compile(r"(?<![\w/])queries/")
"""The repository's ``queries/`` (not the package's ``kstore/queries/``, nor the golden
fixtures' ``tests/golden/queries/``)."""


def test_the_shipped_docs_name_the_queries_as_an_install_has_them() -> None:
    """``kstore docs metrics`` said "Every query in `queries/`"; a line of a shipped doc
    naming the repository's folder says ``kstore query`` too (docs/spec keep the spec's
    names, so they may say both)."""
    shipped = [p for p in (ROOT / "kstore" / "docs").rglob("*.md") if p.stem != "performance"]
    assert len(shipped) > 5
    lines = [
        f"{path.name}: {line}"
        for path in shipped
        for line in path.read_text().splitlines()
        if _REPOSITORY_QUERIES.search(line) and "kstore query" not in line
    ]
    assert lines == []


def _on_a_terminal(env: dict[str, str]) -> str:
    """What ``kstore docs metrics`` shows with its standard output a terminal."""
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kstore", "docs", "metrics"],
            stdin=follower,  # pydoc pages only when both are terminals
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**os.environ, "TERM": "xterm", "COLUMNS": "100", **env},
            timeout=60,
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0, done.stderr
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode(errors="replace"))


def test_on_a_terminal_the_markdown_is_rendered() -> None:
    text = _on_a_terminal({"PAGER": "cat"})
    title = (ROOT / "docs/spec/metrics.md").read_text().splitlines()[0][2:]
    assert title in text
    assert "# " + title not in text  # rendered, not the source


@pytest.mark.parametrize(("given", "used"), [(None, "FRX"), ("X", "X")])
def test_less_is_told_to_show_colours_unless_the_user_said(
    given: str | None, used: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``-R`` less printed the colours' escape codes as text (seen in tmux)."""
    env = {"PAGER": "sh -c 'echo LESS=$LESS; cat >/dev/null'"}
    if given is not None:
        env["LESS"] = given
    else:
        monkeypatch.delenv("LESS", raising=False)  # the child inherits the test's
    assert f"LESS={used}" in _on_a_terminal(env)
