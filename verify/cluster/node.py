"""What a cluster node does with one job: unpack its files, run its worker through the launcher,
send back what the worker wrote.

The worker runs exactly as it would on the harness's machine (verify.launcher.run_here): its own
process group, the pinned hash seed in its environment, the same timeout and memory limit, the
group killed when it ends, and killed with its parent, the Ray worker process running this task
(die_with_parent), so a job whose node is lost or whose task is cancelled leaves nothing running.
A timeout or the memory limit is not an error of this task: it is a `WorkerOutcome` sent back with the
files the worker wrote so far (a gate worker's evidence so far), and the harness raises the
launcher's own exception for it, as for a local worker.

Nothing here writes outside its own temporary folder, which is removed when the job ends, so a
job that Ray runs a second time (its first node was lost) starts clean and the first attempt
leaves nothing the harness could count.
"""

from __future__ import annotations

import dataclasses
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from verify.cluster.shipping import Parcel, unpack
from verify.launcher import Worker, WorkerMemoryExceeded, WorkerTimeout, run_here

TEMPORARY_PREFIX = "verify-job-"  # + the node's id (12 characters) + "-": tells a node's jobs apart


class WorkerOutcome(str, Enum):
    """How the worker process ended on the node (what verify.launcher tells by return or raise)."""

    EXITED = "exited"
    TIMED_OUT = "timed out"
    MEMORY_EXCEEDED = "memory exceeded"


@dataclass(frozen=True)
class NodeResult:
    """What comes back from the node: how the worker ended (`returncode` when it exited,
    `resident` bytes when over its memory limit), the files it wrote in the job's folder, where
    it ran and for how long (the worker's own run, and the whole task)."""

    outcome: WorkerOutcome
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


def run_job(worker: Worker, parcel: Parcel) -> NodeResult:
    """The Ray task: the worker run here, on this node, in a temporary folder of its own."""
    started = time.perf_counter()
    node = node_id()
    root = Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{node[:12]}-"))
    try:
        layout = unpack(parcel, root)
        here = dataclasses.replace(worker, args=tuple(layout.relocate(a) for a in worker.args),
                                   log_path=Path(layout.relocate(str(worker.log_path))),
                                   cwd=Path(layout.relocate(str(worker.cwd))) if worker.cwd else root)
        here.log_path.parent.mkdir(parents=True, exist_ok=True)
        begun = time.perf_counter()
        outcome, returncode, resident = WorkerOutcome.EXITED, None, 0
        try:
            returncode = run_here(here)
        except WorkerTimeout:
            outcome = WorkerOutcome.TIMED_OUT
        except WorkerMemoryExceeded as exc:
            outcome, resident = WorkerOutcome.MEMORY_EXCEEDED, exc.resident
        worker_seconds = time.perf_counter() - begun
        files = layout.changed()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return NodeResult(outcome, returncode, files, node, socket.gethostname(), worker_seconds,
                      time.perf_counter() - started, resident)
