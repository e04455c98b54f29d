"""The launcher's backend for a Ray cluster: each worker becomes one Ray task of one CPU.

The harness (the driver) keeps every decision it makes locally — which jobs, in which order, how
many at a time, what a result means — and only the running of a worker moves: the task runs the
same `Worker` through the launcher on its node (verify.cluster.node), and `run` returns or raises
exactly what `verify.jobs.launcher.run_here` would, with the worker's files written here as a local
worker would have left them (verify.cluster.shipping). So verdicts, journals, reports and
`--resume` cannot tell where a job ran.

Faults:
- a node lost mid-job: Ray runs the task again on another node (`MAX_RETRIES` times); only one
  attempt's result ever reaches the driver, so a job is counted once;
- a job lost for good while the cluster still answers (its retries spent: e.g. it brought down
  every node it ran on): the worker is reported as killed (`LOST_RETURNCODE`, SIGKILL) with the
  reason appended to its log, which the callers already turn into an error verdict naming it;
- the cluster itself gone (its address no longer answers): no job's fault, so no verdict:
  `ClusterLost` (a RunStopped: the run ends as a stopped one does, the job in flight and every
  later one unfinished, for `--resume`), said once on the log at ERROR;
- the caller's `cancel`, or a stop of the run (SIGINT/SIGTERM): the job is asked to stop (the
  run's StopBoard, verify.cluster.node): its node kills the worker's group and sends back what
  the worker wrote so far, which is written here as a local worker leaves it (a gate stage's
  evidence so far); the launcher's own exception is raised here. A job that has not answered
  within `CANCEL_GRACE_SECONDS` is cancelled instead (its files are lost);
- a timeout or the memory limit: enforced on the node by the launcher; raised here as
  WorkerTimeout / WorkerMemoryExceeded.

A job's `awaited` inputs (another job's output, e.g. the run's saved program) are waited for
here, before the task is sent: the node has no shared folder to wait on.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from verify.cluster.node import NodeResult, StopBoard, run_job
from verify.cluster.shipping import deliver, pack
from verify.jobs.launcher import (
    PARENT_PID_VARIABLE, JobFiles, Placement, RunStopped, Worker, WorkerCancelled, WorkerMemoryExceeded, WorkerTimeout,
    stop_signal,
)
from verify.vocabulary import Ending

log = logging.getLogger(__name__)

MAX_RETRIES = 3  # a job whose node is lost runs again elsewhere, up to this many times
LOST_RETURNCODE = -signal.SIGKILL
POLL_SECONDS = 0.1
CANCEL_GRACE_SECONDS = 10.0  # a stopped job answers within a second or two (node.STOP_POLL_SECONDS)
# The harness's own settings that reach a local worker through the environment; the node's
# environment is the node's own, so these travel with the job (the launcher's parent pid does not).
SHIPPED_VARIABLE_PREFIXES = ("FASTPASS_", "VERIFY_")


def shipped_environment(environ: dict[str, str] | os._Environ = os.environ) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(SHIPPED_VARIABLE_PREFIXES) and k != PARENT_PID_VARIABLE}


class ClusterLost(RunStopped):
    """The cluster stopped answering: the jobs not finished stay to do (`--resume`)."""


class RayBackend:
    """verify.jobs.launcher.Backend on the Ray cluster this process is connected to (ray.init done);
    `answers()` tells whether the cluster still does (a cheap check at its address)."""

    def __init__(self, answers: Callable[[], bool] = lambda: True) -> None:
        import ray

        self._ray = ray
        self._answers = answers
        self._lost: ClusterLost | None = None
        # SPREAD: a job is a whole process of one CPU; spread over the nodes, jobs started one
        # after another do not queue on the driver's node while others idle.
        self._task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, scheduling_strategy="SPREAD")(run_job)
        self._board = ray.remote(num_cpus=0)(StopBoard).remote()  # the driver's: it goes when the driver does

    def run(self, worker: Worker, files: JobFiles, cancel: threading.Event | None,
            on_placed: Callable[[Placement], None] | None = None) -> int:
        folder = Path(os.path.abspath(files.folder))
        if not Path(os.path.abspath(worker.log_path)).is_relative_to(folder):
            raise ValueError(f"a cluster job's log must be in its folder {files.folder}, not {worker.log_path}")
        if self._lost is not None:
            raise self._lost
        try:
            self._wait_for(files.awaited, cancel)
        except (WorkerCancelled, RunStopped) as exc:  # the log a local worker would have left, saying why
            with open(worker.log_path, "a") as log_file:
                print(f"verify.cluster: not sent to the cluster: {exc or 'cancelled'} while waiting for "
                      f"{', '.join(map(str, files.awaited))}", file=log_file)
            raise
        worker = dataclasses.replace(worker, env={**shipped_environment(), **worker.env})
        parcel = pack(files)
        sent = time.perf_counter()
        key = uuid.uuid4().hex
        ref = self._task.remote(worker, parcel, self._board, key)
        try:
            result: NodeResult = self._result(ref, key, files.folder, cancel)
        except self._ray.exceptions.RayError as exc:  # retries spent, the cluster gone, our bug on the node
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if not self._answers():
                if self._lost is None:
                    log.error("cluster: the Ray cluster stopped answering (%s: %s): the run stops; what did not "
                              "finish stays to do (verify run --resume)", type(exc).__name__, reason)
                    self._lost = ClusterLost("the Ray cluster stopped answering")
                raise self._lost from None
            with open(worker.log_path, "a") as log_file:
                print(f"verify.cluster: the job was lost on the cluster: {type(exc).__name__}: {reason}", file=log_file)
            return LOST_RETURNCODE
        deliver(result.files, files.folder)
        log.info("cluster: %s ran on node %s (%s): worker %.1f s, task %.1f s, round trip %.1f s, %d bytes sent, %d back",
                 worker.log_path.name, result.node[:12], result.host, result.worker_seconds, result.task_seconds,
                 time.perf_counter() - sent, parcel.size, sum(map(len, result.files.values())))
        if on_placed is not None:
            on_placed(Placement(result.node[:12], result.host))
        if result.outcome is Ending.STOPPED:  # asked to stop: only _stop asks, and it raises first
            raise WorkerCancelled()
        if result.outcome is Ending.TIMED_OUT:
            raise WorkerTimeout(worker.timeout)
        if result.outcome is Ending.MEMORY_EXCEEDED:
            raise WorkerMemoryExceeded(worker.memory_limit, result.resident)
        return result.returncode

    def _interrupted(self, cancel: threading.Event | None) -> Exception | None:
        stopped = stop_signal()
        if stopped is not None:
            return RunStopped(f"stopped by {signal.Signals(stopped).name}")
        if cancel is not None and cancel.is_set():
            return WorkerCancelled()
        return None

    def _wait_for(self, awaited: tuple[Path, ...], cancel: threading.Event | None) -> None:
        while not all(Path(p).exists() for p in awaited):
            interrupted = self._interrupted(cancel)
            if interrupted is not None:
                raise interrupted
            time.sleep(POLL_SECONDS)

    def _result(self, ref, key: str, folder: Path, cancel: threading.Event | None) -> NodeResult:
        while True:
            ready, _ = self._ray.wait([ref], timeout=POLL_SECONDS)
            if ready:
                return self._ray.get(ref)
            interrupted = self._interrupted(cancel)
            if interrupted is not None:
                self._stop(ref, key, folder)
                raise interrupted

    def _stop(self, ref, key: str, folder: Path) -> None:
        """Ask the job to stop and keep what its worker wrote, as a stopped local worker leaves it.
        A job that does not answer in time is cancelled (Ray interrupts the task; should Ray kill
        its process instead, the worker's group dies with it and the node's janitor removes the
        job's folder: verify.cluster.node)."""
        self._board.ask.remote(key)
        ready, _ = self._ray.wait([ref], timeout=CANCEL_GRACE_SECONDS)
        if not ready:
            self._ray.cancel(ref, recursive=False)
            self._ray.wait([ref], timeout=CANCEL_GRACE_SECONDS)
            return
        try:
            result: NodeResult = self._ray.get(ref)
        except self._ray.exceptions.RayError:  # lost on its way back: nothing to keep
            return
        deliver(result.files, folder)
