"""A job and its result, as the harness sees them; `execute` runs one (see the package docstring).

The files of a job sit beside its log: `NAME.log`, `NAME.job.json` (what the worker reads:
`{"kind", "log_level", "settings"}`), `NAME.result.json` (the handler's JSON value, written
atomically by the worker when the handler returns one). A command job (`JobKind.COMMAND`: any
program, e.g. pytest for verify.peer and verify fuzz) needs no file: its job is given inline and
its result is its exit status.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Mapping

from verify.jobs.launcher import DEFAULT_MEMORY_LIMIT, JobFiles, Placement

WORKER_MODULE = "verify.jobs.worker"
JOB_SUFFIX = ".job.json"
RESULT_SUFFIX = ".result.json"


class JobKind(str, Enum):
    """What a worker does; each kind's handler is named in verify.jobs.worker.HANDLERS."""

    RUN_LOWERINGS = "run-lowerings"  # verify run: build, quantize, save, lower in the job's modes
    GATE_PASS = "gate-pass"  # verify gate: one pass's check (its PassVerdict)
    GATE_STAGE = "gate-stage"  # verify gate: one stage's search of a registry run (its verdicts)
    BENCH_LOWERING = "bench-lowering"  # verify bench: one timed lowering (a WorkerRun)
    CROSSCHECK_REPLAY = "crosscheck-replay"  # crosscheck: a reproducer replayed in a fresh process
    COMMAND = "command"  # any program (`settings["argv"]`), under the launcher's guarantees
    # A Python module run as __main__ in the worker itself (`settings["module"]`, `settings["args"]`:
    # pytest for a fuzz cell or a peer mode): on a cluster node it is the node's own installation
    # that runs, and its arguments are re-spelled there like any job's (the job file is shipped).
    MODULE = "module"


@dataclass(frozen=True)
class Job:
    """One worker process to run: what (`kind`, `settings`), where its log goes (its job and
    result files beside it), under which hash seed (None: the harness's own environment's), for
    how long and with how much memory (None: no limit), at which log level, and — to let it run
    on a cluster node — the files it shares with the harness (`files`; the job file is added).
    Without `files` it always runs on this machine."""

    kind: JobKind
    settings: Mapping[str, Any]
    log_path: Path
    hash_seed: int | str | None = None
    timeout: float | None = None
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    cwd: Path | None = None
    log_level: int = logging.INFO
    files: JobFiles | None = None

    @property
    def job_path(self) -> Path:
        return self.log_path.with_suffix(JOB_SUFFIX)

    @property
    def result_path(self) -> Path:
        return self.log_path.with_suffix(RESULT_SUFFIX)

    def document(self) -> dict[str, Any]:
        """The job as the worker reads it."""
        return {"kind": self.kind.value, "log_level": self.log_level, "settings": dict(self.settings)}


def result_path_of(job_path: Path) -> Path:
    """The worker's side of `Job.result_path`: NAME.job.json -> NAME.result.json."""
    if not job_path.name.endswith(JOB_SUFFIX):
        raise ValueError(f"a job file is named NAME{JOB_SUFFIX}, not {job_path.name}")
    return job_path.with_name(job_path.name[: -len(JOB_SUFFIX)] + RESULT_SUFFIX)


@dataclass(frozen=True)
class JobResult:
    """How a job's worker ended: its exit status (negative: killed by that signal), the seconds
    from start to end (start-up included), where a backend ran it (None: here), and whether it
    wrote its result (`read()` gives it)."""

    job: Job
    returncode: int
    seconds: float
    placement: Placement | None = None

    @property
    def written(self) -> bool:
        return self.job.result_path.is_file()

    def read(self) -> Any:
        """The handler's value; FileNotFoundError when none was written, ValueError when unreadable."""
        return json.loads(self.job.result_path.read_text())


def execute(job: Job, cancel=None) -> JobResult:
    """Run `job` in a worker (`python -m verify.jobs.worker`) started by verify.jobs.launcher, and
    return how it ended. Raises what the launcher raises: WorkerTimeout, WorkerMemoryExceeded,
    WorkerCancelled (when `cancel`, a threading.Event, is set while it runs), RunStopped; and
    CannotWrite when its job file cannot be written."""
    from verify.jobs import launcher  # looked up at call time: tests stand in for the launcher
    from verify.report.atomic import write_text

    env = {} if job.hash_seed is None else {"PYTHONHASHSEED": str(job.hash_seed)}
    files = job.files
    if job.kind in (JobKind.COMMAND, JobKind.MODULE) and files is None:  # runs here: the job goes inline
        argument = json.dumps(job.document())
    else:
        job.result_path.unlink(missing_ok=True)  # an earlier run's (a reused folder)
        write_text(job.job_path, json.dumps(job.document(), indent=1))
        argument = str(job.job_path)
        if files is not None:
            files = JobFiles(files.folder, (job.job_path, *files.inputs), files.awaited)
    start = time.perf_counter()
    placed: list[launcher.Placement] = []
    returncode = launcher.launch(WORKER_MODULE, [argument], log_path=job.log_path, env=env, timeout=job.timeout,
                                 cancel=cancel, memory_limit=job.memory_limit, cwd=job.cwd, files=files,
                                 on_placed=placed.append)
    return JobResult(job, returncode, time.perf_counter() - start, placed[-1] if placed else None)
