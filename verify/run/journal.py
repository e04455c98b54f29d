"""The run journal: `journal.jsonl` in the run folder, one JSON object per line, appended and
fsynced as each case finishes. It is the source of truth the reports are written from, so a run
that is interrupted, crashes or is killed (even by SIGKILL) loses at most the cases in flight:
`verify report --from DIR` rebuilds report.json / JSON / JUnit, `verify run --resume DIR`
runs only what is missing.

Lines: first a `run` record (options, planned cases), then one `case` record per finished case
(`CaseReport.to_json()`), a `stopped` record when a signal stopped the run and a `resumed`
record when `--resume` picked it up again.

A line is one write(); a crash, SIGKILL or a full disk can cut the last one short (a torn
tail). The torn record never happened: the reader skips it, and the next append first cuts it
off (or ends it, if it is whole and only its newline is missing) — appending after the torn
bytes glued the new record to them and made the journal unreadable. A failed append cuts its
own partial bytes off again. Journals glued that way by earlier versions are still read: a line
that is a record's head followed by a whole record is read as that record.

Only one process works in a run folder at a time (`locked_run_folder`): two runs in one `--out`
or two `--resume` of one folder would each run the missing cases and interleave their records.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from verify.usage.output_paths import writing
from verify.report.atomic import write_text
from verify.report.case import Case

log = logging.getLogger(__name__)

JOURNAL_NAME = "journal.jsonl"
LOCK_NAME = "run.lock"
FORMAT = 1
_RECORD_HEAD = '{"record": '  # how every line json.dumps writes begins


class JournalError(RuntimeError):
    """No journal, or not one this version can read."""


class RunFolderBusy(RuntimeError):
    """Another process (a run, a resume, a report) is working in the run folder; says which."""


@dataclass
class JournalContents:
    run: dict  # the `run` record: options, planned cases
    cases: list[dict] = field(default_factory=list)  # CaseReport.to_json() of each finished case
    stopped_by: str | None = None

    @property
    def planned(self) -> list[Case]:
        return [Case(c["model"], c["target"]) for c in self.run["cases"]]

    def finished(self) -> set[Case]:
        return {Case(c["model"], c["target"]) for c in self.cases}


def journal_path(run_dir: Path) -> Path:
    return Path(run_dir) / JOURNAL_NAME


def holds_run(run_dir: Path) -> bool:
    """Whether the folder holds a run. An empty journal (left by earlier versions when the disk
    was full at the start) holds none: the run never started."""
    path = journal_path(run_dir)
    return path.is_file() and path.stat().st_size > 0


class Journal:
    """Appends records to a run folder's journal; each append is on disk when it returns, or
    raises and leaves the journal as it was (verify.usage.output_paths.CannotWrite when refused)."""

    def __init__(self, run_dir: Path):
        self.path = journal_path(run_dir)

    def start(self, options: dict, cases: list[Case], run_info: dict) -> None:
        """Create the journal with its run record, whole or not at all (atomically): a start that
        fails (full disk) leaves no empty journal that makes the folder look like it holds a run."""
        record = {"record": "run", "format": FORMAT, "options": options, "info": run_info,
                  "cases": [{"model": c.model, "target": c.target} for c in cases]}
        write_text(self.path, json.dumps(record, default=str) + "\n")

    def case(self, report_json: dict) -> None:
        self._append({"record": "case", **report_json})

    def stopped(self, signal_name: str) -> None:
        self._append({"record": "stopped", "signal": signal_name})

    def resumed(self) -> None:
        self._append({"record": "resumed"})

    def _append(self, record: dict) -> None:
        data = (json.dumps(record, default=str) + "\n").encode("utf-8")
        try:
            with writing(self.path):
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise JournalError(f"no run journal {self.path} to append to (start the run first)") from None
        try:
            with writing(self.path):
                size, data = _repair_tail(fd, self.path, data)
                try:
                    while data:
                        data = data[os.write(fd, data):]
                    os.fsync(fd)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)  # no partial record left behind (shrinking needs no space)
                    raise
        finally:
            os.close(fd)


def _repair_tail(fd: int, path: Path, data: bytes) -> tuple[int, bytes]:
    """(the size to append at, the bytes to append): a torn last line is cut off; a whole record
    missing only its newline is kept and ended."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size, data
    content = os.pread(fd, size, 0)
    tail_start = content.rfind(b"\n") + 1
    if _parse(content[tail_start:]) is not None:
        return size, b"\n" + data
    log.warning("%s: cut off a torn last line (%d bytes, a write the run never finished)", path, size - tail_start)
    os.ftruncate(fd, tail_start)
    return tail_start, data


def _parse(line: bytes | str) -> dict | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _glued_record(line: str) -> dict | None:
    """The record in a line made of a torn record's head and a whole record appended after it
    (what appending onto a torn tail made): provably so when the line starts as a record does
    and ends with one that parses."""
    at = line.rfind(_RECORD_HEAD)
    if at > 0 and line.startswith(_RECORD_HEAD):
        return _parse(line[at:])
    return None


def read_journal(run_dir: Path) -> JournalContents:
    """Read a journal; a torn last line (the process was killed mid-write) is skipped with a warning."""
    path = journal_path(run_dir)
    if not path.is_file():
        raise JournalError(f"no run journal in {run_dir} (expected {path})")
    contents: JournalContents | None = None
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        record = _parse(line)
        if record is None and number == len(lines):
            log.warning("%s: line %d is incomplete (killed while writing); skipped", path, number)
            continue
        if record is None:
            record = _glued_record(line)
            if record is None:
                raise JournalError(f"{path}: line {number} is not JSON")
            log.warning("%s: line %d starts with a torn record (killed while writing); read the record after it",
                        path, number)
        kind = record.pop("record", None)
        if kind == "run":
            if record.get("format") != FORMAT:
                raise JournalError(f"{path}: journal format {record.get('format')!r}, this version reads {FORMAT}")
            if contents is None:
                contents = JournalContents(run=record)
        elif contents is None:
            raise JournalError(f"{path}: does not start with a run record")
        elif kind == "case":
            contents.cases.append(record)
        elif kind == "stopped":
            contents.stopped_by = record.get("signal")
        elif kind == "resumed":
            contents.stopped_by = None
    if contents is None:
        raise JournalError(f"{path}: empty journal")
    return contents


@contextlib.contextmanager
def locked_run_folder(run_dir: Path, command: str) -> Iterator[None]:
    """Hold the run folder's lock while inside, or raise RunFolderBusy naming the holder.

    An flock on `run.lock` (never deleted, never replaced: a lock on a replaced file locks
    nothing): the kernel releases it when the holder's process ends in any way, SIGKILL
    included, so a crashed run never leaves a stale lock. The descriptor is not inherited by
    workers (O_CLOEXEC), which must not keep a dead run's folder locked. Who holds it (pid,
    host, since when, what command) is written into the file for the message of the next one;
    on a full disk that note may be missing, the lock is not."""
    path = Path(run_dir) / LOCK_NAME
    with writing(path):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderBusy(f"{run_dir} is in use by {_holder(fd)}; wait for it to end or use another "
                                "folder") from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                  "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder).encode("utf-8"), 0)
        except OSError as exc:
            log.debug("%s: could not note the lock's holder (%s); the lock holds", path, exc.strerror)
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    note = _parse(os.pread(fd, 4096, 0))
    if note is None:
        return "another process (it has not noted who it is)"
    return (f"{note.get('command', 'another process')} (pid {note.get('pid', '?')} on {note.get('host', '?')}, "
            f"since {note.get('since', '?')})")
