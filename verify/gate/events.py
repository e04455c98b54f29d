"""A gate worker's log records, carried to the gate's own terminal while the worker runs.

Why: a pass's search can take minutes, and its per-example progress lines (what was drawn,
what fastpass did, the evidence so far) are how a user sees it work. The worker's stderr is
its log file (torch noise, tracebacks: kept for a post-mortem); its `logging` records are
written beside it as JSON lines (`EventFile`), and the parent re-emits each one through its own
logging (`relayed`), so `-v`/`-q` decide what shows, exactly as when the search ran in the gate
process. Records travel as (logger name, level, message): nothing is parsed back out of text.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from pathlib import Path
from typing import Iterator

POLL_SECONDS = 0.25


class EventFile(logging.Handler):
    """In the worker: each record as one JSON line, flushed at once (the parent tails the file)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._file = open(path, "a", buffering=1, encoding="utf-8")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = json.dumps({"name": record.name, "level": record.levelno, "message": record.getMessage()})
            self._file.write(line + "\n")
        except Exception:  # noqa: BLE001 - logging must never end the search
            self.handleError(record)

    def close(self) -> None:
        self._file.close()
        super().close()


class _Tail:
    """The parent's reader of one worker's event file: complete lines only, from where it left off."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, ""
        self.lock = threading.Lock()

    def drain(self) -> None:
        with self.lock:
            try:
                with open(self.path, encoding="utf-8", errors="replace") as f:
                    f.seek(self.offset)
                    data = f.read()
                    self.offset = f.tell()
            except FileNotFoundError:
                return
            lines = (self.partial + data).split("\n")
            self.partial = lines.pop()
            for line in lines:
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:  # a worker killed mid-write: its half line is dropped
                    continue
                logging.getLogger(event["name"]).log(event["level"], "%s", event["message"])


@contextlib.contextmanager
def relayed(path: Path) -> Iterator[None]:
    """While inside: re-emit the records a worker writes to `path` (every POLL_SECONDS, and
    once more at the end, so nothing the worker logged before exiting is lost)."""
    tail = _Tail(path)
    done = threading.Event()

    def follow() -> None:
        while not done.wait(POLL_SECONDS):
            tail.drain()

    thread = threading.Thread(target=follow, name=f"relay-{path.name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        tail.drain()
