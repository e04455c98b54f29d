"""Watch a lowering: a snapshot after every pass of every pass manager, and the TOSA of each delegate.

The lowering observers' patch points (`patch_points()`, installed through
`fastpass.patching` like fastpass's own in `fastpass/_patches.py`, the gate's in
`verify/gate/infer.py` and crosscheck's in `verify/crosscheck/intercept.py`). They are installed
for the duration of one lowering (not nested) and removed after it; none changes what a pass
sees (the two provenance hooks only count graphs and tag a record). The rows of feature `parts`
are installed only when asked (`observe_lowering(parts=True)`: the bench's lowerings): they time
the named parts of the lowering outside its passes (`steps.Part`), each call passed through
unchanged:

| owner | attribute | feature | why |
|---|---|---|---|
| `torch.fx.passes.infra.pass_manager.PassManager` | `__call__` | always | ARM TFA / submodule pipelines and GraphModule pass managers (with parts timed: the managers' own time between passes) |
| `executorch.exir.pass_manager.ExportedProgramPassManager` | `__call__` | always | to_edge / transform passes and the ARM TOSA pipeline per delegate (the same) |
| `executorch.backends.arm.tosa.backend.TOSABackend` | `_preprocess` | always | delegate boundaries, the TOSA flatbuffer (also the intermediate TOSA of Ethos-U); with parts timed, TOSA serialization: the call minus the passes in it |
| `torch.fx.graph.Graph` | `__init__` | always | counts graphs created per address (see snapshot.GraphIds: ids are reused) |
| `torch.fx.traceback.NodeSource.NodeInfo` | `__init__` | always | tags a provenance record with its lowering and its graph's generation at that address |
| `torch.export.exported_program.ExportedProgram` | `run_decompositions` | parts | times the decompositions re-trace (to_edge_transform_and_lower calls it up to three times per program, in _gen_edge_manager_for_partitioners) |
| `executorch.exir.program._program` | `_generate_edge_program` | parts | times the aten-to-edge conversion, whose passes it calls directly, not through a pass manager (the passes of its closing _transform are steps: taken out) |
| `executorch.exir.backend.partitioner.Partitioner` | `__call__` | parts | times partitioning: to_backend calls the partitioner, whose __call__ is its partition() |
| `executorch.backends.arm._passes.arm_pass_manager.ArmPassManager` | `transform_to_backend_pipeline` | parts | times building a delegate's ARM pass pipeline (its pass manager's run, and the passes, taken out): so that TOSA serialization is the TOSA backend's own work |
| `executorch.backends.arm.ethosu.backend.EthosUBackend` | `_compile_tosa_flatbuffer` | parts | times Vela: the Ethos-U backend's compile of the delegate's TOSA flatbuffer |

Passes are wrapped, never replaced: a wrapper calls the pass exactly as the manager would
and then records the graph, so what runs is what would have run.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import time
from dataclasses import dataclass
from typing import Any

from fastpass.patching import PatchPoint, Patches
from verify.lowering.snapshot import GRAPH_GENERATION, GraphIds, GraphSnapshot, RecordDigests, take_snapshot
from verify.lowering.steps import Observation, Part, PassStep

PARTS = "parts"  # the feature of the rows that time the parts (steps.Part)


# One number per observed lowering in this process, never reused: part of every provenance tag
# (see _tagged_info_init), so that a tag left on a record by an earlier lowering is never read
# as one of this lowering's graphs.
_LOWERING_SERIALS = itertools.count(1)


@dataclass
class _Frame:
    """One timed call in flight: a pass step (`part` None) or a part."""

    part: Part | None
    start: float
    inner: float = 0.0  # seconds of the timed calls that ran inside this one


class _Observer:
    def __init__(self, snapshots: bool, parts: bool = False) -> None:
        self.serial = next(_LOWERING_SERIALS)
        self.take_snapshots = snapshots
        self.time_parts = parts
        self.frames: list[_Frame] = []  # the timed calls in flight, innermost last
        self.open_passes = 0  # pass steps among them
        self.observation = Observation()
        self.graph_ids = GraphIds()
        self.record_digests = RecordDigests()
        self.phase = "edge"
        self.manager_counts: dict[str, int] = {}
        self.generations: dict[int, int] = {}  # id(graph) -> graphs created at that address so far

    def snapshot(self, graph_module: Any, full: bool = False) -> GraphSnapshot | None:
        if not self.take_snapshots or graph_module is None or not hasattr(graph_module, "graph"):
            return None
        start = time.perf_counter()
        snap = take_snapshot(graph_module, self.graph_ids, full_provenance=full, digests=self.record_digests)
        self.observation.snapshots.setdefault(snap.digest, snap)
        self.observation.snapshot_seconds += time.perf_counter() - start
        return snap

    def record(self, manager: str, index: int, name: str, graph_module: Any, seconds: float) -> None:
        snap = self.snapshot(graph_module)
        self.observation.steps.append(
            PassStep(len(self.observation.steps), self.phase, manager, index, name,
                     snap.digest if snap else None, seconds)
        )

    def run_pass(self, fn: Any, argument: Any) -> tuple[Any, float]:
        """`fn(argument)` as one pass step: (its result, its seconds)."""
        nested = self.open_passes > 0
        frame = self._open(None)
        self.open_passes += 1
        try:
            result = fn(argument)
        finally:
            self.open_passes -= 1
            seconds = self._close(frame)
        if nested:
            self.observation.nested_step_seconds += seconds
        return result, seconds

    def run_part(self, part: Part, call: Any, *args: Any, **kwargs: Any) -> Any:
        """`call(*args, **kwargs)`, its exclusive time added to `part` (if parts are timed, and
        it runs inside no pass step: a pass's inner calls are the pass's time)."""
        if not self.time_parts or self.open_passes:
            return call(*args, **kwargs)
        frame = self._open(part)
        try:
            return call(*args, **kwargs)
        finally:
            seconds = self._close(frame)
            totals = self.observation.part_seconds
            totals[part] = totals.get(part, 0.0) + seconds - frame.inner

    def _open(self, part: Part | None) -> _Frame:
        frame = _Frame(part, time.perf_counter())
        self.frames.append(frame)
        return frame

    def _close(self, frame: _Frame) -> float:
        seconds = time.perf_counter() - frame.start
        popped = self.frames.pop()
        assert popped is frame, "timed calls closed out of order"
        if self.frames:
            self.frames[-1].inner += seconds
        return seconds

    def manager_label(self, manager: Any) -> str:
        kind = type(manager).__name__
        key = f"{self.phase}:{kind}"
        self.manager_counts[key] = self.manager_counts.get(key, -1) + 1
        return f"{kind}#{self.manager_counts[key]}"


def pass_name(fn: Any) -> str:
    inner = getattr(fn, "graph_pass", None)  # ARM's _ExportedProgramGraphPassAdapter
    if inner is not None:
        fn = inner
    inner = getattr(fn, "__wrapped__", None)  # pass_result_wrapper
    if inner is not None and not inspect.isfunction(inner):
        fn = inner
    return fn.__name__ if inspect.isfunction(fn) else type(fn).__name__


def _wrap_graph_pass(fn: Any, observer: _Observer, manager: str, index: int) -> Any:
    name = pass_name(fn)

    @functools.wraps(fn if inspect.isfunction(fn) else type(fn).__call__)
    def observed(module):
        res, seconds = observer.run_pass(fn, module)
        observer.record(manager, index, name, getattr(res, "graph_module", module), seconds)
        return res

    observed.__name__ = fn.__name__ if inspect.isfunction(fn) else type(fn).__name__
    return observed


def _wrap_program_pass(fn: Any, observer: _Observer, manager: str, index: int) -> Any:
    from executorch.exir.pass_base import ExportedProgramPassBase

    name = pass_name(fn)
    # Keep the pass's class name: managers put it in their error messages.
    cls = type(type(fn).__name__, (ExportedProgramPassBase,), {
        "call": lambda self, ep: fn.call(ep),
        "__call__": lambda self, ep: _run_program_pass(fn, ep, observer, manager, index, name),
    })
    return cls()


def _run_program_pass(fn, exported_program, observer, manager, index, name):
    res, seconds = observer.run_pass(fn, exported_program)
    observer.record(manager, index, name, res.exported_program.graph_module, seconds)
    return res


def _observed_manager(original: Any, observer: _Observer) -> Any:
    from executorch.exir.pass_base import ExportedProgramPassBase

    def __call__(self, module, *args, **kwargs):
        label = observer.manager_label(self)
        graph_module = getattr(module, "graph_module", module)
        observer.record(label, -1, "<input>", graph_module, 0.0)
        wrapped = [
            _wrap_program_pass(fn, observer, label, i) if isinstance(fn, ExportedProgramPassBase)
            else _wrap_graph_pass(fn, observer, label, i)
            for i, fn in enumerate(self.passes)
        ]
        saved, self.passes = self.passes, wrapped
        try:
            # A manager's own work between its passes (ordering, checks, verifiers): a part of its own.
            return observer.run_part(Part.PASS_MANAGERS, original, self, module, *args, **kwargs)
        finally:
            self.passes = saved

    return __call__


def _observed_preprocess(original: Any, observer: _Observer) -> Any:
    original_preprocess = original.__func__  # a staticmethod in TOSABackend's __dict__

    def observed_preprocess(edge_program, compile_spec):
        outer = observer.phase
        observer.phase = f"delegate{len(observer.observation.delegate_tosa)}"
        try:
            result = observer.run_part(Part.TOSA_SERIALIZATION, original_preprocess, edge_program, compile_spec)
            observer.observation.delegate_tosa.append(bytes(result.processed_bytes))
            final = observer.snapshot(edge_program.graph_module, full=True)
            if final is not None:
                observer.observation.delegate_final.append(final)
            return result
        finally:
            observer.phase = outer

    return staticmethod(observed_preprocess)


def _counted_graph_init(graph_init: Any, observer: _Observer) -> Any:
    generations = observer.generations

    @functools.wraps(graph_init)
    def counted_graph_init(self, *args, **kwargs):
        graph_init(self, *args, **kwargs)
        generations[id(self)] = generations.get(id(self), 0) + 1

    return counted_graph_init


def _tagged_info_init(info_init: Any, observer: _Observer) -> Any:
    """Tag each provenance record made during the lowering with (this lowering, the generation of
    its graph at that address).

    Why the lowering is part of the tag: records made *before* it (by export, by the caller, by an
    earlier lowering) name graphs by address too, and those graphs may be dead, their addresses
    handed to a graph this lowering sees. Crosscheck and `lower()` give each mode a deep copy of
    the input, whose graphs take fresh addresses: in one mode only, the copy can sit at the
    address of a long-freed export-time graph that the input's records still name. Keyed by
    address and generation alone, an untagged input record and this lowering's records of the
    copy's graph were one graph in that mode and two in the other (a divergence in `from_node`
    that no fresh process reproduced). With the lowering in the tag, only this lowering's own
    records are matched by generation; every other record keeps the identity it arrived with,
    the same in both modes because each mode's input is a copy of the same input."""
    generations = observer.generations
    serial = observer.serial

    @functools.wraps(info_init)
    def tagged_info_init(self, name, target, graph_id):
        info_init(self, name, target, graph_id)
        # The graph is alive now (its node is being recorded): it is the latest one at this address.
        setattr(self, GRAPH_GENERATION, (serial, generations.get(graph_id, 0)))

    return tagged_info_init


def _timed(part: Part, observer: _Observer) -> Any:
    """wrap(original) for a method or a function: the call, timed as `part`."""

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def timed(*args, **kwargs):
            return observer.run_part(part, original, *args, **kwargs)

        return timed

    wrap.part = part  # which part a row times (tests remove a row by it)
    return wrap


def _timed_static(part: Part, observer: _Observer) -> Any:
    """The same for a staticmethod (read from the class's __dict__, put back as one)."""
    timed = _timed(part, observer)

    def wrap(original: Any) -> Any:
        return staticmethod(timed(original.__func__))

    wrap.part = part
    return wrap


def patch_points(observer: _Observer) -> list[PatchPoint]:
    """The observers' table (the module docstring shows it): every row without a feature is
    installed for each lowering; the `parts` rows when the lowering's parts are timed."""
    from executorch.backends.arm._passes import ArmPassManager
    from executorch.backends.arm.ethosu.backend import EthosUBackend
    from executorch.backends.arm.tosa.backend import TOSABackend
    from executorch.exir.backend.partitioner import Partitioner
    from executorch.exir.pass_manager import ExportedProgramPassManager
    from executorch.exir.program import _program
    from torch.export import ExportedProgram
    from torch.fx import Graph
    from torch.fx.passes.infra.pass_manager import PassManager
    from torch.fx.traceback import NodeSource

    return [
        PatchPoint(PassManager, "__call__", (), wrap=lambda original: _observed_manager(original, observer),
                   why="ARM TFA / submodule pipelines and GraphModule pass managers (with parts timed: the "
                       "managers' own time between passes)"),
        PatchPoint(ExportedProgramPassManager, "__call__", (),
                   wrap=lambda original: _observed_manager(original, observer),
                   why="to_edge / transform passes and the ARM TOSA pipeline per delegate (the same)"),
        PatchPoint(TOSABackend, "_preprocess", (), wrap=lambda original: _observed_preprocess(original, observer),
                   why="delegate boundaries, the TOSA flatbuffer (also the intermediate TOSA of Ethos-U); with "
                       "parts timed, TOSA serialization: the call minus the passes in it"),
        PatchPoint(Graph, "__init__", (), wrap=lambda original: _counted_graph_init(original, observer),
                   why="counts graphs created per address (see snapshot.GraphIds: ids are reused)"),
        PatchPoint(NodeSource.NodeInfo, "__init__", (), wrap=lambda original: _tagged_info_init(original, observer),
                   why="tags a provenance record with its lowering and its graph's generation at that address"),
        PatchPoint(ExportedProgram, "run_decompositions", (PARTS,), wrap=_timed(Part.DECOMPOSITIONS, observer),
                   why="times the decompositions re-trace (to_edge_transform_and_lower calls it up to three "
                       "times per program, in _gen_edge_manager_for_partitioners)"),
        PatchPoint(_program, "_generate_edge_program", (PARTS,), wrap=_timed(Part.TO_EDGE, observer),
                   why="times the aten-to-edge conversion, whose passes it calls directly, not through a pass "
                       "manager (the passes of its closing _transform are steps: taken out)"),
        PatchPoint(Partitioner, "__call__", (PARTS,), wrap=_timed(Part.PARTITIONING, observer),
                   why="times partitioning: to_backend calls the partitioner, whose __call__ is its partition()"),
        PatchPoint(ArmPassManager, "transform_to_backend_pipeline", (PARTS,),
                   wrap=_timed(Part.PIPELINE_SETUP, observer),
                   why="times building a delegate's ARM pass pipeline (its pass manager's run, and the passes, "
                       "taken out): so that TOSA serialization is the TOSA backend's own work"),
        PatchPoint(EthosUBackend, "_compile_tosa_flatbuffer", (PARTS,),
                   wrap=_timed_static(Part.VELA, observer),
                   why="times Vela: the Ethos-U backend's compile of the delegate's TOSA flatbuffer"),
    ]


# Installed for one lowering at a time: a nested observer would see (and record) every step twice.
PATCHES = Patches("verify.lowering.observe_lowering", "leave the enclosing observe_lowering block")


@contextlib.contextmanager
def observe_lowering(snapshots: bool = True, parts: bool = False):
    """Yield an `Observation` filled in while the block lowers a program; `parts`: time its
    parts too (`Observation.part_seconds`)."""
    observer = _Observer(snapshots, parts)
    PATCHES.install(patch_points(observer), features=(PARTS,) if parts else ())
    try:
        yield observer.observation
    finally:
        PATCHES.restore()
