"""A graph as comparable, picklable records: what "identical" means for one graph.

Every node becomes a `NodeRecord` of plain strings, so a snapshot taken in one process
can be compared with one taken in another (the null check runs under another hash seed)
and diffed readably. Which meta keys are compared, and how, is decided here and only here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from torch.fx import GraphModule, Node
from torch.fx.traceback import NodeSourceAction

# ---------------------------------------------------------------------------------------
# Meta policy. Every key present on a node is compared unless listed in IGNORED_META_KEYS.
# Keys with a dedicated canonical form are listed in SPECIAL_META_KEYS; all others are
# compared by `_canonical` (repr with memory addresses and graph ids normalised).
# ---------------------------------------------------------------------------------------
SPECIAL_META_KEYS: dict[str, str] = {
    "val": "compared by its own check: tree structure, shape, dtype, stride, storage offset, "
    "device, requires_grad, symbolic values (see describe_val)",
    "tensor_meta": "compared by canonical repr (TensorMetadata fields: shape, dtype, stride, ...)",
    "from_node": "NodeSource chains compared via to_dict() with graph ids renumbered by first "
    "appearance; per-pass snapshots keep the immediate sources only (the full chain grows by a "
    "pass each pass, comparing it every pass would cost what fastpass saves), final snapshots "
    "keep the full chain",
    "stack_trace": "compared verbatim: ArmPass.call_operator(updated=True) appends the caller's "
    "frame, so a hook that shifts frames is a real divergence",
    "nn_module_stack": "compared by canonical repr (module paths and types)",
    "source_fn_stack": "compared by canonical repr (addresses normalised)",
    "eager_input_vals": "compared as describe_val describes vals (tree structure, shape, dtype, stride, ...): "
    "the key exists to record the strides of a stride-sensitive op's inputs, which a FakeTensor's repr leaves out",
}

IGNORED_META_KEYS: dict[str, str] = {
    "seq_nr": "autograd sequence number from a process-global counter: differs between the "
    "first and second lowering in one process whatever the mode",
}

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# Attribute the observer sets on NodeSource.NodeInfo: (the observed lowering's serial, how many
# graphs had been created at the recorded graph's address during that lowering when the record
# was made (0: the graph was created before it)). Records made outside any observed lowering
# have no tag.
GRAPH_GENERATION = "_verify_graph_generation"


def _canonical(value: Any) -> str:
    text = repr(value)
    return _ADDRESS.sub(" at 0x?", text) if " at 0x" in text else text


# Texts of immutable values every snapshot writes out again (a tensor's dtype, device and layout;
# shapes and strides of plain ints), made once per process: a lookup costs a fraction of the
# formatting, and gives what str() gives.  A shape holding a SymInt is not hashable and is
# formatted each time.
_TEXTS: dict[Any, str] = {}
_INTS_TEXTS: dict[tuple, tuple[str, ...]] = {}


def _text(value: Any) -> str:
    text = _TEXTS.get(value)
    if text is None:
        text = _TEXTS[value] = str(value)
    return text


def _ints_text(ints: Any) -> tuple[str, ...]:
    try:
        text = _INTS_TEXTS.get(ints)
    except TypeError:  # a symbolic size
        return tuple(map(str, ints))
    if text is None:
        text = tuple(map(str, ints))
        if all(type(i) is int for i in ints):
            _INTS_TEXTS[tuple(ints)] = text
    return text


def describe_val(value: Any) -> Any:
    """Everything of a `val` that can influence later passes or the serialized graph."""
    if isinstance(value, torch.Tensor):
        layout = value.layout
        strided = layout == torch.strided
        return (
            "T",
            _ints_text(value.shape),
            _text(value.dtype),
            _ints_text(value.stride()) if strided else None,
            str(value.storage_offset()) if strided else None,
            _text(value.device),
            bool(value.requires_grad),
            _text(layout),
        )
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(describe_val(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((str(k), describe_val(v)) for k, v in value.items()))
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return ("sym", type(value).__name__, str(value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return ("py", type(value).__name__, repr(value))
    return ("other", type(value).__name__, _canonical(value))


class GraphIds:
    """Renumbers provenance graph ids by first appearance, so that provenance compares across runs.

    A NodeSource records `id(graph)`, and CPython reuses the address of a freed graph: two
    graphs can share an id, and whether they do depends on when the collector freed the first
    (measured: a fuzz graph whose output's source read graph 0 stock and graph 2 with
    fastpass, and identical on replay). So the key is the id with the record's tag (see
    observe.py's Graph/NodeInfo hooks): for a record made during an observed lowering, that
    lowering and the graph's *generation* at that address, one number per graph, not per
    address; for a record made before (no tag), the address alone, which is the identity the
    record arrived with. An untagged record and a tagged one never share a number, even at one
    address: the untagged one may name a freed graph whose address a graph of this lowering
    took, in one mode and not the other (crosscheck's copies of the input take fresh
    addresses; measured: a `to_edge` call of executorch's own pass tests divergent in one
    crosscheck of the whole suite, identical alone and on replay)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[int, Any], int] = {}

    def __call__(self, graph_id: int, tag: Any = None) -> int:
        if graph_id == -1:
            return -1
        return self._ids.setdefault((graph_id, tag), len(self._ids))


def describe_from_node(sources: Any, graph_ids: GraphIds, full: bool) -> Any:
    if not isinstance(sources, list):
        return ("other", _canonical(sources))
    return tuple(_describe_source(src, graph_ids, full) for src in sources)


def _describe_source(src: Any, graph_ids: GraphIds, full: bool) -> tuple:
    """One NodeSource: name, target, renumbered graph id, pass, action, and its own sources (all
    of them when `full`, else their count).  Reads the name and target off `node_info` (on a
    NodeSource, `name`, `target` and `graph_id` are properties over it) and an action's text
    from `_ACTION_TEXTS` (an Enum's `name` is a descriptor call); read through those, `from_node`
    was about a tenth of a snapshot's time."""
    info = getattr(src, "node_info", None)
    if info is None:
        name, target, graph = getattr(src, "name", ""), getattr(src, "target", ""), -1
    else:
        name, target = info.name, info.target
        graph = graph_ids(info.graph_id, getattr(info, GRAPH_GENERATION, None))
    return (
        name,
        target,
        graph,
        getattr(src, "pass_name", ""),
        "+".join([_ACTION_TEXTS.get(a) or a.name.lower() for a in getattr(src, "action", ())]),
        tuple(_describe_source(s, graph_ids, full) for s in src.from_node) if full else len(src.from_node),
    )


_ACTION_TEXTS = {action: action.name.lower() for action in NodeSourceAction}


def _describe_arg(arg: Any) -> str:
    kind = type(arg)
    if kind is Node:
        return "%" + arg.name
    if kind is int or kind is float or kind is bool or arg is None:
        return repr(arg)  # what the general path gives them: repr is exact for floats
    if kind is torch.dtype:
        return _text(arg)  # str and repr of a dtype are the same
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, (list, tuple)):
        inner = ", ".join(_describe_arg(a) for a in arg)
        return f"[{inner}]" if isinstance(arg, list) else f"({inner}{',' if len(arg) == 1 else ''})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k!r}: {_describe_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, torch.Tensor):
        if arg.device.type == "meta" or type(arg) is not torch.Tensor:
            return f"tensor{describe_val(arg)}"
        digest = hashlib.blake2b(arg.detach().contiguous().cpu().numpy().tobytes(), digest_size=8)
        return f"tensor{describe_val(arg)}#{digest.hexdigest()}"
    if isinstance(arg, float):
        return repr(arg)  # repr is exact for floats
    return _canonical(arg)


def _describe_target(node: Node) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    try:
        return _TARGETS[target]
    except (KeyError, TypeError):  # TypeError: an unhashable callable
        pass
    module = getattr(target, "__module__", "") or ""
    text = f"{module}.{getattr(target, '__qualname__', None) or getattr(target, '__name__', str(target))}:{target}"
    if isinstance(target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)) or type(target).__name__ in _OP_TYPES:
        _TARGETS[target] = text
    return text


# Operator objects are immutable and their description is a pure function of the object: described
# once per process (about a tenth of a snapshot's time otherwise).  Other callables are described
# each time.  The cache keeps the operators alive, which torch and executorch do anyway.
_TARGETS: dict[Any, str] = {}
_OP_TYPES = frozenset({"EdgeOpOverload", "BackendOpOverload", "builtin_function_or_method"})


class NodeRecord(NamedTuple):
    """One node as plain strings and tuples of them.  A named tuple, not a dataclass: the
    snapshots of a lowering keep tens of thousands of these alive, and a record is then one
    object the cyclic collector traces, without a ``__dict__`` (its fields are plain tuples of
    strings and numbers, which the collector stops tracking); ``tuple.__repr__`` also gives
    the digest its text."""

    name: str
    op: str
    target: str
    args: str
    kwargs: str
    val: Any
    meta: tuple[tuple[str, Any], ...]

    def without_names(self, position: dict[str, int]) -> tuple:
        """The node with every node name replaced by its position: 'identical up to names'."""

        def rename(text: str) -> str:
            return re.sub(r"%([A-Za-z0-9_]+)", lambda m: f"%{position.get(m.group(1), m.group(1))}", text)

        return (self.op, self.target, rename(self.args), rename(self.kwargs))


@dataclass(frozen=True)
class GraphSnapshot:
    nodes: tuple[NodeRecord, ...]
    digest: str

    def __len__(self) -> int:
        return len(self.nodes)


def _record(node: Node, graph_ids: GraphIds, full_provenance: bool) -> NodeRecord:
    meta = []
    node_meta = node.meta
    for key in sorted(node_meta):
        if key == "val" or key in IGNORED_META_KEYS:
            continue
        value = node_meta[key]
        if key == "from_node":
            meta.append((key, describe_from_node(value, graph_ids, full_provenance)))
        elif key == "eager_input_vals":
            meta.append((key, describe_val(value)))
        else:
            meta.append((key, _canonical(value)))
    return NodeRecord(node.name, node.op, _describe_target(node), _describe_arg(node.args), _describe_arg(node.kwargs),
                      describe_val(node_meta["val"]) if "val" in node_meta else ("absent",), tuple(meta))


class RecordDigests:
    """Each distinct record once, with its digest, for the snapshots of one lowering.

    Consecutive snapshots repeat most records (a pass changes a few nodes, a skipped or
    idempotent pass none), and looking a record up by its tuple hash costs a fraction of
    writing out its repr for a digest.  A repeated record is also the very object kept the
    first time, so the snapshots of a lowering share their unchanged records."""

    def __init__(self) -> None:
        self._known: dict[NodeRecord, tuple[NodeRecord, bytes]] = {}

    def __call__(self, record: NodeRecord) -> tuple[NodeRecord, bytes]:
        known = self._known.get(record)
        if known is None:
            digest = hashlib.blake2b(tuple.__repr__(record).encode(), digest_size=16).digest()
            known = self._known[record] = (record, digest)
        return known


def take_snapshot(graph_module: GraphModule, graph_ids: GraphIds, full_provenance: bool = False,
                  digests: RecordDigests | None = None) -> GraphSnapshot:
    """Snapshot a graph module and its nested GraphModules (control-flow submodules).

    The digest covers every record: the digests of the records (their tuple reprs), in order.
    `digests`: the lowering's records so far (verify.lowering.observe keeps one per lowering)."""
    digests = digests if digests is not None else RecordDigests()
    records: list[NodeRecord] = []
    parts: list[bytes] = []
    for prefix, module in _graph_modules(graph_module):
        for node in module.graph.nodes:
            record = _record(node, graph_ids, full_provenance)
            if prefix:
                record = record._replace(name=f"{prefix}/{record.name}")
            record, digest = digests(record)
            records.append(record)
            parts.append(digest)
    return GraphSnapshot(tuple(records), hashlib.blake2b(b"".join(parts), digest_size=16).hexdigest())


def _graph_modules(graph_module: GraphModule):
    yield "", graph_module
    for name, child in graph_module.named_modules():
        if name and isinstance(child, GraphModule):
            yield name, child
