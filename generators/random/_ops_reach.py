"""Vocabulary for the ops that reach the rest of the annotated ARM passes.

The first vocabulary (``_ops``) never produced the ops of about forty annotated passes
(remainder, floor_divide, the div rounding modes, prod, addmm, gather/index_select/index,
index_put, slice_scatter/select_scatter, unfold, as_strided, cosine_similarity, adaptive max
pooling, boolean masks, dtype and memory-format casts).  Each op here presents its op in the
form real models produce and the pass rewrites: constant index tensors and masks (literal
buffers, as models register them), divisors kept away from zero, reductions kept finite.

Every op accepts the first graph input (rank 4, N=1, H even, H, W >= 2), like the others.
Registration order is shrinking order: the simplest choice of every op comes first.
"""

from __future__ import annotations

import math

from ._ops import MAX_NUMEL, MAX_RANK, REGISTRY, TYPED_LAYOUT_OPS, TYPED_OPS, _bcast_ok, _fits, _fmt, _OpDef, _r4, _reduced, broadcast_shape, numel

# Literal index/mask tensors are written into the reproducer's source: keep them short.
_LITERAL_MAX = 256


def _index_values(count: int, bound: int, pattern: str) -> list[int]:
    """`count` indices in [0, bound): distinct while `count <= bound`, in a model-like order."""
    if pattern == "reverse":
        return [(bound - 1 - i) % bound for i in range(count)]
    if pattern == "stride2":
        return [(2 * i) % bound if 2 * count <= bound else i % bound for i in range(count)]
    return [i % bound for i in range(count)]  # "first"


_PATTERNS = ["first", "reverse", "stride2"]


# ---- binary arithmetic with rounding --------------------------------------------------------

def _rounding_binary(name, fn, aten):
    """remainder / floor_divide: a tensor divisor (|y| + 1, never 0) or a scalar one."""

    def inst(ctx):
        form = ctx.choice(["tensor", "scalar"])
        if form == "tensor":
            other = ctx.partner(_bcast_ok(ctx.x))
            return {"form": form}, [other], broadcast_shape(ctx.x, ctx.pool[other])
        return {"form": form, "value": ctx.choice([2.0, 0.75, -1.5])}, [], ctx.x

    def emit(args, params, in_shapes):
        if params["form"] == "tensor":
            return f"torch.{fn}({args[0]}, torch.abs({args[1]}) + 1.0)", []
        return f"torch.{fn}({args[0]}, {_fmt(params['value'])})", []

    REGISTRY[name] = _OpDef(name, tuple(aten), inst, emit, kind="binary")


_rounding_binary("remainder", "remainder", ["aten.remainder.Tensor", "aten.remainder.Scalar"])
_rounding_binary("floor_divide", "floor_divide", ["aten.floor_divide.default"])


# ---- reductions ------------------------------------------------------------------------------

_PROD_MAX_DIM = 16  # a product over at most 16 values in [-1.5, 1.5] stays finite (< 700)


def _prod_ok(x):
    return any(d <= _PROD_MAX_DIM for d in x)


def _prod_inst(ctx):
    dim = ctx.choice([i for i in reversed(range(len(ctx.x))) if ctx.x[i] <= _PROD_MAX_DIM])
    keep = not ctx.flag() or len(ctx.x) == 1
    return {"dim": dim, "keepdim": keep}, [], _reduced(ctx.x, [dim], keep)


def _prod_emit(args, params, in_shapes):
    return f"torch.prod(torch.clamp({args[0]}, -1.5, 1.5), dim={params['dim']}, keepdim={params['keepdim']})", []


REGISTRY["prod"] = _OpDef("prod", ("aten.prod.dim_int",), _prod_inst, _prod_emit, accepts=_prod_ok, kind="reduce")


# ---- linear algebra --------------------------------------------------------------------------

def _addmm_inst(ctx):
    x = ctx.x
    opts = [n for n in (4, 1, 8, 3) if _fits(x[:-1] + (n,))] or [1]
    n = ctx.choice(opts)
    # No beta/alpha: with them, INT quantization crashes in stock (DecomposeAddmmPass, run by the
    # quantizer, scales the bias parameter with mul.Scalar, and ReplaceScalarWithTensorByProfilePass
    # then fails on that node).
    return {"n": n}, [], x[:-1] + (n,)


def _addmm_emit(args, params, in_shapes):
    x = in_shapes[0]
    k, n = x[-1], params["n"]
    s = 1.0 / math.sqrt(k)
    # addmm is 2-D: fold the leading dims into rows and restore them (what nn.Linear did in
    # older traces; DecomposeAddmmPass rewrites it).
    expr = f"torch.addmm(self.{{b}}, {args[0]}.reshape(-1, {k}), self.{{w}}).reshape({_fmt(x[:-1] + (n,))})"
    return expr, [("w", (k, n), -s, s, False), ("b", (n,), -s, s, False)]


REGISTRY["addmm"] = _OpDef("addmm", ("aten.addmm.default",), _addmm_inst, _addmm_emit, kind="linalg")


def _cos_sim_inst(ctx):
    x = tuple(ctx.x)
    other = ctx.partner(lambda y: tuple(y) == x)
    dim = ctx.choice([len(x) - 1] + list(range(len(x) - 1)))
    out = tuple(d for i, d in enumerate(x) if i != dim) or (1,)
    return {"dim": dim}, [other], out


def _cos_sim_emit(args, params, in_shapes):
    expr = f"F.cosine_similarity({args[0]}, {args[1]}, dim={params['dim']})"
    if len(in_shapes[0]) == 1:  # the result would be a 0-d tensor: keep every value rank >= 1
        expr += ".reshape(1)"
    return expr, []


REGISTRY["cosine_similarity"] = _OpDef("cosine_similarity", ("aten.cosine_similarity.default",),
                                       _cos_sim_inst, _cos_sim_emit, kind="reduce")


# ---- indexing with constant index tensors ----------------------------------------------------

def _constant_index(ctx, dims: list[int]):
    """(params, extra inputs, output shape) of an op that picks `count` entries along one of
    `dims` with a constant index vector (index_select, x[idx], x[:, idx])."""
    x = ctx.x
    dim = ctx.choice(dims)
    count = ctx.choice([2, 1, 3])
    pattern = ctx.choice(_PATTERNS)
    out = list(x)
    out[dim] = count
    if not _fits(tuple(out)):
        count, out[dim] = 1, 1
    return {"dim": dim, "index": _index_values(count, x[dim], pattern)}, [], tuple(out)


def _index_select_inst(ctx):
    return _constant_index(ctx, list(reversed(range(len(ctx.x)))))


def _index_select_emit(args, params, in_shapes):
    idx = params["index"]
    return (f"torch.index_select({args[0]}, {params['dim']}, self.{{i}})",
            [("i", (len(idx),), idx, "long", True)])


REGISTRY["index_select"] = _OpDef("index_select", ("aten.index_select.default",), _index_select_inst,
                                  _index_select_emit, kind="layout")


def _index_tensor_inst(ctx):
    """x[idx] or x[:, idx] (aten.index.Tensor, the latter with leading None indices), idx a constant
    index vector.  DecomposeIndexTensorToGatherPass rewrites the first; the partitioner leaves the
    second on the CPU."""
    return _constant_index(ctx, [0] + list(reversed(range(1, len(ctx.x)))))


def _index_tensor_emit(args, params, in_shapes):
    idx = params["index"]
    lead = ":, " * params["dim"]
    return f"{args[0]}[{lead}self.{{i}}]", [("i", (len(idx),), idx, "long", True)]


REGISTRY["index"] = _OpDef("index", ("aten.index.Tensor",), _index_tensor_inst, _index_tensor_emit, kind="layout")


def _gather_inst(ctx):
    """gather along dim 1 of a 2-D [N, K] or 3-D [N, K, C] view (the forms TOSA GATHER takes)."""
    x = ctx.x
    rows = x[0] if len(x) >= 2 else 1
    form = ctx.choice(["2d", "3d"]) if len(x) >= 3 else "2d"
    if form == "3d":
        k, c = x[1], numel(x[2:])
    else:
        k, c = numel(x) // rows, 1
    width = ctx.choice([2, 1, 4])
    pattern = ctx.choice(_PATTERNS)
    idx_shape = (rows, width, c) if form == "3d" else (rows, width)
    if numel(idx_shape) > _LITERAL_MAX:
        form, k, c, idx_shape = "2d", numel(x) // rows, 1, (rows, width)
    if numel(idx_shape) > _LITERAL_MAX:
        width, idx_shape = 1, (rows, 1)
    column = _index_values(width, k, pattern)
    values = [column[w] for _ in range(rows) for w in range(width) for _ in range(c)]
    return {"form": form, "index_shape": list(idx_shape), "index": values}, [], tuple(idx_shape)


def _gather_emit(args, params, in_shapes):
    x = in_shapes[0]
    shape = tuple(params["index_shape"])
    rows = shape[0]
    view = (rows, x[1], numel(x[2:])) if params["form"] == "3d" else (rows, numel(x) // rows)
    src = args[0] if tuple(x) == view else f"{args[0]}.reshape({_fmt(view)})"
    return f"torch.gather({src}, 1, self.{{i}})", [("i", shape, params["index"], "long", True)]


REGISTRY["gather"] = _OpDef("gather", ("aten.gather.default",), _gather_inst, _gather_emit, kind="layout")


def _index_put_inst(ctx):
    """x.index_put((None, ..., idx), values[, accumulate]): a constant row update along one dim."""
    x = ctx.x
    dim = ctx.choice([0] + list(reversed(range(1, len(x)))))
    count = min(ctx.choice([1, 2]), x[dim])
    pattern = ctx.choice(_PATTERNS)
    # Stock crash (TOSA-1.0+FP): AccumulateIndexPutPass turns an accumulating index_put with None
    # indices into index.Tensor(x, [None, ..., idx]) before NormalizeIndexPutNoneIndicesPass runs,
    # and DecomposeIndexTensorToGatherPass asserts "None indices are not supported".  So only the
    # leading-dim form (no None) accumulates.
    accumulate = ctx.flag() and dim == 0
    return {"dim": dim, "index": _index_values(count, x[dim], pattern), "accumulate": accumulate}, [], x


def _index_put_emit(args, params, in_shapes):
    x = in_shapes[0]
    idx = params["index"]
    dim = params["dim"]
    values_shape = tuple(x[:dim]) + (len(idx),) + tuple(x[dim + 1:])
    nones = "None, " * dim
    # The aten op itself: `y[:, idx] = v` exports to this very node (index_put_ functionalised),
    # but the Python binding of torch.index_put rejects the None indices.
    return (f"torch.ops.aten.index_put.default({args[0]}, [{nones}self.{{i}}], self.{{v}}, {params['accumulate']})",
            [("i", (len(idx),), idx, "long", True), ("v", values_shape, -1.0, 1.0, True)])


REGISTRY["index_put"] = _OpDef("index_put", ("aten.index_put.default",), _index_put_inst, _index_put_emit,
                               kind="layout")


# ---- scatters (functional updates of a slice) ------------------------------------------------

def _big(x):
    return any(d >= 2 for d in x)


def _slice_scatter_inst(ctx):
    x = ctx.x
    dim = ctx.choice([i for i in reversed(range(len(x))) if x[i] >= 2])
    n = x[dim]
    start = ctx.choice(range(0, n - 1))
    end = ctx.choice(range(n, start, -1))
    step = ctx.choice([1, 2])
    src = ctx.choice(["const", "self"])
    return {"dim": dim, "start": start, "end": end, "step": step, "src": src}, [], x


def _slice_scatter_emit(args, params, in_shapes):
    x = in_shapes[0]
    dim, start, end, step = params["dim"], params["start"], params["end"], params["step"]
    shape = list(x)
    shape[dim] = -(-(end - start) // step)
    where = f"dim={dim}, start={start}, end={end}, step={step}"
    if params["src"] == "self":  # write a transformed slice of x back (in-place cache-update shape)
        idx = ", ".join([":"] * dim + [f"{start}:{end}:{step}"])
        return f"torch.slice_scatter({args[0]}, {args[0]}[{idx}] * 0.5, {where})", []
    return f"torch.slice_scatter({args[0]}, self.{{s}}, {where})", [("s", tuple(shape), -1.0, 1.0, True)]


REGISTRY["slice_scatter"] = _OpDef("slice_scatter", ("aten.slice_scatter.default",), _slice_scatter_inst,
                                   _slice_scatter_emit, accepts=_big, kind="layout")


def _select_scatter_inst(ctx):
    x = ctx.x
    dim = ctx.choice(list(reversed(range(len(x)))))
    index = ctx.choice([0, -1, 1]) if x[dim] >= 2 else 0
    return {"dim": dim, "index": index}, [], x


def _select_scatter_emit(args, params, in_shapes):
    x = in_shapes[0]
    shape = tuple(d for i, d in enumerate(x) if i != params["dim"]) or (1,)
    src = "self.{s}" if len(x) >= 2 else "self.{s}.reshape(())"
    return (f"torch.select_scatter({args[0]}, {src}, {params['dim']}, {params['index']})",
            [("s", shape, -1.0, 1.0, True)])


REGISTRY["select_scatter"] = _OpDef("select_scatter", ("aten.select_scatter.default",), _select_scatter_inst,
                                    _select_scatter_emit, kind="layout")


# ---- strided views ---------------------------------------------------------------------------

def _unfold_ok(x):
    return len(x) < MAX_RANK and any(d >= 2 for d in x) and numel(x) * 2 <= MAX_NUMEL


def _unfold_inst(ctx):
    x = ctx.x
    dim = ctx.choice([i for i in reversed(range(len(x))) if x[i] >= 2])
    size = ctx.choice([s for s in (2, 3) if s <= x[dim]])
    step = ctx.choice([1, 2, size])
    windows = (x[dim] - size) // step + 1
    out = tuple(x[:dim]) + (windows,) + tuple(x[dim + 1:]) + (size,)
    if not _fits(out):  # overlapping windows too big: non-overlapping ones never grow the tensor
        step = size
        windows = (x[dim] - size) // step + 1
        out = tuple(x[:dim]) + (windows,) + tuple(x[dim + 1:]) + (size,)
    return {"dim": dim, "size": size, "step": step}, [], out


REGISTRY["unfold"] = _OpDef("unfold", ("aten.unfold.default",), _unfold_inst,
                            lambda a, p, s: (f"{a[0]}.unfold({p['dim']}, {p['size']}, {p['step']})", []),
                            accepts=_unfold_ok, kind="layout")


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def _as_strided_inst(ctx):
    """Row-major re-views (what the TOSA backend lowers) and a transposing view (left on the CPU)."""
    x = tuple(ctx.x)
    forms = ["merge"] + (["split"] if len(x) < MAX_RANK and any(d % 2 == 0 for d in x) else [])
    forms += ["transpose"] if len(x) >= 2 else []
    form = ctx.choice(forms)
    if form == "merge":
        size = (numel(x),) if len(x) <= 2 else x[:-2] + (x[-2] * x[-1],)
        stride = _contiguous_strides(size)
    elif form == "split":
        i = ctx.choice([i for i, d in enumerate(x) if d % 2 == 0])
        size = x[:i] + (2, x[i] // 2) + x[i + 1:]
        stride = _contiguous_strides(size)
    else:
        base = _contiguous_strides(x)
        size = x[:-2] + (x[-1], x[-2])
        stride = base[:-2] + (base[-1], base[-2])
    return {"size": list(size), "stride": list(stride)}, [], tuple(size)


REGISTRY["as_strided"] = _OpDef(
    "as_strided", ("aten.as_strided.default",), _as_strided_inst,
    lambda a, p, s: (f"torch.as_strided({a[0]}.contiguous(), {_fmt(p['size'])}, {_fmt(p['stride'])})", []),
    kind="layout")


# ---- pooling ---------------------------------------------------------------------------------

def _adapt_max_inst(ctx):
    n, c, h, w = ctx.x
    size = ctx.choice([(1, 1), (max(1, h // 2), max(1, w // 2)), (h, w), (min(h, 3), min(w, 3))])
    return {"output_size": list(size)}, [], (n, c) + tuple(size)


REGISTRY["adaptive_max_pool2d"] = _OpDef(
    "adaptive_max_pool2d", ("aten.adaptive_max_pool2d.default",), _adapt_max_inst,
    lambda a, p, s: (f"F.adaptive_max_pool2d({a[0]}, {_fmt(p['output_size'])})", []), accepts=_r4, kind="pool")


# ---- boolean logic, dtype and memory-format casts --------------------------------------------

_LOGIC = {"and": "&", "or": "|", "xor": "^"}


def _bool_logic_inst(ctx):
    return {"op": ctx.choice(["and", "or", "xor", "not"]), "lo": ctx.choice([-0.5, 0.0]),
            "hi": ctx.choice([0.5, 1.0])}, [], ctx.x


def _bool_logic_emit(args, params, in_shapes):
    x = args[0]
    a, b = f"({x} > {_fmt(params['lo'])})", f"({x} < {_fmt(params['hi'])})"
    mask = f"~{a}" if params["op"] == "not" else f"{a} {_LOGIC[params['op']]} {b}"
    return f"torch.where({mask}, {x}, 0.0)", []


REGISTRY["bool_logic"] = _OpDef("bool_logic", ("aten.__and__.Tensor", "aten.__or__.Tensor", "aten.__xor__.Tensor",
                                               "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor",
                                               "aten.bitwise_xor.Tensor", "aten.bitwise_not.default",
                                               "aten.where.ScalarOther"),
                                _bool_logic_inst, _bool_logic_emit, kind="binary")


def _cast_inst(ctx):
    forms = ["int32"] + (["channels_last"] if _r4(ctx.x) else []) + ["clone"]
    return {"form": ctx.choice(forms)}, [], ctx.x


def _cast_emit(args, params, in_shapes):
    x = args[0]
    if params["form"] == "int32":  # truncating float->int cast and back (quantised-index idiom)
        return f"{x}.to(torch.int32).to(torch.float32)", []
    if params["form"] == "channels_last":
        return f"{x}.contiguous(memory_format=torch.channels_last) + 0.0", []
    return f"{x}.clone()", []


REGISTRY["cast"] = _OpDef("cast", ("aten._to_copy.default", "aten.to.dtype", "aten.clone.default", "aten.contiguous.default"),
                          _cast_inst, _cast_emit,
                          kind="unary")


# ---- forms that only some arguments of a common op present -----------------------------------
# Each of these presents an op the vocabulary already has (add, sub, mul, ne), but in the one
# form a pass acts on: the generic op draws it rarely or never (reach.FORM_ROUTES says which
# pass needs which form).

def _alpha_inst(ctx):
    """add/sub with alpha != 1 (DecomposeAddSubAlphaPass's should_run_pass ignores every other)."""
    op = ctx.choice(["add", "sub"])
    alpha = ctx.choice([2.0, 0.5, -1.0])
    form = ctx.choice(["tensor", "const"])
    if form == "tensor":
        other = ctx.partner(_bcast_ok(ctx.x))
        return {"op": op, "alpha": alpha, "form": form}, [other], broadcast_shape(ctx.x, ctx.pool[other])
    return {"op": op, "alpha": alpha, "form": form}, [], ctx.x


def _alpha_emit(args, params, in_shapes):
    if params["form"] == "tensor":
        return f"torch.{params['op']}({args[0]}, {args[1]}, alpha={_fmt(params['alpha'])})", []
    shape = (in_shapes[0][-1],)
    return (f"torch.{params['op']}({args[0]}, self.{{c}}, alpha={_fmt(params['alpha'])})",
            [("c", shape, -1.0, 1.0, False)])


REGISTRY["add_alpha"] = _OpDef("add_alpha", ("aten.add.Tensor", "aten.sub.Tensor"), _alpha_inst, _alpha_emit,
                               kind="binary")


def _permuted_inst(ctx):
    """x.permute(p) -> an elementwise op -> .permute(inverse of p): a region enclosed by permutes
    that cancel. RemovePermutesAroundElementwiseTosaOps (which PropagateViewCopyPermuteDown/UpPass
    call directly) rewrites, and retraces, only such regions."""
    rank = len(ctx.x)
    perms = {1: [(0,)], 2: [(1, 0)], 3: [(0, 2, 1), (2, 0, 1)], 4: [(0, 2, 3, 1), (0, 3, 1, 2)]}
    perm = ctx.choice(perms.get(rank, [tuple(reversed(range(rank)))]))
    return {"perm": list(perm), "fn": ctx.choice(["relu", "neg", "abs"])}, [], ctx.x


def _permuted_emit(args, params, in_shapes):
    perm = params["perm"]
    inverse = [perm.index(i) for i in range(len(perm))]
    return f"torch.{params['fn']}({args[0]}.permute({perm})).permute({inverse})", []


REGISTRY["permuted_pointwise"] = _OpDef("permuted_pointwise",
                                        ("aten.permute.default", "aten.relu.default", "aten.neg.default",
                                         "aten.abs.default"),
                                        _permuted_inst, _permuted_emit, kind="unary")


def _outer_inst(ctx):
    """row pooling (op) column pooling: [.., H, 1] (op) [.., 1, W] -> [.., H, W], both operands
    broadcast (coordinate attention, separable pooling).  BroadcastArgsPass (U55) acts only on an
    add/sub/mul with more than one broadcast operand."""
    return {"op": ctx.choice(["mul", "add", "sub"])}, [], ctx.x


def _outer_emit(args, params, in_shapes):
    sym = {"mul": "*", "add": "+", "sub": "-"}[params["op"]]
    x = args[0]
    return f"({x}.mean(dim=-1, keepdim=True) {sym} {x}.mean(dim=-2, keepdim=True))", []


REGISTRY["outer"] = _OpDef("outer", ("aten.mean.dim", "aten.mul.Tensor", "aten.add.Tensor", "aten.sub.Tensor"),
                           _outer_inst, _outer_emit, accepts=lambda x: len(x) >= 2, kind="binary")


def _ne_inst(ctx):
    """x != y selecting between x and y (`where`'s ne branch, drawn with 1/6 of its comparisons
    and seldom: the comparison is its first, most-shrunk choice)."""
    form = ctx.choice(["tensor", "scalar"])
    other = ctx.partner(_bcast_ok(ctx.x))
    return {"form": form}, [other], broadcast_shape(ctx.x, ctx.pool[other])


def _ne_emit(args, params, in_shapes):
    a, b = args
    if params["form"] == "tensor":
        return f"torch.where({a} != {b}, {a}, {b})", []
    return f"torch.where({a} != 0.0, {a}, {b})", []


REGISTRY["ne"] = _OpDef("ne", ("aten.ne.Tensor", "aten.ne.Scalar", "aten.where.self"), _ne_inst, _ne_emit,
                        kind="binary")


def _index_rows_inst(ctx):
    """x[idx] along dim 0 only: the one aten.index.Tensor form the partitioner delegates (no None
    indices) and DecomposeIndexTensorToGatherPass rewrites; `index` draws it for one dim in rank."""
    return _constant_index(ctx, [0])


REGISTRY["index_rows"] = _OpDef("index_rows", ("aten.index.Tensor",), _index_rows_inst, _index_tensor_emit,
                                kind="layout")


def _split_sizes_ok(x):
    return x[-1] >= 2


def _split_sizes_inst(ctx):
    """A fused projection split into unequal parts, all of them used (q/k/v, gate/up): linear ->
    split_with_sizes -> cat.  ConvertSplitToSlicePass copies only nodes upstream of the split it
    rewrites, which a split of a graph input or of another split never has."""
    n = ctx.x[-1]
    return {"first": ctx.choice([1] + list(range(2, n)) if n > 2 else [1])}, [], ctx.x


def _split_sizes_emit(args, params, in_shapes):
    n = in_shapes[0][-1]
    k = params["first"]
    s = 1.0 / math.sqrt(n)
    expr = f"torch.cat(torch.split(F.linear({args[0]}, self.{{w}}), [{k}, {n - k}], dim=-1)[::-1], dim=-1)"
    return expr, [("w", (n, n), -s, s, False)]


REGISTRY["split_sizes"] = _OpDef("split_sizes", ("aten.split_with_sizes.default", "aten.linear.default", "aten.cat.default"),
                                 _split_sizes_inst, _split_sizes_emit, accepts=_split_sizes_ok, kind="layout")


def _scalar_scale_inst(ctx):
    """x scaled by a rank-0 parameter or buffer (a learnt temperature, a registered scale):
    the only way a placeholder of shape () enters a graph, the one form
    UnsqueezeScalarPlaceholdersPass acts on (every other value here has rank >= 1)."""
    return {"op": ctx.choice(["mul", "add"]), "buffer": ctx.flag()}, [], ctx.x


def _scalar_scale_emit(args, params, in_shapes):
    sym = "*" if params["op"] == "mul" else "+"
    return f"({args[0]} {sym} self.{{s}})", [("s", (), 0.5, 1.5, params["buffer"])]


REGISTRY["scalar_scale"] = _OpDef("scalar_scale", ("aten.mul.Tensor", "aten.add.Tensor"), _scalar_scale_inst,
                                  _scalar_scale_emit, kind="binary")


# ---- forms of ops the vocabulary lacks, each the one a pass acts on ------------------------------
# Found by measuring why five annotated passes never got gate evidence: the pass acts only on
# this form, and no other vocabulary op presents it (reach.FORM_ROUTES names the pass of each).

def _any_where_inst(ctx):
    """torch.any over one dim as the condition of a where (a "row has a positive entry" mask):
    DecomposeAnyPass rewrites any.dim (keepdim or not) and nothing else presents aten.any."""
    rank = len(ctx.x)
    dim = ctx.choice(list(reversed(range(rank))))
    return {"dim": dim, "keepdim": not ctx.flag()}, [], ctx.x


def _any_where_emit(args, params, in_shapes):
    x, d = args[0], params["dim"]
    cond = f"torch.any({x} > 0, dim={d}, keepdim={params['keepdim']})"
    if not params["keepdim"]:  # keep the mask broadcastable against x
        cond += f".unsqueeze({d})"
    return f"torch.where({cond}, {x}, -{x})", []


REGISTRY["any_where"] = _OpDef("any_where", ("aten.any.dim", "aten.gt.Scalar", "aten.where.self", "aten.neg.default"),
                               _any_where_inst, _any_where_emit, kind="reduce")


def _embedding_inst(ctx):
    """A table lookup F.embedding(idx, table): the table is x viewed as [rows, x[-1]], idx a
    registered int32 index buffer (the ARM EmbeddingSupported check rejects int64 indices, so only
    int32 ones are delegated and reach DecomposeEmbeddingPass)."""
    x = ctx.x
    rows = numel(x) // x[-1]
    count = ctx.choice([2, 1, 4, 3])
    if count * x[-1] > MAX_NUMEL:
        count = 1
    return {"index": _index_values(count, rows, ctx.choice(_PATTERNS))}, [], (count, x[-1])


def _embedding_emit(args, params, in_shapes):
    idx = params["index"]
    width = in_shapes[0][-1]
    return (f"F.embedding(self.{{i}}, {args[0]}.reshape(-1, {width}))",
            [("i", (len(idx),), idx, "int32", True)])


REGISTRY["embedding"] = _OpDef("embedding", ("aten.embedding.default",), _embedding_inst, _embedding_emit,
                               kind="layout")


_DOWN16 = 16


def _down16_inst(ctx):
    """A bilinear 1/16 downscale (align_corners=False): the exact boundary case TOSA RESIZE does
    not take and DecomposeUnsupportedBilinearResizePass rewrites to slices and an avg_pool2d.
    H and W must be multiples of 16: a smaller side is zero-padded up to the next multiple first
    (graph inputs are at most 12 high)."""
    n, c, h, w = ctx.x
    mult = ctx.choice([1, 2])  # pad to the next multiple of 16, or one more
    ph = (-(-h // _DOWN16) + mult - 1) * _DOWN16
    pw = (-(-w // _DOWN16) + mult - 1) * _DOWN16
    if n * c * ph * pw > MAX_NUMEL:
        ph, pw = -(-h // _DOWN16) * _DOWN16, -(-w // _DOWN16) * _DOWN16
    return {"pad": [pw - w, ph - h]}, [], (n, c, ph // _DOWN16, pw // _DOWN16)


def _down16_ok(x):
    if len(x) != 4:
        return False
    n, c, h, w = x
    return n * c * (-(-h // _DOWN16) * _DOWN16) * (-(-w // _DOWN16) * _DOWN16) <= MAX_NUMEL


def _down16_emit(args, params, in_shapes):
    pw, ph = params["pad"]
    x = args[0] if pw == ph == 0 else f"F.pad({args[0]}, (0, {pw}, 0, {ph}))"
    return f"F.interpolate({x}, scale_factor=1.0 / {_DOWN16}, mode='bilinear', align_corners=False)", []


REGISTRY["bilinear_down16"] = _OpDef("bilinear_down16", ("aten.upsample_bilinear2d.vec",), _down16_inst,
                                     _down16_emit, accepts=_down16_ok, kind="resize")


def _perm_choices(x):
    """Permutations of x's dims that reorder its dims of size > 1 (a real data movement, not one
    a view could do), simplest first."""
    rank = len(x)
    cands = {2: [(1, 0)], 3: [(0, 2, 1), (2, 0, 1), (1, 0, 2)],
             4: [(0, 2, 3, 1), (0, 3, 1, 2), (0, 1, 3, 2)]}.get(rank, [tuple(reversed(range(rank)))])
    big = [i for i in range(rank) if x[i] > 1]
    return [p for p in cands if [i for i in p if x[i] > 1] != big]


def _moves_data(x):
    return len(x) >= 2 and bool(_perm_choices(x))


_PAIR_OPS = {"add": "+", "mul": "*", "sub": "-"}


def _permuted_pair_inst(ctx):
    """Two identical permutes of two values feeding one elementwise op: x.permute(p) (op)
    relu(x).permute(p).  FuseIdenticalInputTransformsPass acts only on an elementwise op or cat
    whose inputs are identical permute/view nodes, each used only by it; two permutes of one value
    FuseDuplicateUsersPass merges first, so the two have different producers."""
    perm = ctx.choice(_perm_choices(ctx.x))
    return {"perm": list(perm), "op": ctx.choice(list(_PAIR_OPS))}, [], tuple(ctx.x[i] for i in perm)


def _permuted_pair_emit(args, params, in_shapes):
    x, p = args[0], _fmt(tuple(params["perm"]))
    return f"({x}.permute({p}) {_PAIR_OPS[params['op']]} torch.relu({x}).permute({p}))", []


REGISTRY["permuted_pair"] = _OpDef("permuted_pair", ("aten.permute.default", "aten.relu.default", "aten.add.Tensor",
                                                     "aten.mul.Tensor", "aten.sub.Tensor"),
                                   _permuted_pair_inst, _permuted_pair_emit, accepts=_moves_data, kind="layout")


def _rescaled_permute_inst(ctx):
    """(x + c).permute(p), c a [x[-1]] constant, p reordering dims of size > 1: on INT targets the
    add is computed in int32 between RESCALEs, and MoveDataMovementOpsToSmallerDtypePass moves the
    permute past the per-tensor RESCALE onto the int8 side.  x + x, scalar operands and permutes of
    size-1 dims only do not present that (measured)."""
    perm = ctx.choice(_perm_choices(ctx.x))
    return {"perm": list(perm), "op": ctx.choice(["add", "sub"])}, [], tuple(ctx.x[i] for i in perm)


def _rescaled_permute_emit(args, params, in_shapes):
    sym = "+" if params["op"] == "add" else "-"
    return (f"({args[0]} {sym} self.{{c}}).permute({_fmt(tuple(params['perm']))})",
            [("c", (in_shapes[0][-1],), -1.0, 1.0, False)])


REGISTRY["rescaled_permute"] = _OpDef("rescaled_permute", ("aten.add.Tensor", "aten.sub.Tensor", "aten.permute.default"),
                                      _rescaled_permute_inst, _rescaled_permute_emit, accepts=_moves_data,
                                      kind="layout")


# the permutations of five dims high_rank_permute draws from, simplest first
_RANK5_PERMS = ((4, 3, 2, 1, 0), (0, 2, 1, 4, 3), (1, 0, 3, 4, 2), (0, 3, 4, 1, 2), (2, 0, 4, 1, 3))


def _high_rank_split(x):
    """(index of the dim split in two, x's padded rank-4 shape) or None: x padded to rank 4 with
    leading 1s must keep a size-1 dim and have an even dim to split."""
    s = [1] * (4 - len(x)) + list(x)
    even = next((i for i, d in enumerate(s) if d % 2 == 0), None)
    return None if len(x) > 4 or 1 not in s or even is None else (even, s)


def _high_rank_permute_inst(ctx):
    """x.reshape(rank 5: an even dim split in two, a size-1 dim kept).permute(p).reshape(1, a, b, 1):
    a permute of rank > 4 with singleton dims, which RewriteHighRankSingletonPermutePass rewrites
    (to a permute of rank <= 4 between views). Measured: earlier passes make the permute rank 4
    before it gets there when p keeps the split halves adjacent or the result only drops the
    size-1 dim, and `permute` draws rank 5 rarely (its mutant without permute_copy survived the
    gate's self-test)."""
    even, s = _high_rank_split(ctx.x)
    s5 = s[:even] + [2, s[even] // 2] + s[even + 1:]
    apart = [p for p in _RANK5_PERMS if p.index(even + 1) != p.index(even) + 1]
    perm = ctx.choice(apart)
    big = [s5[i] for i in perm if s5[i] > 1]
    rest = 1
    for d in big[1:]:
        rest *= d
    return {"shape": s5, "perm": list(perm)}, [], (1, big[0], rest, 1)


def _high_rank_permute_emit(args, params, in_shapes):
    s5, perm = tuple(params["shape"]), tuple(params["perm"])
    big = [s5[i] for i in perm if s5[i] > 1]
    rest = 1
    for d in big[1:]:
        rest *= d
    return f"{args[0]}.reshape({_fmt(s5)}).permute({_fmt(perm)}).reshape(1, {big[0]}, {rest}, 1)", []


REGISTRY["high_rank_permute"] = _OpDef("high_rank_permute", ("aten.permute.default", "aten.reshape.default"),
                                       _high_rank_permute_inst, _high_rank_permute_emit,
                                       accepts=lambda x: _high_rank_split(x) is not None, kind="layout")


# ---- values of the dtypes two passes act on alone -------------------------------------------

def _int_clamp_inst(ctx):
    """An int32 clamp (x scaled and cast to int32, clamped by scalars, cast back): the one clamp
    DecomposeTOSAUnsupportedClampPass rewrites (TOSA has no int32 CLAMP; it leaves float and int8
    scalar clamps alone), which `clamp`, of float32 values, never presents (its mutant without
    clamp.default survived the gate's self-test). Stock lowering fails on it on every target
    (measured: TOSA-1.0+FP has no int32 MAXIMUM for the rewrite; on TOSA-1.0+INT the clamp reaches
    serialization unrewritten), so it is drawn on float targets only (FLOAT_ONLY), where it tells
    an annotation without clamp.default apart by its different failure."""
    return {"bounds": list(ctx.choice([(-2, 3), (0, None), (None, 1)]))}, [], ctx.x


def _int_clamp_emit(args, params, in_shapes):
    low, high = params["bounds"]
    return (f"torch.clamp(({args[0]} * 4).to(torch.int32), min={_fmt(low)}, max={_fmt(high)}).to(torch.float32)",
            [])


REGISTRY["int_clamp"] = _OpDef("int_clamp", ("aten.clamp.default",), _int_clamp_inst, _int_clamp_emit,
                               kind="unary")


def _bool_mul_inst(ctx):
    """A mul of two comparisons' bool values, cast back to float and scaling x: the one mul
    PromoteBoolOperandsPass rewrites (TOSA has no bool MUL: it casts the operands to int32, and
    the product back to bool), which `mul`, of float32 values, never presents (its mutant without
    mul.Tensor survived the gate's self-test). A bool times a float is no such form: to_edge's
    RemoveMixedTypeOperators casts the bool first."""
    return {"low": ctx.choice([0.0, -0.5])}, [], ctx.x


def _bool_mul_emit(args, params, in_shapes):
    x = args[0]
    return f"((({x} > {_fmt(params['low'])}) * ({x} < 1.0)).to(torch.float32) * {x})", []


REGISTRY["bool_mul"] = _OpDef("bool_mul", ("aten.gt.Scalar", "aten.lt.Scalar", "aten.mul.Tensor"), _bool_mul_inst,
                              _bool_mul_emit, kind="unary")


# ---- integer and bool operands (issue 43, item 4) -------------------------------------------
# `_ops.TYPED_OPS`: an op on operands of one integer (or bool) dtype, which float32 values never
# present (integer arithmetic a pass may treat apart). x is scaled and cast (bool: x > 0); a
# binary op's other operand is a literal [W] buffer of the same dtype (a [1] one when W is too
# wide to write out), as models register integer offsets; the result is cast back to float32.
# Every rank is accepted, so that the gate can draw each rank on each dtype.

_TYPED_ATEN = {"add": "aten.add.Tensor", "sub": "aten.sub.Tensor", "mul": "aten.mul.Tensor",
               "maximum": "aten.maximum.default", "minimum": "aten.minimum.default", "neg": "aten.neg.default",
               "abs": "aten.abs.default"}
_TYPED_UNARY = {"neg": "-{x}", "abs": "torch.abs({x})"}


def _typed_inst(ctx):
    return {}, [], ctx.x


def _typed_emit(op, dtype):
    def emit(args, params, in_shapes):
        x = f"({args[0]} > 0.0)" if dtype == "bool" else f"({args[0]} * 4).to(torch.{dtype})"
        if op in _TYPED_UNARY:
            return f"({_TYPED_UNARY[op].format(x=x)}).to(torch.float32)", []
        width = in_shapes[0][-1] if in_shapes[0][-1] <= _LITERAL_MAX else 1  # a [1] buffer broadcasts too
        values = [i % 2 == 1 for i in range(width)] if dtype == "bool" else [i % 5 - 2 for i in range(width)]
        expr = {"add": "{x} + {c}", "sub": "{x} - {c}", "mul": "{x} * {c}", "maximum": "torch.maximum({x}, {c})",
                "minimum": "torch.minimum({x}, {c})"}[op].format(x=x, c="self.{c}")
        return f"({expr}).to(torch.float32)", [("c", (width,), values, dtype, True)]

    return emit


for _op, _dtypes in TYPED_OPS.items():
    for _dtype in _dtypes:
        REGISTRY[f"{_dtype}_{_op}"] = _OpDef(f"{_dtype}_{_op}", (_TYPED_ATEN[_op],), _typed_inst,
                                             _typed_emit(_op, _dtype), kind="typed")


# `_ops.TYPED_LAYOUT_OPS`: a data-layout op on operands of one integer dtype, with the params and
# shapes of the float vocabulary op of the same name (its `instantiate` and `accepts`): every
# operand (a cat's two) scaled and cast, the result cast back to float32. A float-only spec has no
# integer data-layout op, so InsertDataLayoutCastsPass casts these ones to a float dtype around the
# op; float32 values never show it that rewrite.


def _integer_operand(arg: str, dtype: str) -> str:
    return f"({arg} * 4).to(torch.{dtype})"


def _typed_layout_emit(op: str, dtype: str):
    base = REGISTRY[op].emit

    def emit(args, params, in_shapes):
        if "value" in params:  # constant_pad: an integer tensor is padded with an integer
            params = dict(params, value=int(params["value"]))
        expr, extras = base([_integer_operand(a, dtype) for a in args], params, in_shapes)
        return f"({expr}).to(torch.float32)", extras

    return emit


for _op, _dtypes in TYPED_LAYOUT_OPS.items():
    for _dtype in _dtypes:
        _base = REGISTRY[_op]
        REGISTRY[f"{_dtype}_{_op}"] = _OpDef(f"{_dtype}_{_op}", _base.aten, _base.instantiate,
                                             _typed_layout_emit(_op, _dtype), accepts=_base.accepts, kind="typed")
