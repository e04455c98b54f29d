"""verify.lowering.reference runs the TOSA reference model in a child process: a run that
corrupts memory (a SCATTER fed out-of-range random indices) is a failed run, not a dead harness."""

from __future__ import annotations

import os
import signal

import numpy as np

from tests.waiting import wait_for
from verify.lowering import reference


def test_a_reference_model_crash_is_a_failed_run_and_the_caller_lives(monkeypatch):
    import tosa_reference_model

    def crashes(flatbuffer, arrays, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(reference, "graph_inputs", lambda flatbuffer: [reference.TensorSpec("x", (2,), "INT32")])
    monkeypatch.setattr(tosa_reference_model, "run", crashes)
    run = reference.run_reference(b"", input_sets=2)
    assert run.outputs == [None, None]
    assert run.error is not None and "process died (exit code -11)" in run.error


def test_outputs_and_status_come_back_from_the_child(monkeypatch):
    import tosa_reference_model

    calls = []

    def echo(flatbuffer, arrays, **kwargs):
        calls.append(1)  # in the child: the parent's list stays empty
        return [arrays[0] * 2], tosa_reference_model.GraphStatus.TOSA_VALID

    monkeypatch.setattr(reference, "graph_inputs", lambda flatbuffer: [reference.TensorSpec("x", (3,), "INT32")])
    monkeypatch.setattr(tosa_reference_model, "run", echo)
    run = reference.run_reference(b"", input_sets=1)
    assert run.error is None and calls == []
    np.testing.assert_array_equal(run.outputs[0][0], reference.random_inputs(reference.graph_inputs(b""), 0)[0] * 2)

    def unpredictable(flatbuffer, arrays, **kwargs):
        return [], tosa_reference_model.GraphStatus.TOSA_UNPREDICTABLE

    monkeypatch.setattr(tosa_reference_model, "run", unpredictable)
    run = reference.run_reference(b"", input_sets=1)
    assert run.outputs == [None] and "TOSA_UNPREDICTABLE" in run.error


def test_a_reference_model_that_hangs_is_a_failed_run(monkeypatch):
    """The child hangs until it is killed, so no sleep's length decides anything: run_reference
    gives up on it at its timeout (1 s here), kills it and says so. A run_reference that waited
    for the child would never return: it runs in a thread of its own, and the test's wait for it
    is bounded (it fails naming what it waited for); a child left running is one the
    multiprocessing bookkeeping still holds."""
    import multiprocessing
    import threading

    import tosa_reference_model

    def hangs(flatbuffer, arrays, **kwargs):
        threading.Event().wait()  # in the child: until it is killed

    monkeypatch.setattr(reference, "_CHILD_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(reference, "graph_inputs", lambda flatbuffer: [reference.TensorSpec("x", (2,), "INT32")])
    monkeypatch.setattr(tosa_reference_model, "run", hangs)
    before = set(multiprocessing.active_children())
    ended: list = []
    runner = threading.Thread(target=lambda: ended.append(reference.run_reference(b"", input_sets=1)), daemon=True)
    runner.start()
    try:
        (run,) = wait_for(lambda: ended, 120, "run_reference to give up on the hung child")
        left = [p for p in multiprocessing.active_children() if p not in before]
    finally:
        for child in set(multiprocessing.active_children()) - before:
            child.kill()
    assert run.outputs == [None] and "gave no answer in 1 s" in run.error, run.error
    assert left == [], "the hung child was left running"
