"""Create a copied node as a retrace would, without entering the old node's meta context.

Why: for every node it interprets, ``Interpreter.run_node`` first enters
``fx_traceback.set_current_meta(node)``, which copies ``node.meta`` and builds a fresh
``NodeSource`` for it; ``TracerBase.create_node`` then copies each of torch's
``_COPY_META_FIELDS`` out of that context (``copy.copy``), asks autograd for a sequence number
and logs.  For a node the copy path emits, every one of those values is overwritten a moment
later: ``_ExportPassBase._fx`` ends with ``meta.update(<the old node's meta>)``, and the context
holds exactly the old node's keys (``from_node`` included, when the old node has one).  What
survives is the *key order* those steps leave in the new node's ``meta``, ``seq_nr`` when the
old node has none, and the tracer's ``node_name_to_scope`` entry.  ``create_copied_node``
produces exactly that, for about a third of the cost of a copied node.  When the old node's
keys already begin with what ``create_node`` would write (the form every retrace leaves), that
order is the old meta's own, and the copy writes nothing before the update.

``applies`` names the conditions that make this exact; wherever one fails, the copy path takes
the stock route inside the node's meta context instead (``_copy._emit_copy``).  Mirrors torch
2.13.0: ``TracerBase.create_node``, ``_get_seq_nr`` and ``PythonKeyTracer.create_node``.

Placeholders are simpler still: ``_ExportPassBase.placeholder`` replaces the new node's whole
``meta`` with a copy of the old one's, so nothing the meta context or ``create_node`` writes
there survives at all (``create_placeholder``, where ``applies_to_placeholder``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Dict, Tuple

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import PythonKeyTracer, _should_save_eager_input_vals
from torch.fx.proxy import _COPY_META_FIELDS

# TracerBase.create_node logs every node it creates at DEBUG on this logger.
_PROXY_LOG = logging.getLogger("torch.fx.proxy")
_SAVES_EAGER_INPUT_VALS: Dict[Any, bool] = {}
_NAME_CANDIDATE: Dict[Any, str] = {}


def _saves_eager_input_vals(target: Any) -> bool:
    """``PythonKeyTracer.create_node`` adds ``eager_input_vals`` for these targets.  For an
    operator (the only targets the copy path emits) the answer depends on the target and, for a
    custom op without a layout tag, on ``torch._functorch.config.custom_op_default_layout_constraint``
    (read when the answer is cached: ``forget_config_answers`` drops them when fastpass is enabled)."""
    r = _SAVES_EAGER_INPUT_VALS.get(target)
    if r is None:
        r = _SAVES_EAGER_INPUT_VALS[target] = bool(_should_save_eager_input_vals(target, None))
    return r


def forget_config_answers() -> None:
    """Drop the cached answers that read torch's config (``_saves_eager_input_vals``): a caller may
    change it between lowerings, and fastpass takes it as it is when a lowering starts."""
    _SAVES_EAGER_INPUT_VALS.clear()


def name_candidate(graph: torch.fx.Graph, target: Any) -> str:
    """The name ``_ExportPassBase._fx`` asks for (an ``OpOverload``'s packet name) or, for other
    operators, the one ``Graph.create_node`` derives from the target: the same string either
    way, and a pure function of the target on a stock ``Graph``."""
    r = _NAME_CANDIDATE.get(target)
    if r is None:
        if isinstance(target, torch._ops.OpOverload):
            r = graph._target_to_str(target.overloadpacket.__name__)
        else:
            r = graph._target_to_str(target)
        _NAME_CANDIDATE[target] = r
    return r


def applies(tracer: Any, old_meta: Dict[str, Any], target: Any) -> bool:
    """Whether ``create_copied_node`` gives what ``set_current_meta(old)`` + the tracer's
    ``create_node`` + ``meta.update(old_meta)`` give: node meta is being preserved (as
    ``ExportPass.call_submodule`` does), nothing replays or preserves sequence numbers, the old
    node has ``from_node`` (so the context's fresh ``NodeSource`` is overwritten), the tracer
    and graph are the stock classes with stack-trace recording and mutation checks off, and none
    of the rarely used branches of ``create_node`` would add a key of its own -- except
    ``eager_input_vals``, when the old node has that key too: ``PythonKeyTracer.create_node``
    writes it for an op that needs exact strides (``quantized_decomposed``'s quantize and
    dequantize ops are such ops: about 500 of SleepNet's nodes when ``to_edge`` retraces
    them), and the update then writes the old node's value over it.  What the stock key holds
    is a detached snapshot of each argument's value (``extract_val``), made and dropped."""
    if not fx_traceback.should_preserve_node_meta or fx_traceback._should_preserve_node_meta:
        return False
    if fx_traceback.current_replay_node is not None or "from_node" not in old_meta:
        return False
    if type(tracer).create_node is not PythonKeyTracer.create_node or type(tracer.graph) is not torch.fx.Graph:
        return False
    if tracer.check_mutable_operations or tracer.record_stack_traces or _PROXY_LOG.isEnabledFor(logging.DEBUG):
        return False
    if old_meta.get("in_grad_fn", 0) > 0 or old_meta.get("autograd_backward", False):
        return False
    stack_trace = old_meta.get("stack_trace")
    if stack_trace and fx_traceback.GRADIENT_ACC_SPECIAL_STACK in stack_trace:
        return False
    return not _saves_eager_input_vals(target) or "eager_input_vals" in old_meta


def create_copied_node(tracer: Any, old_meta: Dict[str, Any], target: Any, args: tuple,
                       kwargs: dict, create_in_graph: Any) -> torch.fx.Node:
    """The node ``tracer.create_node("call_function", target, args, kwargs)`` creates inside
    ``set_current_meta(<old node>)``, with its meta keys in the order that leaves; the caller
    then updates the meta from ``old_meta`` and sets ``val``, as ``_fx`` does.  Only where
    ``applies``.  ``create_in_graph(graph, target, args, kwargs, name)``: ``Graph.create_node``."""
    node = create_in_graph(tracer.graph, target, args, kwargs, name_candidate(tracer.graph, target))
    tracer.node_name_to_scope[node.name] = (tracer.scope.module_path, tracer.scope.module_type)
    stack_trace = old_meta.get("stack_trace")
    saves_inputs = _saves_eager_input_vals(target)
    if _keys_lead_with_what_create_node_writes(tuple(old_meta), bool(stack_trace), saves_inputs):
        return node  # the update that follows puts every key where create_node would
    meta = node.meta
    if stack_trace:
        meta["stack_trace"] = stack_trace
    for field in _COPY_META_FIELDS:
        if field in old_meta:
            meta[field] = old_meta[field]
    # _get_seq_nr's forward branch; the update that follows keeps the old node's, if it has one.
    meta["seq_nr"] = old_meta["seq_nr"] if "seq_nr" in old_meta else torch.autograd._get_sequence_nr() - 1
    if saves_inputs:  # PythonKeyTracer.create_node's key, last; ``applies``: the update overwrites it
        meta["eager_input_vals"] = old_meta["eager_input_vals"]
    return node


_LEADS: Dict[Tuple[Tuple[str, ...], bool, bool], bool] = {}


def _keys_lead_with_what_create_node_writes(keys: Tuple[str, ...], writes_stack_trace: bool,
                                            writes_eager_input_vals: bool = False) -> bool:
    """Whether an old meta with these keys (in this order) begins with exactly the keys the
    tracer's ``create_node`` writes for its copy (``stack_trace`` if truthy, the
    ``_COPY_META_FIELDS`` it has, ``seq_nr``, then ``eager_input_vals`` for an op that needs
    exact strides), and has ``seq_nr`` (so no value of create_node's own survives).  Then
    ``meta.update(old_meta)`` into the empty meta gives the very keys, order and values that
    create_node's writes followed by the same update give.  A retrace's own nodes have this
    form, so it holds for nearly every node after the first retrace; the answer depends on the
    key sequence alone and is cached."""
    key = (keys, writes_stack_trace, writes_eager_input_vals)
    r = _LEADS.get(key)
    if r is None:
        lead = (["stack_trace"] if writes_stack_trace else []) + [f for f in _COPY_META_FIELDS if f in keys]
        lead.append("seq_nr")
        if writes_eager_input_vals:
            lead.append("eager_input_vals")
        r = _LEADS[key] = list(keys[: len(lead)]) == lead
    return r


@functools.lru_cache(maxsize=None)
def _stock_placeholder_and_tracer() -> Tuple[Any, type]:
    from executorch.exir.pass_base import ExportPass, _ExportPassBase

    return _ExportPassBase.placeholder, ExportPass.ExportTracer


def applies_to_placeholder(pass_: Any, tracer: Any) -> bool:
    """Whether ``create_placeholder`` gives what the interpreter's ``placeholder`` gives: the pass
    keeps ``_ExportPassBase.placeholder``, the tracer and graph are the stock classes (so
    ``create_proxy("placeholder", name, (), {})`` only creates the node, names it and records
    its scope), and neither stack-trace recording nor debug logging is on."""
    stock_placeholder, stock_tracer = _stock_placeholder_and_tracer()
    return (type(pass_).placeholder is stock_placeholder
            and type(tracer) is stock_tracer and type(tracer.graph) is torch.fx.Graph
            and not tracer.record_stack_traces and not _PROXY_LOG.isEnabledFor(logging.DEBUG))


def create_placeholder(tracer: Any, target: str, old_meta: Dict[str, Any], value: Any,
                       create_in_graph: Any) -> torch.fx.Node:
    """The node ``_ExportPassBase.placeholder(target, value, NodeMetadata(old_meta))`` creates:
    named from its target, ``meta`` a copy of ``old_meta`` with ``val`` set.  Only where
    ``applies_to_placeholder``.  ``create_in_graph(graph, op, target)``: ``Graph.create_node``
    without arguments."""
    node = create_in_graph(tracer.graph, "placeholder", target)
    tracer.node_name_to_scope[node.name] = (tracer.scope.module_path, tracer.scope.module_type)
    node.meta = old_meta.copy()  # through Node.__setattr__, as stock assigns it
    node.meta["val"] = value
    return node
