"""The one way the harness starts a worker process (`verify run` and `verify bench` alike).

Why a launcher of its own: a worker runs a user's model, and a model may start processes of
its own. Each worker therefore gets a fresh session (its own process group), and the whole
group is killed
- when the worker exits (whatever the model left running),
- on timeout,
- when the run is stopped (SIGINT/SIGTERM to the harness: `stop_all`),
- when the harness itself dies, even by SIGKILL: the worker watches its parent
  (`die_with_parent`, called first thing in every worker) and kills its own group.

Only a process that leaves the group on purpose (setsid) escapes; nothing here can follow it.
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
from pathlib import Path
from typing import Iterator

log = logging.getLogger(__name__)

PARENT_PID_VARIABLE = "VERIFY_PARENT_PID"
_ROOT = str(Path(__file__).resolve().parent.parent)
_PR_SET_PDEATHSIG = 1

_lock = threading.RLock()  # re-entrant: the stop handler runs on the main thread, which may hold it
_live: set[subprocess.Popen] = set()
_stop_signal: int | None = None


class WorkerTimeout(Exception):
    """The worker ran longer than its timeout; its group was killed."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:.0f} s")
        self.seconds = seconds


class WorkerCancelled(Exception):
    """The caller no longer needs the worker (`cancel` was set); its group was killed."""


class RunStopped(Exception):
    """The run is being stopped (SIGINT/SIGTERM): no new worker starts, running ones are killed."""


def launch(module: str, args: list[str], *, log_path: Path, env: dict[str, str] | None = None,
           timeout: float, cancel: threading.Event | None = None) -> int:
    """Run `python -m module *args` in its own process group, output to `log_path`; return its
    exit status (negative: killed by that signal). Raises WorkerTimeout, WorkerCancelled (when
    `cancel` is set while it runs) or RunStopped."""
    environment = dict(os.environ, **(env or {}))
    environment["PYTHONPATH"] = _ROOT + os.pathsep + environment.get("PYTHONPATH", "")
    environment[PARENT_PID_VARIABLE] = str(os.getpid())
    with open(log_path, "w") as log_file:
        with _lock:
            if _stop_signal is not None:
                raise RunStopped(f"stopped by {signal.Signals(_stop_signal).name}")
            proc = subprocess.Popen([sys.executable, "-m", module, *map(str, args)], stdout=log_file,
                                    stderr=subprocess.STDOUT, env=environment, start_new_session=True)
            _live.add(proc)
        try:
            exited = _wait_without_reaping(proc.pid, timeout, cancel)
        finally:
            # Kill the group while the worker is still a zombie: its pid (= the group id) cannot
            # be reused until it is reaped, so this never hits a stranger's group.
            kill_group(proc.pid)
            proc.wait()
            with _lock:
                _live.discard(proc)
    if _stop_signal is not None:
        raise RunStopped(f"stopped by {signal.Signals(_stop_signal).name}")
    if exited is None:
        raise WorkerCancelled()
    if not exited:
        raise WorkerTimeout(timeout)
    return proc.returncode


def _wait_without_reaping(pid: int, timeout: float, cancel: threading.Event | None) -> bool | None:
    """True: exited; False: timed out; None: cancelled. The worker is left a zombie for the caller."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if cancel is not None and cancel.is_set():
            return None
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
    return True


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
