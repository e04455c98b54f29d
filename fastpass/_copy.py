"""Emit cold nodes without FakeTensor dispatch, byte-identically.

Why: in a retracing ExportPass every node goes through ``call_operator`` ->
``_fx`` -> FakeTensor dispatch (~0.4 ms), although for a copy-sound pass the
output of a node whose op is not targeted is, by definition, just the dispatch
of that op.  If the node's creation signature (``_sig``) is still valid and
its current inputs are metadata-identical to the inputs its ``val`` was
computed from, dispatch would reproduce that ``val`` -- so we reuse it.

On the common route (``_copy_from_env``) one walk over the old node's own arguments checks them
against the signature, looks each Node up in the interpreter's environment and builds the new
node's arguments, its input values and its next signature; what that walk does not handle goes
the general route (``_try_copy``), from the fetched arguments, as the stock ``run_node`` fetches
them.  The node itself is still built exactly like ``_ExportPassBase._fx`` builds it
(``TracerBase.create_proxy`` = ``create_arg`` + ``tracer.create_node`` +
``tracer.proxy``, with ``create_arg`` replaced by an equivalent converter for
the plain argument shapes cold nodes have; same ``name`` derivation, same meta
update order, same ``set_metadata`` result), so names, ``from_node``/
``stack_trace``/``nn_module_stack`` and ``tensor_meta`` match the full path.  The copy happens
in ``run_node``, before the interpreter enters the node's meta context; where ``_emit.applies``
the node is created without that context (whose every value ``_fx`` overwrites), and inside it
otherwise.  Placeholders of a copy-sound retrace are created the same way.  Anything unusual
falls back to the stock path: no/invalid signature, an input whose metadata
differs (an upstream targeted node changed shape/dtype/stride/...; this is the
re-dispatch rule), symbolic shapes, FakeTensor constants, a different fake
mode, aliasing ops whose inputs are not the very same objects, the two ops
``ArmPass.call_operator`` special-cases, and nested submodules.

This module also hosts ``wrap_node_copy`` (hands a signature on to a node's copy), a hook both
*copy* and *skip* need; the signatures of dispatched nodes are recorded by
``_dispatched.wrap_fx``.  The retrace-depth tracking the copy path relies on is
``_passcall.wrap_call_submodule``.
"""

from __future__ import annotations

import weakref
from time import perf_counter
from typing import Any, Callable, Dict, Optional, Tuple

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.graph import _illegal_char_regex, _illegal_names, _name_regex, _Namespace
from torch.utils import _pytree as pytree

from . import _context, _emit, _sig
from .annotations import LITERAL, OpFamily

_NEVER_COPY: Optional[frozenset] = None
_ALIAS_CACHE: Dict[Any, bool] = {}


def _never_copy() -> frozenset:
    global _NEVER_COPY
    if _NEVER_COPY is None:
        from executorch.exir.dialects._ops import ops as exir_ops

        # ArmPass.call_operator computes these vals without dispatch.
        _NEVER_COPY = frozenset(
            {exir_ops.edge.aten.bmm.default, exir_ops.edge.aten.leaky_relu.default}
        )
    return _NEVER_COPY


def _alias_kind(target: Any) -> str:
    """"" (no aliasing), "view" (outputs alias inputs) or "mutable" (writes an
    input: dispatch has side effects on input FakeTensors -> never copy)."""
    r = _ALIAS_CACHE.get(target)
    if r is None:
        # Only copy candidates get here (OpOverload/EdgeOpOverload: they always have a schema).
        # An aliased return always shares its alias set with an annotated argument, so looking
        # at the arguments alone classifies every op.
        arguments = target._schema.arguments
        if any(a.alias_info is not None and a.alias_info.is_write for a in arguments):
            r = "mutable"
        elif any(a.alias_info is not None for a in arguments):
            r = "view"
        else:
            r = ""
        _ALIAS_CACHE[target] = r
    return r


def _plain_shape(xs: Any) -> bool:
    for x in xs:
        if type(x) is not int:
            return False
    return True


def _tensor_same_meta(a: Any, b: Any) -> bool:
    if type(a) is not FakeTensor or type(b) is not FakeTensor:
        return False
    if a.constant is not None or b.constant is not None:
        return False
    sa, sb = a.shape, b.shape
    if not (_plain_shape(sa) and _plain_shape(sb)):
        return False
    return (
        tuple(sa) == tuple(sb)
        and a.dtype == b.dtype
        and a.stride() == b.stride()
        and a.storage_offset() == b.storage_offset()
        and a.device == b.device
        and a.requires_grad == b.requires_grad
        and a.layout == b.layout
        # no fake-mode test: the old val passed `val.fake_mode is mode`, and FakeTensor
        # dispatch refuses to mix modes, so the old inputs were in the tracer's mode too, as is
        # every new input (dispatched in it, a copied val, or a placeholder, which defines it)
    )


def _input_equivalent(new: Any, old: Any, need_identity: bool) -> bool:
    if new is old:
        return True
    if need_identity:
        return False
    if isinstance(old, FakeTensor):
        return _tensor_same_meta(new, old)
    if type(new) in (int, float, bool) and type(new) is type(old):
        return new == old
    if isinstance(new, (list, tuple)) and isinstance(old, (list, tuple)):
        return len(new) == len(old) and all(
            _input_equivalent(x, y, need_identity) for x, y in zip(new, old)
        )
    return False


def _val_copyable(val: Any, mode: Any) -> bool:
    leaves = pytree.tree_leaves(val)
    if not leaves:
        return False
    for x in leaves:
        if type(x) is not FakeTensor or x.constant is not None or x.fake_mode is not mode:
            return False
        if not _plain_shape(x.shape):
            return False
    return True


_FALLBACK = object()
_LEAF_TYPES = frozenset(
    {str, int, float, bool, complex, type(None), torch.dtype, torch.device,
     torch.memory_format, torch.layout}
)


_SCALAR_TYPES = frozenset({int, float, bool, complex})


def _walk_env(a: Any, weak: Any, env: Dict[Any, Any], proxy_value_cls: type, inputs: list) -> Any:
    """One walk over a copied node's argument container ``a`` (from the old node: its args
    tuple, its kwargs dict, or a list, tuple or dict inside them) that checks it against its
    signature's weak form ``weak`` (as ``_sig.matches_weak(a, weak, any_node=True)``) and gives
    the pair ``(arg, new_weak)``: ``arg`` is what the new node holds,
    ``tracer.create_arg(tree_map_only(ProxyValue, .proxy, <a fetched from env>))``, and
    ``new_weak`` is ``_sig._weak`` of it as the node will hold it (``Node`` turns lists and dicts
    into their immutable kinds, which ``_weak`` treats alike); each input's ProxyValue data is
    appended to ``inputs`` in ``_sig.proxy_inputs`` order.  Fetching, checking and converting took
    three walks.  ``_FALLBACK`` where the signature does not match, for a Node whose value is not
    a ProxyValue of a ``Proxy`` (or is missing: the stock route then raises stock's error), and
    for any argument shape but plain leaves, lists, tuples and str-keyed dicts.  The elements
    are walked by ``_walk_elements``."""
    t = type(a)
    if t is tuple or t is list or t is torch.fx.immutable_collections.immutable_list:
        if type(weak) is not (tuple if t is tuple else list) or len(weak) != len(a):
            return _FALLBACK
        walked = _walk_elements(a, weak, env, proxy_value_cls, inputs)
        if walked is _FALLBACK:
            return _FALLBACK
        return (tuple(walked[0]), tuple(walked[1])) if t is tuple else walked
    if t is dict or t is torch.fx.immutable_collections.immutable_dict:
        if type(weak) is not tuple or len(weak) != len(a):
            return _FALLBACK
        if not a:
            return {}, ()
        for k, pair in zip(a, weak):
            if type(k) is not str or type(pair) is not tuple or len(pair) != 2 or not (k is pair[0] or k == pair[0]):
                return _FALLBACK
        walked = _walk_elements(a.values(), [pair[1] for pair in weak], env, proxy_value_cls, inputs)
        if walked is _FALLBACK:
            return _FALLBACK
        return dict(zip(a, walked[0])), tuple(zip(a, walked[1]))
    return _FALLBACK


def _walk_elements(elements: Any, weaks: Any, env: Dict[Any, Any], proxy_value_cls: type, inputs: list) -> Any:
    """``_walk_env`` for the elements of one container against their weak forms: the lists
    ``(args, new_weaks)``, or ``_FALLBACK``.  Nodes and leaves, nearly every element, are handled
    in this loop, one call per container instead of one per element (measured on SleepNet's
    copied nodes: 2.3 -> 1.6 us per node of a copy's ~13); a nested container goes back to
    ``_walk_env``."""
    out, new_weak = [], []
    for x, w in zip(elements, weaks):
        t = type(x)
        if t is torch.fx.Node:
            if type(w) is not weakref.ref:
                return _FALLBACK
            value = env.get(x)
            if type(value) is not proxy_value_cls:
                return _FALLBACK
            p = value.proxy_or_node
            if type(p) is not torch.fx.Proxy:
                return _FALLBACK
            inputs.append(value.data)
            node = p.node
            out.append(node)
            new_weak.append(weakref.ref(node))
        elif t in _SCALAR_TYPES:
            if type(w) is not tuple or len(w) != 2 or w[0] is not t or not (x is w[1] or x == w[1]):
                return _FALLBACK
            out.append(x)
            new_weak.append((t, x))
        elif t in _LEAF_TYPES:
            if not (x is w or (type(w) is t and x == w)):
                return _FALLBACK
            out.append(x)
            new_weak.append(x)
        else:
            y = _walk_env(x, w, env, proxy_value_cls, inputs)
            if y is _FALLBACK:
                return _FALLBACK
            out.append(y[0])
            new_weak.append(y[1])
    return out, new_weak


def _copyable_val(val: Any, mode: Any) -> Optional[bool]:
    """Whether the copy path can reuse ``val`` in fake mode ``mode``: None if not, else whether it
    is a single FakeTensor (``set_metadata``'s one-tensor case)."""
    if type(val) is FakeTensor:
        if val.constant is not None or val.fake_mode is not mode or not _plain_shape(val.shape):
            return None
        return True
    return False if _val_copyable(val, mode) else None


def _inputs_equivalent(target: Any, new_in: tuple, old_in: tuple) -> bool:
    """Whether dispatching ``target`` on ``new_in`` gives what it gave on ``old_in`` (the
    re-dispatch rule): metadata-identical tensors, equal scalars; the very same objects for view
    ops; never for ops that write an input."""
    if len(new_in) != len(old_in):
        return False
    kind = _alias_kind(target)
    if kind == "mutable":
        return False
    need_identity = kind == "view"
    for a, b in zip(new_in, old_in):
        if a is not b and not _input_equivalent(a, b, need_identity):
            return False
    return True


def _copy_from_env(interp: Any, node: torch.fx.Node, target: Any) -> Any:
    """The copy of ``node`` (its ``ProxyValue``) on the common route: the node's arguments hold
    only Nodes whose values are the retrace's ProxyValues and plain leaves, and match its
    signature.  None where it must be dispatched; ``_FALLBACK`` where ``_try_copy`` decides
    (an argument shape or a signature mismatch this route does not handle)."""
    sig = _sig.get_holding(node)  # the walk below checks the arguments
    if sig is None:
        return None
    val = sig[0]
    tracer = interp.callback.tracer
    single = _copyable_val(val, tracer.fake_tensor_mode)
    if single is None:
        return None
    inputs: list = []
    proxy_value_cls, env = _PASS_BASE.ProxyValue, interp.env
    walked_args = _walk_env(node.args, sig[2], env, proxy_value_cls, inputs)
    if walked_args is _FALLBACK or type(walked_args[0]) is not tuple:
        return _FALLBACK
    walked_kwargs = _walk_env(node.kwargs, sig[3], env, proxy_value_cls, inputs)
    if walked_kwargs is _FALLBACK or type(walked_kwargs[0]) is not dict:
        return _FALLBACK
    new_in = tuple(inputs)
    if not _inputs_equivalent(target, new_in, sig[_sig.IN_DATA]):
        return None
    return _emit_copy(interp, node, target, val, single, walked_args, walked_kwargs, new_in, None, None)


def _try_copy(interp: Any, node: torch.fx.Node, target: Any, args: Any, kwargs: Any) -> Any:
    """The copy of ``node`` (its ``ProxyValue``), or None if it must be dispatched, from the
    fetched ``args``/``kwargs``: the general route, for what ``_copy_from_env`` leaves to it.
    Its node is made the stock way (``create_proxy`` inside the meta context): the common route's
    walk handles every argument shape the plain node creation could, so what reaches this route
    is either turned down here or needs the stock conversion."""
    sig = _sig.get_valid(node, rewired_ok=True)  # the input values are compared below
    if sig is None:
        return None
    val = sig[0]
    single = _copyable_val(val, interp.callback.tracer.fake_tensor_mode)
    if single is None:
        return None
    new_in = _sig.proxy_inputs(args, kwargs)
    if not _inputs_equivalent(target, new_in, sig[_sig.IN_DATA]):
        return None
    return _emit_copy(interp, node, target, val, single, None, None, new_in, args, kwargs)


def _emit_copy(interp: Any, node: torch.fx.Node, target: Any, val: Any, single: bool,
               walked_args: Any, walked_kwargs: Any, new_in: tuple, args: Any, kwargs: Any) -> Any:
    """Create the copy as ``_ExportPassBase._fx`` (and ``TracerBase.create_proxy``) would, minus
    the dispatch, and record its signature.  ``walked_args``/``walked_kwargs``: the ``(arg, weak)``
    pairs of a plain node; None for any other, whose retrace ``args``/``kwargs`` then go the
    stock ``create_proxy`` way."""
    ProxyValue = _PASS_BASE.ProxyValue
    tracer = interp.callback.tracer
    plain = walked_args is not None
    # ---- exactly _ExportPassBase._fx (and TracerBase.create_proxy), minus the dispatch ----
    if plain and _emit.applies(tracer, node.meta, target):
        res_proxy = tracer.proxy(_emit.create_copied_node(
            tracer, node.meta, target, walked_args[0], walked_kwargs[0], _create_plain))
    else:
        with interp._set_current_node(node):
            name = None
            if isinstance(target, torch._ops.OpOverload):
                name = tracer.graph._target_to_str(target.overloadpacket.__name__)
            if not plain:
                args_proxy, kwargs_proxy = pytree.tree_map_only(
                    ProxyValue, lambda x: x.proxy, (args, kwargs)
                )
                res_proxy = tracer.create_proxy(
                    "call_function", target, args_proxy, kwargs_proxy, name=name
                )
            else:
                with _PLAIN_ARGS:  # the args hold only Nodes and plain leaves: no raw SymInts
                    created = tracer.create_node("call_function", target, walked_args[0], walked_kwargs[0], name, None)
                res_proxy = tracer.proxy(created)
    new_node = res_proxy.node
    new_node.meta.update(node.meta)  # == meta.update(NodeMetadata(node.meta).data)
    if single:
        # set_metadata(node, FakeTensor): val -> itself, tensor_meta -> None
        new_node.meta["val"] = val
        new_node.meta["tensor_meta"] = None
    else:
        tracer.set_metadata(new_node, val)
    # ----
    if plain:
        _sig.record_walked(new_node, walked_args[1], walked_kwargs[1], new_in)
    else:
        _sig.record(new_node, new_in)
    return ProxyValue(val, res_proxy)


_CANDIDATE: Dict[Any, bool] = {}


def _copy_candidate(target: Any) -> bool:
    r = _CANDIDATE.get(target)
    if r is None:
        from executorch.exir.dialects.edge._ops import EdgeOpOverload

        # Operators only: getitem, sym ops and higher-order operators (cond, map, call_delegate:
        # a copied cond would keep its branches un-rewritten) always go the stock way.
        r = isinstance(target, (EdgeOpOverload, torch._ops.OpOverload)) and target not in _never_copy()
        _CANDIDATE[target] = r
    return r


class _PlainArgs:
    """Whether the node ``Graph.create_node`` is creating comes from the copy path.

    Inside the node's meta context the copy path reaches ``Graph.create_node`` through
    ``TracerBase.create_node`` (which must run: it records scope and stack-trace meta), so it
    cannot pass an argument down; it holds ``with _PLAIN_ARGS:`` around that one call instead
    (``on`` is reset on the way out, whatever happens)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = False

    def __enter__(self) -> None:
        self.on = True

    def __exit__(self, *exc: Any) -> None:
        self.on = False


_PLAIN_ARGS = _PlainArgs()


def _create_plain(graph: torch.fx.Graph, target: Any, args: tuple, kwargs: dict, name: str) -> torch.fx.Node:
    """``graph.create_node`` for a copied node whose arguments hold only Nodes and plain leaves,
    on a graph of the stock class (``_emit.applies``): the replacement's body, called directly."""
    return _create_in_graph(graph, "call_function", target, args, kwargs, name, None)


_PARSED_NAMES: Dict[str, Tuple[str, str, Optional[int]]] = {}


def _parse_name(candidate: str) -> Tuple[str, str, Optional[int]]:
    """The part of ``_Namespace.create_name`` that depends on the candidate alone: the legal
    candidate, its base and its numeric suffix (None without one), as torch 2.13.0 derives them
    with its two regexes; cached, since a retrace asks for the same few candidates over and over."""
    r = _PARSED_NAMES.get(candidate)
    if r is None:
        legal = candidate
        match = _name_regex.match(legal)
        if match is None:
            legal = _illegal_char_regex.sub("_", legal)
            if not legal:
                legal = "_unnamed"
            if legal[0].isdigit():
                legal = f"_{legal}"
            match = _name_regex.match(legal)
            if match is None:
                raise AssertionError(f"Name regex failed to match candidate: {legal}")
        base, num = match.group(1, 2)
        r = _PARSED_NAMES[candidate] = (legal, base, None if num is None else int(num))
    return r


def _create_name(namespace: Any, candidate: str) -> str:
    """``namespace.create_name(candidate, None)`` (torch 2.13.0, line by line), with the candidate's
    parse cached (``_parse_name``)."""
    candidate, base, num = _parse_name(candidate)
    if num is None or candidate in namespace._used_names:
        num = namespace._base_count.get(base, 0)
        if _illegal_names.get(candidate, None) is not None:
            num += 1
            candidate = f"{base}_{num}"
    while candidate in namespace._used_names:
        num += 1
        candidate = f"{base}_{num}"
    namespace._used_names.add(candidate)
    namespace._base_count[base] = num
    return candidate


def _create_bare(graph: torch.fx.Graph, op: str, target: Any) -> torch.fx.Node:
    """``graph.create_node`` for a node without arguments, named from its target (a placeholder),
    on a graph of the stock class (``_emit.applies_to_placeholder``)."""
    return _create_in_graph(graph, op, target, (), {}, None, None)


def _create_in_graph(self: torch.fx.Graph, op: str, target: Any, args: Any, kwargs: Any, name: Optional[str],
                     type_expr: Any) -> torch.fx.Node:
    """Stock ``torch.fx.Graph.create_node`` (torch 2.13.0, line by line), minus its scan of the
    arguments for raw SymInt/SymFloat/SymBool (a warning only), for arguments known to hold none,
    and with each name candidate parsed once (``_create_name``)."""
    if not args:
        args = ()
    elif not isinstance(args, tuple):
        raise AssertionError(f"args must be a tuple, got {type(args)}")
    if not kwargs:
        kwargs = torch.fx.immutable_collections.immutable_dict()
    elif not isinstance(kwargs, dict):
        raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
    candidate = name if name is not None else self._target_to_str(target)
    namespace = self._graph_namespace
    if type(namespace) is _Namespace:
        name = _create_name(namespace, candidate)
    else:
        name = namespace.create_name(candidate, None)
    n = torch.fx.Node(self, name, op, target, args, kwargs, type_expr)
    if self.owning_module is not None and getattr(self.owning_module, "_create_node_hooks", None) is not None:
        for f in self.owning_module._create_node_hooks:
            f(n)
    namespace.associate_name_with_obj(name, n)
    self._insert(n)
    self._find_nodes_lookup_table.insert(n)
    self._len += 1
    return n


def wrap_graph_create_node(original: Callable[..., Any]) -> Callable[..., Any]:
    def graph_create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):  # noqa: ANN001
        """Replacement for ``torch.fx.Graph.create_node``: stock, except while the copy path
        creates a node inside the node's meta context (``_PLAIN_ARGS``): ``_create_in_graph``."""
        if not _PLAIN_ARGS.on:
            return original(self, op, target, args, kwargs, name, type_expr)
        return _create_in_graph(self, op, target, args, kwargs, name, type_expr)

    return graph_create_node


class _NodeDebugStr:
    """``node.format_node()``, formatted when read instead of for every node.

    Stock ``ExportInterpreter.run_node`` formats every node into ``pass.node_debug_str`` for
    error messages; in executorch 1.5.1 only ``DynamicShapePropPass`` reads it (and it is no
    copy-sound pass, so it keeps the stock string)."""

    __slots__ = ("_node", "_text")

    def __init__(self, node: torch.fx.Node) -> None:
        self._node, self._text = node, None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self._node.format_node()
        return self._text

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __eq__(self, other: Any) -> bool:
        return str(self) == (str(other) if isinstance(other, _NodeDebugStr) else other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __getattr__(self, name: str) -> Any:
        return getattr(str(self), name)


class _PassBase:
    """executorch's ``ProxyValue`` and ``ExportPass.ExportInterpreter``, imported on first use
    (fastpass imports without executorch's pass base) and then read per node for free."""

    __slots__ = ("ProxyValue", "ExportInterpreter")

    def __init__(self) -> None:
        self.ProxyValue: Any = None
        self.ExportInterpreter: Any = None

    def load(self) -> None:
        from executorch.exir.pass_base import ExportPass, ProxyValue

        self.ProxyValue, self.ExportInterpreter = ProxyValue, ExportPass.ExportInterpreter


_PASS_BASE = _PassBase()


def wrap_interpreter_run_node(original: Callable[..., Any]) -> Callable[..., Any]:
    def interpreter_run_node(self, n):  # noqa: ANN001
        """Replacement for ``_ExportPassBase.ExportInterpreter.run_node``: in a copy-sound pass,
        a cold operator node whose signature still holds is copied here, before (and without)
        the node's meta context, and so is a placeholder (``_emit``); ``node_debug_str`` is
        formatted lazily.  Every other node runs the stock way, and
        ``ExportPass.ExportInterpreter.call_function`` dispatches it."""
        ctx = _context.current()
        if ctx is None or not ctx.copy_on or ctx.depth != 1 or self.callback is not ctx.pass_:
            return original(self, n)
        self.node = n
        self.callback.node_debug_str = _NodeDebugStr(n)
        if _PASS_BASE.ExportInterpreter is None:
            _PASS_BASE.load()
        op = n.op
        if op == "placeholder" and type(self) is _PASS_BASE.ExportInterpreter:
            tracer = self.callback.tracer
            if _emit.applies_to_placeholder(self.callback, tracer):
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                value = torch.fx.Interpreter.placeholder(self, n.target, args, kwargs)
                node = _emit.create_placeholder(tracer, n.target, n.meta, value, _create_bare)
                return _PASS_BASE.ProxyValue(value, tracer.proxy(node))
        if op == "call_function" and type(self) is _PASS_BASE.ExportInterpreter:
            start = perf_counter()
            target = n.target
            ops = ctx.ann.targeted_ops
            fetched = None
            if isinstance(ops, OpFamily):  # its rules read the call's values
                fetched = self.fetch_args_kwargs_from_env(n)
                cold = not ops.targets_call(target, fetched[0], fetched[1], _proxy_val)
            else:
                cold = target not in ops
            if cold and _copy_candidate(target):
                res = _copy_from_env(self, n, target)
                if res is _FALLBACK:
                    args, kwargs = fetched if fetched is not None else self.fetch_args_kwargs_from_env(n)
                    res = _try_copy(self, n, target, args, kwargs)
                if res is not None:
                    ctx.rec.copied += 1
                    ctx.rec.copy_s += perf_counter() - start
                    return res
            ctx.rec.dispatch_s += perf_counter() - start  # the declined attempt: part of dispatching it
        return torch.fx.Interpreter.run_node(self, n)

    return interpreter_run_node


def _proxy_val(arg: Any) -> Any:
    """A call rule's view of a retrace argument (``OpFamily``): a graph value's ``data``, else ``LITERAL``."""
    from executorch.exir.pass_base import ProxyValue

    return arg.data if isinstance(arg, ProxyValue) else LITERAL


def wrap_interpreter_call_function(original: Callable[..., Any]) -> Callable[..., Any]:
    def interpreter_call_function(self, target, args, kwargs):  # noqa: ANN001
        """Replacement for ``ExportPass.ExportInterpreter.call_function``: stock, counted.  (The
        nodes a copy-sound pass copies never get here: ``interpreter_run_node`` emits them.)"""
        ctx = _context.current()
        if ctx is None or ctx.depth != 1 or self.callback is not ctx.pass_:
            return original(self, target, args, kwargs)
        start = perf_counter()
        ctx.rec.dispatched += 1
        try:
            return original(self, target, args, kwargs)
        finally:
            ctx.rec.dispatch_s += perf_counter() - start

    return interpreter_call_function


def wrap_node_copy(original: Callable[..., Any]) -> Callable[..., Any]:
    def node_copy_with_signature(self, node, arg_transform=None):  # noqa: ANN001
        """Replacement for ``torch.fx.Graph.node_copy``: stock, plus the source's creation
        signature for the copy where it still holds (``_sig.transfer``)."""
        copy = original(self, node) if arg_transform is None else original(self, node, arg_transform)
        _sig.transfer(node, copy)
        return copy

    return node_copy_with_signature
