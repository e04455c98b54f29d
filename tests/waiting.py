"""The one way a test waits for something to happen: `wait_for(predicate, timeout, what)`.

A test waits on an event -- a file appearing, a process gone, a line in a journal -- never on a
sleep's length: a sleep long enough on a quiet machine is too short on a loaded one, and one long
enough there wastes every run's time. `wait_for` polls the event until it holds, and bounds the
wait so that an event that never comes fails the test (naming what was awaited) instead of
hanging it. Ordering between a test and the threads or processes it drives is forced the same
way: the worker waits on an event the test sets (`threading.Event`, a barrier, a file), so the
order is decided, not hoped for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, *, proc: subprocess.Popen | None = None,
             interval: float = 0.2) -> T:
    """Call `predicate` every `interval` seconds until it returns something true, and return that.

    AssertionError naming `what` when `timeout` seconds pass first, or, given `proc` (the process
    whose work is awaited), as soon as it has ended without the predicate holding; the message
    ends with the tail of its output, and a wait that fails kills it, with its process group if it
    leads one (a test must not leave it running)."""
    deadline = time.monotonic() + timeout
    while True:
        ended = proc is not None and proc.poll() is not None  # read before the predicate: its last word counts
        value = predicate()
        if value:
            return value
        if ended:
            raise AssertionError(f"the process ended (exit {proc.returncode}) before {what}{_output(proc)}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout} s: {what}{_output(proc)}")
        time.sleep(interval)


def _output(proc: subprocess.Popen | None) -> str:
    """The tail of what `proc` wrote to its pipes, once it is killed ('' without a process or pipes)."""
    if proc is None:
        return ""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(proc.pid) == proc.pid:  # a session of its own (start_new_session): the whole group
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
    output = ""
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):  # a grandchild may hold a pipe open
        streams = proc.communicate(timeout=10)
        output = "".join(s.decode(errors="replace") if isinstance(s, bytes) else s for s in streams if s)
    return f":\n{output[-3000:]}" if output else ""
