"""Run passes' gate checks in workers, N at a time (`verify gate -j N`).

Why workers: one pass's search lowers dozens of graphs; in the gate's own process a crash (a
segfault in a lowering, the OOM killer) or a hang ended the whole run with nothing written.
Each check now runs in `verify.gate.worker`, started by verify.launcher (the one launcher of
the harness: own process group, pinned hash seed, log file, timeout, killed on stop), and:

- a worker that exits without a verdict gives its pass an `error` verdict
  (`<worker-crash: exit N>`, the log's last line), one past `--pass-timeout` too
  (`<worker-timeout>`); the other passes go on;
- jobs start in the order given and results come back in that order, whatever N: the table
  and the JSON do not depend on -j;
- a job not started when the run's deadline (`--max-seconds`) has passed is `NOT_STARTED`;
  when the run is stopped (SIGINT/SIGTERM: verify.launcher.stop_all kills every worker's
  group) the unfinished ones are `STOPPED` and the finished verdicts are kept.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Callable

from verify.gate.events import relayed
from verify.gate.verdict import PassVerdict
from verify.launcher import RunStopped, WorkerTimeout, launch, stop_signal
from verify.report.atomic import write_text
from verify.report.verdict import GateVerdict

log = logging.getLogger(__name__)

HASH_SEED = 0  # every gate worker's PYTHONHASHSEED: a pass's search runs the same under -j 1 and -j N
DEFAULT_PASS_TIMEOUT = 1800.0  # s: a --pass search of 30 graphs per mode plus shrinking is ~5-15 min


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
    how: str | None = None  # "direct" to force it; None: the stage's pipeline if it invokes the pass


class Ending(str, Enum):
    FINISHED = "finished"  # a verdict (the worker's, or `error` for a crash or timeout)
    NOT_STARTED = "not-started"  # the run's deadline had passed before its turn
    STOPPED = "stopped"  # the run was stopped (SIGINT/SIGTERM) before it finished


@dataclass
class PassRun:
    job: PassJob
    ending: Ending
    verdict: PassVerdict | None = None  # set when FINISHED
    wall_seconds: float = 0.0  # the worker's, start-up included (the verdict's `seconds`: its search)


def gate_in_workers(jobs: list[PassJob], settings: SearchSettings, *, parallel: int, pass_timeout: float,
                    deadline: float | None = None,
                    on_finished: Callable[[PassRun, int, int], None] | None = None) -> list[PassRun]:
    """One worker per job, at most `parallel` at once; the results in the order of `jobs`.
    `deadline` (time.monotonic()) stops new jobs from starting; `on_finished(run, n, total)` is
    called as each job finishes (n counts the finished ones); by default it logs the pass's line."""
    total = len(jobs)
    finished = [0]
    lock = threading.Lock()
    report = on_finished or log_finished
    folder = settings.out / "workers"
    folder.mkdir(parents=True, exist_ok=True)
    log_level = logging.getLogger().getEffectiveLevel()

    def one(index: int, job: PassJob) -> PassRun:
        if stop_signal() is not None:
            return PassRun(job, Ending.STOPPED)
        if deadline is not None and time.monotonic() > deadline:
            return PassRun(job, Ending.NOT_STARTED)
        start = time.perf_counter()
        try:
            verdict = _run_one(job, settings, folder / f"{index:03d}-{job.cls.__name__}", pass_timeout, log_level)
        except RunStopped:
            return PassRun(job, Ending.STOPPED)
        result = PassRun(job, Ending.FINISHED, verdict, time.perf_counter() - start)
        with lock:
            finished[0] += 1
            report(result, finished[0], total)
        return result

    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="gate-worker") as pool:
        futures = [pool.submit(one, index, job) for index, job in enumerate(jobs)]
        return [future.result() for future in futures]


def log_finished(run: PassRun, n: int, total: int) -> None:
    v = run.verdict
    log.info("gate: [%d/%d] %s: %s (%.0f s; search %.0f s)%s", n, total, v.name, v.verdict.value,
             run.wall_seconds, v.seconds, f": {v.reason[:160]}" if v.verdict is GateVerdict.ERROR else "")


def _run_one(job: PassJob, settings: SearchSettings, base: Path, timeout: float, log_level: int) -> PassVerdict:
    """Launch the worker and turn what it left into a verdict. Raises RunStopped."""
    paths = {kind: base.with_name(f"{base.name}.{kind}") for kind in ("job.json", "log", "events.jsonl",
                                                                      "result.json")}
    for stale in (paths["events.jsonl"], paths["result.json"]):  # an earlier run's, in a reused --out
        stale.unlink(missing_ok=True)
    job_document = {"ref": job.ref, "name": job.cls.__name__, "stage": job.stage, "how": job.how,
                    "examples": settings.examples,
                    "out": str(settings.out), "seed": settings.seed, "max_ops": settings.max_ops,
                    "shrink_seconds": settings.shrink_seconds,
                    "ops": list(settings.ops) if settings.ops is not None else None,
                    "min_evidence": settings.min_evidence, "log_level": log_level,
                    "events": str(paths["events.jsonl"]), "result": str(paths["result.json"])}
    write_text(paths["job.json"], json.dumps(job_document, indent=1))
    start = time.perf_counter()
    try:
        with relayed(paths["events.jsonl"]):
            status = launch("verify.gate.worker", [str(paths["job.json"])], log_path=paths["log"],
                            env={"PYTHONHASHSEED": str(HASH_SEED)}, timeout=timeout)
    except WorkerTimeout:
        return _error(job, f"<worker-timeout>: no verdict within --pass-timeout {timeout:.0f} s; "
                           f"worker killed; log {paths['log']}", time.perf_counter() - start)
    seconds = time.perf_counter() - start
    if status != 0 or not paths["result.json"].exists():
        how = (f"killed by signal {-status}" if status < 0
               else "ended without writing a verdict" if status == 0 else "failed before writing a verdict")
        return _error(job, f"<worker-crash: exit {status}>: {how}; log {paths['log']}"
                           + (f": {_last_line(paths['log'])}" if _last_line(paths["log"]) else ""), seconds)
    try:
        return PassVerdict.from_json(json.loads(paths["result.json"].read_text()))
    except (ValueError, KeyError, TypeError) as exc:
        return _error(job, f"<worker-crash: exit 0>: unreadable verdict {paths['result.json']}: "
                           f"{type(exc).__name__}: {exc}", seconds)


def _error(job: PassJob, reason: str, seconds: float) -> PassVerdict:
    """The pass's verdict when its worker gave none: what it claims, `error`, and why."""
    from verify.gate import passes as gp
    from verify.gate import run

    gp.ensure_annotation(job.cls)  # a user pass's class-attribute annotation, as the worker saw it
    v = run.make_verdict(job.cls, job.ref)
    v.stage, v.how = job.stage, job.how or ""
    v.verdict, v.reason, v.seconds = GateVerdict.ERROR, reason[:500], seconds
    return v


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""
