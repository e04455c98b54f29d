"""The run journal: `journal.jsonl` in the run folder, one JSON object per line, appended and
fsynced as each case finishes. It is the source of truth the reports are written from, so a run
that is interrupted, crashes or is killed (even by SIGKILL) loses at most the cases in flight:
`verify report --from DIR` rebuilds report.json / JSON / JUnit, `verify run --resume DIR`
runs only what is missing.

Lines: first a `run` record (options, planned cases), then one `case` record per finished case
(`CaseReport.to_json()`), a `stopped` record when a signal stopped the run and a `resumed`
record when `--resume` picked it up again.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from verify.cases import Case

log = logging.getLogger(__name__)

JOURNAL_NAME = "journal.jsonl"
FORMAT = 1


class JournalError(RuntimeError):
    """No journal, or not one this version can read."""


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


class Journal:
    """Appends records to a run folder's journal; each append is on disk when it returns."""

    def __init__(self, run_dir: Path):
        self.path = journal_path(run_dir)

    def start(self, options: dict, cases: list[Case], run_info: dict) -> None:
        self._append({"record": "run", "format": FORMAT, "options": options, "info": run_info,
                      "cases": [{"model": c.model, "target": c.target} for c in cases]})

    def case(self, report_json: dict) -> None:
        self._append({"record": "case", **report_json})

    def stopped(self, signal_name: str) -> None:
        self._append({"record": "stopped", "signal": signal_name})

    def resumed(self) -> None:
        self._append({"record": "resumed"})

    def _append(self, record: dict) -> None:
        line = json.dumps(record, default=str) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def read_journal(run_dir: Path) -> JournalContents:
    """Read a journal; a torn last line (the process was killed mid-write) is skipped with a warning."""
    path = journal_path(run_dir)
    if not path.is_file():
        raise JournalError(f"no run journal in {run_dir} (expected {path})")
    contents: JournalContents | None = None
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                log.warning("%s: line %d is incomplete (killed while writing); skipped", path, number)
                continue
            raise JournalError(f"{path}: line {number} is not JSON") from None
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
