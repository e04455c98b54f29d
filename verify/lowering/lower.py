"""Lower one exported program in one mode and keep everything the comparison needs.

The two modes (verify.lowering.mode.Mode) are a switch, not two code paths: `stock` is
executorch as installed, `fastpass` the same call inside `fastpass.enabled(features)`.
Everything else is shared.
"""

from __future__ import annotations

import copy
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from verify.lowering.constants import ConstantTensor, capture_constants
from verify.lowering.heap import clear_graph_caches
from verify.lowering.mode import Mode
from verify.lowering.observe import Observation, observe_lowering
from verify.lowering.reference import ReferenceRun, run_reference
from verify.lowering.snapshot import GraphIds, GraphSnapshot, take_snapshot
from verify.lowering.targets import Target


@dataclass
class Payload:
    """One delegate: what the backend emitted, and the TOSA it was compiled from."""

    backend_id: str
    processed_bytes: bytes
    tosa: bytes | None


@dataclass
class LoweringResult:
    mode: Mode
    features: tuple[str, ...]
    hash_seed: str | None
    seconds: float = 0.0
    call_seconds: float = 0.0  # the lowering call alone: `seconds` minus the mode's switch and the observers'
    error: str | None = None
    error_type: str | None = None
    observation: Observation = field(default_factory=Observation)
    final: GraphSnapshot | None = None
    payloads: list[Payload] = field(default_factory=list)
    reference: list[ReferenceRun] = field(default_factory=list)
    fastpass_stats: dict[str, Any] | None = None
    constants: list[ConstantTensor] = field(default_factory=list)  # the top-level program's
    program: bytes | None = None  # the serialized program, `to_executorch().buffer` (a .pte)
    program_error: str | None = None  # why to_executorch() failed (first line), if it did
    serialize_seconds: float = 0.0  # to_executorch() on a deep copy, not part of `seconds` (the lowering)
    to_executorch_seconds: float | None = None  # the to_executorch() call alone (None: not serialized or failed)
    reference_seconds: float = 0.0  # the reference-model runs, not part of `seconds` either

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ObservedCall:
    """One observed lowering call: the comparable result, what the call returned, what it raised.

    `value` and `exception` are kept for a caller that must hand the call's own outcome back
    (verify.crosscheck returns the stock result, or re-raises the stock exception, unchanged)."""

    result: LoweringResult
    value: Any = None
    exception: Exception | None = None


def lower(program: Any, target: Target, mode: Mode | str, features: tuple[str, ...] = (),
          snapshots: bool = True, reference_sets: int = 3, hash_seed: str | None = None,
          final_snapshot: bool | None = None, serialize: bool = True, trust: str = "proven",
          parts: bool = False, lowered: Callable[[], None] | None = None) -> LoweringResult:
    """Lower a deep copy of `program` (so both modes start from the same graph) and observe it.

    The one way every command lowers. `snapshots`: a graph snapshot after every pass (the
    comparison's; the bench turns them off, they would dominate its timings); `final_snapshot`:
    the final graph's (default: as `snapshots`); `reference_sets`: TOSA reference-model runs per
    delegate (0: none); `serialize`: `to_executorch()` after the lowering, timed apart; `trust`:
    which annotations fastpass uses (`proven`, what users get; the gate proves with `all`);
    `parts`: time the lowering's named parts (`Observation.part_seconds`, the bench's);
    `lowered`: called as soon as the lowering call returns, before anything the harness does
    after it (the bench reads the lowering's peak memory there, before serialization)."""
    from executorch.exir import to_edge_transform_and_lower

    program = copy.deepcopy(program)

    def call():
        partitioner = target.make_partitioner(target.make_spec())
        return to_edge_transform_and_lower(program, partitioner=[partitioner])

    return observe_call(call, mode, features, snapshots, reference_sets, hash_seed, final_snapshot=final_snapshot,
                        serialize=serialize, trust=trust, parts=parts, lowered=lowered).result


def _graph_module_of(lowered: Any) -> Any:
    """The graph module of what a lowering call returned: an EdgeProgramManager's program or an ExportedProgram."""
    if hasattr(lowered, "exported_program"):
        return lowered.exported_program().graph_module
    return lowered.graph_module


def observe_call(call: Any, mode: Mode | str, features: tuple[str, ...] = (), snapshots: bool = True,
                 reference_sets: int = 3, hash_seed: str | None = None, final_snapshot: bool | None = None,
                 serialize: bool = True, trust: str = "proven", parts: bool = False,
                 lowered: Callable[[], None] | None = None) -> ObservedCall:
    """Run `call()` (any lowering or pass call returning an EdgeProgramManager or ExportedProgram) in
    `mode`, observing every pass, and build the LoweringResult the checks compare.

    Factored out of lower() so that verify.crosscheck builds its results from intercepted calls
    the same way, rather than a second copy of this. `mode`: a Mode, or its value."""
    mode = Mode(mode)
    result = LoweringResult(mode, tuple(features), hash_seed)
    observed = ObservedCall(result)
    stats_source = None
    start = time.perf_counter()
    try:
        with observe_lowering(snapshots=snapshots, parts=parts) as observation:
            result.observation = observation  # kept when the lowering raises: it says how far it got
            with mode.context(features, trust):
                if mode is Mode.FASTPASS:
                    import fastpass

                    fastpass.reset_stats()
                    stats_source = fastpass
                called = time.perf_counter()
                edge = observed.value = call()
                result.call_seconds = time.perf_counter() - called
                if stats_source is not None:
                    result.fastpass_stats = stats_source.stats()
        result.seconds = time.perf_counter() - start
        if lowered is not None:
            lowered()
        graph_module = _graph_module_of(edge)
        if snapshots if final_snapshot is None else final_snapshot:
            result.final = take_snapshot(graph_module, GraphIds(), full_provenance=True)
        tosa = list(observation.delegate_tosa)
        for index, (_, module) in enumerate(
            (n, m) for n, m in graph_module.named_modules() if hasattr(m, "processed_bytes")
        ):
            result.payloads.append(Payload(str(module.backend_id), bytes(module.processed_bytes),
                                           tosa[index] if index < len(tosa) else None))
        result.constants = capture_constants(edge.exported_program() if hasattr(edge, "exported_program") else edge)
        if serialize:
            _serialize(edge, mode, features, trust, result)
    except Exception as exc:  # noqa: BLE001 - a failing lowering is a result to compare
        result.seconds = time.perf_counter() - start
        observed.exception = exc
        root = exc
        while root.__cause__ is not None or root.__context__ is not None:
            root = root.__cause__ or root.__context__
        result.error_type = type(root).__name__
        # First line: the root cause (pass managers wrap it in a generic "An error occurred").
        result.error = "".join(traceback.format_exception_only(type(root), root)).strip().splitlines()[0]
        result.error += "\n" + "".join(traceback.format_exception(exc, limit=-8))
        return observed
    finally:
        clear_graph_caches()
    start = time.perf_counter()
    for payload in result.payloads:
        if reference_sets and payload.tosa is not None:
            result.reference.append(run_reference(payload.tosa, reference_sets))
    result.reference_seconds = time.perf_counter() - start
    return observed


def _serialize(edge: Any, mode: Mode, features: tuple[str, ...], trust: str, result: LoweringResult) -> None:
    """`to_executorch().buffer`: the program a user ships, in the same mode as the lowering.

    Run after everything else is captured, outside the observation (its passes are not the
    lowering's) and timed on its own (`serialize_seconds`; `to_executorch_seconds` the call
    alone, fastpass enabled in its mode: what a user's to_executorch() costs). On a deep copy:
    to_executorch() rewrites the edge program in place (out variants, memory specs), and the
    caller keeps `edge` as it was. Its failure is recorded, not raised: the `program` check
    compares it, and the lowering still counts.
    """
    if not hasattr(edge, "to_executorch"):
        result.program_error = f"not serialized: the call returned a {type(edge).__name__}, not an EdgeProgramManager"
        return
    start = time.perf_counter()
    try:
        edge = copy.deepcopy(edge)
        called = time.perf_counter()
        with mode.context(features, trust):
            result.program = bytes(edge.to_executorch().buffer)
        result.to_executorch_seconds = time.perf_counter() - called
    except Exception as exc:  # noqa: BLE001 - a failing serialization is a result to compare
        result.program_error = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[0]
    result.serialize_seconds = time.perf_counter() - start
