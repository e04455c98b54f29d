"""A run and its folder, from the folder's lock to the last report written: `Run`.

`python -m verify run`, `run --resume DIR` and `report --from DIR` go through one folder's life:
take its lock, start or read its journal (verify.run.journal), run the cases it lacks
(verify.run.runner), journal each one as it finishes, and write the reports from the journal --
at the end, on SIGINT/SIGTERM and on an error alike. The command (verify.commands.run) parses
the options, refuses bad ones and calls `Run.new`, `Run.resume` or `Run.report_from`.

Why one object: the order of these steps is what keeps a run from being lost or run twice, and
it is kept here once instead of being re-entered from the command line at each step. The lock
is taken before the "holds a run already" check and held until the last report is written;
the signal handlers stay in place while the reports are written; a write the file system
refuses stops the run with the case in flight unjournaled, for `--resume`.

A refusal before any case (a folder another process works in, one that holds a run, a journal
that cannot be read or started) is bad usage (verify.usage.UsageError, exit 2): nothing has
been done yet.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

from verify.jobs.launcher import stop_on_signals, stop_signal, stopped_exit_status
from verify.lowering.mode import Mode
from verify.report.atomic import write_text
from verify.report.case import Case, CaseReport
from verify.report.files import write_run_reports
from verify.report.table import progress, table
from verify.run.journal import (
    Journal, JournalError, RunFolderBusy, holds_run, journal_path, locked_run_folder, read_journal,
)
from verify.run.runner import RunOptions, run_cases
from verify.usage import UsageError
from verify.usage.output_paths import CannotWrite, new_run_dir, writing

log = logging.getLogger(__name__)


@dataclass
class WrittenReports:
    """What the journal holds, and which report files could not be written (each says why)."""

    reports: list[CaseReport]
    unfinished: list[tuple[str, str]]
    run_info: dict
    failed: list[CannotWrite] = field(default_factory=list)  # one per file


@dataclass
class Run:
    """A run folder, locked by this process: its planned cases, those finished before this
    process took it over (by an earlier one, for `--resume`) and the options they run with.
    Made only by `new` and `resume`, which hold the lock while the `with` block lasts."""

    folder: Path
    cases: list[Case]
    finished: set[Case]
    options: RunOptions

    @classmethod
    @contextlib.contextmanager
    def new(cls, folder: Path | None, models: list[str], targets: list[str], options: RunOptions,
            random_graphs: int = 0, seed: int = 0, argv: list[str] | None = None) -> Iterator[Run]:
        """Make and lock the run folder (`folder`, or a new one under verify-out), draw the
        `random_graphs` into it, and start its journal: every model on every target, once. The
        options' out_dir becomes the folder.

        The lock is taken before the "holds a run already" check and kept to the end: between
        the check and the journal's start lies the graph drawing of --random, long enough for a
        second run in the same --out to pass the same check."""
        if folder is None:
            try:
                with writing(Path("verify-out")):
                    folder = new_run_dir()
            except CannotWrite as exc:
                raise UsageError(f"run folder: {exc}") from None
            option = "run folder"
        else:
            option = "--out"
        with _locked(folder, "verify run", option):
            if holds_run(folder):
                raise UsageError(f"--out {folder}: holds a run already; finish it with --resume {folder} "
                                 "or choose another folder")
            journal_path(folder).unlink(missing_ok=True)  # an empty one: a start that failed (earlier versions)
            options = replace(options, out_dir=folder)
            try:
                if random_graphs:
                    models = models + _random_models(random_graphs, seed, folder / "random-graphs")
                cases = list(dict.fromkeys(Case(m, t) for m in models for t in targets))  # a duplicate: the same work
                Journal(folder).start(options.to_json(), cases, {
                    "features": list(options.features) or "all", "hash_seed": options.hash_seed,
                    "null_seed": options.null_seed, "second_mode": options.second_mode,
                    "calibration": options.calibration, "argv": argv or []})
            except CannotWrite as exc:  # before any case: the folder holds no run and can be used again
                raise UsageError(f"{option} {folder}: {exc}") from None
            yield cls(folder, cases, set(), options)

    @classmethod
    @contextlib.contextmanager
    def resume(cls, folder: Path) -> Iterator[Run]:
        """Lock the folder, then read its journal (cases, options) and note the resume: two
        `--resume` of one folder would both run every missing case."""
        if not journal_path(folder).is_file():  # no lock file in a folder that is not a run's
            raise UsageError(f"--resume: no run journal in {folder} (expected {journal_path(folder)})")
        with _locked(folder, "verify run --resume", "--resume"):
            try:
                contents = read_journal(folder)
                Journal(folder).resumed()
            except JournalError as exc:
                raise UsageError(f"--resume: {exc}") from None
            except CannotWrite as exc:
                raise UsageError(f"--resume {folder}: {exc}") from None
            yield cls(folder, contents.planned, contents.finished(),
                      RunOptions.from_json(contents.run["options"], folder))

    def execute(self, jobs: int | None = None, json_path: Path | None = None,
                junit_path: Path | None = None) -> int:
        """Run the cases not finished yet, `jobs` worker processes at once, journal each, write the
        reports (also --json, --junit) and print the table: the exit status (verify.cli)."""
        journal = Journal(self.folder)
        cases, done, options = self.cases, self.finished, self.options
        todo = [c for c in cases if c not in done]
        print(f"verify: {len(cases)} case(s)" + (f" ({len(done)} finished before, resumed)" if done else "")
              + f", {_describe_modes(options)}, hash seed {options.hash_seed}, null seed {options.null_seed}, "
              f"run folder {self.folder}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        counter = iter(range(len(done) + 1, len(cases) + 1))

        def show(event, case, report):
            if event == "start":
                print(f"[{next(counter)}/{len(cases)}]", end=" ", file=sys.stderr)
            progress(event, case, report)

        stopped = refused = None
        # The handlers stay in place while the reports are written: a second Ctrl-C must not cut that short.
        with stop_on_signals():
            try:
                run_cases(todo, options, progress=show, on_report=lambda r: journal.case(r.to_json()),
                          parallel=_cases_at_once(jobs, options))
                stopped = stop_signal()
                if stopped is not None:
                    journal.stopped(signal.Signals(stopped).name)
            except CannotWrite as exc:  # the case in flight is not journaled: --resume runs it again
                log.debug("the run stopped: a write was refused", exc_info=True)
                refused = exc
            finally:  # also on an unexpected error: what finished is reported
                written = _write_reports(self.folder, json_path, junit_path, time.perf_counter() - started)
        reports = written.reports
        print(table(reports))
        print(f"wall time {time.perf_counter() - started:.0f} s")
        for failure in written.failed:
            print(f"verify: {failure}", file=sys.stderr)
        if refused is not None:
            print(f"verify: {refused}; the run stopped with {len(reports)} of {len(cases)} case(s) finished; "
                  f"resume with: python -m verify run --resume {self.folder}", file=sys.stderr)
        if stopped is not None:
            print(f"verify: stopped by {signal.Signals(stopped).name}: {len(reports)} of {len(cases)} case(s) "
                  f"finished; reports written; resume with: python -m verify run --resume {self.folder}",
                  file=sys.stderr)
            return stopped_exit_status(stopped)
        if refused is not None or written.failed:
            return 1
        return 0 if not written.unfinished and all(r.passed for r in reports) else 1

    @staticmethod
    def report_from(folder: Path, json_path: Path | None = None, junit_path: Path | None = None) -> int:
        """`report --from`: run nothing, write the reports of the run in `folder` from its journal
        (also of an interrupted run) and print the table: the exit status (verify.cli). Read
        without its lock if none can be made there (a read-only copy: no run can be going on in it)."""
        if not journal_path(folder).is_file():  # no lock file in a folder that is not a run's
            raise UsageError(f"no run journal in {folder} (expected {journal_path(folder)})")
        with _locked(folder, "verify report", "--from", writes=False):
            try:
                written = _write_reports(folder, json_path, junit_path)
            except JournalError as exc:
                raise UsageError(str(exc)) from None
        reports, unfinished, info = written.reports, written.unfinished, written.run_info
        print(table(reports))
        if unfinished:
            print(f"verify report: {len(reports)} of {info['planned']} case(s) finished"
                  + (f" (stopped by {info['stopped_by']})" if info["stopped_by"] else "")
                  + f"; not finished: {', '.join(f'{m} on {t}' for m, t in unfinished)}", file=sys.stderr)
        for failure in written.failed:
            print(f"verify report: {failure}", file=sys.stderr)
        report_json = Path(folder) / "report.json"
        if not any(Path(f.filename) == report_json for f in written.failed):
            print(f"verify report: wrote {report_json}", file=sys.stderr)
        if written.failed:
            return 1
        return 0 if not unfinished and all(r.passed for r in reports) else 1


@contextlib.contextmanager
def _locked(folder: Path, command: str, option: str, writes: bool = True) -> Iterator[None]:
    """Hold the run folder's lock while inside; busy is bad usage (exit 2): nothing has been done
    yet. So is a folder in which no lock can be made, unless the command `writes` nothing there
    it needs (`report --from` of a read-only copy: no run can be going on in it)."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(locked_run_folder(folder, command))
        except RunFolderBusy as exc:
            raise UsageError(f"{option} {exc}") from None
        except CannotWrite as exc:
            if writes:
                raise UsageError(f"{option} {folder}: {exc}") from None
            log.debug("%s: read without its lock (%s)", folder, exc)
        yield


def _write_reports(folder: Path, json_path: Path | None = None, junit_path: Path | None = None,
                   wall_seconds: float | None = None) -> WrittenReports:
    """report.json (and --json, --junit) from the run's journal: the one way reports are written,
    whether the run finished, was stopped, failed, or is rebuilt later by `report --from`
    (verify.report.files.write_run_reports writes them, each on its own)."""
    contents = read_journal(folder)
    by_case = {(c["model"], c["target"]): CaseReport.from_json(c) for c in contents.cases}
    planned = [(c.model, c.target) for c in contents.planned]
    reports = [by_case[key] for key in planned if key in by_case]
    unfinished = [key for key in planned if key not in by_case]
    run_info = {**contents.run["info"], "wall_seconds": wall_seconds, "planned": len(planned),
                "finished": len(reports), "complete": not unfinished, "stopped_by": contents.stopped_by,
                "journal": str(Path(folder) / "journal.jsonl")}
    failed = write_run_reports(reports, run_info, unfinished, Path(folder) / "report.json", json_path, junit_path)
    return WrittenReports(reports, unfinished, run_info, failed)


def _random_models(count: int, seed: int, folder: Path) -> list[str]:
    """Draw `count` graphs reproducibly from `seed`; each is saved as JSON and named `graphspec:<file>`."""
    from verify.fuzz.search import draw_graphs

    folder.mkdir(parents=True, exist_ok=True)
    refs = []
    for spec in draw_graphs(count, seed):
        path = folder / f"graph-{spec.fingerprint()}.json"
        write_text(path, spec.to_json(indent=1))
        refs.append(f"graphspec:{path}")
    return refs


def _describe_modes(options: RunOptions) -> str:
    if options.second_mode is Mode.STOCK:
        return "stock vs stock"
    return f"stock vs fastpass (features {','.join(options.features) or 'all'})"


def _cases_at_once(jobs: int | None, options: RunOptions) -> int:
    """`-j N` counts worker processes, as the gate's does; a case keeps two busy (its pinned
    lowerings and, beside them, its null check) unless it has no null check. Not given: one case
    at a time, as before -j existed."""
    if jobs is None:
        return 1
    return max(1, jobs // (1 if options.null_seed is None else 2))
