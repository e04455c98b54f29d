"""Independent pytest jobs on the cluster, as many at a time as asked, each handed back as it
returns (the fuzz campaign's cells, verify.fuzz.cells; each pytest as a module job,
verify.jobs.launcher.launch_module).

A campaign of independent jobs merges each job's files the moment it returns, one merge at a
time (one writer of the merged folders), and keeps whatever came back when it is stopped or the
cluster goes: `run_batch` runs the jobs in the harness's one pool (verify.jobs.pool: each blocks
in verify.jobs.launcher, which sends it to the cluster's backend) and calls `merge` for each job
that returned, in the order they return, one call at a time. A job that never returned (stopped, the
cluster gone) is merged never, so nothing is counted twice or half.

Each job runs in one of `width` lanes (0 .. width-1, a lane runs its jobs one after another, as an
xdist worker does): what a job wrote can be filed by lane, so that a campaign on N lanes reads
like a local one on N workers.

Where each job ran comes back with it: the backend tells the job's verify.jobs.JobResult
(`placement`, verify.jobs.launcher.Placement), whatever the log level.
"""

from __future__ import annotations

import functools
import queue
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from verify.jobs.launcher import (DEFAULT_MEMORY_LIMIT, JobFiles, Placement, RunStopped, WorkerMemoryExceeded,
                                  WorkerTimeout, module_job)
from verify.jobs.pool import run_in_pool


@dataclass(frozen=True)
class PytestJob:
    """One pytest process to run on the cluster (`args`: pytest's): `name` tells it apart (its log's
    file name must be unique in the batch: the backend's record names a job by it)."""

    name: str
    args: tuple[str, ...]
    files: JobFiles
    log_path: Path
    cwd: Path | None = None
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT


@dataclass(frozen=True)
class JobReturn:
    """A job that came back: its exit status (None: killed by the launcher, `failure` says why),
    the lane it ran in, its seconds from submission to return, and where it ran (None: unknown)."""

    job: PytestJob
    returncode: int | None
    lane: int
    seconds: float
    placement: Placement | None
    failure: str | None = None


def run_batch(jobs: Sequence[PytestJob], width: int, merge: Callable[[JobReturn], None]) -> list[PytestJob]:
    """Run `jobs` (at most `width` at a time) and `merge` each as it returns; the jobs that did not
    return (the run was stopped, or the cluster stopped answering: both RunStopped). Any other
    exception of a job is a bug: raised here, after the jobs in flight have ended."""
    names = [job.log_path.name for job in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"a batch's jobs need logs of distinct names, got {names}")
    lanes: queue.SimpleQueue[int] = queue.SimpleQueue()
    for lane in range(width):
        lanes.put(lane)

    def run(job: PytestJob) -> JobReturn:
        from verify.jobs import execute

        lane = lanes.get()
        started = time.perf_counter()
        try:
            try:
                ended = execute(module_job("pytest", job.args, log_path=job.log_path, files=job.files, timeout=None,
                                           memory_limit=job.memory_limit, cwd=job.cwd))
                code, placement, failure = ended.returncode, ended.placement, None
            except (WorkerTimeout, WorkerMemoryExceeded) as exc:
                code, placement, failure = None, None, str(exc)
            return JobReturn(job, code, lane, time.perf_counter() - started, placement, failure)
        finally:
            lanes.put(lane)

    merged: set[str] = set()

    def returned(_index: int, job_return: JobReturn) -> None:
        merge(job_return)
        merged.add(job_return.job.log_path.name)

    try:
        run_in_pool([functools.partial(run, job) for job in jobs], width, on_finished=returned, name="batch")
    except RunStopped:  # the jobs that returned are merged; the others are the caller's to name
        pass
    return [job for job in jobs if job.log_path.name not in merged]


def cluster_cpus() -> int:
    """The CPUs of the cluster this process is connected to (verify.cluster.connect.connected)."""
    import ray

    return int(ray.cluster_resources().get("CPU", 0))
