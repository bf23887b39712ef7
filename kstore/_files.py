"""Reading input files and writing output files with one-line errors (exit status 2).

A file that is not UTF-8 text (binary data, another encoding) is named with the line
where it stops being text; an output that cannot be written is named with the reason.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from kstore._errors import UsageError

__all__ = [
    "check_out_file",
    "check_writable_folder",
    "named",
    "read_text",
    "text_lines",
    "write_text",
]


_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte order mark, which Windows editors (Notepad, PowerShell 5's Out-File)
write at a file's start: not text of the file, so dropped there (as ``utf-8-sig``
does; RFC 8259 lets a JSON reader ignore it). Elsewhere it is a character of the text."""


def _decode(data: bytes, name: str, first: int = 1) -> str:
    """``data`` (its first line line ``first`` of ``name``) as UTF-8 text without NUL
    bytes, else one line naming where it is not. A byte order mark at the file's start
    is dropped (``_BOM``)."""
    if first == 1:
        data = data.removeprefix(_BOM)
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if nul == -1 or nul > exc.start:
            line = data.count(b"\n", 0, exc.start) + first
            raise UsageError(
                f"{name}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x})"
            ) from None
    if nul != -1:
        line = data.count(b"\n", 0, nul) + first
        raise UsageError(f"{name}: line {line}: binary data (a NUL byte), not text")
    return text


def named(file: str | Path) -> str:
    """``file`` as a message names it: ``-`` is standard input."""
    return "standard input" if str(file) == "-" else str(file)


def read_text(file: str | Path, what: str = "") -> str:
    """The text of ``file`` (``-``: standard input), which must be UTF-8 without NUL bytes."""
    name = f"{what} {file}".strip() if what else str(file)
    if str(file) == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:
            return sys.stdin.read().removeprefix("\ufeff")
        return _decode(buffer.read(), named(file))
    try:
        data = Path(file).read_bytes()
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror}") from None
    return _decode(data, name)


def text_lines(file: str | Path) -> Iterator[str]:
    """The lines of ``file`` as they are read (a dump may be bigger than memory), each
    checked as ``read_text`` checks a whole text."""
    try:
        opened = open(file, "rb")  # noqa: SIM115 (a generator holds it open)
    except OSError as exc:
        raise UsageError(f"{file}: cannot read: {exc.strerror}") from None
    with opened:
        for number, line in enumerate(opened, start=1):
            yield _decode(line, str(file), number)


def check_out_file(
    given: str | Path, option: str = "--out", example: str = "kstore-report.html"
) -> None:
    """``given`` (as typed: a ``/`` at its end says a folder) can name a file to write
    (``-``: standard output): not a folder (``.``, ``some/dir/``), in a folder that is
    there and can be written, not a device that refuses writes (``/dev/full``); else one
    line saying so, before any work is done for it (``--out /dev/full`` was refused after
    a report's 29 s of work)."""
    text, file = str(given), Path(given)
    if text == "-":
        _probe_descriptor(sys.stdout.fileno(), f"{option} -: cannot write to standard output")
        return
    if text.endswith(("/", os.sep)) or file.name in ("", ".", "..") or file.is_dir():
        raise UsageError(
            f"{option} {text}: a folder; give a file name (e.g. {text.rstrip('/' + os.sep)}/"
            f"{example})"
        )
    if not file.parent.is_dir():
        what = "not a folder" if file.parent.exists() else "no such folder"
        raise UsageError(f"{option} {text}: cannot write: {what}: {file.parent}")
    target = Path(os.path.realpath(file))
    if target.exists() and not target.is_file():
        if stat.S_ISCHR(target.stat().st_mode):  # /dev/full says so to an empty write
            try:
                device = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                raise UsageError(f"{option} {text}: cannot write: {exc.strerror}") from None
            try:
                _probe_descriptor(device, f"{option} {text}: cannot write")
            finally:
                os.close(device)
        return  # a FIFO: its reader may come while the work is done
    check_writable_folder(target.parent, f"{option} {text}")


def _probe_descriptor(descriptor: int, said: str) -> None:
    """An empty write to ``descriptor``: a device that cannot be written (``/dev/full``)
    refuses even that, and is named before the work (``said``: the message's start)."""
    try:
        os.write(descriptor, b"")
    except OSError as exc:
        raise UsageError(f"{said}: {exc.strerror}") from None


def check_writable_folder(folder: Path, said: str) -> None:
    """A file can be made in ``folder`` (one is, and is removed at once), else one line
    (``said``: its start) with the reason: a read-only file system or folder was found
    only when the work was done (a report's 29 s)."""
    probe = folder / f".kstore-probe.{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        raise UsageError(f"{said}: cannot write: {exc.strerror}") from None
    os.unlink(probe)


_CHUNK = 1 << 16


def _to_stdout(text: str) -> None:
    """``text`` on standard output, a reader gone found before "wrote" is said. In
    pieces: one write of a whole page (0.7 MB) into a pipe whose reader left after 10
    bytes (``| head -c 10``) wrote a pipe's worth and Python raised nothing, so kstore
    said it had written the report (a user trial)."""
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    if out is None:  # a text stream of a test's
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    data = text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")
    for start in range(0, len(data), _CHUNK):
        out.write(data[start : start + _CHUNK])
        out.flush()


def write_text(file: Path, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``file`` (``-``: standard output) whole or not at all: into a file
    beside it, then renamed over it, so a full disk or a Ctrl-C leaves any earlier
    ``file`` as it was (it had been cut short). A link is followed (the link stays, its
    target gets the text); a FIFO or a device (``/dev/stdout``, ``/dev/full``) is written
    through, never replaced by a regular file. A folder missing, no permission, a full
    disk: one line."""
    if str(file) == "-":
        _to_stdout(text)
        return
    check_out_file(file, option)
    target = Path(os.path.realpath(file))
    try:
        if target.exists() and not target.is_file():
            with open(target, "w", encoding="utf-8") as through:
                through.write(text)
            return
        part = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            part.write_text(text, encoding="utf-8")
            os.replace(part, target)
        except BaseException:
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"{option} {file}: cannot write: {exc.strerror}") from None
