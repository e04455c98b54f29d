"""The op vocabulary: how each op is instantiated over tracked shapes and emitted as source.

Every op is described by an ``_OpDef``:

* ``accepts(shape)``: may a value of this shape be the op's primary input?
* ``instantiate(ctx)``: choose params (and partner inputs) from the raw integers of a gene,
  returning ``(params, partner_ids, out_shape)``.  Raw integers that shrink toward 0 select the
  *first* option of every ``ctx.choice`` so the first option is always the simplest one.
* ``emit(args, params, in_shapes)``: Python source of the forward expression, plus the constant
  tensors (parameters / buffers) the op needs.  This is the only thing ``GraphSpec.build`` and
  ``GraphSpec.to_python`` use, so the spec (not the generator) is the source of truth.

Invariants: all values are float32; every value has ``1 <= rank <= MAX_RANK`` and at most
``MAX_NUMEL`` elements; every op accepts the first graph input (rank 4, N=1, H even, H,W >= 2).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Optional

MAX_RANK = 5
MAX_NUMEL = 8192

Shape = tuple

# A constant tensor the op needs: (suffix, shape, lo, hi, is_buffer).  Values are drawn
# uniformly in [lo, hi) from the spec's seeded generator.  A literal tensor (constant index or
# mask, as real models register them) is (suffix, shape, values, dtype name, True).
Const = tuple


def numel(shape) -> int:
    return math.prod(shape) if shape else 1


def _fits(shape) -> bool:
    return 1 <= len(shape) <= MAX_RANK and numel(shape) <= MAX_NUMEL and all(d >= 1 for d in shape)


def broadcast_shape(a, b) -> Optional[tuple]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and da != 1 and db != 1:
            return None
        out.append(max(da, db))
    return tuple(reversed(out))


def _fmt(v) -> str:
    """Format a python literal (floats keep a decimal point)."""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_fmt(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return repr(v)


class _Ctx:
    """Gives an op's instantiate() access to its gene's raw integers and to the value pool.

    ``sel`` and ``par`` are non-negative integers decoded in mixed radix: each ``choice`` takes
    ``par % len(options)`` and divides ``par`` by ``len(options)``.  Smaller integers therefore
    mean earlier (simpler) options, and 0 means "first option everywhere".
    """

    def __init__(self, pool, primary, sel, par, excluded=frozenset()):
        self.pool = pool  # list of shapes, indexed by value id
        self.excluded = excluded  # value ids this op must not consume (see TABLE_SOURCES)
        self.primary = primary
        self.x = pool[primary]
        self._sel = int(sel)
        self._par = int(par)

    def choice(self, options):
        options = list(options)
        assert options, "empty option list"
        i = self._par % len(options)
        self._par //= len(options)
        return options[i]

    def flag(self) -> bool:
        return bool(self.choice([0, 1]))

    def partner(self, pred) -> int:
        """Pick another value id satisfying pred, most recent first (the primary if it qualifies)."""
        cands = [i for i in reversed(range(len(self.pool)))
                 if pred(self.pool[i]) and i not in self.excluded]
        if not cands:
            return self.primary
        i = self._sel % len(cands)
        self._sel //= len(cands)
        return cands[i]


@dataclass(frozen=True)
class _OpDef:
    name: str
    aten: tuple
    instantiate: Callable
    emit: Callable
    accepts: Callable = lambda s: True
    kind: str = "misc"

    @property
    def avoids_table_taint(self) -> bool:
        return self.name in AVOID_TABLE_TAINT


# ---- Workarounds for stock ExecuTorch 1.5.1 crashes in TOSA-1.0+INT lowering ------------------
# In TOSA-1.0+INT, an avg_pool2d (also reached via adaptive_avg_pool2d, and cumsum's decomposition)
# whose input comes from a TABLE-lowered op (sigmoid, tanh, exp, log, sqrt, rsqrt, reciprocal,
# sin, cos, erf, atan, sinh, log1p, expm1, pow, log_softmax, vector_norm), directly or through
# ops that share their input's quantization (relu, clamp, neg, permute, slice, pad, cat,
# max_pool2d, upsample, expand, flip, ...), fails in RewriteAvgPool2dPass with
# "TosaValueError: Unsupported input dtype torch.float32, supported types are (torch.int8,)".
# Minimal repro: F.avg_pool2d(torch.sigmoid(x), 2) quantized + lowered for TOSA-1.0+INT.
# It even survives conv2d/linear/matmul/hardtanh/gelu/amax in between (sigmoid -> conv2d ->
# avg_pool2d crashes; relu -> conv2d -> avg_pool2d is fine); sub/div/abs/softmax/mean/... in
# between passed on one draw each.  The generator therefore tracks a per-value "table taint":
# set by TABLE_SOURCES, propagated by every op except TAINT_CLEARERS (empty: conservative), and
# AVOID_TABLE_TAINT ops never consume a tainted value.  Graph inputs are untainted, so x0 is
# always a legal input.
TABLE_SOURCES = frozenset({
    "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "erf", "atan",
    "sinh", "log1p", "expm1", "pow", "log_softmax", "vector_norm",
    # added with the ops that reach the remaining annotated passes; table-lowered (or decomposed
    # into table ops) in INT, so treated alike without a per-op crash measurement:
    "asinh", "acosh", "atanh", "cosh", "tan", "asin", "acos", "erfinv", "logit", "celu", "selu",
    "cosine_similarity", "prod",
})
# cumsum -> where: torch.where(cumsum(x, 3) > 0, cumsum(x, 3), y) fails in TOSA SELECT with
# "Expected matching dtypes but got torch.int8 and torch.int64"; treated as a taint source too.
# gather -> var (also through relu): stock INT quantization fails in the quantizer's DecomposeVarPass
# ("a.node.constant should not be None"; with a 3-d gather index "NameError: name 's19' is not
# defined"), found by a tox -e fuzz campaign on gather(x0) -> var(dim=1); gather taints too and
# var avoids tainted values.
TAINT_SOURCES = TABLE_SOURCES | {"cumsum", "gather"}
TAINT_CLEARERS = frozenset()
# where: torch.where(log(x1) == 0, log(x1), relu(x0)) with x1 [1,4,1,1], x0 [1,4,10,9] fails in
# TOSA SELECT: "Expected matching dtypes but got torch.int8 and torch.float32".
# cumsum -> tril: SELECT "Expected matching dtypes but got torch.int8 and torch.int32";
# cumsum -> cumsum: "TOSA-1.0+INT only supports torch.int8 weights for torch.int8 input but found
# torch.int64".
# any_where: a where on any()'s mask, kept off tainted values like where as a precaution (sigmoid/log ->
# any_where, both keepdim forms, lowered on tosa-int without error).
AVOID_TABLE_TAINT = frozenset({"avg_pool2d", "adaptive_avg_pool2d", "cumsum", "where", "tril", "var", "any_where"})

# batch_norm -> batch_norm (-> silu -> rsqrt) fails in TOSA-1.0+FP lowering: FuseBatchNorm2dPass,
# get_first_fake_tensor raises KeyError: 'val'.  An op never consumes, as its primary input, the
# direct output of an op listed for it here.
AVOID_DIRECT_PRODUCERS = {"batch_norm": frozenset({"batch_norm"})}

# Registered (usable with graphs(ops=[...]) explicitly) but not in the default vocabulary nor in
# ops_in_vocabulary(): sdpa(causal) -> squeeze -> reshape fails in TOSA-1.0+FP lowering with
# "ValueError: Cannot view a tensor with shape torch.Size([3, 2, 6]) and strides (6, 18, 1) as a
# tensor with shape (6, 6)!" (the decomposed SDPA output is non-contiguous).
# erfinv: aten.erfinv is not Core ATen and the ARM partitioner does not keep it, so to_edge's IR
# verifier rejects every graph holding it ("Operator aten.erfinv.default is not in Core ATen
# opset") before any ARM pass runs: the whole graph would be a wasted example.
# adaptive_max_pool2d: the same ("aten.adaptive_max_pool2d.default is not in Core ATen opset").
# cosine_similarity: stock INT quantization (tosa-int and ethos-u55) crashed on a fuzz graph
# cosine_similarity(x0, x0, dim=0) -> relu -> ... -> layer_norm in the quantizer's pipeline
# (DecomposeLayerNormPass -> DecomposeMeanDimPass: "shape '[1, 7, 10, 4]' is invalid for input of
# size 40"); not minimised yet, so the op stays out of the default vocabulary.
# addmm: with its weight and bias as parameters, stock INT quantization crashes even without
# beta/alpha: DecomposeAddmmPass (run by the quantizer) scales the bias parameter with
# mul.Scalar(_param_constant, 1.0) and ReplaceScalarWithTensorByProfilePass then fails
# ("'Parameter' object has no attribute 'to_tensor'"; found by the CI fuzz smoke on
# addmm(x0, n=4)). FP lowering is unaffected; the op stays usable by name.
# as_strided: the CI sample test's derandomized draw relu -> as_strided -> a chain of relus hit a
# RecursionError in stock INT quantization; not minimised yet.
# embedding: acts only on tosa-fp (see FLOAT_ONLY).
# the int_* ops below: a float value and an int32 buffer in one arithmetic op
INT_OPERAND = ("int_add", "int_sub", "int_mul", "int_div", "int_minimum")
# the comparisons the vocabulary draws (where, masked_fill) and their Python operators
_CMPS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
# the int_* comparisons below: int8/int16 values compared, one vocabulary op per comparison
INT_COMPARE = tuple(f"int_{c}" for c in _CMPS)
# Integer and bool operands (issue 43, item 4): one vocabulary op per (op, dtype), `int8_add` ...
# `int32_abs`, `bool_add` (`_ops_reach`): the op on two operands of that dtype (or one, unary), the
# value cast back to float32 so that every value of the pool stays float32. Drawn only where the
# gate aims at an operand dtype (`generators.random.properties`), on float targets (an INT
# target's quantizer would annotate the integer operands), never by plain draws: quarantined.
TYPED_OPS = {"add": ("int8", "int16", "int32", "bool"), "sub": ("int8", "int16", "int32"),
             "mul": ("int8", "int16", "int32"), "maximum": ("int8", "int16", "int32"),
             "minimum": ("int8", "int16", "int32"), "neg": ("int8", "int16", "int32"),
             "abs": ("int8", "int16", "int32")}
# The data-layout ops on integer operands, `int8_slice` ... `int32_chunk` (`_ops_reach`), in the same
# style: a float-only spec has no integer CONCAT/PAD/RESHAPE/TILE/TRANSPOSE/SLICE/REVERSE, so
# InsertDataLayoutCastsPass rewrites these ops on integer operands only, which float32 values never
# present (its mutant without slice_copy survived the gate's self-test, seed 7). Key: the float
# vocabulary op whose params and shapes each reuses. Measured on edge-fp (stock, TOSA-1.0+FP,
# relu -> op, three param draws each, int8/int16/int32): all 21 lower; cat, permute, view,
# constant_pad, repeat and flip are delegated and InsertDataLayoutCastsPass receives them on the
# integer operand. The integer slice is not delegated (SliceCopySupported: "requires INT profile"),
# so in the lowering pipeline the pass never receives it; it is kept for the passes the gate runs
# directly on the edge graph, where it is an integer slice_copy. An integer split and chunk are
# delegated, and ConvertSplitToSlicePass makes them slice_copy nodes of their dtype, the only
# targeted op InsertDataLayoutCastsPass then receives: the integer slice_copy of the lowering
# (measured, int8/int16/int32, five param draws each; `properties.PIPELINE_PRESENTED`). No typed
# select: an integer select is delegated too, but DecomposeSelectPass makes it a slice_copy and a
# view_copy of its dtype, so the pass always receives the slice beside a view it targets as well
# (measured, the same draws). Float stages only: an INT stage's quantized graph has no integer
# data-layout op its spec lacks.
TYPED_LAYOUT_OPS = {op: ("int8", "int16", "int32")
                    for op in ("slice", "cat", "permute", "view", "constant_pad", "repeat", "flip", "split", "chunk")}
TYPED = tuple(f"{dtype}_{op}" for table in (TYPED_OPS, TYPED_LAYOUT_OPS)
              for op, dtypes in table.items() for dtype in dtypes)
QUARANTINED = frozenset({"sdpa", "erfinv", "adaptive_max_pool2d", "cosine_similarity", "addmm", "as_strided",
                         *INT_OPERAND, "embedding", *INT_COMPARE, "int_clamp", *TYPED})
# Quarantined ops whose crash is in stock INT quantization only: a float target (tosa-fp, no
# quantizer) lowers them, and its fuzz graphs draw them toward the passes only they reach there
# (addmm: DecomposeAddmmPass on tosa-fp, where the partitioner keeps linear whole;
# int_add ... int_minimum: a float and an int32 value in one op, which the quantizer would annotate;
# embedding: F.embedding with an int32 index buffer, the one index dtype the ARM partitioner
# delegates; on INT targets it lowers, but the quantizer's transform_for_annotation copy of
# DecomposeEmbeddingPass has already made it index_select: measured, relu -> embedding -> abs on
# tosa-int hands the lowering's DecomposeEmbeddingPass index_select and it copies nothing;
# int_gt ... int_ne: an int8/int16 comparison, which the quantizer would annotate too;
# int_clamp: an int32 clamp, on which stock lowering fails on INT targets as on float ones).
FLOAT_ONLY = frozenset({"addmm", *INT_OPERAND, "embedding", *INT_COMPARE, "int_clamp"})


REGISTRY: dict[str, _OpDef] = {}


# --------------------------------------------------------------------------------------------
# Unary elementwise ops.  "safe" wrappers keep values finite: inputs of log/sqrt/rsqrt/pow(0.5)
# go through abs()+eps, inputs of exp/sinh/cosh/expm1 are clamped first.


def _unary(name, template, aten, choices=None):
    """template uses {x} and, if choices is given, {p} for the chosen param (already formatted)."""

    def inst(ctx):
        params = {}
        if choices is not None:
            params["p"] = ctx.choice(choices)
        return params, [], ctx.x

    def emit(args, params, in_shapes):
        p = params.get("p")
        return template.format(x=args[0], p=_fmt(p) if not isinstance(p, (list, tuple)) else None,
                               p0=_fmt(p[0]) if isinstance(p, (list, tuple)) else None,
                               p1=_fmt(p[1]) if isinstance(p, (list, tuple)) else None), []

    REGISTRY[name] = _OpDef(name, tuple(aten), inst, emit, kind="unary")


_unary("relu", "torch.relu({x})", ["aten.relu.default"])
_unary("relu6", "F.relu6({x})", ["aten.relu6.default", "aten.hardtanh.default"])
_unary("hardtanh", "F.hardtanh({x}, {p0}, {p1})", ["aten.hardtanh.default"],
       [(-1.0, 1.0), (0.0, 6.0), (-0.5, 2.0)])
_unary("clamp", "torch.clamp({x}, min={p0}, max={p1})", ["aten.clamp.default"],
       [(-1.0, 1.0), (0.0, None), (None, 0.5), (-2.0, 0.25)])
_unary("leaky_relu", "F.leaky_relu({x}, {p})", ["aten.leaky_relu.default"], [0.01, 0.1, 0.2])
_unary("sigmoid", "torch.sigmoid({x})", ["aten.sigmoid.default"])
_unary("tanh", "torch.tanh({x})", ["aten.tanh.default"])
_unary("gelu", "F.gelu({x}, approximate={p})", ["aten.gelu.default"], ["none", "tanh"])
_unary("silu", "F.silu({x})", ["aten.silu.default"])
_unary("hardswish", "F.hardswish({x})", ["aten.hardswish.default"])
_unary("hardsigmoid", "F.hardsigmoid({x})", ["aten.hardsigmoid.default"])
_unary("elu", "F.elu({x}, alpha={p})", ["aten.elu.default"], [1.0, 0.5])
_unary("abs", "torch.abs({x})", ["aten.abs.default"])
_unary("neg", "torch.neg({x})", ["aten.neg.default"])
_unary("exp", "torch.exp(torch.clamp({x}, -8.0, 4.0))", ["aten.clamp.default", "aten.exp.default"])
_unary("log", "torch.log(torch.abs({x}) + 0.1)", ["aten.abs.default", "aten.add.Tensor", "aten.log.default"])
_unary("sqrt", "torch.sqrt(torch.abs({x}) + 0.01)", ["aten.abs.default", "aten.add.Tensor", "aten.sqrt.default"])
_unary("rsqrt", "torch.rsqrt(torch.abs({x}) + 0.1)", ["aten.abs.default", "aten.add.Tensor", "aten.rsqrt.default"])
_unary("reciprocal", "torch.reciprocal(torch.abs({x}) + 1.0)",
       ["aten.abs.default", "aten.add.Tensor", "aten.reciprocal.default"])
_unary("sin", "torch.sin({x})", ["aten.sin.default"])
_unary("cos", "torch.cos({x})", ["aten.cos.default"])
_unary("erf", "torch.erf({x})", ["aten.erf.default"])
_unary("atan", "torch.atan({x})", ["aten.atan.default"])
_unary("sinh", "torch.sinh(torch.clamp({x}, -4.0, 4.0))", ["aten.clamp.default", "aten.sinh.default"])
_unary("log1p", "torch.log1p(torch.abs({x}))", ["aten.abs.default", "aten.log1p.default"])
_unary("expm1", "torch.expm1(torch.clamp({x}, -8.0, 4.0))", ["aten.clamp.default", "aten.expm1.default"])
_unary("sign", "torch.sign({x})", ["aten.sign.default"])
_unary("floor", "torch.floor({x})", ["aten.floor.default"])
_unary("round", "torch.round({x})", ["aten.round.default"])
# Inverse/hyperbolic/trig ops that ARM decomposes (DecomposeAcoshPass, DecomposeTanPass, ...);
# clamps keep the input inside the op's domain (and away from its poles).
_unary("asinh", "torch.asinh({x})", ["aten.asinh.default"])
_unary("acosh", "torch.acosh(torch.abs({x}) + 1.0)", ["aten.abs.default", "aten.add.Tensor", "aten.acosh.default"])
_unary("atanh", "torch.atanh(torch.clamp({x}, -0.9, 0.9))", ["aten.clamp.default", "aten.atanh.default"])
_unary("cosh", "torch.cosh(torch.clamp({x}, -4.0, 4.0))", ["aten.clamp.default", "aten.cosh.default"])
_unary("tan", "torch.tan(torch.clamp({x}, -1.2, 1.2))", ["aten.clamp.default", "aten.tan.default"])
_unary("asin", "torch.asin(torch.clamp({x}, -0.95, 0.95))", ["aten.clamp.default", "aten.asin.default"])
_unary("acos", "torch.acos(torch.clamp({x}, -0.95, 0.95))", ["aten.clamp.default", "aten.acos.default"])
_unary("erfinv", "torch.erfinv(torch.clamp({x}, -0.9, 0.9))", ["aten.clamp.default", "aten.erfinv.default"])
_unary("celu", "F.celu({x}, alpha={p})", ["aten.celu.default"], [1.0, 0.5])
_unary("selu", "F.selu({x})", ["aten.selu.default"])


def _logit_inst(ctx):
    return {"eps": ctx.choice([1e-6, None, 0.05])}, [], ctx.x


def _logit_emit(args, params, in_shapes):
    if params["eps"] is None:  # no eps: keep the input inside (0, 1) ourselves
        return f"torch.logit(torch.clamp({args[0]}, 0.05, 0.95))", []
    return f"torch.logit({args[0]}, eps={params['eps']!r})", []


REGISTRY["logit"] = _OpDef("logit", ("aten.logit.default",), _logit_inst, _logit_emit, kind="unary")


def _pow_inst(ctx):
    return {"exponent": ctx.choice([2.0, 3.0, 0.5])}, [], ctx.x


def _pow_emit(args, params, in_shapes):
    e = params["exponent"]
    if e != int(e):
        return f"torch.pow(torch.abs({args[0]}) + 0.01, {_fmt(e)})", []
    return f"torch.pow({args[0]}, {_fmt(e)})", []


REGISTRY["pow"] = _OpDef("pow", ("aten.pow.Tensor_Scalar",), _pow_inst, _pow_emit, kind="unary")


# --------------------------------------------------------------------------------------------
# Binary elementwise ops.  Forms: "tensor" (another value, broadcastable), "scalar", "const"
# (a constant tensor with a broadcastable shape).


def _const_shapes(x):
    """Broadcastable constant shapes for x, simplest first."""
    opts = [(x[-1],)]
    if len(x) >= 3:
        opts.append((x[-3], 1, 1))
    opts.append(tuple(x))
    return opts


def _bcast_ok(x):
    return lambda y: (b := broadcast_shape(x, y)) is not None and _fits(b)


def _binary(name, sym, aten, scalar_ok=True, div=False):
    def inst(ctx):
        forms = ["tensor", "scalar", "const"] if scalar_ok else ["tensor", "const"]
        form = ctx.choice(forms)
        if form == "tensor":
            other = ctx.partner(_bcast_ok(ctx.x))
            out = broadcast_shape(ctx.x, ctx.pool[other])
            params, partners = {"form": form, "swap": ctx.flag() and not div}, [other]
        elif form == "scalar":
            params, partners, out = {"form": form, "value": ctx.choice([0.5, 2.0, -1.5])}, [], ctx.x
        else:
            params, partners, out = {"form": form, "shape": list(ctx.choice(_const_shapes(ctx.x)))}, [], ctx.x
        if div:  # drawn last, so the earlier choices of a gene decode as before
            params["rounding_mode"] = ctx.choice([None, "trunc", "floor"])
        return params, partners, out

    def emit(args, params, in_shapes):
        x = args[0]
        form = params["form"]
        consts = []
        if form == "tensor":
            y = args[1]
            if div:
                y = f"(torch.abs({y}) + 1.0)"
            if params.get("swap"):
                x, y = y, x
        elif form == "scalar":
            y = _fmt(params["value"])
        else:
            lo, hi = (0.5, 1.5) if div else (-1.0, 1.0)
            consts.append(("c", tuple(params["shape"]), lo, hi, False))
            y = "self.{c}"
        if sym in ("minimum", "maximum"):
            return f"torch.{sym}({x}, {y})", consts
        if params.get("rounding_mode"):  # div.Tensor_mode / div.Scalar_mode
            return f"torch.div({x}, {y}, rounding_mode={params['rounding_mode']!r})", consts
        return f"{x} {sym} {y}", consts

    REGISTRY[name] = _OpDef(name, tuple(aten), inst, emit, kind="binary")


_binary("add", "+", ["aten.add.Tensor"])
_binary("sub", "-", ["aten.sub.Tensor"])
_binary("mul", "*", ["aten.mul.Tensor"])
_binary("div", "/", ["aten.div.Tensor", "aten.div.Tensor_mode"], div=True)
_binary("minimum", "minimum", ["aten.minimum.default"], scalar_ok=False)
_binary("maximum", "maximum", ["aten.maximum.default"], scalar_ok=False)

# A float value and an int32 constant in one arithmetic op: the mixed-dtype form
# RemoveMixedTypeOperators (to_edge) casts, which float-only values never present. A literal
# [W] int32 buffer, as models register index offsets or integer scales. One vocabulary op per
# arithmetic op (int_add, ..., int_minimum), so that each presents one op: the gate's aim at an op
# dropped from the pass's annotation then finds its mixed form among the untargeted ops. Float
# targets only (FLOAT_ONLY): on INT targets the quantizer would annotate the int operand.
_INT_OPERAND_OPS = {"add": ("+", "aten.add.Tensor"), "sub": ("-", "aten.sub.Tensor"),
                    "mul": ("*", "aten.mul.Tensor"), "div": ("/", "aten.div.Tensor"),
                    "minimum": ("minimum", "aten.minimum.default")}
assert INT_OPERAND == tuple(f"int_{op}" for op in _INT_OPERAND_OPS)


def _int_operand_ok(x):
    return x[-1] <= _MASK_LITERAL_MAX


def _int_operand_inst(ctx):
    return {"swap": ctx.flag()}, [], ctx.x


def _int_operand(op):
    sym = _INT_OPERAND_OPS[op][0]

    def emit(args, params, in_shapes):
        width = in_shapes[0][-1]
        values = [1 + i % 3 if op == "div" else i % 5 - 2 for i in range(width)]  # div: no zero divisor
        x, c = args[0], "self.{c}"
        if params.get("swap") and op != "div":
            x, c = c, x
        expr = f"torch.minimum({x}, {c})" if op == "minimum" else f"{x} {sym} {c}"
        return expr, [("c", (width,), values, "int32", True)]

    return emit


for _op, (_sym, _aten) in _INT_OPERAND_OPS.items():
    REGISTRY[f"int_{_op}"] = _OpDef(f"int_{_op}", (_aten,), _int_operand_inst, _int_operand(_op),
                                    accepts=_int_operand_ok, kind="binary")

# A comparison of int8/int16 values, selecting between float ones: the form
# CastIntComparisonInputsPass casts (FP-only TOSA has no integer comparison); every other
# comparison the vocabulary draws is of float32 values. One vocabulary op per comparison (int_gt
# ... int_ne), as for the int_* arithmetic: a drawn op then presents one comparison, so the
# gate's aim at a comparison dropped from the pass's annotation finds it among the untargeted
# ops (one op drawing all six presented them all as targeted: the self-test's mutant without
# le.Tensor survived). Float targets only (FLOAT_ONLY).


def _int_compare_inst(ctx):
    return {"dtype": ctx.choice(["int16", "int8"])}, [], ctx.x


def _int_compare(cmp):
    def emit(args, params, in_shapes):
        width = in_shapes[0][-1]
        x, dtype = args[0], params["dtype"]
        values = [i % 5 - 2 for i in range(width)]
        return (f"torch.where({x}.to(torch.{dtype}) {_CMPS[cmp]} self.{{c}}, {x}, -{x})",
                [("c", (width,), values, dtype, True)])

    return emit


for _cmp in _CMPS:
    REGISTRY[f"int_{_cmp}"] = _OpDef(f"int_{_cmp}", (f"aten.{_cmp}.Tensor", "aten.where.self"), _int_compare_inst,
                                     _int_compare(_cmp), accepts=_int_operand_ok, kind="binary")


def _where_inst(ctx):
    cmp = ctx.choice(list(_CMPS))
    form = ctx.choice(["tensor", "zero_cond", "scalar_other"])
    other = ctx.partner(_bcast_ok(ctx.x))
    out = broadcast_shape(ctx.x, ctx.pool[other])
    return {"cmp": cmp, "form": form}, [other], out


def _where_emit(args, params, in_shapes):
    a, b = args
    op = _CMPS[params["cmp"]]
    if params["form"] == "tensor":
        return f"torch.where({a} {op} {b}, {a}, {b})", []
    if params["form"] == "zero_cond":
        return f"torch.where({a} {op} 0.0, {a}, {b})", []
    return f"torch.where({a} {op} {b}, {a}, 0.0)", []


REGISTRY["where"] = _OpDef(
    "where", ("aten.where.self", "aten.gt.Tensor", "aten.lt.Tensor", "aten.ge.Tensor", "aten.le.Tensor",
              "aten.eq.Tensor", "aten.ne.Tensor", "aten.gt.Scalar"),
    _where_inst, _where_emit, kind="binary")


_MASK_LITERAL_MAX = 256  # elements of a literal mask written into the reproducer


def _mfill_inst(ctx):
    params = {"cmp": ctx.choice(["gt", "lt"]), "value": ctx.choice([0.0, -1.0, 2.5])}
    x = ctx.x
    # A constant mask, as models register one (causal attention masks): [W] or [H, W] literal.
    forms = ["computed"] + (["const_last"] if x[-1] <= _MASK_LITERAL_MAX else [])
    forms += ["causal"] if len(x) >= 2 and x[-2] * x[-1] <= _MASK_LITERAL_MAX else []
    params["mask"] = ctx.choice(forms)
    return params, [], x


def _mfill_emit(args, params, in_shapes):
    mask = params.get("mask", "computed")
    value = _fmt(params["value"])
    if mask == "computed":
        return f"{args[0]}.masked_fill({args[0]} {_CMPS[params['cmp']]} 0.5, {value})", []
    x = in_shapes[0]
    if mask == "causal":
        h, w = x[-2], x[-1]
        shape = (h, w)
        values = [j > i for i in range(h) for j in range(w)]
    else:
        shape = (x[-1],)
        values = [i % 3 == 1 for i in range(x[-1])]
    return f"{args[0]}.masked_fill(self.{{m}}, {value})", [("m", shape, values, "bool", True)]


REGISTRY["masked_fill"] = _OpDef("masked_fill", ("aten.masked_fill.Scalar", "aten.gt.Scalar"),
                                 _mfill_inst, _mfill_emit, kind="binary")


# --------------------------------------------------------------------------------------------
# Linear algebra


def _linear_inst(ctx):
    x = ctx.x
    opts = [n for n in (4, 1, 8, 16, 3) if _fits(x[:-1] + (n,))] or [1]
    out = ctx.choice(opts)
    return {"out": out, "bias": not ctx.flag()}, [], x[:-1] + (out,)


def _linear_emit(args, params, in_shapes):
    k = in_shapes[0][-1]
    s = 1.0 / math.sqrt(k)
    consts = [("w", (params["out"], k), -s, s, False)]
    if params["bias"]:
        consts.append(("b", (params["out"],), -s, s, False))
        return f"F.linear({args[0]}, self.{{w}}, self.{{b}})", consts
    return f"F.linear({args[0]}, self.{{w}})", consts


REGISTRY["linear"] = _OpDef("linear", ("aten.linear.default",), _linear_inst, _linear_emit, kind="linalg")


def _mm_ok(x):
    return len(x) >= 2


def _matmul_inst(ctx):
    x = ctx.x
    form = ctx.choice(["const", "tensor"])
    if form == "tensor":
        out = x[:-1] + (x[-2],)
        if _fits(out):
            other = ctx.partner(lambda y: tuple(y) == tuple(x))
            return {"form": "tensor"}, [other], out
    opts = [n for n in (4, 1, 8, 3) if _fits(x[:-1] + (n,))] or [1]
    n = ctx.choice(opts)
    return {"form": "const", "n": n}, [], x[:-1] + (n,)


def _matmul_emit(args, params, in_shapes):
    if params["form"] == "tensor":
        return f"torch.matmul({args[0]}, {args[1]}.transpose(-1, -2))", []
    k = in_shapes[0][-1]
    s = 1.0 / math.sqrt(k)
    return f"torch.matmul({args[0]}, self.{{w}})", [("w", (k, params["n"]), -s, s, False)]


REGISTRY["matmul"] = _OpDef("matmul", ("aten.matmul.default", "aten.mm.default", "aten.bmm.default"),
                            _matmul_inst, _matmul_emit, accepts=_mm_ok, kind="linalg")


def _bmm_ok(x):
    return len(x) >= 2


def _bmm_inst(ctx):
    x = ctx.x
    b = numel(x[:-2])
    out = (b, x[-2], x[-2])
    if _fits(out) and ctx.choice(["tensor", "const"]) == "tensor":
        other = ctx.partner(lambda y: tuple(y) == tuple(x))
        return {"form": "tensor"}, [other], out
    opts = [n for n in (4, 1, 8) if _fits((b, x[-2], n))] or [1]
    n = ctx.choice(opts)
    return {"form": "const", "n": n}, [], (b, x[-2], n)


def _bmm_emit(args, params, in_shapes):
    x = in_shapes[0]
    b, m, k = numel(x[:-2]), x[-2], x[-1]
    a = f"{args[0]}.reshape({b}, {m}, {k})"
    if params["form"] == "tensor":
        return f"torch.bmm({a}, {args[1]}.reshape({b}, {m}, {k}).transpose(1, 2))", []
    s = 1.0 / math.sqrt(k)
    return f"torch.bmm({a}, self.{{w}})", [("w", (b, k, params["n"]), -s, s, False)]


REGISTRY["bmm"] = _OpDef("bmm", ("aten.bmm.default",), _bmm_inst, _bmm_emit, accepts=_bmm_ok, kind="linalg")


def _sdpa_ok(x):
    return len(x) in (3, 4) and numel(x[:-1]) * x[-2] <= MAX_NUMEL


def _sdpa_inst(ctx):
    x = tuple(ctx.x)
    k = ctx.partner(lambda y: tuple(y) == x)
    v = ctx.partner(lambda y: tuple(y) == x)
    return {"causal": ctx.flag()}, [k, v], x


def _sdpa_emit(args, params, in_shapes):
    c = ", is_causal=True" if params["causal"] else ""
    return f"F.scaled_dot_product_attention({args[0]}, {args[1]}, {args[2]}{c})", []


REGISTRY["sdpa"] = _OpDef("sdpa", ("aten.scaled_dot_product_attention.default",), _sdpa_inst, _sdpa_emit,
                          accepts=_sdpa_ok, kind="linalg")


# --------------------------------------------------------------------------------------------
# Convolution, pooling, resizing (rank-4 NCHW values)


def _r4(x):
    return len(x) == 4


def _conv_inst(ctx):
    n, c, h, w = ctx.x
    k = ctx.choice([1, 3, 2, 5])
    stride = ctx.choice([1, 2])
    pad = ctx.choice([0, 1, 2])
    dil = ctx.choice([1, 2])
    gmode = ctx.choice(["dense", "depthwise", "grouped"])
    oc = ctx.choice([4, 1, 8, 16, 3])
    mult = ctx.choice([1, 2])
    bias = not ctx.flag()
    pad = min(pad, k // 2 * dil) if k > 1 else 0
    kh = k
    kw = k

    def eff(kk, d):
        return d * (kk - 1) + 1

    if eff(k, dil) > h + 2 * pad or eff(k, dil) > w + 2 * pad:
        dil = 1
        kh = min(k, h + 2 * pad)
        kw = min(k, w + 2 * pad)
    if gmode == "depthwise":
        groups, oc = c, c * mult
    elif gmode == "grouped":
        groups = max(g for g in (1, 2, 4) if c % g == 0)
        oc = groups * max(1, oc // groups)
    else:
        groups = 1
    oh = (h + 2 * pad - eff(kh, dil)) // stride + 1
    ow = (w + 2 * pad - eff(kw, dil)) // stride + 1
    out = (n, oc, oh, ow)
    if not _fits(out):
        oc = groups  # smallest legal choice
        out = (n, oc, oh, ow)
    params = {"out_channels": oc, "kernel": [kh, kw], "stride": stride, "padding": pad,
              "dilation": dil, "groups": groups, "bias": bias}
    return params, [], out


def _conv_emit(args, params, in_shapes):
    c = in_shapes[0][1]
    kh, kw = params["kernel"]
    g = params["groups"]
    fan = (c // g) * kh * kw
    s = 1.0 / math.sqrt(fan)
    consts = [("w", (params["out_channels"], c // g, kh, kw), -s, s, False)]
    b = "None"
    if params["bias"]:
        consts.append(("b", (params["out_channels"],), -s, s, False))
        b = "self.{b}"
    return (f"F.conv2d({args[0]}, self.{{w}}, {b}, stride={params['stride']}, padding={params['padding']}, "
            f"dilation={params['dilation']}, groups={g})"), consts


REGISTRY["conv2d"] = _OpDef("conv2d", ("aten.conv2d.default", "aten.convolution.default"),
                            _conv_inst, _conv_emit, accepts=_r4, kind="conv")


def _pool_params(ctx, allow_dilation):
    n, c, h, w = ctx.x
    k = ctx.choice([2, 3, 1])
    stride = ctx.choice([None, 1, 2])
    pad = ctx.choice([0, 1])
    dil = ctx.choice([1, 2]) if allow_dilation else 1
    kh, kw = min(k, h), min(k, w)
    if dil * (kh - 1) + 1 > h or dil * (kw - 1) + 1 > w:
        dil = 1
    pad = min(pad, kh // 2, kw // 2)
    st = [kh, kw] if stride is None else [stride, stride]
    oh = (h + 2 * pad - dil * (kh - 1) - 1) // st[0] + 1
    ow = (w + 2 * pad - dil * (kw - 1) - 1) // st[1] + 1
    return {"kernel": [kh, kw], "stride": st, "padding": pad, "dilation": dil}, (n, c, oh, ow)


def _avgpool_inst(ctx):
    p, out = _pool_params(ctx, False)
    del p["dilation"]
    p["count_include_pad"] = not ctx.flag()
    return p, [], out


def _avgpool_emit(args, params, in_shapes):
    return (f"F.avg_pool2d({args[0]}, {_fmt(params['kernel'])}, stride={_fmt(params['stride'])}, "
            f"padding={params['padding']}, count_include_pad={params['count_include_pad']})"), []


def _maxpool_inst(ctx):
    p, out = _pool_params(ctx, True)
    n, c, h, w = ctx.x
    # Drawn last (earlier choices decode as before): a non-overlapping window wider than 3, the
    # form DecomposeLargeStrideMaxPool2dForU55Pass rewrites (U55 pools with stride <= 3 only).
    if ctx.choice([False, True]) and min(h, w) >= 4:
        k = min(h, w, ctx.choice([4, 6]))
        p = {"kernel": [k, k], "stride": [k, k], "padding": 0, "dilation": 1}
        out = (n, c, h // k, w // k)
    return p, [], out


def _maxpool_emit(args, params, in_shapes):
    return (f"F.max_pool2d({args[0]}, {_fmt(params['kernel'])}, stride={_fmt(params['stride'])}, "
            f"padding={params['padding']}, dilation={params['dilation']})"), []


REGISTRY["avg_pool2d"] = _OpDef("avg_pool2d", ("aten.avg_pool2d.default",), _avgpool_inst, _avgpool_emit,
                                accepts=_r4, kind="pool")
REGISTRY["max_pool2d"] = _OpDef("max_pool2d", ("aten.max_pool2d.default", "aten.max_pool2d_with_indices.default"),
                                _maxpool_inst, _maxpool_emit, accepts=_r4, kind="pool")


def _adapt_inst(ctx):
    n, c, h, w = ctx.x
    size = ctx.choice([(1, 1), (max(1, h // 2), max(1, w // 2)), (h, w), (min(h, 3), min(w, 3))])
    return {"output_size": list(size)}, [], (n, c) + tuple(size)


def _adapt_emit(args, params, in_shapes):
    return f"F.adaptive_avg_pool2d({args[0]}, {_fmt(params['output_size'])})", []


REGISTRY["adaptive_avg_pool2d"] = _OpDef("adaptive_avg_pool2d", ("aten.adaptive_avg_pool2d.default",
                                                                 "aten._adaptive_avg_pool2d.default"),
                                         _adapt_inst, _adapt_emit, accepts=_r4, kind="pool")


def _up_ok(x):
    return len(x) == 4 and numel(x) * 4 <= MAX_NUMEL


def _up_inst(ctx):
    mode = ctx.choice(["nearest", "bilinear"])
    align = mode == "bilinear" and ctx.flag()
    # drawn last, so the earlier choices of a gene decode as before. Scale 1 is the same-size
    # resize RemoveNoopPass deletes: without it no graph presents the no-op form it acts on
    scale = ctx.choice([2, 1])
    n, c, h, w = ctx.x
    return {"mode": mode, "align_corners": align, "scale": scale}, [], (n, c, scale * h, scale * w)


def _up_emit(args, params, in_shapes):
    scale = float(params.get("scale", 2))  # specs saved before the scale was drawn: 2
    if params["mode"] == "nearest":
        return f"F.interpolate({args[0]}, scale_factor={scale}, mode='nearest')", []
    return (f"F.interpolate({args[0]}, scale_factor={scale}, mode='bilinear', "
            f"align_corners={params['align_corners']})", [])


REGISTRY["upsample"] = _OpDef("upsample", ("aten.upsample_nearest2d.vec", "aten.upsample_bilinear2d.vec"),
                              _up_inst, _up_emit, accepts=_up_ok, kind="resize")


# --------------------------------------------------------------------------------------------
# Normalisation


def _bn_inst(ctx):
    return {"affine": not ctx.flag(), "eps": 1e-5}, [], ctx.x


def _bn_emit(args, params, in_shapes):
    c = in_shapes[0][1]
    consts = [("mean", (c,), -0.5, 0.5, True), ("var", (c,), 0.5, 2.0, True)]
    if params["affine"]:
        consts += [("w", (c,), 0.5, 1.5, False), ("b", (c,), -0.5, 0.5, False)]
        wb = "self.{w}, self.{b}"
    else:
        wb = "None, None"
    return f"F.batch_norm({args[0]}, self.{{mean}}, self.{{var}}, {wb}, False, 0.1, {params['eps']!r})", consts


REGISTRY["batch_norm"] = _OpDef("batch_norm", ("aten.batch_norm.default",
                                               "aten._native_batch_norm_legit_no_training.default"),
                                _bn_inst, _bn_emit, accepts=_r4, kind="norm")


def _ln_inst(ctx):
    x = ctx.x
    nd = ctx.choice([1, 2]) if len(x) >= 2 else 1
    return {"ndims": nd, "affine": not ctx.flag(), "eps": 1e-5}, [], x


def _ln_emit(args, params, in_shapes):
    shape = tuple(in_shapes[0][-params["ndims"]:])
    if params["affine"]:
        return (f"F.layer_norm({args[0]}, {_fmt(shape)}, self.{{w}}, self.{{b}}, {params['eps']!r})",
                [("w", shape, 0.5, 1.5, False), ("b", shape, -0.5, 0.5, False)])
    return f"F.layer_norm({args[0]}, {_fmt(shape)}, None, None, {params['eps']!r})", []


REGISTRY["layer_norm"] = _OpDef("layer_norm", ("aten.layer_norm.default", "aten.native_layer_norm.default"),
                                _ln_inst, _ln_emit, kind="norm")


def _gn_inst(ctx):
    _, c, h, w = ctx.x
    # F.group_norm insists on more than one value per group.
    g = ctx.choice([d for d in (1, 2, 4, c) if c % d == 0 and (c // d) * h * w >= 2])
    return {"groups": g, "affine": not ctx.flag(), "eps": 1e-5}, [], ctx.x


def _gn_emit(args, params, in_shapes):
    c = in_shapes[0][1]
    if params["affine"]:
        return (f"F.group_norm({args[0]}, {params['groups']}, self.{{w}}, self.{{b}}, {params['eps']!r})",
                [("w", (c,), 0.5, 1.5, False), ("b", (c,), -0.5, 0.5, False)])
    return f"F.group_norm({args[0]}, {params['groups']}, None, None, {params['eps']!r})", []


REGISTRY["group_norm"] = _OpDef("group_norm", ("aten.group_norm.default", "aten.native_group_norm.default"),
                                _gn_inst, _gn_emit, accepts=lambda x: _r4(x) and numel(x[1:]) >= 2, kind="norm")


# --------------------------------------------------------------------------------------------
# Softmax, reductions, scans


def _dim_inst(ctx):
    return {"dim": ctx.choice(range(len(ctx.x)))}, [], ctx.x


REGISTRY["softmax"] = _OpDef("softmax", ("aten.softmax.int", "aten._softmax.default"), _dim_inst,
                             lambda a, p, s: (f"torch.softmax({a[0]}, dim={p['dim']})", []), kind="softmax")
REGISTRY["log_softmax"] = _OpDef("log_softmax", ("aten.log_softmax.int", "aten._log_softmax.default"), _dim_inst,
                                 lambda a, p, s: (f"torch.log_softmax({a[0]}, dim={p['dim']})", []), kind="softmax")
REGISTRY["cumsum"] = _OpDef("cumsum", ("aten.cumsum.default",), _dim_inst,
                            lambda a, p, s: (f"torch.cumsum({a[0]}, dim={p['dim']})", []), kind="reduce")


def _reduced(x, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in dims)


def _reduce_dims(ctx, single=False):
    x = ctx.x
    r = len(x)
    opts = [[r - 1]] + [[i] for i in range(r - 1)]
    if not single and r >= 2:
        opts += [[r - 2, r - 1]]
    dims = ctx.choice(opts)
    keep = not ctx.flag()
    if not keep and len(dims) == r:
        keep = True
    return dims, keep


def _reduction(name, fn, aten):
    def inst(ctx):
        dims, keep = _reduce_dims(ctx)
        return {"dims": dims, "keepdim": keep}, [], _reduced(ctx.x, dims, keep)

    def emit(args, params, in_shapes):
        return f"torch.{fn}({args[0]}, dim={_fmt(params['dims'])}, keepdim={params['keepdim']})", []

    REGISTRY[name] = _OpDef(name, tuple(aten), inst, emit, kind="reduce")


_reduction("mean", "mean", ["aten.mean.dim"])
_reduction("sum", "sum", ["aten.sum.dim_IntList"])
_reduction("amax", "amax", ["aten.amax.default"])
_reduction("amin", "amin", ["aten.amin.default"])


def _var_inst(ctx):
    dims, keep = _reduce_dims(ctx)
    count = numel([ctx.x[d] for d in dims])
    corr = ctx.choice([0, 1]) if count >= 2 else 0
    return {"dims": dims, "keepdim": keep, "correction": corr}, [], _reduced(ctx.x, dims, keep)


def _var_emit(args, params, in_shapes):
    return (f"torch.var({args[0]}, dim={_fmt(params['dims'])}, correction={params['correction']}, "
            f"keepdim={params['keepdim']})"), []


REGISTRY["var"] = _OpDef("var", ("aten.var.correction",), _var_inst, _var_emit, kind="reduce")


def _minmax_dim(name, fn):
    def inst(ctx):
        dims, keep = _reduce_dims(ctx, single=True)
        return {"dim": dims[0], "keepdim": keep}, [], _reduced(ctx.x, dims, keep)

    def emit(args, params, in_shapes):
        return f"torch.{fn}({args[0]}, dim={params['dim']}, keepdim={params['keepdim']})[0]", []

    REGISTRY[name] = _OpDef(name, (f"aten.{fn}.dim",), inst, emit, kind="reduce")


_minmax_dim("max_dim", "max")
_minmax_dim("min_dim", "min")


def _norm_inst(ctx):
    dims, keep = _reduce_dims(ctx)
    return {"dims": dims, "keepdim": keep, "ord": ctx.choice([2.0, 1.0])}, [], _reduced(ctx.x, dims, keep)


def _norm_emit(args, params, in_shapes):
    return (f"torch.linalg.vector_norm({args[0]}, ord={params['ord']!r}, dim={_fmt(params['dims'])}, "
            f"keepdim={params['keepdim']})"), []


REGISTRY["vector_norm"] = _OpDef("vector_norm", ("aten.linalg_vector_norm.default",), _norm_inst, _norm_emit,
                                 kind="reduce")


# --------------------------------------------------------------------------------------------
# Data movement


def _ge2(x):
    return len(x) >= 2


def _permute_inst(ctx):
    r = len(ctx.x)
    perms = list(itertools.permutations(range(r)))[1:]  # skip identity
    perm = ctx.choice(perms)
    return {"perm": list(perm)}, [], tuple(ctx.x[i] for i in perm)


REGISTRY["permute"] = _OpDef("permute", ("aten.permute.default",), _permute_inst,
                             lambda a, p, s: (f"{a[0]}.permute{_fmt(p['perm'])}", []), accepts=_ge2, kind="layout")


def _transpose_inst(ctx):
    r = len(ctx.x)
    pairs = [(r - 2, r - 1)] + [(i, j) for i in range(r) for j in range(i + 1, r) if (i, j) != (r - 2, r - 1)]
    i, j = ctx.choice(pairs)
    out = list(ctx.x)
    out[i], out[j] = out[j], out[i]
    return {"dim0": i, "dim1": j}, [], tuple(out)


REGISTRY["transpose"] = _OpDef("transpose", ("aten.transpose.int", "aten.permute.default"), _transpose_inst,
                               lambda a, p, s: (f"torch.transpose({a[0]}, {p['dim0']}, {p['dim1']})", []),
                               accepts=_ge2, kind="layout")


def _reshape_targets(x):
    x = tuple(x)
    r = len(x)
    opts = [(numel(x),)]
    for i in range(r - 1):
        opts.append(x[:i] + (x[i] * x[i + 1],) + x[i + 2:])
    if r < MAX_RANK:
        for i in range(r):
            d = x[i]
            f = next((f for f in (2, 3, 5, 7) if d % f == 0 and d > f), None)
            if f:
                opts.append(x[:i] + (f, d // f) + x[i + 1:])
        opts.append(x + (1,))
    return [o for o in opts if o != x] or [x]


def _reshape_inst(ctx):
    t = ctx.choice(_reshape_targets(ctx.x))
    infer = ctx.flag() and len(t) >= 2
    return {"shape": list(t), "infer": infer}, [], tuple(t)


def _reshape_emit_factory(method):
    def emit(args, params, in_shapes):
        shape = list(params["shape"])
        if params.get("infer"):
            shape[0] = -1
        return f"{args[0]}.{method}{_fmt(shape)}", []

    return emit


REGISTRY["reshape"] = _OpDef("reshape", ("aten.view.default", "aten.reshape.default"), _reshape_inst,
                             _reshape_emit_factory("reshape"), kind="layout")
# `view` needs a contiguous input; contiguity isn't tracked, so the input is made contiguous
# (a no-op for already-contiguous values; a clone after permute/transpose).
REGISTRY["view"] = _OpDef("view", ("aten.view.default",), _reshape_inst,
                          lambda a, p, s: _reshape_emit_factory("view")([f"{a[0]}.contiguous()"], p, s),
                          kind="layout")


def _flatten_inst(ctx):
    r = len(ctx.x)
    pairs = [(0, r - 1)] + [(i, j) for i in range(r) for j in range(i + 1, r) if (i, j) != (0, r - 1)]
    s, e = ctx.choice(pairs) if r >= 2 else (0, 0)
    out = ctx.x[:s] + (numel(ctx.x[s:e + 1]),) + ctx.x[e + 1:]
    return {"start": s, "end": e}, [], tuple(out)


REGISTRY["flatten"] = _OpDef("flatten", ("aten.flatten.using_ints", "aten.view.default"), _flatten_inst,
                             lambda a, p, s: (f"torch.flatten({a[0]}, {p['start']}, {p['end']})", []),
                             kind="layout")


def _has1(x):
    return len(x) >= 2 and 1 in x


def _squeeze_inst(ctx):
    d = ctx.choice([i for i, v in enumerate(ctx.x) if v == 1])
    return {"dim": d}, [], tuple(v for i, v in enumerate(ctx.x) if i != d)


REGISTRY["squeeze"] = _OpDef("squeeze", ("aten.squeeze.dims", "aten.squeeze.dim"), _squeeze_inst,
                             lambda a, p, s: (f"torch.squeeze({a[0]}, {p['dim']})", []), accepts=_has1,
                             kind="layout")


def _unsq_inst(ctx):
    d = ctx.choice(range(len(ctx.x) + 1))
    return {"dim": d}, [], ctx.x[:d] + (1,) + ctx.x[d:]


REGISTRY["unsqueeze"] = _OpDef("unsqueeze", ("aten.unsqueeze.default",), _unsq_inst,
                               lambda a, p, s: (f"torch.unsqueeze({a[0]}, {p['dim']})", []),
                               accepts=lambda x: len(x) < MAX_RANK, kind="layout")


def _cat_inst(ctx):
    x = tuple(ctx.x)

    def ok(y):
        if len(y) != len(x):
            return False
        diff = [i for i in range(len(x)) if x[i] != y[i]]
        return len(diff) <= 1 and _fits(tuple(x[i] + (y[i] if i in diff else 0) for i in range(len(x))))

    other = ctx.partner(ok)
    y = ctx.pool[other]
    diff = [i for i in range(len(x)) if x[i] != y[i]]
    if diff:
        dim = diff[0]
    else:
        dim = ctx.choice(range(len(x)))
        if not _fits(x[:dim] + (2 * x[dim],) + x[dim + 1:]):
            other, y = ctx.primary, x  # only possible when x itself is too big to double
    # drawn last, so the earlier choices of a gene decode as before: a cat of one tensor, the no-op
    # RemoveNoopPass deletes (models build the list of parts in a loop that can run once)
    if ctx.choice([False, True]):
        return {"dim": dim, "single": True}, [], x
    out = list(x)
    out[dim] = x[dim] + y[dim]
    return {"dim": dim}, [other], tuple(out)


def _cat_ok(x):
    return numel(x) * 2 <= MAX_NUMEL


REGISTRY["cat"] = _OpDef("cat", ("aten.cat.default",), _cat_inst,
                         lambda a, p, s: (f"torch.cat([{', '.join(a[:1] if p.get('single') else a[:2])}], "
                                          f"dim={p['dim']})", []),
                         accepts=_cat_ok, kind="layout")


def _big_dim(x):
    return any(d >= 2 for d in x)


def _piece(ctx, x, dim: int, size: int) -> tuple[int, tuple]:
    """One of the pieces torch.split(x, size, dim) returns, drawn: its index and its shape."""
    idx = ctx.choice(range(-(-x[dim] // size)))
    out = list(x)
    out[dim] = min(size, x[dim] - idx * size)
    return idx, tuple(out)


def _split_inst(ctx):
    x = ctx.x
    dim = ctx.choice([i for i, d in enumerate(x) if d >= 2])
    size = ctx.choice([s for s in (1, 2, 3) if s < x[dim]] or [1])
    idx, out = _piece(ctx, x, dim, size)
    return {"dim": dim, "size": size, "index": idx}, [], out


REGISTRY["split"] = _OpDef("split", ("aten.split.Tensor", "aten.split_with_sizes.default"), _split_inst,
                           lambda a, p, s: (f"torch.split({a[0]}, {p['size']}, dim={p['dim']})[{p['index']}]", []),
                           accepts=_big_dim, kind="layout")


def _chunk_inst(ctx):
    x = ctx.x
    dim = ctx.choice([i for i, d in enumerate(x) if d >= 2])
    chunks = ctx.choice([2, 3])
    idx, out = _piece(ctx, x, dim, -(-x[dim] // chunks))  # torch.chunk = split by ceil(size / chunks)
    return {"dim": dim, "chunks": chunks, "index": idx}, [], out


REGISTRY["chunk"] = _OpDef("chunk", ("aten.chunk.default", "aten.split.Tensor"), _chunk_inst,
                           lambda a, p, s: (f"torch.chunk({a[0]}, {p['chunks']}, dim={p['dim']})[{p['index']}]", []),
                           accepts=_big_dim, kind="layout")


def _slice_inst(ctx):
    x = ctx.x
    dim = ctx.choice([i for i, d in enumerate(x) if d >= 2])
    n = x[dim]
    start = ctx.choice(range(0, n - 1))
    end = ctx.choice(range(n, start, -1))
    step = ctx.choice([1, 2])
    out = list(x)
    out[dim] = -(-(end - start) // step)
    return {"dim": dim, "start": start, "end": end, "step": step}, [], tuple(out)


def _slice_emit(args, params, in_shapes):
    idx = ", ".join([":"] * params["dim"] + [f"{params['start']}:{params['end']}:{params['step']}"])
    return f"{args[0]}[{idx}]", []


REGISTRY["slice"] = _OpDef("slice", ("aten.slice.Tensor",), _slice_inst, _slice_emit, accepts=_big_dim,
                           kind="layout")


def _select_inst(ctx):
    x = ctx.x
    dim = ctx.choice(range(len(x)))
    idx = ctx.choice([0, -1, 1]) if x[dim] >= 2 else 0
    return {"dim": dim, "index": idx}, [], tuple(d for i, d in enumerate(x) if i != dim)


REGISTRY["select"] = _OpDef("select", ("aten.select.int",), _select_inst,
                            lambda a, p, s: (f"torch.select({a[0]}, {p['dim']}, {p['index']})", []),
                            accepts=_ge2, kind="layout")


def _pad_ok(x):
    return numel(x[:-2] or (1,)) * (x[-1] + 4) * ((x[-2] if len(x) >= 2 else 1) + 4) <= MAX_NUMEL


def _pad_inst(ctx):
    x = ctx.x
    nd = ctx.choice([1, 2]) if len(x) >= 2 else 1
    pads = [ctx.choice([1, 0, 2]) for _ in range(2 * nd)]
    value = ctx.choice([0.0, -1.0, 0.5])
    out = list(x)
    for i in range(nd):
        out[-1 - i] += pads[2 * i] + pads[2 * i + 1]
    return {"pads": pads, "value": value}, [], tuple(out)


REGISTRY["pad"] = _OpDef("pad", ("aten.constant_pad_nd.default", "aten.pad.default"), _pad_inst,
                         lambda a, p, s: (f"F.pad({a[0]}, {_fmt(p['pads'])}, value={p['value']!r})", []),
                         accepts=_pad_ok, kind="layout")
# The same padding called as its core ATen op: F.pad exports as aten.pad.default, which the Arm
# partitioner keeps, so constant_pad_nd (which RewritePadPass also rewrites) reached no pass
# from `pad` (RewritePadPass without constant_pad_nd survived the gate's self-test).
REGISTRY["constant_pad"] = _OpDef("constant_pad", ("aten.constant_pad_nd.default",), _pad_inst,
                                  lambda a, p, s: (f"torch.constant_pad_nd({a[0]}, {_fmt(p['pads'])}, {p['value']!r})", []),
                                  accepts=_pad_ok, kind="layout")


def _rep_ok(x):
    return numel(x) * 2 <= MAX_NUMEL


def _repeat_inst(ctx):
    x = ctx.x
    r = len(x)
    extra = ctx.flag() and r < MAX_RANK
    reps = [1] * r
    reps[ctx.choice(range(r))] = 2
    if extra:
        reps = [1] + reps
    if _fits(tuple(x)) and numel(x) * 4 <= MAX_NUMEL and ctx.flag():
        reps[ctx.choice(range(len(reps)))] *= 2
    out = tuple(([1] * (len(reps) - r) + list(x))[i] * reps[i] for i in range(len(reps)))
    return {"repeats": reps}, [], out


REGISTRY["repeat"] = _OpDef("repeat", ("aten.repeat.default",), _repeat_inst,
                            lambda a, p, s: (f"{a[0]}.repeat{_fmt(p['repeats'])}", []), accepts=_rep_ok,
                            kind="layout")


def _expand_ok(x):
    return numel(x) * 2 <= MAX_NUMEL and (1 in x or len(x) < MAX_RANK)


def _expand_inst(ctx):
    x = tuple(ctx.x)
    ones = [i for i, d in enumerate(x) if d == 1]
    forms = (["dim"] if ones else []) + (["lead"] if len(x) < MAX_RANK else [])
    form = ctx.choice(forms)
    k = ctx.choice([2, 3, 4])
    while k > 2 and numel(x) * k > MAX_NUMEL:
        k -= 1
    if form == "dim":
        d = ctx.choice(ones)
        out = x[:d] + (k,) + x[d + 1:]
    else:
        out = (k,) + x
    return {"shape": list(out)}, [], out


REGISTRY["expand"] = _OpDef("expand", ("aten.expand.default",), _expand_inst,
                            lambda a, p, s: (f"{a[0]}.expand{_fmt(p['shape'])}", []), accepts=_expand_ok,
                            kind="layout")


def _flip_inst(ctx):
    r = len(ctx.x)
    dims = ctx.choice([[r - 1]] + [[i] for i in range(r - 1)] + ([[0, r - 1]] if r >= 2 else []))
    return {"dims": dims}, [], ctx.x


REGISTRY["flip"] = _OpDef("flip", ("aten.flip.default",), _flip_inst,
                          lambda a, p, s: (f"torch.flip({a[0]}, {_fmt(p['dims'])})", []), kind="layout")


def _glu_ok(x):
    return any(d % 2 == 0 for d in x)


def _glu_inst(ctx):
    dim = ctx.choice([i for i, d in enumerate(ctx.x) if d % 2 == 0][::-1])
    out = list(ctx.x)
    out[dim] //= 2
    return {"dim": dim}, [], tuple(out)


REGISTRY["glu"] = _OpDef("glu", ("aten.glu.default",), _glu_inst,
                         lambda a, p, s: (f"F.glu({a[0]}, dim={p['dim']})", []), accepts=_glu_ok, kind="unary")


def _prelu_inst(ctx):
    per_channel = ctx.flag() and len(ctx.x) >= 2
    return {"per_channel": per_channel}, [], ctx.x


def _prelu_emit(args, params, in_shapes):
    n = in_shapes[0][1] if params["per_channel"] else 1
    return f"F.prelu({args[0]}, self.{{w}})", [("w", (n,), 0.0, 0.5, False)]


REGISTRY["prelu"] = _OpDef("prelu", ("aten.prelu.default",), _prelu_inst, _prelu_emit, kind="unary")


def _tril_inst(ctx):
    return {"diagonal": ctx.choice([0, -1, 1])}, [], ctx.x


REGISTRY["tril"] = _OpDef("tril", ("aten.tril.default",), _tril_inst,
                          lambda a, p, s: (f"torch.tril({a[0]}, {p['diagonal']})", []), accepts=_ge2, kind="layout")


class VocabEntry(tuple):
    """(aten, core_aten): ops expected after torch.export, and after core-ATen decomposition."""

    __slots__ = ()

    def __new__(cls, aten, core_aten):
        return super().__new__(cls, (tuple(aten), tuple(core_aten)))

    aten = property(lambda self: self[0])
    core_aten = property(lambda self: self[1])

    def __repr__(self):
        return f"VocabEntry(aten={self[0]!r}, core_aten={self[1]!r})"


def vocabulary(float_target: bool = False) -> dict:
    """`float_target`: also the ``FLOAT_ONLY`` ops (a graph lowered without quantization)."""
    from . import _aten_table as t

    left_out = QUARANTINED - FLOAT_ONLY if float_target else QUARANTINED
    return {name: VocabEntry(sorted(set(d.aten) | set(t.EXPORT.get(name, ()))), t.CORE.get(name, ()))
            for name, d in REGISTRY.items() if name not in left_out}
