"""The one pool every campaign schedules its jobs with: at most N at once, started in order,
results in order, nothing new started once the run is stopped or past its deadline.

Why one pool: `verify run`'s cases, the gate's stage searches and pass checks each had a
scheduler of their own (a loop, a thread pool), each with its own idea of what a stop or a
deadline does to work not yet begun. Here it is decided once:

- a task is a callable that runs one or more jobs (verify.jobs.execute) and returns its result;
  tasks start in the order given, at most `width` at once, and the results come back in that
  order whatever the width (a table or a JSON never depends on -j);
- a task not started when the run is stopped (verify.jobs.launcher.stop_signal: SIGINT/SIGTERM)
  or when `deadline` has passed is not started: its place holds an `Ending` saying which
  (STOPPED or NOT_STARTED: verify.vocabulary's, the one the gate's checks end with too);
- `on_finished(index, result)` is called as each task finishes, one call at a time (a journal,
  a progress line: no lock of their own needed);
- a task (or its `on_finished`) that raises stops the pool from starting others; those running
  finish, then the first exception raised is raised again (RunStopped, a refused write: what
  the caller stops for).

Threads, not processes: each task waits on its worker processes (local, or Ray tasks on a
cluster through verify.cluster), so the width is the number of jobs in flight, not of cores here.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

from verify.jobs.launcher import stop_signal
from verify.vocabulary import Ending

T = TypeVar("T")


def run_in_pool(tasks: Sequence[Callable[[], T]], width: int, *, deadline: float | None = None,
                on_finished: Callable[[int, T], None] | None = None,
                name: str = "job") -> list[T | Ending]:
    """Run `tasks` (see the module's docstring); `deadline` is a time.monotonic() value."""
    results: list = [None] * len(tasks)  # each place set before the pool returns (or it raises)
    finished = threading.Lock()
    raised: list[BaseException] = []

    def one(index: int) -> None:
        if raised:
            return
        if stop_signal() is not None:
            results[index] = Ending.STOPPED
            return
        if deadline is not None and time.monotonic() > deadline:
            results[index] = Ending.NOT_STARTED
            return
        try:
            result = results[index] = tasks[index]()
            if on_finished is not None:
                with finished:
                    on_finished(index, result)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, once the running tasks end
            raised.append(exc)

    with ThreadPoolExecutor(max_workers=max(1, width), thread_name_prefix=name) as pool:
        for future in [pool.submit(one, index) for index in range(len(tasks))]:
            future.result()
    if raised:
        raise raised[0]
    return results
