"""Run a delegate's TOSA flatbuffer on the TOSA reference model with seeded random inputs.

Inputs are drawn from the graph's own input tensors (shape and dtype read from the
flatbuffer), so the same bytes always get the same inputs, whichever mode produced them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

_NUMPY_DTYPES = {"BOOL": np.bool_, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
                 "FP32": np.float32, "FP16": np.float16, "INT64": np.int64}


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class ReferenceRun:
    """Outputs per input set (None where the run failed), and the failure text, if any."""

    outputs: list[list[np.ndarray] | None]
    error: str | None = None


def graph_inputs(flatbuffer: bytes) -> list[TensorSpec]:
    from tosa.DType import DType
    from tosa.TosaGraph import TosaGraph

    dtype_names = {v: k for k, v in vars(DType).items() if not k.startswith("_")}
    graph = TosaGraph.GetRootAs(flatbuffer, 0)
    block = graph.Regions(0).Blocks(0)
    tensors = {}
    for i in range(block.TensorsLength()):
        t = block.Tensors(i)
        tensors[t.Name().decode()] = t
    specs = []
    for i in range(block.InputsLength()):
        name = block.Inputs(i).decode()
        t = tensors[name]
        specs.append(TensorSpec(name, tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else (),
                                dtype_names.get(t.Type(), str(t.Type()))))
    return specs


def random_inputs(specs: list[TensorSpec], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        dtype = _NUMPY_DTYPES.get(spec.dtype)
        if dtype is None:
            raise ValueError(f"input {spec.name}: no random generator for TOSA dtype {spec.dtype}")
        if dtype is np.bool_:
            arrays.append(rng.integers(0, 2, spec.shape).astype(np.bool_))
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            lo, hi = (info.min, info.max) if dtype in (np.int8, np.int16) else (-1000, 1000)
            arrays.append(rng.integers(lo, hi, spec.shape, endpoint=True).astype(dtype))
        else:
            arrays.append(rng.standard_normal(spec.shape).astype(dtype))
    return arrays


def run_reference(flatbuffer: bytes, input_sets: int = 3, seed: int = 0) -> ReferenceRun:
    try:
        specs = graph_inputs(flatbuffer)
    except Exception as exc:  # noqa: BLE001
        return ReferenceRun([], f"could not read graph inputs: {type(exc).__name__}: {exc}")
    outputs: list[list[np.ndarray] | None] = []
    errors = []
    for k in range(input_sets):
        try:
            arrays = random_inputs(specs, seed + k)
            outputs.append(_run_isolated(flatbuffer, arrays))
        except Exception as exc:  # noqa: BLE001
            outputs.append(None)
            errors.append(f"input set {k}: {type(exc).__name__}: {exc}")
    return ReferenceRun(outputs, "; ".join(errors) or None)


_CHILD_TIMEOUT_SECONDS = 600.0


def _run_isolated(flatbuffer: bytes, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """One reference-model run in a forked child process; its outputs, or an exception.

    Random inputs can be out of the graph's domain: an INT32 input that indexes a SCATTER or
    GATHER gets values in [-1000, 1000]. The reference model then reports UNPREDICTABLE, but
    only after it has written out of bounds: the heap of the process that ran it is corrupt and
    it aborts or segfaults at some later allocation (found by tox -e peer: crosscheck of
    executorch's test_insert_int32_casts_after_int64_placeholders_tosa_INT_upcast_for_index_copy
    killed its worker). In a child, the corruption dies with it, and a crash is a failed run.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")  # the parent's modules, no re-import
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_reference_child, args=(sender, flatbuffer, arrays), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(_CHILD_TIMEOUT_SECONDS):  # a forked child that hangs must not hang the harness
            child.kill()
            child.join()
            raise RuntimeError(f"reference model process gave no answer in {_CHILD_TIMEOUT_SECONDS:.0f} s")
        ok, value = receiver.recv()
    except EOFError:
        child.join()
        raise RuntimeError(f"reference model process died (exit code {child.exitcode})") from None
    finally:
        receiver.close()
    child.join()
    if not ok:
        raise RuntimeError(value)
    return value


def _reference_child(sender: Any, flatbuffer: bytes, arrays: list[np.ndarray]) -> None:
    """The reference model's run, in the child. Its C++ prints warnings ("WARNING: Different TOSA
    spec ...") on file descriptor 1: pointed at stderr here, the child's own, so that they never
    land in the stdout of a script the harness crosschecks (the child's fd 1 is the script's)."""
    import faulthandler
    import os

    os.dup2(2, 1)

    import tosa_reference_model

    faulthandler.disable()  # a crash here is reported by the parent, not as a traceback dump

    try:
        result, status = tosa_reference_model.run(flatbuffer, arrays, initialize_variable_tensor_from_numpy=True)
        if status != tosa_reference_model.GraphStatus.TOSA_VALID:
            message = (False, f"reference model status {status}")
        else:
            message = (True, [np.array(r) for r in result])
    except Exception as exc:  # noqa: BLE001 - sent to the parent, which raises it there
        message = (False, f"{type(exc).__name__}: {exc}")
    sender.send(message)
    sender.close()
