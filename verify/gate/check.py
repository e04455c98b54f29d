"""One gate example: a graph, a pass, a fastpass feature set -> does fastpass change anything?

Two ways to run a pass:

* **pipeline** (ARM passes the TOSA pipeline invokes): lower the graph stock, and again with
  fastpass enabled for the pass under test only (every other annotation neutralised), then
  compare the two lowerings with the harness (`verify.compare`: outcome, pass sequence,
  per-pass graph/val/meta snapshots, payload, TOSA).
* **direct** (any other pass, e.g. a user's own `module:Class`): export the graph to the edge
  dialect, retrace it once with a plain `ExportPass` (that gives every node the creation
  signature fastpass needs, exactly as an earlier pass of a pipeline would) and run the pass,
  stock and with fastpass for that pass only; compare the resulting graph modules with the
  harness snapshot checks (graph structure, vals, meta).
* **annotation** (a pass the quantizer's transform_for_annotation pipeline invokes as well): run
  that pipeline on the graph torch.export gives, stock and with fastpass for the pass only, and
  compare the output graph modules as direct does. fastpass acts there whenever a user
  quantizes under it; the lowering stages quantize outside fastpass.

A difference is checked against stock under two opposite node-set iteration orders
(verify.lowering.node_order): when one of them gives exactly fastpass's result, the example is
vacuous (stock itself is nondeterministic there), neither evidence nor a counterexample.
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

from verify.compare.checks import snapshot_differences
from verify.compare.comparison import recheck_orders
from verify.compare.divergence import Divergence, OrderRecheck
from verify.gate import passes as gp
from verify.gate.stages import STAGE_TARGETS, STAGES
from verify.lowering.mode import Mode
from verify.lowering.node_order import under_each_order
from verify.vocabulary import FeatureSet, Route

# The gate proves annotations, so it must use the one under proof whatever the ledger says of it
# (fastpass's default trust uses only proven ones: fastpass.annotations._proofs).
TRUST = "all"


@dataclass
class Outcome:
    diverged: bool
    checks: list[str] = field(default_factory=list)  # failing check names
    detail: str = ""
    where: str | None = None  # first divergent pass label (pipeline), "pass output" (direct) or
    # "quantizer pipeline output" (annotation)
    culprit: str | None = None  # class name of the first divergent pass (pipeline)
    skipped: int = 0  # invocations of the pass fastpass skipped
    copied: int = 0  # nodes fastpass copied inside the pass
    vacuous: str = ""  # why the example could not test anything (export failed, ...)
    stocks_own: bool = False  # vacuous because stock itself gives the difference (node order, Vela)
    stats: dict | None = None  # fastpass.stats() of the fast run
    invocations: int = 0  # calls of the pass in the fast run (identical results: the stock count too)
    upstream_skipped: int = 0  # ... of which upstream's should_run_pass skipped
    ran: int = 0  # ... in which it ran (neither skip took it) with fastpass on
    dispatched: int = 0  # nodes its own retraces sent the stock way (dispatch) instead of copying
    observation: Any = None  # the fast run's verify.lowering.observe.Observation (route PIPELINE)
    input_ops: frozenset = frozenset()  # route DIRECT: call_function ops of the pass's input graph

    @property
    def identical(self) -> bool:
        """Did this example test something and find the results identical?"""
        return not self.diverged and not self.vacuous


class _Cache:
    def __init__(self, size: int = 64) -> None:
        self.size, self.data = size, {}

    def get(self, key, make):
        if key not in self.data:
            if len(self.data) >= self.size:
                self.data.pop(next(iter(self.data)))
            self.data[key] = make()
        return self.data[key]


_PROGRAMS = _Cache()
_STOCK = _Cache()
_PIPELINE_NAMES: dict[str, set[str]] = {}


@contextlib.contextmanager
def quiet():
    """Silence the warnings and prints a lowering makes (the gate prints its own progress)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(io.StringIO()):
            yield


def target_for(stage: str):
    from verify.lowering.targets import get_target

    if stage not in STAGE_TARGETS:
        raise ValueError(f"unknown gate stage {stage!r}; known: {', '.join(STAGES)}")
    return get_target(STAGE_TARGETS[stage])


def _program(spec, target):
    from verify.lowering.quantize import RANDOM_GRAPH_CALIBRATION, export_program

    def make():
        module, inputs = spec.build()
        return export_program(module, inputs, target, RANDOM_GRAPH_CALIBRATION)

    return _PROGRAMS.get((spec.fingerprint(), target.name), make)


def _stock(spec, target):
    from verify.lowering.lower import lower

    return _STOCK.get((spec.fingerprint(), target.name),
                      lambda: lower(_program(spec, target), target, Mode.STOCK, reference_sets=0))


def pipeline_pass_names(target) -> set[str]:
    """Class names of the passes a lowering of a small graph invokes for `target` (pass managers'
    steps, plus every pass call fastpass's hooks see: nested passes and exir passes too, and the
    helpers the propagation passes call directly, seen when they retrace: the graph's permutes
    around an elementwise op make RemovePermutesAroundElementwiseTosaOps rewrite and retrace)."""
    if target.name not in _PIPELINE_NAMES:
        import torch

        from verify.lowering.lower import lower
        from verify.lowering.quantize import export_program

        class Small(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2) + x

        with quiet():
            program = export_program(Small().eval(), (torch.randn(1, 2, 4, 4),), target)
            with gp.only(None):  # fastpass on, every annotation neutral: stock behaviour, but stats
                result = lower(program, target, Mode.FASTPASS, features=FeatureSet.BOTH.names, reference_sets=0,
                               trust=TRUST)
        names = {s.pass_name for s in result.observation.steps}
        if result.fastpass_stats:
            names |= {r["name"] for r in result.fastpass_stats.get("per_pass", [])}
        _PIPELINE_NAMES[target.name] = names
    return _PIPELINE_NAMES[target.name]


@dataclass
class PassCounts:
    """One pass's calls in one lowering, from fastpass.stats()["per_pass"]."""

    invocations: int = 0
    skipped: int = 0  # calls fastpass skipped (no targeted op; not upstream's own should_run_pass)
    copied: int = 0  # nodes fastpass copied inside it
    upstream_skipped: int = 0  # calls upstream's own should_run_pass skipped
    # Why copy may never act: a call that ran but dispatched and copied no node never retraced
    # (the pass edits the graph in place), so fastpass's copy had nothing to act on in it.
    ran: int = 0  # calls in which the pass ran (PassRecord.ran: neither skip took the call)
    dispatched: int = 0  # nodes of its own top-level retraces that went the stock way (PassRecord.dispatched)

    def outcome_fields(self) -> dict:
        """The counts as check.Outcome's keyword arguments."""
        return dict(invocations=self.invocations, skipped=self.skipped, copied=self.copied,
                    upstream_skipped=self.upstream_skipped, ran=self.ran, dispatched=self.dispatched)


def pass_counts(stats: dict | None) -> dict[str, PassCounts]:
    """Pass -> its counts, for every pass called in the lowering, keyed by the class's qualified
    name (``module.Qualname``): two classes can share a ``__name__`` (the Arm passes and the
    backends/transforms helpers they subclass), and each must be credited with its own calls
    only. Records without one (an older fastpass) are keyed by their name."""
    out: dict[str, PassCounts] = {}
    for rec in (stats or {}).get("per_pass", []) or []:
        c = out.setdefault(rec.get("qualname") or rec.get("name"), PassCounts())
        c.invocations += 1
        c.skipped += int(bool(rec.get("skipped")) and rec.get("skip_reason") == "no-targeted-ops")
        c.copied += int(rec.get("copied", 0))
        c.upstream_skipped += int(rec.get("skip_reason") == "upstream-should_run_pass")
        c.ran += int(bool(rec.get("ran")))
        c.dispatched += int(rec.get("dispatched", 0))
    return out


def counts_of(counts: dict[str, PassCounts], cls: type) -> PassCounts:
    """One class's counts from `pass_counts`."""
    return counts.get(gp.qualname(cls)) or counts.get(cls.__name__) or PassCounts()


def _pass_stats(stats: dict | None, cls: type) -> PassCounts:
    return counts_of(pass_counts(stats), cls)


_OVERLOAD_REPR = re.compile(r"<\w*OpOverload: ([\w.]+)>")


def op_of_target(target: str) -> str:
    """`aten.add.Tensor` from a snapshot's node target (`<module>.<qualname>:<str(op)>`; an edge
    op's str() is `<EdgeOpOverload: aten.add.Tensor>: schema = ...`)."""
    found = _OVERLOAD_REPR.search(target)
    if found:
        return found.group(1)
    return target.rsplit(":", 1)[-1]


def input_ops(observation, pass_name: str) -> frozenset[str]:
    """The call_function ops of the graphs `pass_name` was given, as the harness snapshotted them
    (its pass manager's previous step). Nested calls a manager does not list are not seen."""
    if observation is None:
        return frozenset()
    ops: set[str] = set()
    previous: dict[tuple[str, str], str | None] = {}
    for step in observation.steps:
        key = (step.phase, step.manager)
        if step.pass_name == pass_name and step.index >= 0:
            snap = observation.snapshots.get(previous.get(key) or "")
            if snap is not None:
                ops |= {op_of_target(n.target) for n in snap.nodes if n.op == "call_function"}
        previous[key] = step.digest
    return frozenset(ops)


def pipeline_example(spec, cls: type | None, enabled: FeatureSet, stage: str, keep: Any = None,
                     copy_only: Any = ()) -> Outcome:
    """Stock vs fastpass (the features `enabled`) lowering with only `cls` (or the passes in `keep`) annotated;
    the passes in `copy_only` without their skip claim (passes.only)."""
    from verify.compare.comparison import compare_lowerings, relower_in_process
    from verify.lowering.lower import lower

    target = target_for(stage)
    with quiet():
        try:
            program = _program(spec, target)
        except Exception as exc:  # noqa: BLE001
            return Outcome(False, vacuous=f"export failed: {type(exc).__name__}: {exc}"[:300])
        stock = _stock(spec, target)
        with gp.only(keep if keep is not None else cls, copy_only):
            fast = lower(program, target, Mode.FASTPASS, features=enabled.names, reference_sets=0, trust=TRUST)
    comparison = compare_lowerings(stock, fast, relower_in_process(
        lambda: lower(program, target, Mode.STOCK, reference_sets=0)))
    own = _pass_stats(fast.fastpass_stats, cls) if cls is not None else PassCounts()
    counts = dict(own.outcome_fields(), stats=fast.fastpass_stats, observation=fast.observation)
    if not comparison.differs:
        vac = "" if stock.ok else "stock lowering failed (both modes fail alike)"
        return Outcome(False, vacuous=vac, **counts)
    if comparison.explained:
        return Outcome(False, vacuous=_stocks_own(comparison), stocks_own=True, **counts)
    where = comparison.first_divergence
    lines = [f"{name}: {'; '.join(comparison.checks[name].details[:3])}" for name in comparison.failed]
    return Outcome(True, comparison.failed, "\n".join(lines), where=where.label if where else None,
                   culprit=where.pass_name if where else None, **counts)


def _stocks_own(comparison) -> str:
    """Fastpass's difference is one stock makes itself: no evidence either way (vacuous)."""
    return f"not comparable: {comparison.explanation}"


def _order_dependent(recheck: OrderRecheck) -> str:
    """Fastpass gave what stock gives under another node order: no evidence either way (vacuous)."""
    return f"not comparable: {recheck.describe()}"


# ---------------------------------------------------------------------------------------------
# routes DIRECT and ANNOTATION


_EDGE = _Cache(8)


def edge_graph(spec, stage: str):
    """An edge-dialect GraphModule of `spec` (FP, or quantized for a quantized stage's target).
    Cached: passes are run on a retrace of it (`run_direct`), never on it."""
    return edge_program(spec, stage).graph_module


def edge_program(spec, stage: str):
    """The edge-dialect ExportedProgram `edge_graph` is the graph of (cached)."""
    return _EDGE.get((spec.fingerprint(), stage), lambda: _edge_program(spec, stage))


def _edge_program(spec, stage: str):
    import torch
    from executorch.exir import EdgeCompileConfig, to_edge

    module, inputs = spec.build()
    if target_for(stage).quantized:
        program = _program(spec, target_for(stage))
    else:
        program = torch.export.export(module.eval(), inputs)
    edge = to_edge(program, compile_config=EdgeCompileConfig(_check_ir_validity=False))
    return edge.exported_program()


def instantiate(cls: type, program_of: Callable[[], Any] | None = None) -> Any:
    """The pass, constructed as a pipeline would for the graph at hand: without arguments, with a
    TOSA specification, or with `program_of()` (the ExportedProgram whose graph it runs on; a
    retrace keeps the placeholder names its graph signature refers to), made only for a pass
    whose constructor takes it."""
    try:
        return cls()
    except TypeError:
        pass
    import inspect

    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"
              and p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
    if len(params) == 1 and "tosa" in params[0].name.lower():
        from executorch.backends.arm.tosa.specification import TosaSpecification

        return cls(TosaSpecification.create_from_string("TOSA-1.0+FP"))
    if len(params) == 1 and params[0].name == "exported_program" and program_of is not None:
        return cls(program_of())
    raise TypeError(f"cannot construct {cls.__name__} standalone (needs {', '.join(p.name for p in params)})")


_ATEN = _Cache(8)


def aten_graph(spec, stage: str):
    import torch

    def make():
        if target_for(stage).quantized:
            return _program(spec, target_for(stage)).graph_module
        module, inputs = spec.build()
        return torch.export.export(module.eval(), inputs).graph_module

    return _ATEN.get((spec.fingerprint(), stage), make)


def run_direct(spec, cls: type, stage: str, features: tuple[str, ...] | None):
    """The pass's output graph module (stock if `features` is None)."""
    import fastpass
    from executorch.exir.pass_base import ExportPass

    aten = gp.aten_level(cls)
    graph_module = aten_graph(spec, stage) if aten else edge_graph(spec, stage)
    # each run its own copy, made only for a pass that takes the program: it may write to it
    # (folding into a parameter)
    program_of = None if aten else (lambda: copy.deepcopy(edge_program(spec, stage)))
    ctx = contextlib.nullcontext() if features is None else fastpass.enabled(features=features, trust=TRUST)
    with gp.only(cls), ctx:
        if features is not None:
            fastpass.reset_stats()
        graph_module = ExportPass()(graph_module).graph_module
        res = instantiate(cls, program_of)(graph_module)
        out = res.graph_module if res is not None else graph_module
        stats = fastpass.stats() if features is not None else None
    return out, stats


_ANNOTATION_INPUTS = _Cache(8)


def annotation_input(spec, stage: str):
    """The graph module the quantizer's transform_for_annotation receives for `spec`, as
    prepare_pt2e hands it over: torch.export's module, conv/linear + batch norm fused."""
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import _fuse_conv_bn_, _fuse_linear_bn_

    def make():
        module, inputs = spec.build()
        graph_module = torch.export.export(module.eval(), inputs).module(check_guards=False)
        _fuse_conv_bn_(graph_module)
        _fuse_linear_bn_(graph_module)
        return graph_module

    return _ANNOTATION_INPUTS.get((spec.fingerprint(), stage), make)


def run_annotation(spec, cls: type, stage: str, features: tuple[str, ...] | None):
    """The quantizer's transform_for_annotation pipeline (ArmPassManager's, every pass built with
    tfa_pass=True, as prepare_pt2e runs it) on a copy of `spec`'s graph: stock if `features` is
    None, else with fastpass on and only `cls` annotated. Its output graph module and stats.

    Why: fastpass is on there whenever a user's script quantizes under it (`python -m fastpass
    run`), and a pass both pipelines invoke (`reach.quantizer_first`) is annotated once for both;
    its ATen-form ops (`aten.group_norm`) exist only there. The lowering stages quantize outside
    fastpass, so an annotation wrong only there (DecomposeGroupNormPass without group_norm) passed
    them all."""
    import fastpass

    from verify.lowering.quantize import RANDOM_GRAPH_CALIBRATION, quantizer_for

    quantizer = quantizer_for(target_for(stage), RANDOM_GRAPH_CALIBRATION)
    graph_module = copy.deepcopy(annotation_input(spec, stage))
    ctx = contextlib.nullcontext() if features is None else fastpass.enabled(features=features, trust=TRUST)
    with gp.only(cls), ctx:
        if features is not None:
            fastpass.reset_stats()
        out = quantizer.transform_for_annotation(graph_module)
        stats = fastpass.stats() if features is not None else None
    return out, stats


def _snapshot(graph_module):
    from verify.lowering.snapshot import GraphIds, take_snapshot

    return take_snapshot(graph_module, GraphIds(), full_provenance=True)


def direct_example(spec, cls: type, enabled: FeatureSet, stage: str, how: Route = Route.DIRECT) -> Outcome:
    """Stock vs fastpass (the features `enabled`) output of the pass alone (`how` DIRECT: run
    standalone on the graph `spec` exports to) or of the quantizer's transform_for_annotation
    pipeline with only the pass annotated (ANNOTATION: `run_annotation`)."""
    output = "quantizer pipeline output" if how is Route.ANNOTATION else "pass output"
    if how is Route.ANNOTATION:
        def run(features):
            return run_annotation(spec, cls, stage, features)

        def graph():
            return annotation_input(spec, stage)
    else:
        def run(features):
            return run_direct(spec, cls, stage, features)

        def graph():
            return aten_graph(spec, stage) if gp.aten_level(cls) else edge_graph(spec, stage)
    with quiet():
        try:
            graph()
        except Exception as exc:  # noqa: BLE001
            return Outcome(False, vacuous=f"export failed: {type(exc).__name__}: {exc}"[:300])
        errors = []
        outs = []
        for features in (None, enabled.names):
            try:
                outs.append(run(features))
                errors.append(None)
            except Exception as exc:  # noqa: BLE001
                outs.append((None, None))
                errors.append("".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[0])
    ops = frozenset(gp.op_name(n.target) for n in graph().graph.nodes if n.op == "call_function")
    counts = dict(_pass_stats(outs[1][1], cls).outcome_fields(), input_ops=ops)
    if errors[0] or errors[1]:
        if errors[0] == errors[1]:
            return Outcome(False, vacuous=f"pass fails in both modes: {errors[0]}", **counts)
        return Outcome(True, ["outcome"], f"outcome: stock: {errors[0] or 'ok'}; fast: {errors[1] or 'ok'}",
                       output, cls.__name__, **counts)
    # One pass's output, not a lowering: its snapshot checks (a view of verify.compare's), and
    # the same node-order recheck policy over them.
    found = snapshot_differences(_snapshot(outs[0][0]), _snapshot(outs[1][0]))
    if not found:
        return Outcome(False, **counts)
    with quiet():
        stock_orders = under_each_order(lambda: _snapshot(run(None)[0]))
    recheck = recheck_orders(stock_orders, _snapshot(outs[1][0]), snapshot_differences,
                             lambda _stock, _differing: Divergence(output))
    if recheck.explains:
        return Outcome(False, vacuous=_order_dependent(recheck), stocks_own=True, **counts)
    detail = "\n".join(f"{name}: {'; '.join(d[:3])}" for name, d in found.items())
    return Outcome(True, list(found), detail, output, cls.__name__, **counts)


def example(spec, cls: type, enabled: FeatureSet, stage: str, how: Route) -> Outcome:
    if how is Route.PIPELINE:
        return pipeline_example(spec, cls, enabled, stage)
    return direct_example(spec, cls, enabled, stage, how)
