"""Watch a lowering: a snapshot after every pass of every pass manager, and the TOSA of each delegate.

The lowering observers' patch points (`patch_points()`, installed through
`fastpass.patching` like fastpass's own in `fastpass/_patches.py`, the gate's in
`verify/gate/infer.py` and crosscheck's in `verify/crosscheck/intercept.py`). They are installed
for the duration of one lowering (not nested) and removed after it; none changes what a pass
sees (the two provenance hooks only count graphs and tag a record):

| owner | attribute | why |
|---|---|---|
| `torch.fx.passes.infra.pass_manager.PassManager` | `__call__` | ARM TFA / submodule pipelines and GraphModule pass managers |
| `executorch.exir.pass_manager.ExportedProgramPassManager` | `__call__` | to_edge / transform passes and the ARM TOSA pipeline per delegate |
| `executorch.backends.arm.tosa.backend.TOSABackend` | `_preprocess` | delegate boundaries, the TOSA flatbuffer (also the intermediate TOSA of Ethos-U) |
| `torch.fx.graph.Graph` | `__init__` | counts graphs created per address (see snapshot.GraphIds: ids are reused) |
| `torch.fx.traceback.NodeSource.NodeInfo` | `__init__` | tags a provenance record with its lowering and its graph's generation at that address |

Passes are wrapped, never replaced: a wrapper calls the pass exactly as the manager would
and then records the graph, so what runs is what would have run.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import time
from typing import Any

from fastpass.patching import PatchPoint, Patches
from verify.lowering.snapshot import GRAPH_GENERATION, GraphIds, GraphSnapshot, RecordDigests, take_snapshot
from verify.lowering.steps import Observation, PassStep


# One number per observed lowering in this process, never reused: part of every provenance tag
# (see _tagged_info_init), so that a tag left on a record by an earlier lowering is never read
# as one of this lowering's graphs.
_LOWERING_SERIALS = itertools.count(1)


class _Observer:
    def __init__(self, snapshots: bool) -> None:
        self.serial = next(_LOWERING_SERIALS)
        self.take_snapshots = snapshots
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
        start = time.perf_counter()
        res = fn(module)
        seconds = time.perf_counter() - start
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
    start = time.perf_counter()
    res = fn(exported_program)
    seconds = time.perf_counter() - start
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
            return original(self, module, *args, **kwargs)
        finally:
            self.passes = saved

    return __call__


def _observed_preprocess(original: Any, observer: _Observer) -> Any:
    original_preprocess = original.__func__  # a staticmethod in TOSABackend's __dict__

    def observed_preprocess(edge_program, compile_spec):
        outer = observer.phase
        observer.phase = f"delegate{len(observer.observation.delegate_tosa)}"
        try:
            result = original_preprocess(edge_program, compile_spec)
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


def patch_points(observer: _Observer) -> list[PatchPoint]:
    """The observers' table (the module docstring shows it): every row installed, for one lowering."""
    from executorch.backends.arm.tosa.backend import TOSABackend
    from executorch.exir.pass_manager import ExportedProgramPassManager
    from torch.fx import Graph
    from torch.fx.passes.infra.pass_manager import PassManager
    from torch.fx.traceback import NodeSource

    return [
        PatchPoint(PassManager, "__call__", (), wrap=lambda original: _observed_manager(original, observer),
                   why="ARM TFA / submodule pipelines and GraphModule pass managers"),
        PatchPoint(ExportedProgramPassManager, "__call__", (),
                   wrap=lambda original: _observed_manager(original, observer),
                   why="to_edge / transform passes and the ARM TOSA pipeline per delegate"),
        PatchPoint(TOSABackend, "_preprocess", (), wrap=lambda original: _observed_preprocess(original, observer),
                   why="delegate boundaries, the TOSA flatbuffer (also the intermediate TOSA of Ethos-U)"),
        PatchPoint(Graph, "__init__", (), wrap=lambda original: _counted_graph_init(original, observer),
                   why="counts graphs created per address (see snapshot.GraphIds: ids are reused)"),
        PatchPoint(NodeSource.NodeInfo, "__init__", (), wrap=lambda original: _tagged_info_init(original, observer),
                   why="tags a provenance record with its lowering and its graph's generation at that address"),
    ]


# Installed for one lowering at a time: a nested observer would see (and record) every step twice.
PATCHES = Patches("verify.lowering.observe_lowering", "leave the enclosing observe_lowering block")


@contextlib.contextmanager
def observe_lowering(snapshots: bool = True):
    """Yield an `Observation` filled in while the block lowers a program."""
    observer = _Observer(snapshots)
    PATCHES.install(patch_points(observer))
    try:
        yield observer.observation
    finally:
        PATCHES.restore()
