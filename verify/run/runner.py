"""Run cases: lower(stock) ∥ lower(fastpass) in a worker under a pinned hash seed, then compare.

Per case:
1. a worker at the pinned seed builds the model (twice: is the factory deterministic?),
   quantizes it once, saves the program, and lowers the saved program stock, then with
   fastpass;
2. a null-check worker lowers the same saved program stock under another seed (started in
   parallel, it waits for the program), to report stock executorch's own nondeterminism
   across hash seeds, localised to a pass;
3. if stock and fastpass differ, a third worker lowers the saved program stock again at the pinned
   seed: if that differs from the first stock lowering too, in every check fastpass's did, the
   case is `nondeterministic` (the harness cannot tell), otherwise `divergent`
   (verify.compare.comparison's policy).
Workers are run-lowerings jobs (verify.jobs, verify.run.worker), started by verify.jobs.launcher (own
process group, killed on timeout, stop or death).
"""

from __future__ import annotations

import functools
import json
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from verify.cluster import referenced_files
from verify.compare.comparison import StockRelowered, compare_lowerings
from verify.jobs import Job, JobKind, execute
from verify.jobs.launcher import (
    DEFAULT_MEMORY_LIMIT, JobFiles, RunStopped, WorkerCancelled, WorkerMemoryExceeded, WorkerTimeout,
)
from verify.jobs.pool import run_in_pool
from verify.lowering.lower import LoweringResult
from verify.lowering.mode import Mode
from verify.lowering.node_order import NodeOrder
from verify.usage.output_paths import WORKER_EXIT_CANNOT_WRITE, CannotWrite, cannot_write, is_refused
from verify.report.case import Case, CaseReport
from verify.vocabulary import NullOutcome, Verdict
from verify.run.saved_program import PROGRAM_NAME


# What a run's journal keeps of its options (all but out_dir: the journal is in it), in this order.
_SAVED_OPTIONS = ("features", "hash_seed", "null_seed", "reference_sets", "timeout", "keep_all", "second_mode",
                  "calibration", "memory_limit")


@dataclass
class RunOptions:
    features: tuple[str, ...] = ()
    hash_seed: int = 0
    null_seed: int | None = 1  # None: no cross-seed null check
    reference_sets: int = 3
    timeout: float = 1800.0
    out_dir: Path = Path("verify-out")
    keep_all: bool = False
    second_mode: Mode = Mode.FASTPASS  # STOCK makes the pinned comparison a stock-vs-stock null run
    calibration: str = "histogram"  # see verify.lowering.quantize.CALIBRATIONS
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT  # bytes of a worker group's RSS (verify.jobs.launcher); None: none

    def to_json(self) -> dict:
        """The options as the run's journal keeps them, for `--resume` to read back (from_json)."""
        return {**{name: getattr(self, name) for name in _SAVED_OPTIONS}, "features": list(self.features)}

    @classmethod
    def from_json(cls, saved: dict, out_dir: Path) -> RunOptions:
        """The options a journal kept (to_json); one it lacks (older than the option) keeps its default."""
        return cls(**{**{name: saved[name] for name in _SAVED_OPTIONS if name in saved},
                      "features": tuple(saved["features"]), "second_mode": Mode(saved["second_mode"])},
                   out_dir=out_dir)


def _seconds_of(stock: LoweringResult, second: LoweringResult) -> dict[str, float]:
    """A case's timings, keyed by mode (the second lowering's key is `fastpass` also in a null run
    with --second-mode stock: it names the role, the compared lowering); to_executorch() apart."""
    return {Mode.STOCK.value: stock.seconds, Mode.FASTPASS.value: second.seconds,
            f"{Mode.STOCK}_to_executorch": stock.serialize_seconds,
            f"{Mode.FASTPASS}_to_executorch": second.serialize_seconds}


class WorkerFailure(RuntimeError):
    pass


@dataclass
class WorkerOutput:
    results: dict[Mode, LoweringResult]  # by the lowering's label
    status: dict


def _run_worker(case: Case, name: str, lowerings: list, seed: int, options: RunOptions, case_dir: Path,
                save_program: bool = False, cancel: threading.Event | None = None) -> WorkerOutput:
    settings = {"name": name, "model": case.model, "target": case.target, "lowerings": lowerings,
                "out_dir": str(case_dir), "reference_sets": options.reference_sets,
                "calibration": options.calibration, "program": str(case_dir / PROGRAM_NAME),
                "save_program": save_program}
    log_path = case_dir / f"{name}.log"
    job = Job(JobKind.RUN_LOWERINGS, settings, log_path, hash_seed=seed, timeout=options.timeout,
              memory_limit=options.memory_limit,
              # what the worker reads and writes, should it run on a cluster (verify.cluster)
              files=JobFiles(case_dir, referenced_files(case.model), () if save_program else (case_dir / PROGRAM_NAME,)))
    try:
        returncode = execute(job, cancel).returncode
    except WorkerTimeout:
        raise WorkerFailure(f"timed out after {options.timeout:.0f} s (worker {name}, log {log_path})") from None
    except WorkerMemoryExceeded as exc:
        raise WorkerFailure(f"{exc} (worker {name}, log {log_path})") from None
    if returncode == WORKER_EXIT_CANNOT_WRITE:  # not the case's fault: the run stops, the case stays to do
        raise CannotWrite(None, f"worker {name} could not write its output (file system full or not "
                                f"writable; its log: {log_path})", str(case_dir))
    status_path = case_dir / f"{name}.status.json"
    status = json.loads(status_path.read_text()) if status_path.exists() else {}
    if status.get("prepare_error"):
        raise WorkerFailure(status["prepare_error"])
    if returncode != 0:
        raise WorkerFailure(f"worker {name} exited with code {returncode} "
                            f"({'killed by signal ' + str(-returncode) if returncode < 0 else 'error'}); "
                            f"log: {log_path}\n{_tail(log_path)}")
    results = {}
    for label, *_ in lowerings:  # the label (a Mode: the lowering's role) names its file
        with open(case_dir / f"{name}.{label}.pkl", "rb") as f:
            results[label] = pickle.load(f)
    return WorkerOutput(results, status)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _null_check(stock: LoweringResult, other: LoweringResult, seeds: tuple[int, int]) -> tuple[NullOutcome, dict]:
    comparison = compare_lowerings(stock, other)
    failed = comparison.failed
    outcome = NullOutcome.DIFFERS if failed else NullOutcome.IDENTICAL
    where = comparison.first_divergence
    return outcome, {"seeds": list(seeds), "identical": not failed, "differs_in": failed,
                     "first_divergent_pass": where.label if where else None,
                     "details": {n: comparison.checks[n].details[:3] for n in failed}}


def _new_case_dir(out_dir: Path, slug: str) -> Path:
    """A folder of its own: never reuse (and never delete) another case's artifacts."""
    for attempt in range(1, 1000):
        case_dir = out_dir / (slug if attempt == 1 else f"{slug}.{attempt}")
        try:
            case_dir.mkdir(parents=True)
            return case_dir
        except FileExistsError:
            continue
    raise RuntimeError(f"no free artifact folder for {slug} in {out_dir}")


def run_case(case: Case, options: RunOptions) -> CaseReport:
    start = time.perf_counter()
    case_dir = _new_case_dir(options.out_dir, case.slug)
    report = CaseReport(case.model, case.target, Verdict.ERROR, artifacts=str(case_dir))
    try:
        _run_case(case, options, case_dir, report)
    finally:
        report.wall_seconds = time.perf_counter() - start
    return report


def _run_case(case: Case, options: RunOptions, case_dir: Path, report: CaseReport) -> None:
    features = list(options.features)
    cancel_null = threading.Event()  # the null worker waits for the saved program: stop it if none comes
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            pinned = pool.submit(_run_worker, case, "pinned",
                                 [[Mode.STOCK, Mode.STOCK, []], [Mode.FASTPASS, options.second_mode, features]],
                                 options.hash_seed, options, case_dir, save_program=True)
            null = (pool.submit(_run_worker, case, "null", [[Mode.STOCK, Mode.STOCK, []]], options.null_seed, options,
                                case_dir, cancel=cancel_null)
                    if options.null_seed is not None else None)
            try:
                output = pinned.result()
            except WorkerFailure as exc:
                report.error = str(exc)
                return
            stock, fast = output.results[Mode.STOCK], output.results[Mode.FASTPASS]
            report.factory = output.status.get("factory")
            report.seconds = _seconds_of(stock, fast)
            report.fastpass_stats = fast.fastpass_stats
            comparison = compare_lowerings(stock, fast)
            report.checks = comparison.checks
            if null is not None:
                seeds = (options.hash_seed, options.null_seed)
                try:
                    report.null_outcome, report.null_check = _null_check(stock, null.result().results[Mode.STOCK], seeds)
                except (WorkerFailure, WorkerCancelled) as exc:
                    report.null_outcome = NullOutcome.FAILED
                    report.null_check = {"seeds": list(seeds), "identical": False, "error": str(exc)}
        finally:
            cancel_null.set()
    if not comparison.differs:
        report.verdict = Verdict.IDENTICAL
    elif comparison.both_failed_alike:  # nothing to compare: the case is an error, not a verdict on fastpass
        report.verdict = Verdict.ERROR
        report.error = stock.error.splitlines()[0]
    else:
        report.first_divergence = comparison.first_divergence
        report.verdict = Verdict.DIVERGENT
        try:
            comparison = comparison.rechecked(lambda: _relower_stock(case, options, case_dir))
            report.order_recheck = comparison.order_recheck
            report.verdict = comparison.verdict
        except WorkerFailure as exc:
            report.error = f"recheck of stock determinism failed: {exc}"
    if report.verdict is Verdict.IDENTICAL and not options.keep_all:
        for pkl in case_dir.glob("*.pkl"):
            pkl.unlink()


def _relower_stock(case: Case, options: RunOptions, case_dir: Path) -> StockRelowered:
    """Stock again as it ran, and under two opposite node-set iteration orders
    (verify.lowering.node_order), in one worker at the pinned seed: a pass iterating a set of
    nodes in address order can differ from call to call, and a plain recheck rarely lands on the
    other order."""
    rechecks = _run_worker(case, "recheck", [[Mode.STOCK, Mode.STOCK, []]] + [
        [f"{Mode.STOCK}-{order}", Mode.STOCK, [], order.value] for order in NodeOrder],
        options.hash_seed, options, case_dir).results
    return StockRelowered(tuple(rechecks[f"{Mode.STOCK}-{order}"] for order in NodeOrder), again=rechecks[Mode.STOCK])


def precheck(case: Case) -> CaseReport | None:
    """A case that is wrong on its face gets an error verdict without spending a worker.
    (The CLI refuses such cases up front, as bad usage; this guards the library entry point.)"""
    from verify.cases import usage_problem
    from verify.lowering.targets import TARGETS

    if case.target not in TARGETS:
        return CaseReport(case.model, case.target, Verdict.ERROR,
                          error=f"unknown target {case.target!r}; known targets: {', '.join(TARGETS)}")
    problem = usage_problem(case.model)
    if problem and ":" not in case.model:
        return CaseReport(case.model, case.target, Verdict.ERROR, error=problem)
    return None


def run_cases(cases: list[Case], options: RunOptions,
              progress: Callable[[str, Case, CaseReport | None], None] = lambda *a: None,
              on_report: Callable[[CaseReport], None] = lambda r: None, parallel: int = 1) -> list[CaseReport]:
    """Run every case, `parallel` at once (verify.jobs.pool: each case's workers are its own);
    a broken case is recorded and the run goes on. `on_report` gets each finished case as it
    finishes (the journal), one at a time; `progress` lines never interleave. When the run is
    stopped (verify.jobs.launcher's stop_all, on SIGINT/SIGTERM) the cases in flight are dropped
    and the finished ones returned, in the order of `cases`.

    A write the file system refuses (full disk, no permission: verify.usage.output_paths.CannotWrite)
    is no case's fault and would fail every case after it: no case starts after it, it is raised
    once the cases in flight end (they are recorded if they finish; the refused one is not), and
    `--resume` runs what is missing once there is room."""
    announce = threading.Lock()

    def one(case: Case) -> CaseReport:
        report = precheck(case)
        if report is not None:
            return report
        with announce:
            progress("start", case, None)
        start = time.perf_counter()
        try:
            return run_case(case, options)
        except (RunStopped, CannotWrite):
            raise
        except Exception as exc:  # noqa: BLE001 - one broken case must not stop the run
            if is_refused(exc):  # e.g. a worker's log file: the run folder is full or unwritable
                raise cannot_write(exc, exc.filename or options.out_dir) from exc
            return CaseReport(case.model, case.target, Verdict.ERROR, error=f"harness error: {type(exc).__name__}: {exc}",
                              wall_seconds=time.perf_counter() - start)

    reports: dict[int, CaseReport] = {}

    def finished(index: int, report: CaseReport) -> None:
        reports[index] = report
        on_report(report)
        with announce:  # a case's result lines, whole, never cut by another case's start
            progress("done", cases[index], report)

    try:
        run_in_pool([functools.partial(one, case) for case in cases], parallel, on_finished=finished, name="case")
    except RunStopped:
        pass  # the finished cases are kept; the caller reads the stop from verify.jobs.launcher.stop_signal
    return [reports[i] for i in sorted(reports)]
