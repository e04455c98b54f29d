"""`python -m verify run` (also `python -m verify` alone, the default job) and `python -m verify
report --from DIR`: the run campaign's command line (the campaign: verify.run).

`run` parses the options (`_add_run_arguments`), refuses bad usage in one line before any work
(verify.usage.UsageError, exit 2: an unknown model, target or feature, a bad number, an output
that cannot be written, a run folder that holds a run or that another process is working in),
makes and locks the run folder and starts its journal (`--resume DIR`: locks and reads the
journal of the run in DIR, with its options), then hands the cases to verify.run.runner.run_cases.
`report --from DIR` runs nothing: it rebuilds a run's reports from its journal, also of an
interrupted run. Both write the reports one way, `write_reports` (report.json, --json and
--junit from the journal, by verify.report.files). Exit status: `python -m verify --help`
(verify.cli, which registers both here: `add_parser` and `add_report_parser`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from verify.commands import arguments
from verify.jobs.launcher import add_memory_limit_option, memory_limit_of
from verify.lowering.mode import Mode
from verify.usage.output_paths import new_run_dir
from verify.usage import UsageError

log = logging.getLogger(__name__)

DEFAULT_TARGETS = ("tosa-int", "ethos-u55")
RUN_OPTION_KEYS = ("features", "hash_seed", "null_seed", "reference_sets", "timeout", "keep_all",
                   "second_mode", "calibration", "memory_limit")


def add_parser(sub) -> None:
    """`run`; `report` is `add_report_parser` (`python -m verify --help` lists bench between them)."""
    run = sub.add_parser("run", help="verify chosen models × targets")
    _add_run_arguments(run)
    run.set_defaults(handler=cmd_run)


def add_report_parser(sub) -> None:
    report = sub.add_parser("report", help="rebuild a run's reports from its journal (also of an interrupted run)")
    report.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR", help="the run folder")
    report.add_argument("--json", type=Path, default=None, help="also write the JSON report here")
    report.add_argument("--junit", type=Path, default=None, help="also write a JUnit XML report here")
    report.set_defaults(handler=cmd_report)


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", default="all",
                   help="comma-separated built-in models, 'all' (default) or 'none'")
    p.add_argument("--model", action="append", default=[], metavar="REF",
                   help="a user model: path/to/file.py:factory or package.module:factory returning "
                        "(nn.Module, example_inputs); repeatable. The factory is called twice, to tell "
                        "whether it is deterministic")
    p.add_argument("--random", type=int, default=0, metavar="N",
                   help="also verify N random graphs drawn by generators.random")
    p.add_argument("--seed", type=int, default=0, help="seed of the random graph draw (with --random; default 0)")
    p.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                   help="comma-separated: tosa-int, tosa-fp, ethos-u55, ethos-u85 (default: %(default)s)")
    p.add_argument("--features", default="all",
                   help="fastpass features of the fastpass lowering: 'all' (default) or a comma-separated subset")
    p.add_argument("--second-mode", type=Mode, choices=tuple(Mode), default=Mode.FASTPASS,
                   help="the lowering compared with stock: 'fastpass' (default), or 'stock' for a "
                        "stock-vs-stock null run at the pinned seed")
    p.add_argument("--hash-seed", type=int, default=0, help="PYTHONHASHSEED of both compared lowerings, 0..4294967295 (default 0)")
    p.add_argument("--null-seed", type=int, default=1,
                   help="hash seed of the cross-seed null check (stock vs stock), 0..4294967295; -1 disables it "
                        "(default 1)")
    p.add_argument("--reference-sets", type=int, default=3,
                   help="random input sets run through the TOSA reference model per delegate (default 3)")
    from verify.lowering.quantize import CALIBRATIONS

    p.add_argument("--calibration", choices=tuple(CALIBRATIONS), default="histogram",
                   help="activation observer of INT quantization: 'histogram' = executorch's recipe (default), "
                        "'minmax' = the same with MinMaxObserver, as the fuzz tests use (same graph structure, "
                        "faster)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker process (default 1800)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="worker processes at once; a case runs two at once (its lowerings and its null check; "
                        "one with --null-seed -1), so N // 2 cases at a time (default: one case at a time; "
                        "on a cluster: its CPUs). May be given with --resume")
    add_memory_limit_option(p, "a worker process")
    p.add_argument("--out", type=Path, default=None,
                   help="run folder (default verify-out/<time>-<pid>-<random>; must not hold a run already)")
    p.add_argument("--resume", type=Path, default=None, metavar="DIR",
                   help="finish the run in DIR: its options and cases, skipping the finished ones "
                        "(only --json/--junit, -j and --cluster may be given with it)")
    p.add_argument("--keep-all", action="store_true", help="keep snapshots of identical cases too")
    p.add_argument("--json", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report here")


def _random_models(count: int, seed: int, folder: Path) -> list[str]:
    """Draw `count` graphs reproducibly from `seed`; each is saved as JSON and named `graphspec:<file>`."""
    from verify.fuzz.search import draw_graphs
    from verify.report.atomic import write_text

    folder.mkdir(parents=True, exist_ok=True)
    refs = []
    for spec in draw_graphs(count, seed):
        path = folder / f"graph-{spec.fingerprint()}.json"
        write_text(path, spec.to_json(indent=1))
        refs.append(f"graphspec:{path}")
    return refs


def _model_refs(args) -> list[str]:
    from verify.cases import builtin_models, usage_problem

    models = builtin_models() if args.models == "all" else ([] if args.models == "none" else arguments.csv(args.models))
    models += args.model
    for ref in models:
        problem = usage_problem(ref)
        if problem:
            raise UsageError(problem)
    if not models and not args.random:
        raise UsageError("no models selected (--models none and no --model)")
    return models


def _targets(text: str) -> list[str]:
    from verify.lowering.targets import TARGETS

    targets = arguments.csv(text)
    if not targets:
        raise UsageError("no targets selected")
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise UsageError(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    return targets


def _unique(cases: list) -> list:
    """One case per (model, target): a duplicate would only redo the same work."""
    return list(dict.fromkeys(cases))


def _run_defaults() -> dict:
    parser = argparse.ArgumentParser(add_help=False)
    _add_run_arguments(parser)
    return vars(parser.parse_args([]))


def _options_from(args, out: Path, features: tuple[str, ...]):
    from verify.run.runner import RunOptions

    return RunOptions(features=features, hash_seed=args.hash_seed,
                      null_seed=arguments.null_seed(args.null_seed),
                      reference_sets=args.reference_sets, timeout=args.timeout, out_dir=out,
                      keep_all=args.keep_all, second_mode=args.second_mode, calibration=args.calibration,
                      memory_limit=memory_limit_of(args.memory_limit))


def _options_json(options) -> dict:
    return {"features": list(options.features), "hash_seed": options.hash_seed, "null_seed": options.null_seed,
            "reference_sets": options.reference_sets, "timeout": options.timeout, "keep_all": options.keep_all,
            "second_mode": options.second_mode, "calibration": options.calibration,
            "memory_limit": options.memory_limit}


def _options_from_journal(saved: dict, out: Path):
    from verify.run.runner import RunOptions

    return RunOptions(**{**{k: saved[k] for k in RUN_OPTION_KEYS if k in saved}, "features": tuple(saved["features"]),
                         "second_mode": Mode(saved["second_mode"])},
                      out_dir=out)


def _describe_modes(options) -> str:
    if options.second_mode is Mode.STOCK:
        return "stock vs stock"
    return f"stock vs fastpass (features {','.join(options.features) or 'all'})"


def _check_outputs(args) -> None:
    from verify.usage.output_paths import check_output_file

    if args.json:
        check_output_file(args.json, "--json")
    if args.junit:
        check_output_file(args.junit, "--junit")


def _lock(run_dir: Path, command: str, held: contextlib.ExitStack, option: str, writes: bool = True) -> None:
    """Hold the run folder's lock until `held` closes; busy is bad usage (exit 2): nothing has
    been done yet. So is a folder in which no lock can be made, unless the command `writes`
    nothing there it needs (`report --from` of a read-only copy: no run can be going on in it)."""
    from verify.run.journal import RunFolderBusy, locked_run_folder
    from verify.usage.output_paths import CannotWrite

    try:
        held.enter_context(locked_run_folder(run_dir, command))
    except RunFolderBusy as exc:
        raise UsageError(f"{option} {exc}") from None
    except CannotWrite as exc:
        if writes:
            raise UsageError(f"{option} {run_dir}: {exc}") from None
        log.debug("%s: read without its lock (%s)", run_dir, exc)


def _check_numbers(args) -> None:
    """The numbers a run is given, each refused in one line before anything is imported or made
    (a bad one would otherwise surface in every worker, or after the run folder exists)."""
    arguments.hash_seed(args.hash_seed)
    arguments.null_seed(args.null_seed)
    arguments.timeout(args.timeout)
    memory_limit_of(args.memory_limit)


def _prepare_new_run(args, held: contextlib.ExitStack):
    """Validate everything, make and lock the run folder, start its journal: (cases, options, out).

    The lock is taken before the "holds a run already" check and kept to the end: between the
    check and the journal's start lies the graph drawing of --random, long enough for a second
    run in the same --out to pass the same check."""
    from verify.report.case import Case
    from verify.run.journal import Journal, holds_run, journal_path
    from verify.usage.output_paths import CannotWrite, check_output_folder, writing

    features = arguments.features(args.features)
    if args.second_mode is Mode.FASTPASS:
        arguments.proof_ledger()
    for name, value in (("--reference-sets", args.reference_sets), ("--random", args.random)):
        if value < 0:
            raise UsageError(f"{name} must be 0 or more, got {value}")
    models = _model_refs(args)
    targets = _targets(args.targets)
    _check_outputs(args)
    if args.out is not None:
        check_output_folder(args.out, "--out")
        out = args.out
    else:
        try:
            with writing(Path("verify-out")):
                out = new_run_dir()
        except CannotWrite as exc:
            raise UsageError(f"run folder: {exc}") from None
    option = "--out" if args.out is not None else "run folder"
    _lock(out, "verify run", held, option)
    if holds_run(out):
        raise UsageError(f"--out {args.out}: holds a run already; finish it with --resume {args.out} "
                         "or choose another folder")
    journal_path(out).unlink(missing_ok=True)  # an empty one: a start that failed (earlier versions)
    options = _options_from(args, out, features)
    try:
        if args.random:
            models += _random_models(args.random, args.seed, out / "random-graphs")
        cases = _unique([Case(m, t) for m in models for t in targets])
        Journal(out).start(_options_json(options), cases, {
            "features": list(options.features) or "all", "hash_seed": options.hash_seed,
            "null_seed": options.null_seed, "second_mode": options.second_mode, "calibration": options.calibration,
            "argv": sys.argv[1:]})
    except CannotWrite as exc:  # before any case: the folder holds no run and can be used again
        raise UsageError(f"{option} {out}: {exc}") from None
    return cases, options, out


def _prepare_resume(args, held: contextlib.ExitStack):
    """Lock the folder, then read its journal and note the resume: two --resume of one folder
    would both run every missing case."""
    from verify.run.journal import Journal, JournalError, journal_path, read_journal
    from verify.usage.output_paths import CannotWrite

    defaults = _run_defaults()
    given = sorted(f"--{k.replace('_', '-')}" for k, v in vars(args).items()
                   if k in defaults and k not in ("resume", "json", "junit", "jobs") and v != defaults[k])
    if given:
        raise UsageError(f"--resume takes the options of the run it resumes; drop {', '.join(given)}")
    _check_outputs(args)
    if not journal_path(args.resume).is_file():  # no lock file in a folder that is not a run's
        raise UsageError(f"--resume: no run journal in {args.resume} (expected {journal_path(args.resume)})")
    _lock(args.resume, "verify run --resume", held, "--resume")
    try:
        contents = read_journal(args.resume)
        Journal(args.resume).resumed()
    except JournalError as exc:
        raise UsageError(f"--resume: {exc}") from None
    except CannotWrite as exc:
        raise UsageError(f"--resume {args.resume}: {exc}") from None
    return contents, _options_from_journal(contents.run["options"], args.resume), args.resume


@dataclass
class WrittenReports:
    """What the journal holds, and which report files could not be written (each says why)."""

    reports: list
    unfinished: list[tuple[str, str]]
    run_info: dict
    failed: list = field(default_factory=list)  # verify.usage.output_paths.CannotWrite, one per file


def write_reports(run_dir: Path, json_path: Path | None = None, junit_path: Path | None = None,
                  wall_seconds: float | None = None) -> WrittenReports:
    """report.json (and --json, --junit) from the run's journal: the one way reports are written,
    whether the run finished, was stopped, failed, or is rebuilt later by `report --from`
    (verify.report.files.write_run_reports writes them, each on its own)."""
    from verify.run.journal import read_journal
    from verify.report.files import write_run_reports
    from verify.report.case import CaseReport

    contents = read_journal(run_dir)
    by_case = {(c["model"], c["target"]): CaseReport.from_json(c) for c in contents.cases}
    planned = [(c.model, c.target) for c in contents.planned]
    reports = [by_case[key] for key in planned if key in by_case]
    unfinished = [key for key in planned if key not in by_case]
    run_info = {**contents.run["info"], "wall_seconds": wall_seconds, "planned": len(planned),
                "finished": len(reports), "complete": not unfinished, "stopped_by": contents.stopped_by,
                "journal": str(Path(run_dir) / "journal.jsonl")}
    failed = write_run_reports(reports, run_info, unfinished, Path(run_dir) / "report.json", json_path, junit_path)
    return WrittenReports(reports, unfinished, run_info, failed)


def _cases_at_once(jobs: int | None, options) -> int:
    """`-j N` counts worker processes, as the gate's does; a case keeps two busy (its pinned
    lowerings and, beside them, its null check) unless it has no null check. Not given: one case
    at a time, as before -j existed."""
    if jobs is None:
        return 1
    return max(1, jobs // (1 if options.null_seed is None else 2))


def cmd_run(args) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"-j must be 1 or more, got {args.jobs}")
    _check_numbers(args)  # (with --resume they are the defaults: it refuses any other)
    with contextlib.ExitStack() as held:  # the run folder's lock, to the last report written
        if args.resume is not None:
            contents, options, out = _prepare_resume(args, held)
            return _run(args, contents.planned, contents.finished(), options, out)
        cases, options, out = _prepare_new_run(args, held)
        return _run(args, cases, set(), options, out)


def _run(args, cases: list, done: set, options, out: Path) -> int:
    from verify.run.journal import Journal
    from verify.jobs.launcher import stop_on_signals, stop_signal, stopped_exit_status
    from verify.usage.output_paths import CannotWrite
    from verify.report.table import progress, table
    from verify.run.runner import run_cases

    journal = Journal(out)
    todo = [c for c in cases if c not in done]
    print(f"verify: {len(cases)} case(s)" + (f" ({len(done)} finished before, resumed)" if done else "")
          + f", {_describe_modes(options)}, hash seed {options.hash_seed}, null seed {options.null_seed}, "
          f"run folder {out}", file=sys.stderr, flush=True)
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
                      parallel=_cases_at_once(args.jobs, options))
            stopped = stop_signal()
            if stopped is not None:
                journal.stopped(signal.Signals(stopped).name)
        except CannotWrite as exc:  # the case in flight is not journaled: --resume runs it again
            log.debug("the run stopped: a write was refused", exc_info=True)
            refused = exc
        finally:  # also on an unexpected error: what finished is reported
            written = write_reports(out, args.json, args.junit, time.perf_counter() - started)
    reports = written.reports
    print(table(reports))
    print(f"wall time {time.perf_counter() - started:.0f} s")
    for failure in written.failed:
        print(f"verify: {failure}", file=sys.stderr)
    if refused is not None:
        print(f"verify: {refused}; the run stopped with {len(reports)} of {len(cases)} case(s) finished; "
              f"resume with: python -m verify run --resume {out}", file=sys.stderr)
    if stopped is not None:
        print(f"verify: stopped by {signal.Signals(stopped).name}: {len(reports)} of {len(cases)} case(s) finished; "
              f"reports written; resume with: python -m verify run --resume {out}", file=sys.stderr)
        return stopped_exit_status(stopped)
    if refused is not None or written.failed:
        return 1
    return 0 if not written.unfinished and all(r.passed for r in reports) else 1


def cmd_report(args) -> int:
    from verify.run.journal import JournalError, journal_path
    from verify.report.table import table

    _check_outputs(args)
    if not journal_path(args.source).is_file():  # no lock file in a folder that is not a run's
        raise UsageError(f"no run journal in {args.source} (expected {journal_path(args.source)})")
    with contextlib.ExitStack() as held:
        _lock(args.source, "verify report", held, "--from", writes=False)
        try:
            written = write_reports(args.source, args.json, args.junit)
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
    report_json = Path(args.source) / "report.json"
    if not any(Path(f.filename) == report_json for f in written.failed):
        print(f"verify report: wrote {report_json}", file=sys.stderr)
    if written.failed:
        return 1
    return 0 if not unfinished and all(r.passed for r in reports) else 1

