"""The properties of an op's operands a graph presents: their rank and their dtype.

A pass may rewrite an op only on some operands (one rank, integer arithmetic), so a search that
presents an op on the ranks and dtypes plain draws happen to give (the input is rank 4 and
float32, and most ops keep both) can call a wrong annotation sound without ever having shown
the pass the operand its rule is about (issue 43, item 4). This module says which ranks and
dtypes the vocabulary can present for an op (`forms`, `presentable`), and what a drawn graph
presented (`operand`); the strategies draw the rank of a chain's operand on purpose
(`graphs_linked(..., ranks=True)`), and the gate draws an op's dtype by choosing among the
vocabulary ops that present it on that dtype (`forms`), so each is drawn on purpose, not left
to chance.

Rank: the rank of a node's primary input (the ops drawn on purpose are elementwise: their
operands have that rank). Dtype: the dtype the op computes in: float32 for every vocabulary op
but the ones of a dtype of their own (`_ops.TYPED`: integer arithmetic and integer data-layout
ops, the int8/int16 comparisons, the int32 clamp, the bool mul); a float and an int32 operand (`int_add`) is float32 after to_edge's
RemoveMixedTypeOperators casts the int. An op a typed op presents only once the pipeline has
rewritten it (`PIPELINE_PRESENTED`: a typed split's slice_copy) is presented on its dtype too, so
that the aim draws the typed split when slice_copy is the suspect.
"""

from __future__ import annotations

from . import _ops

RANKS = tuple(range(1, _ops.MAX_RANK + 1))
DTYPES = ("float32", "int8", "int16", "int32", "bool")

# a value of each rank built from x0 = [1, C, H, W] (H even) by one reshape
_RANKED = {1: lambda c, h, w: (c * h * w,), 2: lambda c, h, w: (c * h, w), 3: lambda c, h, w: (c, h, w),
           4: lambda c, h, w: (1, c, h, w), 5: lambda c, h, w: (1, c, h // 2, 2, w)}
# the shape `presentable` asks an op to accept, per rank (x0 = [1, 2, 4, 6])
_PROBE = {rank: make(2, 4, 6) for rank, make in _RANKED.items()}

# vocabulary ops computing some of the ops they present in a dtype of their own: vocabulary op ->
# (dtype, the aten ops computed in it); every other op they present computes in float32 (int_gt's
# where and neg, bool_mul's comparisons). The int_* comparisons draw their dtype as a param.
_BOOL_LOGIC = {f"aten.{name}.Tensor" for op in ("and", "or", "xor")
               for name in (f"__{op}__", f"bitwise_{op}", f"logical_{op}")} | {"aten.bitwise_not.default"}
_OWN_DTYPE: dict[str, tuple[str, frozenset]] = {
    "int_clamp": ("int32", frozenset({"aten.clamp.default"})),
    "bool_mul": ("bool", frozenset({"aten.mul.Tensor"})),
    "bool_logic": ("bool", frozenset(_BOOL_LOGIC)),
    **{f"int_{cmp}": ("param", frozenset({f"aten.{cmp}.Tensor"})) for cmp in ("gt", "lt", "ge", "le", "eq", "ne")},
}


# Typed ops presenting an op only once the lowering pipeline of a float stage (edge-fp,
# TOSA-1.0+FP) has rewritten them inside the delegate: typed op -> the ops a later pass receives
# from it, on the typed op's dtype. Measured facts, re-measured by tests/test_generators_random.py
# (test_the_pipeline_presents_what_pipeline_presented_says): stock lowering of relu -> <op>, five
# param draws each, InsertDataLayoutCastsPass.call_operator recording what it receives: the ARM
# partitioner delegates an integer split and chunk, ConvertSplitToSlicePass makes them slice_copy
# nodes of their dtype, and that is the only targeted op the pass receives. The integer slice_copy
# of the pipeline comes from nowhere else: an integer slice stays on the CPU (SliceCopySupported:
# "requires INT profile"), an integer select arrives beside a view_copy (`_ops.TYPED_LAYOUT_OPS`).
PIPELINE_PRESENTED: dict[str, frozenset[str]] = {
    f"{dtype}_{op}": frozenset({"aten.slice_copy.Tensor"})
    for op in ("split", "chunk") for dtype in ("int8", "int16", "int32")}


def _presented(vocab_op: str, pipeline: bool = True) -> frozenset[str]:
    """The op names `vocab_op` presents to a pass: its aten ops, the forms to_edge gives them
    (a typed slice is an `aten.slice_copy.Tensor` of its dtype in the edge graph), and, to a pass
    run in the lowering `pipeline`, what the pipeline makes of them (`PIPELINE_PRESENTED`: a typed
    split becomes slice_copy nodes; a pass run directly on the edge graph receives the split)."""
    from .reach import edge_forms

    edge = frozenset(form for name in _ops.REGISTRY[vocab_op].aten for form in edge_forms(name))
    return (edge | PIPELINE_PRESENTED.get(vocab_op, frozenset())) if pipeline else edge


# the typed ops (`_ops.TYPED`: `int8_add` ... `int32_chunk`) are named `<dtype>_<op>`
for _name in _ops.TYPED:
    _OWN_DTYPE[_name] = (_name.split("_", 1)[0], _presented(_name))
_DTYPE_PARAM = frozenset(_ops.INT_COMPARE)
assert all(op in _ops.REGISTRY for op in _OWN_DTYPE) and set(PIPELINE_PRESENTED) <= set(_ops.TYPED)


def ranked_shape(x0, rank: int) -> tuple:
    """A shape of `rank` with x0's elements (x0 a graph's first input, [1, C, H, W], H even)."""
    _, c, h, w = x0
    return _RANKED[rank](c, h, w)


def operand(spec, rec, aten_op: str) -> tuple[int, str]:
    """(rank, dtype) of what vocabulary node `rec` of `spec` computes `aten_op` (one it presents) on."""
    shapes = spec.value_shapes()
    rank = len(shapes[rec.inputs[0]]) if rec.inputs else len(rec.shape)
    return rank, dtype_of(rec.op, aten_op, rec.param_dict)


def dtype_of(vocab_op: str, aten_op: str, params: dict | None = None) -> str:
    """The dtype vocabulary op `vocab_op` computes `aten_op` in (with its drawn `params`)."""
    dtype, ops = _OWN_DTYPE.get(vocab_op, ("float32", frozenset()))
    if aten_op not in ops:
        return "float32"
    return (params or {}).get("dtype", "int16") if dtype == "param" else dtype


def params_dtypes(vocab_op: str, aten_op: str) -> tuple[str, ...]:
    """Every dtype `vocab_op` may compute `aten_op` in (its params drawn)."""
    if vocab_op in _DTYPE_PARAM and aten_op in _OWN_DTYPE[vocab_op][1]:
        return ("int16", "int8")
    return (dtype_of(vocab_op, aten_op),)


def forms(route, aten_op: str) -> dict[str, tuple[str, ...]]:
    """dtype -> the ops of `route` (vocabulary ops presenting `aten_op`: `graphs.Aim.routes`, and
    the typed ones, `typed_presenting`) that present it on operands of that dtype."""
    out: dict[str, list[str]] = {}
    for op in route:
        for dtype in params_dtypes(op, aten_op):
            out.setdefault(dtype, []).append(op)
    return {dtype: tuple(dict.fromkeys(ops)) for dtype, ops in sorted(out.items(), key=lambda kv: DTYPES.index(kv[0]))}


def typed_presenting(aten_ops, float_target: bool, pipeline: bool = True) -> list[str]:
    """The typed vocabulary ops (`_ops.TYPED`) presenting any of `aten_ops`, on a float target, to
    a pass run in the lowering `pipeline` (else directly on the edge graph)."""
    if not float_target:
        return []
    names = set(aten_ops)
    return [op for op in _ops.TYPED if _presented(op, pipeline) & names]


def presentable(route, aten_op: str) -> set[tuple[int, str]]:
    """(rank, dtype) cells some op of `route` presents `aten_op` on: its dtype, and a rank whose
    value it accepts as its primary input."""
    return {(rank, dtype) for dtype, ops in forms(route, aten_op).items()
            for rank in RANKS if any(_ops.REGISTRY[op].accepts(_PROBE[rank]) for op in ops)}


def not_presented(route, aten_op: str) -> list[str]:
    """The cells `route` cannot present `aten_op` on, compactly: a dtype alone when no rank of it
    is presented (`int8`), else the dtype with its missing ranks (`float32 rank 5`)."""
    cells = presentable(route, aten_op)
    out = []
    for dtype in DTYPES:
        missing = [rank for rank in RANKS if (rank, dtype) not in cells]
        if len(missing) == len(RANKS):
            out.append(dtype)
        elif missing:
            out.append(f"{dtype} rank {','.join(map(str, missing))}")
    return out
