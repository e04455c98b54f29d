"""What a cluster node does with one job: unpack its files, run its worker through the launcher,
send back what the worker wrote.

The worker runs exactly as it would on the harness's machine (verify.jobs.launcher.run_here): its own
process group, the pinned hash seed in its environment, the same timeout and memory limit, the
group killed when it ends, and killed with its parent, the Ray worker process running this task
(die_with_parent), so a job whose node is lost or whose task is cancelled leaves nothing running.
A timeout or the memory limit is not an error of this task: it is an `Ending` (verify.vocabulary:
TIMED_OUT, MEMORY_EXCEEDED) sent back with the files the worker wrote so far (a gate worker's
evidence so far), and the harness raises the launcher's own exception for it, as for a local
worker. So is a stop: when the harness's run is stopped (or it no longer needs the job), it asks
the job to stop on the run's `StopBoard` before it cancels the task; the node, which looks at the
board while the worker runs, kills the worker's group as a local launcher would and sends back what
the worker wrote by then (a gate stage's evidence so far), which a cancelled task could not.

Nothing here writes outside its own temporary folder, which is removed when the job ends, so a
job that Ray runs a second time (its first node was lost) starts clean and the first attempt
leaves nothing the harness could count. "When the job ends" includes the task's process being
killed: a stopped driver's cancelled task can be killed by Ray mid-unwind (Ray fails the
cancelled object at once, the driver disconnects, and Ray kills the job's worker processes), so
the task's own `finally` cannot be the only cleanup. A janitor process holds the folder's
name and the read end of a pipe only the task holds open: when the task's process goes, however
it goes, the pipe reads empty and the janitor removes the folder.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from verify.cluster.shipping import Parcel, unpack
from verify.jobs.launcher import Worker, WorkerCancelled, WorkerMemoryExceeded, WorkerTimeout, run_here
from verify.vocabulary import Ending

TEMPORARY_PREFIX = "verify-job-"  # + the node's id (12 characters) + "-": tells a node's jobs apart
# Waits for end-of-file on stdin (every writer gone: the task's process ended or closed it), then
# removes the folder. -I: nothing from the node's environment or working folder is imported.
_JANITOR = "import shutil, sys; sys.stdin.buffer.read(); shutil.rmtree(sys.argv[1], ignore_errors=True)"
_JANITOR_WAIT_SECONDS = 10.0
STOP_POLL_SECONDS = 0.5  # how often a running job looks at the board: a stop waits at most this long


class StopBoard:
    """The jobs a run has asked to stop, by key: a Ray actor of the driver's (verify.cluster.backend
    makes it one, of no CPU), asked by the driver and read by each running job on its node. Why
    an actor: a cancelled Ray task returns nothing, so a job that must send back its files so far
    has to be asked, not cancelled."""

    def __init__(self) -> None:
        self._asked: set[str] = set()

    def ask(self, key: str) -> None:
        self._asked.add(key)

    def asked(self, key: str) -> bool:
        return key in self._asked


@dataclass(frozen=True)
class NodeResult:
    """What comes back from the node: how the worker ended (`returncode` when it exited,
    `resident` bytes when over its memory limit), the files it wrote in the job's folder, where
    it ran and for how long (the worker's own run, and the whole task)."""

    outcome: Ending  # FINISHED (exited: `returncode`), TIMED_OUT, MEMORY_EXCEEDED, or STOPPED (asked on the StopBoard)
    returncode: int | None
    files: dict[str, bytes]
    node: str
    host: str
    worker_seconds: float
    task_seconds: float
    resident: int = 0


def node_id() -> str:
    """This node's Ray id (hex), or '' outside a Ray task."""
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""
    except Exception:  # noqa: BLE001 - naming the node is a courtesy
        return ""


def run_job(worker: Worker, parcel: Parcel, board=None, key: str = "") -> NodeResult:
    """The Ray task: the worker run here, on this node, in a temporary folder of its own; stopped
    early if the run asks on `board` (a StopBoard actor's handle) under `key`."""
    started = time.perf_counter()
    node = node_id()
    root = Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{node[:12]}-"))
    janitor, keepalive = _janitor_for(root)
    try:
        layout = unpack(parcel, root)
        here = dataclasses.replace(worker, args=tuple(layout.relocate(a) for a in worker.args),
                                   log_path=Path(layout.relocate(str(worker.log_path))),
                                   cwd=Path(layout.relocate(str(worker.cwd))) if worker.cwd else root)
        here.log_path.parent.mkdir(parents=True, exist_ok=True)
        begun = time.perf_counter()
        outcome, returncode, resident = Ending.FINISHED, None, 0
        stop, done = threading.Event(), threading.Event()
        if board is not None:
            threading.Thread(target=_watch, args=(board, key, stop, done), daemon=True).start()
        try:
            returncode = run_here(here, stop)
        except WorkerTimeout:
            outcome = Ending.TIMED_OUT
        except WorkerMemoryExceeded as exc:
            outcome, resident = Ending.MEMORY_EXCEEDED, exc.resident
        except WorkerCancelled:
            outcome = Ending.STOPPED  # asked to stop (StopBoard): killed, its files so far sent back
        finally:
            done.set()
        worker_seconds = time.perf_counter() - begun
        files = layout.changed()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.close(keepalive)  # the janitor reads end-of-file and finds nothing left to remove
        try:
            janitor.wait(timeout=_JANITOR_WAIT_SECONDS)
        except subprocess.TimeoutExpired:  # left to remove the folder on its own; never a job's error
            pass
    return NodeResult(outcome, returncode, files, node, socket.gethostname(), worker_seconds,
                      time.perf_counter() - started, resident)


def _watch(board, key: str, stop: threading.Event, done: threading.Event) -> None:
    """Set `stop` once the run asks this job to stop; end with the job. A board that no longer
    answers (its driver gone) ends the watch: Ray then ends this task itself."""
    import ray

    while not done.wait(STOP_POLL_SECONDS):
        try:
            if ray.get(board.asked.remote(key)):
                stop.set()
                return
        except Exception:  # noqa: BLE001 - the driver's actor gone with its driver
            return


def _janitor_for(root: Path) -> tuple[subprocess.Popen, int]:
    """A process that removes `root` once this process has closed the returned descriptor,
    explicitly or by dying (SIGKILL included). Its own session: a kill of the task's group or
    of the worker's group does not reach it. The descriptor is not inheritable (os.pipe), so no
    worker the task starts holds the pipe open."""
    read_end, write_end = os.pipe()
    try:
        janitor = subprocess.Popen([sys.executable, "-I", "-c", _JANITOR, str(root)], stdin=read_end,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return janitor, write_end
