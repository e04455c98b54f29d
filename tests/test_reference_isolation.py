"""verify.lowering.reference runs the TOSA reference model in a child process: a run that
corrupts memory (a SCATTER fed out-of-range random indices) is a failed run, not a dead harness."""

from __future__ import annotations

import os
import signal

import numpy as np

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
    import time

    import tosa_reference_model

    monkeypatch.setattr(reference, "_CHILD_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(reference, "graph_inputs", lambda flatbuffer: [reference.TensorSpec("x", (2,), "INT32")])
    monkeypatch.setattr(tosa_reference_model, "run", lambda flatbuffer, arrays, **kwargs: time.sleep(30))
    started = time.monotonic()
    run = reference.run_reference(b"", input_sets=1)
    assert time.monotonic() - started < 15
    assert run.outputs == [None] and "gave no answer" in run.error
