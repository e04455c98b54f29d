"""Create a node a pass dispatches as ``_ExportPassBase._fx`` creates it, without the tracer's
generic ``create_proxy``.

Why: a node that must be dispatched (its op is targeted, its inputs changed, or it has no
creation signature: every node a surgery made) costs ~0.65 ms in a SleepNet U55 lowering, and a
third of that is not the FakeTensor dispatch but ``_fx``'s bookkeeping around it: a pytree walk
that turns the arguments' ``ProxyValue``s into proxies, ``TracerBase.create_arg``'s recursive
conversion of them into nodes (a chain of four tracer classes' ``isinstance`` checks per
element) and ``create_node``'s copying of the node's meta context, every value of which the
``meta.update`` that ends ``_fx`` overwrites.  The copy path already creates its nodes without
those steps (``_emit``); this does the same for dispatched ones, after a stock dispatch.

Both export pass bases get it: executorch's (every ExportPass and ARM pass) and torch's (to_edge's
ReplaceViewOpsWithViewCopyOpsPass), whose ``_fx`` differ only in the unbacked-symbol bindings
torch's records after the update.  Exact where the copy path's node creation is: the arguments
hold only ``ProxyValue``s of proxies, plain leaves, and tuples, lists and str-keyed dicts of
them (``_walk``: what ``create_arg`` returns for those shapes; anything else goes the stock way),
the tracer is the pass base's stock ``ExportTracer``, ``_emit.applies`` holds for the meta ``_fx`` was given, and
that meta is an unmodified copy of the node being interpreted (``_is_the_context``): then the
meta context ``create_node`` reads holds the very same keys and values, save the fresh
``from_node`` that the update overwrites, so the argument ``_emit`` makes for a copied node
(whose context is its own old node) holds word for word.  A pass that hands ``_fx`` other meta
(a node it builds with a neighbour's meta, or with keys of its own) goes the stock way.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import torch
import torch.fx.traceback as fx_traceback
from torch.fx.experimental.symbolic_shapes import compute_unbacked_bindings
from torch.fx.immutable_collections import immutable_dict, immutable_list
from torch.utils import _pytree as pytree

from . import _emit, _sig

_FALLBACK = object()
_SCALAR_TYPES = frozenset({int, float, bool, complex})
_LEAF_TYPES = frozenset(
    {str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout}
)


class PassBase:
    """One of the two export pass bases whose ``_fx`` this replaces: its ``ProxyValue`` class,
    its stock tracer class and whether its ``_fx`` records unbacked bindings (torch's does),
    imported on first use (fastpass imports without either)."""

    __slots__ = ("_load", "ProxyValue", "ExportTracer", "binds_unbacked")

    def __init__(self, load: Callable[[], Any], binds_unbacked: bool) -> None:
        self._load, self.binds_unbacked = load, binds_unbacked
        self.ProxyValue: Any = None
        self.ExportTracer: Any = None

    def loaded(self) -> "PassBase":
        if self.ProxyValue is None:
            self.ProxyValue, self.ExportTracer = self._load()
        return self


def _exir_types() -> Any:
    from executorch.exir.pass_base import ExportPass, ProxyValue

    return ProxyValue, ExportPass.ExportTracer


def _torch_types() -> Any:
    from torch._export.pass_base import _ExportPassBaseDeprecatedDoNotUse
    from torch._export.pass_infra.proxy_value import ProxyValue

    return ProxyValue, _ExportPassBaseDeprecatedDoNotUse.ExportTracer


EXIR = PassBase(_exir_types, binds_unbacked=False)  # executorch.exir.pass_base._ExportPassBase
TORCH = PassBase(_torch_types, binds_unbacked=True)  # torch._export.pass_base._ExportPassBaseDeprecatedDoNotUse


def _walk(a: Any, proxy_value_cls: type, inputs: list) -> Any:
    """``(arg, weak)`` for one argument container of ``_fx`` (its args tuple, kwargs dict, or a
    tuple, list or dict inside them): ``arg`` is ``tracer.create_arg(tree_map_only(ProxyValue,
    .proxy, a))`` (a ``ProxyValue`` of a ``Proxy`` becomes its node; plain leaves stay; a tuple
    stays a tuple, a list or ``immutable_list`` becomes a list, a dict or ``immutable_dict`` a
    dict), ``weak`` is ``_sig._weak`` of it as the node will hold it, and each input's data is
    appended to ``inputs`` in ``_sig.proxy_inputs`` order.  ``_FALLBACK`` for any other shape."""
    t = type(a)
    if t is tuple or t is list or t is immutable_list:
        values, keys = a, None
    elif (t is dict or t is immutable_dict) and all(type(k) is str for k in a):
        values, keys = a.values(), list(a)
    else:
        return _FALLBACK
    out, weak = [], []
    for x in values:
        tx = type(x)
        if tx is proxy_value_cls:
            p = x.proxy_or_node
            if type(p) is not torch.fx.Proxy:  # stock `.proxy` raises: let it, the stock way
                return _FALLBACK
            inputs.append(x.data)
            node = p.node
            out.append(node)
            weak.append(weakref.ref(node))
        elif tx in _SCALAR_TYPES:
            out.append(x)
            weak.append((tx, x))
        elif tx in _LEAF_TYPES:
            out.append(x)
            weak.append(x)
        else:
            y = _walk(x, proxy_value_cls, inputs)
            if y is _FALLBACK:
                return _FALLBACK
            out.append(y[0])
            weak.append(y[1])
    if keys is not None:
        return dict(zip(keys, out)), tuple(zip(keys, weak))
    return (tuple(out), tuple(weak)) if t is tuple else (out, weak)


def _stock_tracer(tracer: Any, base: PassBase) -> bool:
    """Whether the pass traces with its pass base's own ``ExportTracer``: a pass may bring a
    subclass whose ``create_arg``, ``create_proxy`` or ``proxy`` does more."""
    return type(tracer) is base.ExportTracer


def _is_the_context(meta: dict) -> bool:
    """Whether ``meta`` holds the keys and values (the very objects) of the meta context
    ``create_node`` reads, but ``from_node``, which ``set_current_meta`` makes anew and the
    update overwrites (``_emit.applies`` asks ``meta`` to have one)."""
    current = fx_traceback.get_current_meta()
    if len(current) != len(meta):
        return False
    for key, value in meta.items():
        if key == "from_node":
            if key not in current:
                return False
        elif current.get(key, _FALLBACK) is not value:
            return False
    return True


def wrap_fx(original: Callable[..., Any], base: PassBase, record_signatures: Callable[[], bool],
            emit_on: Callable[[], bool], create_in_graph: Callable[..., Any]) -> Callable[..., Any]:
    """The replacement of ``base``'s ``_fx``: stock, with the creation signature recorded where
    ``record_signatures()`` (skip, copy), and a dispatched ``call_function`` node created without
    ``create_proxy`` where ``emit_on()`` and the conditions above hold.  ``create_in_graph``:
    ``Graph.create_node`` for arguments of plain shape (``_copy._create_plain``)."""

    def fx(self, kind, target, args, kwargs, meta):  # noqa: ANN001
        record = record_signatures()
        if kind == "call_function" and emit_on():
            res = _fx_emitting(self, base.loaded(), target, args, kwargs, meta, create_in_graph, record)
            if res is not None:
                return res
        res = original(self, kind, target, args, kwargs, meta)
        if record:
            try:
                node = res.node
            except Exception:
                return res
            _sig.record(node, _sig.proxy_inputs(args, kwargs, base.loaded().ProxyValue))
        return res

    return fx


def _fx_emitting(self: Any, base: PassBase, target: Any, args: Any, kwargs: Any, meta: Any,
                 create_in_graph: Callable[..., Any], record_signatures: bool) -> Any:
    """``_fx(self, "call_function", ...)`` of ``base`` (executorch 1.5.1's and torch 2.13.0's,
    line by line) with its node made by ``_emit.create_copied_node``; None (nothing done) where
    that is not exact."""
    tracer = self.tracer
    data = meta.data
    if not _stock_tracer(tracer, base) or not _emit.applies(tracer, data, target):
        return None
    if not _is_the_context(data):
        return None
    ProxyValue = base.ProxyValue
    inputs: list = []
    walked_args = _walk(args, ProxyValue, inputs)
    if walked_args is _FALLBACK or type(walked_args[0]) is not tuple:
        return None
    walked_kwargs = _walk(kwargs, ProxyValue, inputs)
    if walked_kwargs is _FALLBACK or type(walked_kwargs[0]) is not dict:
        return None
    args_data, kwargs_data = pytree.tree_map_only(ProxyValue, lambda x: x.data, (args, kwargs))
    res_data = self.interpreter.call_function(target, args_data, kwargs_data)
    node = _emit.create_copied_node(tracer, data, target, walked_args[0], walked_kwargs[0], create_in_graph)
    res_proxy = tracer.proxy(node)
    node.meta.update(data)
    if base.binds_unbacked and self.fake_tensor_mode and (shape_env := self.fake_tensor_mode.shape_env):
        if symbol_to_path := compute_unbacked_bindings(shape_env, res_data):
            node.meta["unbacked_bindings"] = symbol_to_path
    tracer.set_metadata(node, res_data)
    if record_signatures:
        _sig.record_walked(node, walked_args[1], walked_kwargs[1], tuple(inputs))
    return ProxyValue(res_data, res_proxy)
