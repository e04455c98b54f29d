"""The edge dialect's dtype verifier, run once per graph state.

Why: ``EXIREdgeDialectVerifier.check_additional`` runs
``_check_tensor_args_matching_op_allowed_dtype`` each time an edge program is built or a pass
manager checks one: an ``fx.Interpreter`` that re-executes every node in FakeTensor mode to see
the dtypes each edge op receives.  A ResNet8 U55 lowering asks this 12 times, 6 of them of a
graph in exactly the state it had at an earlier call (the same GraphModule, re-checked by the
next ``ExportedProgram``, the pass manager, ``to_backend``); the checks were ~9 % of a fastpass
ResNet8 U55 lowering and ~10 % of SleepNet's (0.75 s, 0.22 s with this feature).

Why it is exact: the check is a pure function of what ``graph_state`` keys: every node's op,
target (by identity), arguments (other nodes by position, Python scalars by type and value,
dtype/device/layout/memory-format constants) and ``meta["val"]`` (by identity and tensor
metadata: dtype, shape, stride, storage offset, device, layout, requires_grad, whether it holds
a constant).  Placeholder
inputs, the FakeTensor mode and the return dtypes it reads all come from those vals.  A graph it
cannot key exactly -- a get_attr or call_module node (module state), a tensor constant in the
arguments (its values could change), a symbolic shape or value (guards accumulate), any other
argument type -- is always checked.  Only a check that *returned* is remembered: a violation
raises again each time, with the stock message.  The objects whose identity a key holds are kept
alive with it, so an id is never reused while its key is remembered.  Only the last
``REMEMBERED`` passed states are kept (the re-checks come in a row, within one lowering): a
caller who keeps fastpass enabled across many lowerings holds no more than those, and a state
forgotten is only checked again.  What the key does not hold, the kernels of the ops
themselves, is not re-registered within one lowering.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import _stats

# Passed graph states remembered, most recent last. In ResNet8 and SleepNet U55 lowerings every
# re-check comes right after the check that passed; 16 leaves room and bounds what keys keep alive.
REMEMBERED = 16

# Immutable torch constants that compare and hash by value.
_CONSTANT_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format)
_SCALAR_TYPES = (bool, int, float, complex, str, type(None))


class _Unkeyable(Exception):
    """The graph holds something whose state the key cannot capture: check it the stock way."""


def _tensor_key(value: torch.Tensor, keep: List[Any]) -> Tuple[Any, ...]:
    if value.layout is not torch.strided:
        raise _Unkeyable
    shape = tuple(value.shape)
    if not all(type(d) is int for d in shape):
        raise _Unkeyable
    keep.append(value)
    return ("t", id(value), value.dtype, shape, tuple(value.stride()), value.storage_offset(),
            value.device, value.requires_grad, getattr(value, "constant", None) is not None)


def _val_key(value: Any, keep: List[Any]) -> Any:
    if isinstance(value, torch.Tensor):
        return _tensor_key(value, keep)
    if type(value) in _SCALAR_TYPES:
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_val_key(v, keep) for v in value))
    raise _Unkeyable  # SymInt/SymFloat/SymBool and anything else


def _arg_key(arg: Any, position: Dict[torch.fx.Node, int]) -> Any:
    if isinstance(arg, torch.fx.Node):
        return ("n", position[arg])
    if type(arg) in _SCALAR_TYPES:
        return (type(arg).__name__, arg)
    if isinstance(arg, _CONSTANT_TYPES):
        return ("c", arg)
    if isinstance(arg, (list, tuple)):
        return (type(arg).__name__, tuple(_arg_key(a, position) for a in arg))
    if isinstance(arg, dict):
        return ("d", tuple((k, _arg_key(v, position)) for k, v in arg.items()))
    if type(arg) is slice:
        return ("s", _arg_key(arg.start, position), _arg_key(arg.stop, position), _arg_key(arg.step, position))
    raise _Unkeyable  # tensor constants, opaque objects, symbolic values


def graph_state(graph_module: torch.fx.GraphModule) -> Optional[Tuple[Tuple[Any, ...], List[Any]]]:
    """(key, objects the key names by identity), or None if the graph cannot be keyed exactly."""
    position: Dict[torch.fx.Node, int] = {}
    keep: List[Any] = []
    nodes = []
    try:
        for index, node in enumerate(graph_module.graph.nodes):
            if node.op in ("get_attr", "call_module"):
                return None
            position[node] = index
            target = node.target
            if node.op == "call_function":
                keep.append(target)
                target = id(target)
            meta = node.meta
            val = _val_key(meta["val"], keep) if "val" in meta else ("absent",)
            nodes.append((node.op, target, _arg_key(node.args, position), _arg_key(node.kwargs, position), val))
    except _Unkeyable:
        return None
    return tuple(nodes), keep


def wrap_check_dtypes(original: Callable[[torch.fx.GraphModule], None]) -> Callable[[torch.fx.GraphModule], None]:
    """Replacement for ``executorch.exir.verification.verifier._check_tensor_args_matching_op_allowed_dtype``."""
    passed: "OrderedDict[Tuple[Any, ...], List[Any]]" = OrderedDict()

    def check_tensor_args_matching_op_allowed_dtype(gm: torch.fx.GraphModule) -> None:
        state = graph_state(gm)
        if state is None:
            _stats.count_verification(skipped=False)
            return original(gm)
        key, keep = state
        if key in passed:
            passed.move_to_end(key)
            _stats.count_verification(skipped=True)
            return None
        _stats.count_verification(skipped=False)
        result = original(gm)  # a violation raises here: nothing is remembered
        passed[key] = keep
        if len(passed) > REMEMBERED:
            passed.popitem(last=False)
        return result

    return check_tensor_args_matching_op_allowed_dtype
