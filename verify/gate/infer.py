"""Infer the minimal copy-sound `targeted_ops` of a pass by watching it work.

The pass runs stock (no fastpass) on a corpus of edge-dialect graphs. An *input* node counts as
rewritten, and its op as targeted, if the pass

* removes it, or changes its target, args/kwargs or meta (other than `val`/`tensor_meta`/
  provenance) before its retrace, in `call()` (compared by node name), or
* while retracing (`ExportPass.ExportInterpreter`), emits for it anything but exactly one node
  with the same target, the images of the same args/kwargs, and the same meta apart from `val`,
  `tensor_meta` and provenance (`from_node`). A node whose only change is its `val` -- the
  knock-on effect of an upstream rewrite -- is not counted: fastpass's copy path re-dispatches
  such nodes, so the pass need not target them.

For a pass that does not retrace at all, the input graph is compared with its output by name.
The result is a lower bound from the corpus: ops the corpus never contains cannot be judged.

The pass is watched through one patch point (`patch_points()`, installed with
`fastpass.patching` for the duration of `watch`; it calls the stock `run_node` for every node):

| owner | attribute | why |
|---|---|---|
| `executorch.exir.pass_base._ExportPassBase.ExportInterpreter` | `run_node` | sees each input node of the watched pass's top-level retrace and what it emits for it |
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from fastpass.patching import PatchPoint, Patches
from verify.gate import check
from verify.gate import passes as gp
from verify.report.infer import InferredAnnotation
from verify.vocabulary import AnnotationFit

_META_IGNORED = {"val", "tensor_meta", "from_node", "seq_nr", "unbacked_bindings"}


def _arg_key(a: Any) -> Any:
    if isinstance(a, torch.fx.Node):
        return ("node", a.name)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, tuple(_arg_key(x) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _arg_key(v)) for k, v in a.items()))
    return ("value", repr(a))


def _meta_key(node: torch.fx.Node) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in node.meta.items() if k not in _META_IGNORED))


def graph_by_name(graph_module) -> dict[str, tuple]:
    return {n.name: (n.op, n.target, _arg_key(n.args), _arg_key(n.kwargs), _meta_key(n))
            for n in graph_module.graph.nodes}


def diff_by_name(before: dict, after: dict) -> set:
    """Targets of call_function nodes of `before` that `after` lacks or changed."""
    out = set()
    for name, rec in before.items():
        if rec[0] != "call_function":
            continue
        if after.get(name) != rec:
            out.add(rec[1])
    return out


def _image(env_value: Any) -> Any:
    from executorch.exir.pass_base import ProxyValue

    if isinstance(env_value, ProxyValue):
        p = env_value.proxy_or_node
        return p.node if isinstance(p, torch.fx.Proxy) else p
    return env_value


def _map_args(a: Any, env: dict) -> Any:
    if isinstance(a, torch.fx.Node):
        return _image(env.get(a))
    if isinstance(a, tuple):
        return tuple(_map_args(x, env) for x in a)
    if isinstance(a, list):
        return [_map_args(x, env) for x in a]
    if isinstance(a, dict):
        return {k: _map_args(v, env) for k, v in a.items()}
    return a


def _same_args(new: Any, old: Any) -> bool:
    if isinstance(new, torch.fx.Node) or isinstance(old, torch.fx.Node):
        return new is old
    if isinstance(new, (list, tuple)) and isinstance(old, (list, tuple)):
        return len(new) == len(old) and all(_same_args(x, y) for x, y in zip(new, old))
    if isinstance(new, dict) and isinstance(old, dict):
        return new.keys() == old.keys() and all(_same_args(new[k], old[k]) for k in new)
    try:
        return type(new) is type(old) and bool(new == old)
    except Exception:  # noqa: BLE001
        return False


def _watching_run_node(original: Any, pass_instance: Any, record: dict) -> Any:
    def run_node(self, n):
        if self.callback is not pass_instance:
            return original(self, n)
        if record["top"] is None:
            record["top"] = self.module
        if self.module is not record["top"]:
            return original(self, n)  # nested control-flow submodule
        if n.op == "placeholder" and n is next(iter(self.module.graph.nodes)):
            record["retraced"] = True
            record["pre_retrace"].append(graph_by_name(self.module))
        graph = self.callback.tracer.graph
        before = len(graph.nodes)
        res = original(self, n)
        if n.op != "call_function":
            return res
        new = list(graph.nodes)[before:]
        ok = (len(new) == 1 and new[0].op == "call_function" and new[0].target == n.target
              and _same_args(new[0].args, _map_args(n.args, self.env))
              and _same_args(new[0].kwargs, _map_args(n.kwargs, self.env))
              and _meta_key(new[0]) == _meta_key(n))
        if ok:
            try:
                ok = _image(res) is new[0]
            except Exception:  # noqa: BLE001
                ok = False
        if not ok:
            record["rewritten"].add(n.target)
        return res

    return run_node


def patch_points(pass_instance: Any, record: dict) -> list[PatchPoint]:
    """The watch's table (the module docstring shows it)."""
    from executorch.exir.pass_base import _ExportPassBase

    return [
        PatchPoint(_ExportPassBase.ExportInterpreter, "run_node", (),
                   wrap=lambda original: _watching_run_node(original, pass_instance, record), inherited=True,
                   why="sees each input node of the watched pass's top-level retrace and what it emits for it"),
    ]


# One watched pass at a time (a nested watch would judge the inner pass's nodes twice).
PATCHES = Patches("verify.gate.infer.watch", "leave the enclosing watch block")


@contextlib.contextmanager
def watch(pass_instance: Any):
    """Record, for the pass's top-level retrace(s), which input nodes it rewrites."""
    record = {"rewritten": set(), "retraced": False, "pre_retrace": [], "top": None}
    PATCHES.install(patch_points(pass_instance, record))
    try:
        yield record
    finally:
        PATCHES.restore()


def rewritten_ops(cls: type, spec, stage: str) -> tuple[set, set]:
    """(ops the pass rewrote on this graph, call_function ops the graph contained)."""
    from executorch.exir.pass_base import ExportPass

    with check.quiet():
        graph_module = check.edge_graph(spec, stage)
        graph_module = ExportPass()(graph_module).graph_module
        present = {n.target for n in graph_module.graph.nodes if n.op == "call_function"}
        before = graph_by_name(graph_module)
        instance = check.instantiate(cls)
        with watch(instance) as record:
            res = instance(graph_module)
        out = res.graph_module if res is not None else graph_module
    found = set(record["rewritten"])
    if record["pre_retrace"]:
        found |= diff_by_name(before, record["pre_retrace"][0])
    else:
        found |= diff_by_name(before, graph_by_name(out))
    return found, present


def infer(cls: type, examples: int = 30, stage: str = "edge-fp", max_ops: int = 4, ops: list[str] | None = None,
          seed: int = 0) -> InferredAnnotation:
    from fastpass.annotations import lookup
    from hypothesis import HealthCheck, given, settings

    from verify.gate.graphs import form_route, strategy_for

    gp.ensure_annotation(cls)
    ann = lookup(cls)
    rewritten: set = set()
    seen: set = set()
    errors: list[str] = []
    graphs = {"n": 0}

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=("generate",))
    @given(strategy_for(gp.aimed_ops(cls, ann.targeted_ops), max_ops, ops, suspects=gp.ops_named_by(cls),
                        forms=form_route(cls, ops)))
    def explore(spec):
        graphs["n"] += 1
        try:
            found, present = rewritten_ops(cls, spec, stage)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200])
            return
        rewritten.update(found)
        seen.update(present)

    explore()
    inferred = sorted({gp.op_name(o) for o in rewritten})
    annotated = sorted({gp.op_name(o) for o in ann.targeted_ops})
    seen_names = {gp.op_name(o) for o in seen}
    missing = sorted(set(inferred) - set(annotated))
    extra = sorted(set(annotated) - set(inferred))
    if not (ann.copy_sound or ann.skip_sound) and not ann.targeted_ops:
        fit = AnnotationFit.NO_ANNOTATION
    elif missing:
        fit = AnnotationFit.TOO_SMALL
    elif [o for o in extra if o in seen_names]:
        fit = AnnotationFit.LARGER_THAN_NEEDED
    else:
        fit = AnnotationFit.EQUAL
    return InferredAnnotation(
        pass_name=gp.qualname(cls), stage=stage, graphs=graphs["n"], graphs_failed=len(errors),
        errors=tuple(sorted(set(errors))[:5]), inferred=tuple(inferred), annotated=tuple(annotated),
        skip_sound=ann.skip_sound, copy_sound=ann.copy_sound, source=ann.source, fit=fit, missing=tuple(missing),
        not_needed=tuple(o for o in extra if o in seen_names), not_observed=tuple(o for o in extra if o not in seen_names),
        ops_in_corpus=tuple(sorted(seen_names)))
