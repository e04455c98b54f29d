"""The one way the harness starts a worker process (`verify run`, `bench`, `gate` and `peer` alike).

Why a launcher of its own: a worker runs a user's model, and a model may start processes of
its own. Each worker therefore gets a fresh session (its own process group), and the whole
group is killed
- when the worker exits (whatever the model left running),
- on timeout,
- when the run is stopped (SIGINT/SIGTERM to the harness: `stop_all`),
- when the harness itself dies, even by SIGKILL: the worker watches its parent
  (`die_with_parent`, called first thing in every worker) and kills its own group.

Only a process that leaves the group on purpose (setsid) escapes; nothing here can follow it.

Every worker is the one entry point, `python -m verify.jobs.worker JOB` (verify.jobs: a typed
job, its handler, its result), which calls `die_with_parent` first; `launch_module` runs a Python
module in it (pytest, for peer's modes and the fuzz campaign), `launch_command` any other command
as a command job of that entry point, a small parent that arms `die_with_parent` and then runs
the command in its own group, so the guarantees above hold for it and everything it starts
(pytest-xdist workers included).

Every worker group is also under a memory limit (`memory_limit`, default `DEFAULT_MEMORY_LIMIT`):
the group's resident set, summed over its processes, read from /proc while the launcher waits.
Not RLIMIT_AS: torch maps far more address space than it touches (a CPU-only import reserves
gigabytes), so an address-space limit breaks torch long before memory runs out; RSS is what
the machine runs out of. A group over the limit is killed and `WorkerMemoryExceeded` names
the limit (a worker once grew to 4.4 GB in 35 s with only the timeout as guard).

Where a worker runs: here (the default), or on a cluster node when a backend is set
(`using_backend`, e.g. verify.cluster's Ray backend) and the caller said which files the worker
shares with the harness (`files=JobFiles(...)`). The node runs the same `Worker` through this
very launcher (`run_here`), so every guarantee above holds there; a worker without `files`
always runs here: nothing could bring its output back.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol

from verify.vocabulary import Ending

log = logging.getLogger(__name__)

PARENT_PID_VARIABLE = "VERIFY_PARENT_PID"
MIB = 1 << 20
GIB = 1 << 30
DEFAULT_MEMORY_LIMIT = 16 * GIB  # generous: a big model's lowering stays far below it
_MEMORY_POLL_SECONDS = 0.5  # a group grows ~0.13 GB/s at worst seen: overshoot stays small
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_ROOT = str(Path(__file__).resolve().parents[2])  # the repository: workers import verify from it
_PR_SET_PDEATHSIG = 1

_lock = threading.RLock()  # re-entrant: the stop handler runs on the main thread, which may hold it
_live: set[subprocess.Popen] = set()
_stop_signal: int | None = None
_backend: Backend | None = None  # None: every worker runs here


class WorkerTimeout(Exception):
    """The worker ran longer than its timeout; its group was killed."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:.0f} s")
        self.seconds = seconds


class WorkerMemoryExceeded(Exception):
    """The worker's process group held more resident memory than its limit; the group was killed."""

    def __init__(self, limit: int, resident: int):
        super().__init__(f"memory limit exceeded: the worker's process group held {describe_bytes(resident)} "
                         f"resident, over the limit of {describe_bytes(limit)} (--memory-limit); killed")
        self.limit = limit
        self.resident = resident


def describe_bytes(size: int) -> str:
    """`16 GiB`, `200 MiB`, `4.4 GiB`: a memory size for a message."""
    if size >= GIB:
        return f"{size / GIB:.3g} GiB"
    return f"{size / MIB:.3g} MiB"


def add_memory_limit_option(parser, what: str) -> None:
    """`--memory-limit GIB` for a command whose workers this launcher starts (`what` names them);
    `memory_limit_of(args.memory_limit)` turns the value into bytes."""
    parser.add_argument("--memory-limit", type=float, default=DEFAULT_MEMORY_LIMIT / GIB, metavar="GIB",
                        help=f"kill {what} (its whole process group) whose resident memory exceeds this many GiB; "
                             f"an error naming the limit (default %(default)g; 0: no limit)")


def memory_limit_of(gib: float) -> int | None:
    """Bytes for a `--memory-limit` value (None: no limit); UsageError for a negative one."""
    from verify.usage import UsageError

    if gib < 0:
        raise UsageError(f"--memory-limit must be 0 (no limit) or more GiB, got {gib:g}")
    return int(gib * GIB) or None


class WorkerCancelled(Exception):
    """The caller no longer needs the worker (`cancel` was set); its group was killed."""


class RunStopped(Exception):
    """The run is being stopped (SIGINT/SIGTERM): no new worker starts, running ones are killed."""


@dataclass(frozen=True)
class Worker:
    """One worker process to run, wherever it runs: `python -m module *args` (the module:
    verify.jobs.worker, but for the launcher's own tests). `env` is added to the environment of
    the machine it runs on (the pinned PYTHONHASHSEED)."""

    module: str
    args: tuple[str, ...]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    cwd: Path | None = None


@dataclass(frozen=True)
class JobFiles:
    """The files a worker shares with the harness, which is what lets it run on another machine.

    `folder`: everything the worker writes that the harness reads (its log included) lies under
    it; `inputs`: files or folders it reads, under `folder` or anywhere else (a user's model
    file), sent along if they exist; `awaited`: inputs another worker writes (the run's saved
    program): a worker elsewhere is sent only once they exist. Paths are spelled as the job
    description spells them (relative ones against the harness's working folder)."""

    folder: Path
    inputs: tuple[Path, ...] = ()
    awaited: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Placement:
    """Where a backend ran a worker: the node's id (its first 12 hex digits, as the backend's
    log names it) and its host. A worker run here has none."""

    node: str
    host: str


class Backend(Protocol):
    """Runs a worker somewhere else; same return value and exceptions as `run_here`, and the
    files under `files.folder` left as the worker left them, as if it had run here. It tells
    `on_placed` (if given) where the worker ran, once, when the worker's result came back: the
    return value is only the exit status, as a local worker's is."""

    def run(self, worker: Worker, files: JobFiles, cancel: threading.Event | None,
            on_placed: Callable[[Placement], None] | None = None) -> int: ...


@contextlib.contextmanager
def using_backend(backend: Backend) -> Iterator[None]:
    """While inside: every worker launched with `files` runs on `backend`."""
    global _backend
    previous, _backend = _backend, backend
    try:
        yield
    finally:
        _backend = previous


def launch(module: str, args: list[str], *, log_path: Path, env: dict[str, str] | None = None,
           timeout: float | None, cancel: threading.Event | None = None,
           memory_limit: int | None = DEFAULT_MEMORY_LIMIT, cwd: Path | None = None,
           files: JobFiles | None = None, on_placed: Callable[[Placement], None] | None = None) -> int:
    """Run `python -m module *args` in its own process group, output to `log_path`; return its
    exit status (negative: killed by that signal). The module must call `die_with_parent` first.
    `timeout` None: no time limit; `memory_limit` None: no memory limit (bytes of the group's
    RSS). Raises WorkerTimeout, WorkerMemoryExceeded, WorkerCancelled (when `cancel` is set
    while it runs) or RunStopped. With `files`, on the backend if one is set (`using_backend`),
    which tells `on_placed` where it ran."""
    return _dispatch(Worker(module, tuple(map(str, args)), log_path, dict(env or {}), timeout, memory_limit, cwd),
                     files, cancel, on_placed)


def launch_command(command: list[str], *, log_path: Path, hash_seed: int | str | None = None,
                   timeout: float | None, cancel: threading.Event | None = None,
                   memory_limit: int | None = DEFAULT_MEMORY_LIMIT, cwd: Path | None = None,
                   files: JobFiles | None = None) -> int:
    """Run any `command` as a worker (same guarantees and exceptions as `launch`): a command job
    of verify.jobs, which dies with us and takes the command's group with it. `hash_seed`: its
    PYTHONHASHSEED (None: ours). On a cluster node the command is run as spelled (`sys.executable`
    names this machine's interpreter): a Python module is `launch_module`'s."""
    from verify.jobs import Job, JobKind, execute

    job = Job(JobKind.COMMAND, {"argv": list(map(str, command))}, log_path, hash_seed, timeout, memory_limit, cwd,
              files=files)
    return execute(job, cancel).returncode


def launch_module(module: str, args: list[str], *, log_path: Path, hash_seed: int | str | None = None,
                  timeout: float | None, cancel: threading.Event | None = None,
                  memory_limit: int | None = DEFAULT_MEMORY_LIMIT, cwd: Path | None = None,
                  files: JobFiles | None = None) -> int:
    """Run `python -m module *args` as a module job of verify.jobs (same guarantees and exceptions
    as `launch`): the module runs in the worker process itself, so a node runs its own
    installation's and re-spells every path among `args` (pytest for the fuzz cells and peer)."""
    from verify.jobs import execute

    return execute(module_job(module, args, log_path=log_path, hash_seed=hash_seed, timeout=timeout,
                              memory_limit=memory_limit, cwd=cwd, files=files), cancel).returncode


def module_job(module: str, args: list[str], *, log_path: Path, hash_seed: int | str | None = None,
               timeout: float | None, memory_limit: int | None = DEFAULT_MEMORY_LIMIT, cwd: Path | None = None,
               files: JobFiles | None = None):
    """The module job `launch_module` runs (a verify.jobs.Job): for a caller that wants the whole
    verify.jobs.JobResult (where it ran, too) from verify.jobs.execute."""
    from verify.jobs import Job, JobKind

    return Job(JobKind.MODULE, {"module": module, "args": list(map(str, args))}, log_path, hash_seed, timeout,
               memory_limit, cwd, files=files)


def _dispatch(worker: Worker, files: JobFiles | None, cancel: threading.Event | None,
              on_placed: Callable[[Placement], None] | None = None) -> int:
    backend = _backend
    if files is None or backend is None:
        return run_here(worker, cancel)
    if _stop_signal is not None:
        raise RunStopped(f"stopped by {signal.Signals(_stop_signal).name}")
    return backend.run(worker, files, cancel, on_placed)


def run_here(worker: Worker, cancel: threading.Event | None = None) -> int:
    """Run `worker` on this machine (see `launch`): what a backend's node calls too."""
    argv = [sys.executable, "-m", worker.module, *worker.args]
    return _run(argv, log_path=worker.log_path, env=worker.env, timeout=worker.timeout, cancel=cancel,
                memory_limit=worker.memory_limit, cwd=worker.cwd)


def _run(argv: list[str], *, log_path: Path, env: dict[str, str] | None, timeout: float | None,
         cancel: threading.Event | None, memory_limit: int | None, cwd: Path | None) -> int:
    environment = dict(os.environ, **(env or {}))
    environment["PYTHONPATH"] = _ROOT + os.pathsep + environment.get("PYTHONPATH", "")
    environment[PARENT_PID_VARIABLE] = str(os.getpid())
    with open(log_path, "w") as log_file:
        with _lock:
            if _stop_signal is not None:
                raise RunStopped(f"stopped by {signal.Signals(_stop_signal).name}")
            proc = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, env=environment, cwd=cwd,
                                    start_new_session=True)
            _live.add(proc)
        try:
            ended = _wait_without_reaping(proc.pid, timeout, cancel, memory_limit)
        finally:
            # Kill the group while the worker is still a zombie: its pid (= the group id) cannot
            # be reused until it is reaped, so this never hits a stranger's group.
            kill_group(proc.pid)
            proc.wait()
            with _lock:
                _live.discard(proc)
    if _stop_signal is not None:
        raise RunStopped(f"stopped by {signal.Signals(_stop_signal).name}")
    if ended is Ending.STOPPED:
        raise WorkerCancelled()
    if ended is Ending.TIMED_OUT:
        raise WorkerTimeout(timeout)
    if isinstance(ended, WorkerMemoryExceeded):
        with open(log_path, "a") as log_file:  # the log is where a reader looks for why it ended
            print(f"verify.jobs.launcher: {ended}", file=log_file)
        raise ended
    return proc.returncode


def _wait_without_reaping(pid: int, timeout: float | None, cancel: threading.Event | None,
                          memory_limit: int | None) -> Ending | WorkerMemoryExceeded:
    """How the wait ended (FINISHED: the worker exited; STOPPED: `cancel` was set; TIMED_OUT; or
    the memory limit passed, as the error to raise); the worker is left a zombie for the caller (its group still alive
    when the limit was exceeded: the caller kills it)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    next_memory_check = time.monotonic()
    pause = 0.005
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if cancel is not None and cancel.is_set():
            return Ending.STOPPED
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return Ending.TIMED_OUT
        if memory_limit is not None and now >= next_memory_check:
            next_memory_check = now + _MEMORY_POLL_SECONDS
            resident = group_resident_bytes(pid)
            if resident > memory_limit:
                return WorkerMemoryExceeded(memory_limit, resident)
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
    return Ending.FINISHED


def group_resident_bytes(group: int) -> int:
    """The resident memory of every process in process group `group`, summed (from
    /proc/<pid>/stat: field 5 the group, field 24 the RSS in pages). A process's own children
    count: whatever a model starts is part of its worker."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:  # gone meanwhile
            continue
        fields = text[text.rfind(b")") + 2:].split()  # after "pid (comm) ": comm may hold spaces
        if int(fields[2]) == group:
            total += int(fields[21]) * _PAGE_BYTES
    return total


def kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def stop_all(signum: int) -> None:
    """Refuse new workers and kill every running worker's group. Safe to call again."""
    global _stop_signal
    with _lock:
        if _stop_signal is None:
            _stop_signal = signum
        for proc in list(_live):
            kill_group(proc.pid)


def stop_signal() -> int | None:
    """The signal that stopped the run, or None while it is running."""
    return _stop_signal


def stopped_exit_status(signum: int) -> int:
    """What every command exits with when a signal stopped it: 128 + its number, the status a
    shell gives a process the signal killed (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


@contextlib.contextmanager
def stop_on_signals(signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """While inside: SIGINT/SIGTERM stop the run in order (workers killed, no new ones) instead of
    raising in the middle of whatever the main thread does; the caller checks `stop_signal()`."""
    global _stop_signal
    previous = {s: signal.signal(s, lambda signum, frame: stop_all(signum)) for s in signals}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def reset_after_stop() -> None:
    """For in-process callers (tests) that run again after a stop."""
    global _stop_signal
    with _lock:
        _stop_signal = None


def die_with_parent() -> None:
    """Called first in a worker: when the harness that launched us dies, kill our whole group.

    Two mechanisms, because either alone has a gap: Linux's parent-death signal arrives at
    once but is handled on the main thread only between bytecodes; a watcher thread polls
    the parent every 0.2 s and works anywhere. Disarmed unless launched by `launch` (it must
    never kill the group of a shell that ran a worker by hand)."""
    expected = os.environ.get(PARENT_PID_VARIABLE)
    if not expected or os.getpgrp() != os.getpid():
        return
    parent = int(expected)

    def kill_own_group(*_args) -> None:
        os.killpg(os.getpgrp(), signal.SIGKILL)

    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            signal.signal(signal.SIGTERM, kill_own_group)
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before we got here
        kill_own_group()

    def watch() -> None:
        while True:
            time.sleep(0.2)
            if os.getppid() != parent:
                kill_own_group()

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
