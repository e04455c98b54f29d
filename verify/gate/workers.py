"""Run the gate's checks in workers, N at a time (`verify gate -j N`): each `--pass` check, and
in a registry run each stage's search (search.search_stage) and each direct pass's check, all in
the harness's one pool (verify.jobs.pool).

Why workers: one pass's search lowers dozens of graphs, a stage's search hundreds; in the gate's
own process a crash (a segfault in a lowering, the OOM killer) or a hang ended the whole run
with nothing written, and the stages ran one after another on one core. Each check now runs as
a verify.jobs job (its handler in `verify.gate.worker`), started by verify.jobs.launcher (the one
launcher of the harness: own process group, pinned hash seed, log file, timeout, killed on
stop), and:

- a pass check's worker that exits without a verdict gives its pass an `error` verdict
  (`<worker-crash: exit N>`, the log's last line), one past `--pass-timeout` too
  (`<worker-timeout>`); a stage search's worker gives its stage an `error` entry
  (`<worker-crash:STAGE>`, `<worker-timeout:STAGE>`) and no evidence; the other jobs go on;
- jobs start in the order given and results come back in that order, whatever N: the table
  and the JSON do not depend on -j;
- a job not started when the run's deadline (`--max-seconds`) has passed is `NOT_STARTED`;
  when the run is stopped (SIGINT/SIGTERM: verify.jobs.launcher.stop_all kills every worker's
  group) the unfinished ones are `STOPPED` and the finished verdicts are kept. The callers
  turn every pass of an unfinished job into an `error` (verdict.PassVerdict.not_finished);
- a worker writes its verdicts so far after every graph (`<job>.partial.json`, atomically: a
  worker killed at any moment leaves the last complete one), so a stage search or a pass check
  cut short by a stop, its timeout or a crash still hands over the evidence it had gathered.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from verify.gate.events import relayed
from verify.gate.plan import RegistryRunner, StagePlan, StageResult
from verify.gate.verdict import PassVerdict, make_verdict
from verify.cluster import referenced_files
from verify.jobs import Job, JobKind, execute
from verify.jobs.launcher import JobFiles, RunStopped, WorkerMemoryExceeded, WorkerTimeout
from verify.jobs.pool import run_in_pool
from fastpass.annotations import ProofStatus
from verify.vocabulary import Ending, Route

log = logging.getLogger(__name__)

HASH_SEED = 0  # every gate worker's PYTHONHASHSEED: a pass's search runs the same under -j 1 and -j N
DEFAULT_PASS_TIMEOUT = 1800.0  # s: a --pass search of 30 graphs per feature plus shrinking is ~5-15 min
# s: a stage's search (60 graphs, a top-up of up to 180 s, shrinking up to 300 s per unsound pass)
# is ~10-30 min on 2 busy cores; a killed stage loses all its evidence, so this only catches hangs
DEFAULT_STAGE_TIMEOUT = 7200.0


def default_parallel() -> int:
    """2, or fewer on a smaller machine: each worker is a whole torch/executorch process."""
    return max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True)
class SearchSettings:
    """What every pass's search shares (run.gate_pass's parameters but the pass and stage)."""

    examples: int
    out: Path
    seed: int | None = None
    max_ops: int = 4
    shrink_seconds: float = 300.0
    ops: tuple[str, ...] | None = None
    min_evidence: int = 5


@dataclass(frozen=True)
class PassJob:
    cls: type
    ref: str  # how the worker finds the class: module:Class or path/to/file.py:Class
    stage: str
    how: Route = Route.UNDECIDED  # DIRECT to force it; UNDECIDED: the stage's pipeline if it invokes the pass


@dataclass(frozen=True)
class StageJob:
    """A registry run's search of one stage (search.search_stage) in a worker. The worker takes the
    shared settings' out, max_ops, shrink_seconds, ops and min_evidence; examples and seed are
    the plan's."""

    plan: StagePlan
    refs: tuple[tuple[str, str], ...]  # (qualname, module:Class) of each pass in plan.passes


@dataclass
class PassRun:
    job: PassJob
    ending: Ending  # FINISHED, STOPPED or NOT_STARTED
    # set when FINISHED; when STOPPED, the verdict so far its worker had written (None if none)
    verdict: PassVerdict | None = None
    wall_seconds: float = 0.0  # the worker's, start-up included (the verdict's `seconds`: its search)


@dataclass
class StageRun:
    job: StageJob
    ending: Ending  # FINISHED, STOPPED or NOT_STARTED
    # set when FINISHED (a crash or timeout: its error entry and the evidence it had written) or
    # STOPPED (the evidence the worker had written by then)
    result: StageResult | None = None
    wall_seconds: float = 0.0


def gate_in_workers(jobs: list[PassJob | StageJob], settings: SearchSettings, *, parallel: int,
                    pass_timeout: float, stage_timeout: float | None = None, deadline: float | None = None,
                    on_finished: Callable[[PassRun | StageRun, int, int], None] | None = None
                    ) -> list[PassRun | StageRun]:
    """One worker per job, at most `parallel` at once, started in the order of `jobs`; the
    results in that order too (a StageRun for a StageJob). A pass job's worker is killed after
    `pass_timeout` s, a stage job's after `stage_timeout` (default: `pass_timeout`).
    `deadline` (time.monotonic()) stops new jobs from starting; `on_finished(run, n, total)` is
    called as each job finishes (n counts the finished ones); by default it logs a line."""
    total = len(jobs)
    finished = [0]
    report = on_finished or log_finished
    folder = settings.out / "workers"
    folder.mkdir(parents=True, exist_ok=True)
    log_level = logging.getLogger("verify").getEffectiveLevel()  # verify.report.verbosity configures "verify", not root

    def one(index: int, job: PassJob | StageJob) -> PassRun | StageRun:
        kind = StageRun if isinstance(job, StageJob) else PassRun
        start = time.perf_counter()
        try:
            if isinstance(job, StageJob):
                base = folder / f"{index:03d}-stage-{job.plan.stage}"
                found = _run_stage(job, settings, base, stage_timeout or pass_timeout, log_level)
            else:
                base = folder / f"{index:03d}-{job.cls.__name__}"
                found = _run_one(job, settings, base, pass_timeout, log_level)
        except RunStopped:
            if isinstance(job, StageJob):
                return StageRun(job, Ending.STOPPED, _partial_result(job, base, Ending.STOPPED),
                                time.perf_counter() - start)
            return PassRun(job, Ending.STOPPED, _partial_verdict(base), time.perf_counter() - start)
        return kind(job, Ending.FINISHED, found, time.perf_counter() - start)

    def finished_one(_index: int, run: PassRun | StageRun) -> None:
        if run.ending is Ending.FINISHED:
            finished[0] += 1
            report(run, finished[0], total)

    runs = run_in_pool([functools.partial(one, index, job) for index, job in enumerate(jobs)], parallel,
                       deadline=deadline, on_finished=finished_one, name="gate-worker")
    return [run if not isinstance(run, Ending) else (StageRun if isinstance(job, StageJob) else PassRun)(job, run)
            for job, run in zip(jobs, runs)]


def registry_runner(classes: dict[str, type], settings: SearchSettings, *, parallel: int, pass_timeout: float,
                    stage_timeout: float | None = None) -> RegistryRunner:
    """run.gate_registry's runner for workers: the stage searches first, then the direct checks
    (`settings.examples` graphs per feature), in one pool of `parallel` workers. Every stage
    gives a result, `unfinished` where its search did not run to its end (with the evidence its
    worker had written); a direct check cut short by a stop gives the verdict so far its worker
    had written, `unfinished` set, or none, like one not started by the run's deadline
    (gate_registry makes each such pass an `error` saying why)."""

    def ref_of(cls: type) -> str:
        return f"{cls.__module__}:{cls.__qualname__}"

    def runner(plans: list[StagePlan], items: list[tuple[str, type]], direct_stage: str,
               deadline: float | None) -> tuple[list[StageResult], dict[str, PassVerdict]]:
        jobs: list[PassJob | StageJob] = [StageJob(plan, tuple((qn, ref_of(classes[qn])) for qn in plan.passes))
                                          for plan in plans]
        jobs += [PassJob(cls, ref_of(cls), direct_stage, Route.DIRECT) for _qn, cls in items]
        if jobs:
            log.info("gate: %d stage search(es) and %d direct pass check(s), %d worker(s) at a time",
                     len(plans), len(items), parallel)
        runs = gate_in_workers(jobs, settings, parallel=parallel, pass_timeout=pass_timeout,
                               stage_timeout=stage_timeout, deadline=deadline)
        finished = [r.ending is Ending.FINISHED for r in runs]
        results = [r.result if r.result is not None else
                   StageResult(r.job.plan.stage, {}, r.ending)
                   for r in runs if isinstance(r, StageRun)]
        direct = {}
        for (qn, _cls), r in zip(items, runs[len(plans):]):
            if r.ending is Ending.FINISHED:
                direct[qn] = r.verdict
            elif r.verdict is not None:  # stopped after some examples: its evidence so far, unfinished
                r.verdict.unfinished = Ending.STOPPED
                direct[qn] = r.verdict
        return results, direct

    return runner


def log_finished(run: PassRun | StageRun, n: int, total: int) -> None:
    if isinstance(run, StageRun):
        verdicts = run.result.verdicts.values()
        failing = [v for v in verdicts if v.verdict.fails]
        log.info("gate: [%d/%d] stage %s: %d pass(es) searched, %d graph(s), %d failing (%.0f s)%s", n, total,
                 run.job.plan.stage, sum(1 for v in verdicts if not v.qualname.startswith("<")),
                 max((v.examples for v in verdicts), default=0), len(failing), run.wall_seconds,
                 "".join(f"; {v.name}: {v.reason[:160]}" for v in failing if v.qualname.startswith("<")))
        return
    v = run.verdict
    log.info("gate: [%d/%d] %s: %s (%.0f s; search %.0f s)%s", n, total, v.name, v.verdict.value,
             run.wall_seconds, v.seconds, f": {v.reason[:160]}" if v.verdict is ProofStatus.ERROR else "")


@dataclass(frozen=True)
class _Launched:
    """What a worker left: its result document, or why there is none (`failure`, which begins
    with `<worker-timeout>` or `<worker-crash: exit N>`, and says where its log is)."""

    document: dict | None
    failure: str
    seconds: float
    timed_out: bool = False


def _launch_worker(kind: JobKind, settings: dict, base: Path, timeout: float, log_level: int) -> _Launched:
    """Run the gate job of `kind` (verify.jobs: `verify.gate.worker`'s handler) with its records
    relayed, and read the result it wrote (JSON). Raises RunStopped."""
    events, partial = (base.with_name(f"{base.name}.{suffix}") for suffix in ("events.jsonl", "partial.json"))
    for stale in (events, partial):  # an earlier run's (reused --out)
        stale.unlink(missing_ok=True)
    settings = dict(settings, events=str(events), partial=str(partial))
    job = Job(kind, settings, base.with_name(f"{base.name}.log"), hash_seed=HASH_SEED, timeout=timeout,
              log_level=log_level, files=_job_files(settings))
    start = time.perf_counter()
    try:
        with relayed(events):
            ended = execute(job)
    except WorkerTimeout:
        return _Launched(None, f"<worker-timeout>: no verdict within {timeout:.0f} s (--pass-timeout); "
                               f"worker killed; log {job.log_path}", time.perf_counter() - start, timed_out=True)
    except WorkerMemoryExceeded as exc:  # the launcher's default limit: a crash, the limit named
        return _Launched(None, f"<worker-crash: memory limit>: {exc}; log {job.log_path}", time.perf_counter() - start)
    seconds, status = time.perf_counter() - start, ended.returncode
    if status != 0 or not ended.written:
        how = (f"killed by signal {-status}" if status < 0
               else "ended without writing a verdict" if status == 0 else "failed before writing a verdict")
        return _Launched(None, f"<worker-crash: exit {status}>: {how}; log {job.log_path}"
                               + (f": {_last_line(job.log_path)}" if _last_line(job.log_path) else ""), seconds)
    try:
        return _Launched(ended.read(), "", seconds)
    except ValueError as exc:
        return _Launched(None, f"<worker-crash: exit 0>: unreadable result {job.result_path}: "
                               f"{type(exc).__name__}: {exc}", seconds)


def _job_files(settings: dict) -> JobFiles:
    """What a gate worker reads and writes, should it run on a cluster (verify.cluster): the
    job's `out` folder (its results, reproducers, the Hypothesis database), the files its pass
    references name (the job file itself: verify.jobs adds it)."""
    out = Path(settings["out"])
    refs = [settings.get("ref") or "", *(settings.get("passes") or {}).values()]
    return JobFiles(out, (out / "hypothesis-db", *(f for ref in refs for f in referenced_files(ref))))


def _search_document(settings: SearchSettings) -> dict:
    return {"out": str(settings.out), "max_ops": settings.max_ops, "shrink_seconds": settings.shrink_seconds,
            "ops": list(settings.ops) if settings.ops is not None else None, "min_evidence": settings.min_evidence}


def _run_one(job: PassJob, settings: SearchSettings, base: Path, timeout: float, log_level: int) -> PassVerdict:
    """Launch the pass's worker and turn what it left into a verdict. Raises RunStopped."""
    launched = _launch_worker(JobKind.GATE_PASS, {"ref": job.ref, "name": job.cls.__name__, "stage": job.stage,
                               "how": job.how.value, "examples": settings.examples, "seed": settings.seed,
                               **_search_document(settings)}, base, timeout, log_level)
    if launched.document is None:
        return _error(job, launched.failure, launched.seconds, _partial_verdict(base))
    try:
        return PassVerdict.from_json(launched.document)
    except (ValueError, KeyError, TypeError) as exc:
        return _error(job, f"<worker-crash: exit 0>: unreadable verdict {base.name}.result.json: "
                           f"{type(exc).__name__}: {exc}", launched.seconds, _partial_verdict(base))


def _run_stage(job: StageJob, settings: SearchSettings, base: Path, timeout: float, log_level: int) -> StageResult:
    """Launch the stage's worker and turn what it left into its result: the per-pass verdicts it
    sent, or one `error` entry for the stage when it sent none. Raises RunStopped."""
    plan = job.plan
    not_after_in = None if plan.not_after is None else plan.not_after - time.monotonic()
    launched = _launch_worker(JobKind.GATE_STAGE, {"name": plan.stage, "stage": plan.stage, "passes": dict(job.refs),
                               "examples": plan.examples, "top_up": plan.top_up,
                               "top_up_seconds": plan.top_up_seconds, "seconds": plan.seconds,
                               "not_after_in": not_after_in, "seed": plan.seed, **_search_document(settings)},
                              base, timeout, log_level)
    if launched.document is not None:
        try:
            return StageResult(plan.stage, _stage_verdicts(launched.document))
        except (ValueError, KeyError, TypeError) as exc:
            launched = _Launched(None, f"<worker-crash: exit 0>: unreadable result {base.name}.result.json: "
                                       f"{type(exc).__name__}: {exc}", launched.seconds)
    kind = "worker-timeout" if launched.timed_out else "worker-crash"
    partial = _partial_result(job, base, Ending.CUT_SHORT)
    searched = sum(1 for key in partial.verdicts if not key.startswith("<"))
    kept = (f"the evidence it had written for {searched} of its {len(plan.passes)} pass(es) is kept"
            if searched else f"it gave no evidence for its {len(plan.passes)} pass(es)")
    error = PassVerdict(f"<{kind}>", kind.replace("-", " "), "-", ProofStatus.ERROR,
                        f"{launched.failure[:400]}; the search of stage {plan.stage} did not finish: {kept}",
                        Route.BATCH, plan.stage, seconds=launched.seconds)
    return StageResult(plan.stage, {**partial.verdicts, f"<{kind}:{plan.stage}>": error}, Ending.CUT_SHORT)


def _stage_verdicts(document: dict) -> dict[str, PassVerdict]:
    """A stage worker's document (result or partial): its verdicts, rebuilt."""
    return {key: PassVerdict.from_json(v) for key, v in document["verdicts"].items()}


def _partial_result(job: StageJob, base: Path, why: Ending) -> StageResult:
    """What a stage worker that did not finish had written so far (`<job>.partial.json`, after
    every graph it counted), as an unfinished result; no verdicts if it wrote none (it was
    stopped before its first graph) or the file cannot be read."""
    path = base.with_name(f"{base.name}.partial.json")
    try:
        verdicts = _stage_verdicts(json.loads(path.read_text()))
    except FileNotFoundError:
        verdicts = {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("gate: stage %s: its evidence so far is unreadable (%s: %s)", job.plan.stage,
                    type(exc).__name__, exc)
        verdicts = {}
    return StageResult(job.plan.stage, verdicts, why)


def _error(job: PassJob, reason: str, seconds: float, partial: PassVerdict | None = None) -> PassVerdict:
    """The pass's verdict when its worker gave none: what it claims, `error`, and why; with the
    evidence the worker had written before it died or was killed (`partial`), if any."""
    from verify.gate import passes as gp

    if partial is not None:
        v = partial
    else:
        gp.ensure_annotation(job.cls)  # a user pass's class-attribute annotation, as the worker saw it
        v = make_verdict(job.cls, job.ref)
        v.stage, v.how = job.stage, job.how
    v.verdict, v.reason, v.seconds = ProofStatus.ERROR, reason[:500], seconds
    return v


def _partial_verdict(base: Path) -> PassVerdict | None:
    """The verdict so far a pass worker that did not finish had written (`<job>.partial.json`,
    after every example), or None: it wrote none, or it cannot be read."""
    path = base.with_name(f"{base.name}.partial.json")
    try:
        return PassVerdict.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("gate: %s: its evidence so far is unreadable (%s: %s)", base.name, type(exc).__name__, exc)
        return None


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""
