"""verify.jobs.pool, the one pool `verify run`'s cases and the gate's checks are scheduled with:
width, order, stop, deadline, and a task that raises. Threads only: well under a second each.
The order of events between tasks is forced with events the test sets, never timed with sleeps."""

from __future__ import annotations

import threading
import time

import pytest

from verify.jobs import launcher
from verify.jobs.pool import run_in_pool
from verify.vocabulary import Ending

WAIT = 30  # seconds: a bound on an event that comes at once, or the pool is broken


def in_background(target) -> tuple[threading.Thread, list]:
    """Run `target` in a thread of its own (the pool blocks its caller); its value or exception
    lands in the returned list."""
    ended: list = []

    def run():
        try:
            ended.append(target())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            ended.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, ended


def test_at_most_width_at_once_and_results_in_the_given_order():
    """Each task holds until the test releases it, and the test releases them in an order of its
    own, each once the one before has finished: the finishing order is forced, not timed. A pool
    wider than 2 would start a third task while the first two hold."""
    started = [threading.Event() for _ in range(5)]
    release = [threading.Event() for _ in range(5)]
    finished = [threading.Event() for _ in range(5)]
    running, most, lock = [0], [0], threading.Lock()

    def task(value: int):
        def run():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            started[value].set()
            assert release[value].wait(WAIT), f"task {value} never released"
            with lock:
                running[0] -= 1
            return value
        return run

    seen = []

    def on_finished(index, result):
        seen.append((index, result))
        finished[index].set()

    order = [1, 2, 0, 4, 3]  # 0 and 1 start; 1 ends, 2 starts; 2 ends, 3 starts; 0 ends, 4 starts; ...
    thread, ended = in_background(lambda: run_in_pool([task(i) for i in range(5)], 2, on_finished=on_finished))
    try:
        for index in order:
            assert started[index].wait(WAIT), f"task {index} never started"
            release[index].set()
            assert finished[index].wait(WAIT), f"task {index} never finished"
    finally:
        for event in release:
            event.set()
        thread.join(WAIT)
    assert ended == [[0, 1, 2, 3, 4]]  # results in the given order
    assert most[0] == 2
    assert seen == [(i, i) for i in order]  # called as each finished


def test_nothing_starts_once_the_run_is_stopped_or_past_its_deadline(monkeypatch):
    started = []

    def task(i):
        def run():
            started.append(i)
            if i == 1:
                monkeypatch.setattr(launcher, "_stop_signal", 2)  # what stop_all sets on SIGINT
            return i
        return run

    assert run_in_pool([task(i) for i in range(4)], 1) == [0, 1, Ending.STOPPED, Ending.STOPPED]
    assert started == [0, 1]
    monkeypatch.setattr(launcher, "_stop_signal", None)
    assert run_in_pool([task(0)], 1, deadline=time.monotonic() - 1) == [Ending.NOT_STARTED]


def test_the_deadline_passing_mid_run_stops_new_starts_and_lets_the_running_finish(monkeypatch):
    """The pool's clock is a fake one (verify.jobs.pool's `time`) that task 1 moves past the
    deadline while task 0 still runs: task 0 finishes, task 1 too, and nothing starts after
    them. No task sleeps: what is before and what after the deadline is set, not timed."""
    import types

    from verify.jobs import pool

    now = [100.0]
    monkeypatch.setattr(pool, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    one_started = threading.Event()
    started = []

    def task(i):
        def run():
            started.append(i)
            if i == 0:
                assert one_started.wait(WAIT), "task 1 never started"
            if i == 1:
                now[0] = 200.0  # the deadline (150) passes while tasks 0 and 1 run
                one_started.set()
            return i
        return run

    assert run_in_pool([task(i) for i in range(4)], 2, deadline=150.0) == [0, 1, Ending.NOT_STARTED,
                                                                            Ending.NOT_STARTED]
    assert sorted(started) == [0, 1]


def test_a_task_that_raises_stops_new_starts_lets_the_running_finish_and_is_raised(monkeypatch):
    """Task 0 holds until the pool has taken task 1's exception in (task 1's turn of the pool has
    returned): it is forced to be still running then, and whatever the pool starts after that
    point (tasks 2 to 4 are left) is a start after the raise."""
    from verify.jobs import pool

    turn_returned = [threading.Event() for _ in range(5)]

    class Observed(pool.ThreadPoolExecutor):  # says when each turn of the pool returns
        def submit(self, fn, index):
            def turn():
                try:
                    fn(index)
                finally:
                    turn_returned[index].set()
            return super().submit(turn)

    monkeypatch.setattr(pool, "ThreadPoolExecutor", Observed)
    started, finished = [], []

    def task(i):
        def run():
            started.append(i)
            if i == 0:
                assert turn_returned[1].wait(WAIT), "task 1's turn never returned"
            if i == 1:
                raise OSError("disk full")
            return i
        return run

    with pytest.raises(OSError, match="disk full"):
        run_in_pool([task(i) for i in range(5)], 2, on_finished=lambda i, r: finished.append(i))
    assert finished == [0] and sorted(started) == [0, 1]


def test_an_on_finished_that_raises_is_raised_too():
    def refuse(index, result):
        raise OSError("journal refused")

    with pytest.raises(OSError, match="journal refused"):
        run_in_pool([lambda: 1, lambda: 2], 1, on_finished=refuse)
