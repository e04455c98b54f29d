"""Creation signatures: what a node's ``val`` was computed from.

Why: both *skip* and *copy* must know that a node's ``meta["val"]`` is exactly
what FakeTensor dispatch of ``(target, args)`` gives on specific input values.
Every node built by ``_ExportPassBase._fx`` (i.e. by dispatch; also torch's own
export pass base, whose ``_fx`` is the same code) or by the copy path gets a
signature, and ``Graph.node_copy`` hands it on to the copy (``transfer``:
partitioning copies every node into the delegate's graph, whose first retraces
would otherwise dispatch them all again).  Signatures are kept in a module-level
``WeakKeyDictionary`` keyed by the ``fx.Node`` (never in ``meta`` nor on the node
object, so graphs, metadata and pickles stay byte-identical; ``clear()`` on
disable leaves no residue):

    (val, target, args, kwargs, in_data)

``val`` is the meta value set at creation, ``args``/``kwargs`` the node's own
args then, ``in_data`` the flattened input values used for dispatch.  Later
surgery that replaces ``val``, the target, a literal argument or the arguments'
shape invalidates the signature (compared by identity, scalars by type and value).
So does rewiring a Node argument to another Node, except for the copy path
(``get_valid(node, rewired_ok=True)``): the signature then still says what
dispatch gives on ``in_data``, and the copy path compares the node's current
input values with ``in_data`` before it copies (metadata-identical; the very
same objects for view ops).  The skip's fixed-point check and ``transfer`` keep
the strict rule: the output node's inputs are not compared there.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional, Tuple

import torch

_SIGS: "weakref.WeakKeyDictionary[torch.fx.Node, Any]" = weakref.WeakKeyDictionary()

Sig = Tuple[Any, Any, Any, Any, Tuple[Any, ...]]
IN_DATA = 4


def leaves_of_type(obj: Any, cls: type, out: list) -> list:
    """Instances of ``cls`` inside list/tuple/dict containers, in pytree order.

    (Cheaper than ``pytree.tree_leaves``; dicts are walked in insertion order
    like pytree does.  Used identically for ProxyValues and Nodes so the two
    sequences line up.)
    """
    if isinstance(obj, cls):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            leaves_of_type(x, cls, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            leaves_of_type(x, cls, out)
    return out


def proxy_inputs(args: Any, kwargs: Any, proxy_cls: Optional[type] = None) -> Tuple[Any, ...]:
    """The input values of a ``_fx`` call; ``proxy_cls``: the pass base's ``ProxyValue`` class
    (executorch's by default; torch's export pass base has its own)."""
    if proxy_cls is None:
        from executorch.exir.pass_base import ProxyValue as proxy_cls

    found: list = []
    leaves_of_type(args, proxy_cls, found)
    leaves_of_type(kwargs, proxy_cls, found)
    return tuple(x.data for x in found)


def input_nodes(node: torch.fx.Node) -> list:
    found: list = []
    leaves_of_type(node.args, torch.fx.Node, found)
    leaves_of_type(node.kwargs, torch.fx.Node, found)
    return found


def _weak(obj: Any) -> Any:
    """``obj`` with every Node replaced by a weak reference, every scalar tagged with its type.

    Signatures must not hold Nodes strongly: a Node references its Graph, so
    a strong reference in a (strongly held) dict value would keep every
    intermediate graph alive for as long as fastpass is enabled.  Weak refs
    compare equal iff they point to the same live Node (Node has identity
    equality), which is exactly the identity check we need.
    """
    t = type(obj)
    if t is torch.fx.Node:
        return weakref.ref(obj)
    if t is float or t is int or t is bool or t is complex:
        # Typed: 0 == 0.0 == False in Python, yet clamp(int8, 0.0) dispatches to float32
        # and clamp(int8, 0) to int8 -- a scalar that changes type is a changed argument.
        return (t, obj)
    if t is tuple:
        return tuple(_weak(x) for x in obj)
    if t is list or t is torch.fx.immutable_collections.immutable_list:
        return [_weak(x) for x in obj]
    if t is dict or t is torch.fx.immutable_collections.immutable_dict:
        return tuple((k, _weak(v)) for k, v in obj.items())
    if isinstance(obj, torch.fx.Node):
        return weakref.ref(obj)
    if isinstance(obj, (list, tuple)):
        return (t, tuple(_weak(x) for x in obj))
    return obj


def record(node: torch.fx.Node, in_data: Tuple[Any, ...]) -> None:
    _SIGS[node] = (node.meta.get("val"), node.target, _weak(node.args), _weak(node.kwargs), in_data)


def record_walked(node: torch.fx.Node, weak_args: Any, weak_kwargs: Any, in_data: Tuple[Any, ...]) -> None:
    """``record``, with ``_weak(node.args)`` and ``_weak(node.kwargs)`` already at hand (the copy
    path builds them in the walk that builds the node's arguments)."""
    _SIGS[node] = (node.meta.get("val"), node.target, weak_args, weak_kwargs, in_data)


def clear() -> None:
    _SIGS.clear()


def get_holding(node: torch.fx.Node) -> Optional[Sig]:
    """The signature if the node's val and target are still the ones it records, else None; its
    arguments are left to the caller (``get_valid``, or ``_copy._copy_from_env``, which checks
    them as it walks them)."""
    sig = _SIGS.get(node)
    if sig is None or node.meta.get("val", None) is not sig[0] or node.target is not sig[1]:
        return None
    return sig


def get_valid(node: torch.fx.Node, rewired_ok: bool = False) -> Optional[Sig]:
    """The signature if it still describes the node, else None.  ``rewired_ok``: a Node argument
    may name another Node than at creation (for a caller that compares the input values)."""
    sig = get_holding(node)
    if sig is None:
        return None
    _, _, args, kwargs, _ = sig
    try:
        if not (matches_weak(node.args, args, rewired_ok) and matches_weak(node.kwargs, kwargs, rewired_ok)):
            return None
    except Exception:
        return None
    return sig


def matches_weak(obj: Any, weak: Any, any_node: bool = False) -> bool:
    """``_weak(obj) == weak``, without building ``_weak(obj)`` (the signature check runs for every
    node of every copy-sound retrace).  Compares as tuple/list equality would: identity first,
    then ``==``, element by element, with the container types ``_weak`` produces.  ``any_node``:
    a Node matches wherever a Node was, whichever it is."""
    t = type(obj)
    if t is torch.fx.Node:
        return type(weak) is weakref.ref and (any_node or weak() is obj)
    if t is float or t is int or t is bool or t is complex:
        if type(weak) is not tuple or len(weak) != 2 or weak[0] is not t:
            return False
        return obj is weak[1] or obj == weak[1]
    if t is tuple or t is list or t is torch.fx.immutable_collections.immutable_list:
        if type(weak) is not (tuple if t is tuple else list) or len(weak) != len(obj):
            return False
        for x, w in zip(obj, weak):
            if not matches_weak(x, w, any_node):
                return False
        return True
    if t is dict or t is torch.fx.immutable_collections.immutable_dict:
        if type(weak) is not tuple or len(weak) != len(obj):
            return False
        for (k, x), pair in zip(obj.items(), weak):
            if type(pair) is not tuple or len(pair) != 2 or not (k is pair[0] or k == pair[0]):
                return False
            if not matches_weak(x, pair[1], any_node):
                return False
        return True
    return _weak(obj) == weak  # Node and sequence subclasses, other leaves: rare, the plain way


def same_structure(old: Any, new: Any) -> bool:
    """Whether ``new`` is ``old`` with each Node replaced by a Node, nothing else changed: what
    ``Graph.node_copy`` makes of a node's args when its ``arg_transform`` maps Nodes to Nodes
    (literals are passed through as the very same objects)."""
    if isinstance(old, torch.fx.Node):
        return isinstance(new, torch.fx.Node)
    if isinstance(old, (list, tuple)):
        return (type(new) is type(old) and len(new) == len(old)
                and all(same_structure(x, y) for x, y in zip(old, new)))
    if isinstance(old, dict):
        return (type(new) is type(old) and list(new) == list(old)
                and all(same_structure(old[k], new[k]) for k in old))
    return new is old


def transfer(source: torch.fx.Node, copy: torch.fx.Node) -> bool:
    """Give ``copy`` (``Graph.node_copy`` of ``source``) the signature of ``source`` if that is
    still valid and describes the copy too: same target, the same val object (node_copy copies
    meta shallowly), args that differ only in which Nodes they name. The signature states that
    dispatching the target on inputs with values ``in_data`` gave that val; the copy's own
    inputs are compared with ``in_data`` wherever the signature is used, as for any node."""
    sig = get_valid(source)
    if sig is None:
        return False
    val, target, _, _, in_data = sig
    if copy.target is not target or copy.meta.get("val", None) is not val:
        return False
    if not (same_structure(source.args, copy.args) and same_structure(source.kwargs, copy.kwargs)):
        return False
    record(copy, in_data)
    return True


def same_leaves(a: Any, b: Any) -> bool:
    """Identity of values, looking through list/tuple containers."""
    if a is b:
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_leaves(x, y) for x, y in zip(a, b))
    return False
