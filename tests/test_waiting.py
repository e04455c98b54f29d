"""tests/waiting.py's `wait_for`, the one way the tests wait for an event: what it returns, what a
failed wait says, and that it neither outwaits a process that has ended nor leaves one running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

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

