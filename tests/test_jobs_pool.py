"""verify.jobs.pool, the one pool `verify run`'s cases and the gate's checks are scheduled with:
width, order, stop, deadline, and a task that raises. Threads only: well under a second each."""

from __future__ import annotations

import threading
import time

import pytest

from verify.jobs import launcher
from verify.jobs.pool import NotStarted, run_in_pool


def test_at_most_width_at_once_and_results_in_the_given_order():
    running, most, lock = [0], [0], threading.Lock()

    def task(value: int, seconds: float):
        def run():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(seconds)
            with lock:
                running[0] -= 1
            return value
        return run

    seen = []
    tasks = [task(i, 0.05 * (5 - i)) for i in range(5)]  # the first takes longest: finishing order differs
    assert run_in_pool(tasks, 2, on_finished=lambda i, r: seen.append((i, r))) == [0, 1, 2, 3, 4]
    assert most[0] == 2
    assert sorted(seen) == [(i, i) for i in range(5)] and seen != sorted(seen)  # called as each finished


def test_nothing_starts_once_the_run_is_stopped_or_past_its_deadline(monkeypatch):
    started = []

    def task(i):
        def run():
            started.append(i)
            if i == 1:
                monkeypatch.setattr(launcher, "_stop_signal", 2)  # what stop_all sets on SIGINT
            return i
        return run

    assert run_in_pool([task(i) for i in range(4)], 1) == [0, 1, NotStarted.STOPPED, NotStarted.STOPPED]
    assert started == [0, 1]
    monkeypatch.setattr(launcher, "_stop_signal", None)
    assert run_in_pool([task(0)], 1, deadline=time.monotonic() - 1) == [NotStarted.PAST_DEADLINE]


def test_a_task_that_raises_stops_new_starts_lets_the_running_finish_and_is_raised():
    started, finished = [], []

    def task(i):
        def run():
            started.append(i)
            if i == 0:
                time.sleep(0.2)  # still running when task 1 raises
            if i == 1:
                raise OSError("disk full")
            return i
        return run

    with pytest.raises(OSError, match="disk full"):
        run_in_pool([task(i) for i in range(5)], 2, on_finished=lambda i, r: finished.append(i))
    assert finished == [0] and 0 in started and 1 in started and not {3, 4} & set(started)


def test_an_on_finished_that_raises_is_raised_too():
    def refuse(index, result):
        raise OSError("journal refused")

    with pytest.raises(OSError, match="journal refused"):
        run_in_pool([lambda: 1, lambda: 2], 1, on_finished=refuse)
