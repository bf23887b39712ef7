"""Every error one line, exit status 2 (issue 14, point 3): binary and non-UTF-8 input
files named with the line, unwritable outputs, YAML mistakes at their own line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kstore.store.log import Store


def kstore(store: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kstore.cli", *args, "--store", str(store)],
        capture_output=True,
        input=stdin,
        check=False,
    )


def one_line_error(out: subprocess.CompletedProcess[bytes], *parts: str) -> None:
    err = out.stderr.decode()
    assert (out.returncode, out.stdout) == (2, b""), err
    assert err.startswith("kstore: error: ") and err.count("\n") == 1, err
    for part in parts:
        assert part in err, err


@pytest.fixture
def path(store: Store) -> Path:
    return store.path


@pytest.mark.parametrize("command", [["append"], ["assign"], ["simulate"]])
def test_binary_and_non_utf8_files_are_named_with_the_line(
    path: Path, tmp_path: Path, command: list[str]
) -> None:
    binary = tmp_path / "binary.dat"
    binary.write_bytes(b"{}\n\n\x7fELF\x02\x01\x00\x00garbage")
    one_line_error(kstore(path, *command, str(binary)), str(binary), "line 3", "binary")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("{}\n{}\nname: caf\u00e9\n".encode("latin-1"))
    one_line_error(kstore(path, *command, str(latin1)), "line 3", "not UTF-8", "0xe9")
    if command != ["simulate"]:
        one_line_error(kstore(path, *command, "-", stdin=b"\xff\xfe"), "standard input", "line 1")
    assert kstore(path, "events").stdout == b""  # nothing stored


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("name: x\ntopics: {orders: 3}\nmemebers:\n  - count: 2\n", 3, "did you mean members?"),
        (
            "name: x\ntopics: {orders: 3}\nmembers:\n  - count: 2\n    topcs: [orders]\n",
            5,
            "did you mean topics?",
        ),
        (
            "name: x\ntopics: {orders: 3}\nmembers:\n  - {count: 2, topics: [orders]}\n"
            "steps:\n  - at: 1s\n    cut-of: {for: 1s}\n",
            7,
            "did you mean cut-off?",
        ),
        ("name: x\ntopics: {orders: 3\nmembers: []\n", 3, "not valid YAML"),
    ],
)
def test_yaml_errors_at_the_offending_line(
    path: Path, tmp_path: Path, text: str, line: int, message: str
) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    one_line_error(kstore(path, "simulate", str(scenario)), f"{scenario}:{line}:", message)


def test_unwritable_output(path: Path, tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text(
        '{"group": "g", "type": "TopicChanged", "at": "2026-11-21T10:00:00Z", '
        '"data": {"topic": "t", "partitions": 2}}\n'
        '{"group": "g", "type": "MemberJoined", "at": "2026-11-21T10:00:01Z", '
        '"data": {"member_id": "a", "topics": ["t"]}}\n'
        '{"group": "g", "type": "AssignmentCompleted", "at": "2026-11-21T10:00:02Z", '
        '"data": {"generation": 1, "strategy": "range", '
        '"assignment": {"a": [["t", 0], ["t", 1]]}}}\n'
    )
    assert kstore(path, "append", str(events)).returncode == 0
    missing = tmp_path / "no" / "such" / "report.html"
    one_line_error(kstore(path, "report", "--group", "g", "--out", str(missing)), str(missing))
    folder = tmp_path / "a-folder"
    folder.mkdir()
    one_line_error(
        kstore(path, "report", "--group", "g", "--out", str(folder)),
        "a folder; give a file name",
    )
    # --out - is standard output, as input - is standard input (it wrote a file named -)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kstore.cli",
            "--store",
            str(path),
            "report",
            "--group",
            "g",
            "--out",
            "-",
        ],
        capture_output=True,
        check=False,
        cwd=tmp_path,
    )
    assert out.returncode == 0 and out.stdout.startswith(b"<!DOCTYPE html>"), out.stderr
    assert out.stdout.rstrip().endswith(b"</html>") and not (tmp_path / "-").exists()
    assert out.stderr.decode().startswith("wrote the report to standard output (")
    one_line_error(kstore(path, "report", "--fleet", "--out", "-"), "give a folder")
    # A full disk (here a file-size limit) cut the earlier report short; now it stays.
    page = tmp_path / "report.html"
    assert kstore(path, "report", "--group", "g", "--out", str(page)).returncode == 0
    before = page.read_bytes()
    full = (
        "import resource, runpy, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))\n"
        "sys.argv = ['kstore', *sys.argv[1:]]\n"
        "runpy.run_module('kstore.cli', run_name='__main__')\n"
    )
    command = [sys.executable, "-c", full, "--store", str(path), "report", "--group", "g"]
    out = subprocess.run([*command, "--out", str(page)], capture_output=True, check=False)
    one_line_error(out, str(page), "cannot write: File too large")
    assert page.read_bytes() == before and len(before) > 100_000
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []


@pytest.mark.parametrize(
    "command",
    [
        ["replay", "--strategy", "stiky"],
        ["replay", "--strategy", "stiky", "--check"],
        ["advise", "--strategies", "range,stiky"],
    ],
)
def test_a_strategy_typo_is_named_before_the_group(path: Path, command: list[str]) -> None:
    # `replay --strategy stiky --group X` said "no group 'X'": the typo is seen first,
    # with the nearest name (as every unknown strategy, from the one rule).
    out = kstore(path, *command, "--group", "nope")
    one_line_error(out, "unknown strategy 'stiky'", "did you mean sticky?")


def test_an_unknown_strategy_in_a_request_names_the_nearest(path: Path, tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text('{"strategy": "rang", "topics": {"a": 1}, "members": {}}')
    out = kstore(path, "assign", str(request))
    one_line_error(out, "'rang'", "did you mean range")
    # the nearest alone: after the list of all 14 it wrapped a 100-column terminal 4 times
    assert b"known:" not in out.stderr and len(out.stderr) < 100, out.stderr


_EXAMPLES = Path(__file__).parents[2] / "examples"
_EVENT = (
    b'{"event_id": "e1", "type": "MemberJoined", "group": "g", "at": "2026-01-02T00:00:00Z", '
    b'"data": {"member_id": "m", "topics": ["t"]}}\n'
)


@pytest.mark.parametrize(
    ("command", "text"),
    [
        (["append"], _EVENT),
        (["assign"], (_EXAMPLES / "request.json").read_bytes()),
        (["simulate"], (_EXAMPLES / "static-restart.yaml").read_bytes()),
    ],
)
def test_a_byte_order_mark_at_the_start_is_no_part_of_the_text(
    path: Path, tmp_path: Path, command: list[str], text: bytes
) -> None:
    """Windows editors write one; `append` refused it with Python's words: `line 1: not
    JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at column 1`."""
    source = tmp_path / "windows.txt"
    source.write_bytes(b"\xef\xbb\xbf" + text)
    out = kstore(path, *command, str(source))
    assert (out.returncode, out.stderr) == (0, b""), out
    if command == ["append"]:
        assert out.stdout == b"stored 1, already there 0\n"
        again = kstore(path, "append", "-", stdin=b"\xef\xbb\xbf" + text)
        assert again.stdout == b"stored 0, already there 1\n", again


def test_a_byte_order_mark_inside_is_named_in_kstores_words(path: Path, tmp_path: Path) -> None:
    joined = tmp_path / "joined.jsonl"  # two files of a Windows editor joined with cat
    joined.write_bytes(b"\xef\xbb\xbf" + _EVENT + b"\xef\xbb\xbf" + _EVENT.replace(b"e1", b"e2"))
    out = kstore(path, "append", str(joined))
    one_line_error(out, f"{joined}: line 2: not JSON: a byte order mark (U+FEFF)")
    assert "utf-8-sig" not in out.stderr.decode()
    assert kstore(path, "events").stdout == b""  # nothing stored
