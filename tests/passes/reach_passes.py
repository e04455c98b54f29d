"""Toy passes for issue 43 (tests/test_gate_reach.py): deliberately unsound copy-sound claims,
written as a contributor would, that the aimed gate of issue 29 called sound with CI's defaults.

Ops are named through a module alias (`A = exir_ops.edge.aten`), a common style: the gate must
read what the code reaches, not what it spells (verify.gate.aim)."""

import torch
from executorch.exir.dialects._ops import ops as exir_ops
from executorch.exir.pass_base import ExportPass

A = exir_ops.edge.aten


def _producer(value):
    """The graph node a call_operator argument was computed by, or None (a graph input, a scalar)."""
    node = getattr(value, "node", None)
    return node if getattr(node, "op", None) == "call_function" else None


def _rewritten(pass_, op, value, meta):
    """op(x) -> neg(neg(op(x))): the same value, a different graph (the gate compares graphs)."""
    x = ExportPass.call_operator(pass_, op, (value,), {}, meta)
    x = ExportPass.call_operator(pass_, A.neg.default, (x,), {}, meta)
    return ExportPass.call_operator(pass_, A.neg.default, (x,), {}, meta)


class AliasNamedPass(ExportPass):
    """unsound-copy: targets relu, and rewrites a tanh fed by a relu; every op is named through the
    alias `A`. With copy on, fastpass re-dispatches the relu, whose output is metadata-identical,
    and copies the tanh: it never reaches call_operator. Only `tanh` presents aten.tanh among ~100
    vocabulary ops, so only a search aimed at tanh meets relu -> tanh."""

    targeted_ops = (A.relu.default,)
    skip_sound = False  # the gate must blame copy
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        source = _producer(args[0]) if args else None
        if op == A.tanh.default and source is not None and source.target == A.relu.default:
            return _rewritten(self, op, args[0], meta)
        return super().call_operator(op, args, kwargs, meta)


class GetattrNamedPass(ExportPass):
    """unsound-copy: as AliasNamedPass for a sin (only `sin` presents it), but the rewritten op is
    looked up by its name, from a literal string (`getattr(A, name)` over a tuple of names)."""

    targeted_ops = (A.relu.default,)
    skip_sound = False
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        source = _producer(args[0]) if args else None
        for name in ("sin",):
            if op == getattr(A, name).default and source is not None and source.target == A.relu.default:
                return _rewritten(self, op, args[0], meta)
        return super().call_operator(op, args, kwargs, meta)


class TwoHopPass(ExportPass):
    """unsound-copy: targets tanh, and rewrites a cos two producers downstream of a tanh, through
    a node of another op (tanh -> cold -> cos). With copy on, fastpass re-dispatches the tanh and
    copies both nodes after it. A tanh feeding the cos directly, or through a tanh or a cos, is
    left alone: only the chain through a cold node shows the fault. (Only `tanh` presents
    aten.tanh and only `cos` aten.cos, each a single node: no vocabulary op is such a chain by
    itself, as `permuted_pointwise` is for relu: permute, relu, permute.)"""

    targeted_ops = (A.tanh.default,)
    skip_sound = False
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        middle = _producer(args[0]) if args else None
        if op == A.cos.default and middle is not None and middle.target not in (A.tanh.default, A.cos.default):
            if any(getattr(_producer_node(arg), "target", None) == A.tanh.default for arg in middle.args):
                return _rewritten(self, op, args[0], meta)
        return super().call_operator(op, args, kwargs, meta)


def _producer_node(arg):
    """An fx node's argument, if it is a call_function node."""
    return arg if getattr(arg, "op", None) == "call_function" else None


def _operand(value):
    """The fake tensor a call_operator argument holds (its shape and dtype), or None (a scalar)."""
    return getattr(value, "data", None) if hasattr(getattr(value, "data", None), "dtype") else None


class RankConditionedPass(ExportPass):
    """unsound-copy: targets relu, and rewrites a neg only when its operand has rank 5 (a rule by
    property: a pass specialised to one layout). With copy on, fastpass copies the neg. Graphs
    draw their values from a rank-4 input, so a neg of a rank-5 value is rare unless the ranks
    are drawn on purpose (issue 43, item 4)."""

    targeted_ops = (A.relu.default,)
    skip_sound = False
    copy_sound = True
    rank = 5

    def call_operator(self, op, args, kwargs, meta):
        x = _operand(args[0]) if args else None
        if op == A.neg.default and x is not None and x.dim() == self.rank:
            return _rewritten(self, op, args[0], meta)
        return super().call_operator(op, args, kwargs, meta)


class DtypeConditionedPass(ExportPass):
    """unsound-copy: targets relu, and rewrites an add only when both operands are integer
    tensors (int8 ... int32, not bool): a pass for integer arithmetic. With copy on, fastpass
    copies the add. The graph inputs are float32, and no float-stage op used to hand a pass an
    add of two integer tensors (issue 43, item 4)."""

    targeted_ops = (A.relu.default,)
    skip_sound = False
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        operands = [_operand(a) for a in args[:2]]
        if op == A.add.Tensor and all(x is not None and not x.dtype.is_floating_point and x.dtype != torch.bool
                                      for x in operands):
            return _rewritten_binary(self, op, args, kwargs, meta)
        return super().call_operator(op, args, kwargs, meta)


class IntegerSliceConditionedPass(ExportPass):
    """unsound-copy: targets relu, and rewrites a slice_copy only when its operand is an integer
    tensor (int8 ... int32), as InsertDataLayoutCastsPass casts a data-layout op on a float-only
    spec. With copy on, fastpass copies the slice. No float-stage op used to hand a pass a slice of
    an integer tensor (the gate's self-test, seed 7: InsertDataLayoutCastsPass without slice_copy
    was called sound)."""

    targeted_ops = (A.relu.default,)
    skip_sound = False
    copy_sound = True

    def call_operator(self, op, args, kwargs, meta):
        x = _operand(args[0]) if args else None
        if op == A.slice_copy.Tensor and x is not None and not x.dtype.is_floating_point and x.dtype != torch.bool:
            return _rewritten_binary(self, op, args, kwargs, meta)
        return super().call_operator(op, args, kwargs, meta)


def _rewritten_binary(pass_, op, args, kwargs, meta):
    """op(x, y, ...) -> neg(neg(op(x, y, ...))): the same value, a different graph (any arguments
    passed through: a slice's dim, start, end and step too)."""
    x = ExportPass.call_operator(pass_, op, args, kwargs, meta)
    x = ExportPass.call_operator(pass_, A.neg.default, (x,), {}, meta)
    return ExportPass.call_operator(pass_, A.neg.default, (x,), {}, meta)
