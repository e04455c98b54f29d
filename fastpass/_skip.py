"""Decide whether a pass invocation can be skipped without changing output.

Why this is more than "no targeted op present": stock runs a retracing
ExportPass even when it has nothing to do, and a retrace is *not* always the
identity -- it renames nodes canonically (``_target_to_str`` + a fresh
namespace), recomputes ``val``/``tensor_meta`` by dispatch, and adds
provenance to nodes lacking ``from_node``.  After in-place graph surgery by a
non-retracing pass, skipping the next retrace could therefore change names
(which end up in the TOSA flatbuffer) or metadata.

So we skip only when (1) the annotation says the pass is skip-sound, (2) none
of its targeted ops occurs in the graph (one with submodules is never skipped: (3)), and (3) the
graph is a *retrace fixed point* (``is_fixed_point``): every node's ``val`` is
still the one dispatch produced from its current inputs (creation signatures,
see ``_sig``), ``tensor_meta`` is what ``set_metadata`` writes, every
non-placeholder node already carries ``from_node`` and has its meta keys in the
order a retrace would write them, names are exactly what a
fresh retrace would assign, and there are no get_attr nodes or submodules.
Under (3) a retrace reproduces the same graph, so returning the input
unchanged -- ``PassResult(graph_module, False)``, as upstream
``ArmPass.__call__`` does for ``should_run_pass() == False`` -- is exact.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import torch
from torch.fx import GraphModule, Node
from torch.utils import _pytree as pytree

from . import _emit, _sig
from .annotations import LITERAL, OpFamily


def graph_has_targets(gm: GraphModule, ops: Iterable[Any]) -> bool:
    """Whether the top-level graph calls one of ``ops``.  Submodules are not searched: a graph
    module with any child is never a fixed point (``is_fixed_point``), so it is never skipped."""
    graph = gm.graph
    if isinstance(ops, OpFamily):  # its rules, not its known members, say what it targets
        return any(node.op == "call_function" and ops.targets_call(node.target, node.args, node.kwargs, _node_val)
                   for node in graph.nodes)
    return any(graph.find_nodes(op="call_function", target=op, sort=False) for op in ops)


def _node_val(arg: Any) -> Any:
    """A call rule's view of a node argument (``OpFamily``): its ``val``; a literal is ``LITERAL``."""
    return arg.meta.get("val") if isinstance(arg, Node) else LITERAL


def _canonical_candidate(graph: torch.fx.Graph, node: Node) -> Optional[str]:
    """The name a retrace asks for: a placeholder's or the output's from its target, an operator
    call's as ``_ExportPassBase._fx`` derives it (``_emit.name_candidate``)."""
    if node.op in ("placeholder", "output"):
        return graph._target_to_str(node.target)
    if node.op == "call_function":
        return _emit.name_candidate(graph, node.target)
    return None


def _names_canonical(gm: GraphModule) -> bool:
    scratch = torch.fx.Graph()
    ns = scratch._graph_namespace
    for node in gm.graph.nodes:
        cand = _canonical_candidate(scratch, node)
        if cand is None:
            return False
        name = ns.create_name(cand, None)
        ns.associate_name_with_obj(name, object())
        if name != node.name:
            return False
    return True


def _meta_order_stable(node: Node) -> bool:
    """Would a retrace keep this node's meta key order?  ``create_node`` first
    writes ``stack_trace`` (not for output nodes: PythonKeyTracer drops it)
    and the ``_COPY_META_FIELDS`` found in the current meta (``from_node``
    always), then ``_fx`` does ``meta.update(old_meta)``."""
    from torch.fx.proxy import _COPY_META_FIELDS

    meta = node.meta
    prefix = []
    if node.op != "output" and meta.get("stack_trace"):
        prefix.append("stack_trace")
    for f in _COPY_META_FIELDS:
        if f in meta:
            prefix.append(f)
    keys = list(meta)
    return keys[: len(prefix)] == prefix


def is_fixed_point(gm: GraphModule) -> bool:
    """True if a plain retrace of ``gm`` would reproduce it exactly."""
    for _ in gm.children():
        return False  # submodules / lowered modules: not analysed
    for node in gm.graph.nodes:
        op = node.op
        if op == "placeholder":
            continue
        # Only call_function nodes have creation signatures (and _names_canonical refuses any
        # kind other than placeholder/call_function/output): a get_attr or call_module node
        # ends the check here.
        sig = _sig.get_valid(node)
        if sig is None or "from_node" not in node.meta or not _meta_order_stable(node):
            return False
        if op == "output":
            continue
        if "tensor_meta" not in node.meta:
            return False
        tm = node.meta["tensor_meta"]
        if not all(x is None for x in pytree.tree_leaves(tm)):
            return False
        # A valid signature means the node's args are those it was created with; its Node
        # inputs then were ProxyValues (get_attr nodes, the other kind, ended the check above),
        # so the two sequences have the same length.
        for inp, data in zip(_sig.input_nodes(node), sig[_sig.IN_DATA]):
            if not _sig.same_leaves(data, inp.meta.get("val", None)):
                return False
    return _names_canonical(gm)
