"""tests/waiting.py's `wait_for`, the one way the tests wait for an event: what it returns, what a
failed wait says, and that it neither outwaits a process that has ended nor leaves one running."""

from __future__ import annotations

import ast
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_reliability_tools import alive
from tests.waiting import wait_for


def test_the_first_true_value_is_returned():
    values = iter([0, None, "", [], 7, 8])
    assert wait_for(lambda: next(values), 30, "seven", interval=0) == 7


def test_a_wait_that_times_out_names_what_it_waited_for():
    with pytest.raises(AssertionError, match=r"^not within 0.05 s: the moon$"):
        wait_for(lambda: False, 0.05, "the moon", interval=0.01)


def test_a_process_that_ends_first_fails_the_wait_at_once_with_its_output():
    """Not after the 600 s: the message would then be 'not within'."""
    proc = subprocess.Popen([sys.executable, "-c", "print('goodbye')"], stdout=subprocess.PIPE, text=True)
    proc.wait()
    with pytest.raises(AssertionError, match=r"^the process ended \(exit 0\) before a file appeared:\ngoodbye\n$"):
        wait_for(lambda: False, 600, "a file appeared", proc=proc)


def test_what_an_ended_process_did_before_it_ended_still_counts():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert wait_for(lambda: "done", 30, "its work", proc=proc) == "done"


def test_a_failed_wait_kills_the_process_it_waited_on():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with pytest.raises(AssertionError, match=r"^not within 0.05 s: never$"):
            wait_for(lambda: False, 0.05, "never", proc=proc, interval=0.01)
        assert proc.poll() is not None
    finally:
        proc.kill()
        proc.wait()


def test_a_failed_wait_kills_the_whole_group_of_a_process_that_leads_one():
    """A process started in a session of its own (as `verify run` is by the tests that signal it)
    goes with what it started."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD_THEN_SLEEP], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    child = int(proc.stdout.readline())  # the child runs: its pid is the first line
    try:
        with pytest.raises(AssertionError, match=r"^not within 0.05 s: never$"):
            wait_for(lambda: False, 0.05, "never", proc=proc, interval=0.01)
        assert proc.poll() is not None
        wait_for(lambda: not alive(child), 30, "the child gone with its group")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


CHILD_THEN_SLEEP = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; "
                    "time.sleep(600)']); print(c.pid, flush=True); time.sleep(600)")



TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "time", "perf_counter", "monotonic_ns", "time_ns"}


def test_no_test_waits_by_sleeping_or_polls_by_hand():
    """Issue 45: tests/waiting.py is the one place a test sleeps (its poll interval) and the one
    definition of wait_for; no loop anywhere else in tests/ reads a clock, and no code the tests
    run in their own process sleeps. A model under tests/models/ may sleep: it runs in a worker,
    as the slow work a timeout or a stop must cut short. Code in strings (a child's script) is
    not parsed: it is that child's work, not the test's wait."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        where = path.relative_to(TESTS.parent).as_posix()
        if where == "tests/waiting.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), where)):
            if isinstance(node, ast.Call) and _name(node.func) == "sleep" and not where.startswith("tests/models/"):
                found.append(f"{where}:{node.lineno}: sleep")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "wait_for":
                found.append(f"{where}:{node.lineno}: a second wait_for")
            if isinstance(node, ast.While) and any(isinstance(n, ast.Call) and _name(n.func) in CLOCKS
                                                   for n in ast.walk(node.test)):
                found.append(f"{where}:{node.lineno}: a deadline loop")
    assert found == [], "use tests.waiting.wait_for (or an event the test sets): " + "; ".join(found)


def _name(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
