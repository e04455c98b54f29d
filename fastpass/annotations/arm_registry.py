"""Explicit pass annotations (ARM backend, executorch 1.5.1).

Each entry: qualified class name -> ``Entry(ops, skip_sound, copy_sound, why)``
(``_model.Entry``) where ``ops`` is ``UPSTREAM`` (the pass's own ``target_ops``,
read from the instance), a zero-argument callable returning the op set (lazy, so
importing this module does not import the ARM backend) or a fixed set.  Two
readings recur and are named once: ``GUARDED`` (``_STD``) and ``RETRACE_ONLY``
(``_RETRACE``).

How the copy-sound entries were established (see also ``_STD``): every class
below was read; its ``call_operator`` starts with a guard of the form

    if op not in self.target_ops [or <more conditions>]:
        return super().call_operator(op, args, kwargs, meta[, updated=False])

(an ``or`` can only send *more* nodes down the stock path), the guarded set is
exactly the set recorded here, and the class overrides none of ``call``,
``call_submodule``, ``placeholder``, ``output``, ``call_getitem``, ``call_sym``
nor the tracer/interpreter classes, and neither does any intermediate base
between it and ``ArmPass``/``ArmOpTargetedPass``.  Mutable ``self`` state
written in ``call_operator`` (checked) only occurs in targeted branches.
Cold nodes therefore take exactly ``ArmPass.call_operator(op, args, kwargs,
meta)`` -> ``_fx`` and nothing else, which is what the copy path replays.

Upstream ``ArmOpTargetedPass`` already skips these when no target is present
(skip-sound by upstream's own contract).  The helper script used to screen
candidates mechanically is not part of the package; the list was reviewed by
hand afterwards.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, FrozenSet, List, Optional

from ._model import UPSTREAM, Entry, OpFamily


def _opmap_plus_targets(module: str, cls: str) -> Callable[[], FrozenSet[Any]]:
    def ops() -> FrozenSet[Any]:
        mod = importlib.import_module(module)
        return frozenset(getattr(mod, "OP_MAP")) | frozenset(getattr(getattr(mod, cls), "target_ops", ()))

    return ops


def _class_attr(module: str, cls: str, attr: str) -> Callable[[], FrozenSet[Any]]:
    def ops() -> FrozenSet[Any]:
        return frozenset(getattr(getattr(importlib.import_module(module), cls), attr))

    return ops


def _dim_order_ops() -> FrozenSet[Any]:
    from executorch.exir.passes.dim_order_ops_registry import DimOrderOpsMap

    return frozenset(DimOrderOpsMap)


def _aten_t() -> FrozenSet[Any]:
    import torch

    return frozenset({torch.ops.aten.t.default})


def _mixed_type_ops() -> FrozenSet[Any]:
    import torch

    aten = torch.ops.aten
    # RemoveMixedTypeOperators.call_operator's promotion_type_allow_list, verbatim
    return frozenset({aten.add.Tensor, aten.mul.Tensor, aten.sub.Tensor, aten.div.Tensor, aten.div.Tensor_mode,
                      aten.minimum.default})


def reaches_call_operator(op: Any) -> bool:
    """Whether ``ExportPass`` hands a call of ``op`` to ``call_operator``: it sends ``getitem`` and
    Python/sym operators to ``call_getitem``/``call_sym`` instead (anything else counts, which
    only ever keeps more calls on the stock path)."""
    import operator

    return not (op is operator.getitem or getattr(op, "__module__", None) in ("_operator", "builtins", "math"))


def reaches_the_view_branch(op: Any) -> bool:
    """Whether ReplaceBrokenOpsWithFunctionalOpsPass would take (or fail on) its ``op.is_view`` branch:
    any op reaching ``call_operator`` unless it says ``is_view`` is False (an op without the
    attribute, an ``OpOverloadPacket``, fails there in stock and must keep the stock path)."""
    return reaches_call_operator(op) and getattr(op, "is_view", None) is not False


def _tensor_slot_values(op: Any, args: Any, kwargs: Any) -> Optional[List[Any]]:
    """The values in the schema's Tensor slots, visited exactly as ``exir.pass_base.map_args``
    visits them; None for an op without a schema (``map_args`` fails on it in stock)."""
    import torch

    if getattr(op, "_schema", None) is None:
        return None
    values = []
    for i, argument in enumerate(op._schema.arguments):
        if argument.name in kwargs:
            value = kwargs[argument.name]
        elif not argument.kwarg_only and i < len(args):
            value = args[i]
        else:
            continue
        if isinstance(argument.type, torch.TensorType):
            values.append(value)
    return values


def scalar_in_a_tensor_slot(op: Any, args: Any, kwargs: Any, value_of: Any) -> bool:
    """ScalarToTensorPass's ``try_coerce``: a Python float/int/bool where the schema wants a Tensor.
    An op without a schema is targeted, so it keeps the stock path (and its failure)."""
    values = _tensor_slot_values(op, args, kwargs)
    return values is None or any(isinstance(value, (float, int, bool)) for value in values)


def sym_in_a_tensor_slot(op: Any, args: Any, kwargs: Any, value_of: Any) -> bool:
    """SymToTensorPass's ``is_sym``: a graph value holding a SymInt/SymFloat/SymBool (exact type)
    where the schema wants a Tensor. Without a schema: targeted, as above."""
    import torch

    values = _tensor_slot_values(op, args, kwargs)
    symbolic = (torch.SymInt, torch.SymFloat, torch.SymBool)
    return values is None or any(type(value_of(value)) in symbolic for value in values)


def _scalar_calls() -> OpFamily:
    return OpFamily(reaches_call_operator, tuple, "a Python scalar in a Tensor slot", call_rule=scalar_in_a_tensor_slot)


def _sym_calls() -> OpFamily:
    return OpFamily(reaches_call_operator, tuple, "a SymInt/SymFloat/SymBool graph value in a Tensor slot",
                    call_rule=sym_in_a_tensor_slot)


def shape_operand_in_a_list(op: Any, args: Any, kwargs: Any, value_of: Any) -> bool:
    """SymbolicToTosaShapesPass's ``call_operator``: it rewrites ``aten.sym_size.int`` and a call
    one of whose positional list/tuple arguments holds a raw SymInt or a graph value marked as a
    TOSA shape (it materializes them); every other call goes unchanged to ``super()``. (A node
    whose own meta is shape-marked is forwarded unchanged even then: counting it as targeted
    only keeps it on the stock path.)"""
    import torch

    if op == torch.ops.aten.sym_size.int:
        return True
    return any(isinstance(arg, (list, tuple)) and len(arg) > 0 and _holds_shape_operand(arg) for arg in args)


def _holds_shape_operand(arg: Any) -> bool:
    """Upstream's ``_has_raw_symint_arg or _has_shape_proxy_arg`` for one argument; a graph
    value is a retrace's ProxyValue (its node's meta) or, in a graph, the Node itself."""
    import torch
    from executorch.backends.arm.tosa.dialect.shape import meta_has_shape_mark
    from executorch.exir.pass_base import ProxyValue

    if isinstance(arg, torch.SymInt):
        return True
    if isinstance(arg, ProxyValue):
        return meta_has_shape_mark(getattr(arg.node, "meta", {}))
    if isinstance(arg, torch.fx.Node):
        return meta_has_shape_mark(arg.meta)
    if isinstance(arg, (list, tuple)):
        return any(_holds_shape_operand(a) for a in arg)
    return False


def _shape_operand_calls() -> OpFamily:
    return OpFamily(reaches_call_operator, tuple, "aten.sym_size.int, or a raw SymInt or TOSA-shape value in a "
                    "positional list argument", call_rule=shape_operand_in_a_list)


def _schema_says_view(schema: Any) -> bool:
    """``OpOverload.is_view`` read off the schema, as ``OpOverload.__init__`` computes it: some
    argument aliases, and none of the aliasing arguments is written."""
    is_write = None
    for argument in schema.arguments:
        if argument.alias_info is None:
            continue
        is_write = argument.alias_info.is_write if is_write is None else (argument.alias_info.is_write or is_write)
    return is_write is not None and not is_write


def _aten_ops(views_only: bool = True) -> List[Any]:
    """The aten overloads the dispatcher has a schema for; by default only those whose schema
    says view (the family's rule picks the views: any other op's ``is_view`` is False).

    Why the filter: every ``enable()`` reads the ledger, whose claim digests list the view
    family's members; materializing all ~2,500 aten overloads into ``torch.ops`` to read
    ``is_view`` cost ~0.2 s of each lowering process, the views alone a tenth of that
    (tests/test_annotations.py compares the members with the unfiltered list's)."""
    import torch

    known = []
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::") and (not views_only or _schema_says_view(schema)):
            packet = getattr(torch.ops.aten, schema.name[len("aten::"):], None)
            op = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
            if isinstance(op, torch._ops.OpOverload):
                known.append(op)
    return known


def _view_ops() -> OpFamily:
    return OpFamily(reaches_the_view_branch, _aten_ops, "op.is_view, any namespace")


_STD = "call_operator guards on self.target_ops; cold path is plain super().call_operator; no call()/tracer overrides"

_RETRACE = (
    "no call_operator/callback override in the class or its bases: its retrace (if any, via "
    "super().call()) treats every node with the stock ArmPass.call_operator; the graph surgery in "
    "call() happens before/after the retrace and invalidates the creation signature of every node "
    "it touches, so those nodes are re-dispatched"
)

_CALL_REWRITES_TARGETED_ONLY = (
    "call() only rewrites nodes whose target is in _TARGET_OPS; with none present it returns "
    "PassResult(gm, False) without retracing; retrace (if any) is the stock one")

#: guarded on ``self.target_ops``: skip- and copy-sound (see the module docstring)
GUARDED = Entry(UPSTREAM, skip_sound=True, copy_sound=True, why=_STD)
#: retrace-only: no targeted op, so copy-sound but never skipped
RETRACE_ONLY = Entry(frozenset(), skip_sound=False, copy_sound=True, why=_RETRACE)
#: a shared-transforms helper the permute/view propagation passes call directly (``.call()``)
HELPER_RETRACE_ONLY = Entry(frozenset(), skip_sound=False, copy_sound=True, why=(
    "plain ExportPass that overrides only call() (checked: no call_operator/callback override in the "
    "class or its bases): its retrace, if any, treats every node with the stock "
    "ExportPass.call_operator; the propagation passes call it directly, so fastpass reaches it only "
    "at its retrace (_passcall.wrap_call_submodule), never through __call__"))

_TR = "executorch.backends.transforms."

_AP = "executorch.backends.arm._passes."

REGISTRY: dict[str, Entry] = {
    _AP + "accumulate_index_put_pass.AccumulateIndexPutPass": GUARDED,
    _AP + "canonicalize_gather_pass.CanonicalizeGatherPass": GUARDED,
    _AP + "cast_int_comparison_inputs_pass.CastIntComparisonInputsPass": GUARDED,
    _AP + "cast_to_int32_pass.CastToInt32Pass": GUARDED,
    _AP + "convert_expand_copy_to_repeat.ConvertExpandCopyToRepeatPass": GUARDED,
    _AP + "convert_full_like_to_full_pass.ConvertFullLikeToFullPass": GUARDED,
    _AP + "convert_permute_singleton_to_view_pass.ConvertPermuteSingletonToViewPass": GUARDED,
    _AP + "convert_squeezes_to_view.ConvertSqueezesToViewPass": GUARDED,
    _AP + "convert_to_clamp_pass.ConvertToClampPass": GUARDED,
    _AP + "decompose_acosh_pass.DecomposeAcoshPass": GUARDED,
    _AP + "decompose_adaptive_avg_pool2d_pass.DecomposeAdaptiveAvgPool2dPass": GUARDED,
    _AP + "decompose_adaptive_max_pool2d_pass.DecomposeAdaptiveMaxPool2dPass": GUARDED,
    _AP + "decompose_add_sub_alpha_pass.DecomposeAddSubAlphaPass": GUARDED,
    _AP + "decompose_addmm_pass.DecomposeAddmmPass": GUARDED,
    _AP + "decompose_as_strided_copy_pass.DecomposeAsStridedCopyPass": GUARDED,
    _AP + "decompose_asin_and_acos_pass.DecomposeAsinAndAcosPass": GUARDED,
    _AP + "decompose_asinh_pass.DecomposeAsinhPass": GUARDED,
    _AP + "decompose_atan_pass.DecomposeAtanPass": GUARDED,
    _AP + "decompose_atanh_pass.DecomposeAtanhPass": GUARDED,
    _AP + "decompose_avg_pool2d_pass.DecomposeAvgPool2dPass": GUARDED,
    _AP + "decompose_cosh_pass.DecomposeCoshPass": GUARDED,
    _AP + "decompose_cosine_similarity_pass.DecomposeCosineSimilarityPass": GUARDED,
    _AP + "decompose_div_pass.DecomposeDivPass": GUARDED,
    _AP + "decompose_div_tensor_mode.DecomposeDivTensorModePass": GUARDED,
    _AP + "decompose_dynamic_full_pass.DecomposeDynamicFullPass": GUARDED,
    _AP + "decompose_elu_pass.ConvertEluFamilyToEluPass": GUARDED,
    _AP + "decompose_elu_pass.DecomposeEluPass": GUARDED,
    _AP + "decompose_erfinv_pass.DecomposeErfinvPass": GUARDED,
    _AP + "decompose_expm1_pass.DecomposeExpm1Pass": GUARDED,
    _AP + "decompose_flip_pass.DecomposeFlipPass": GUARDED,
    _AP + "decompose_floor_divide_pass.DecomposeFloorDividePass": GUARDED,
    _AP + "decompose_gelu_pass.DecomposeGeluPass": GUARDED,
    _AP + "decompose_glu_pass.DecomposeGluPass": GUARDED,
    _AP + "decompose_index_select_to_gather_pass.DecomposeIndexSelectToGatherPass": GUARDED,
    _AP + "decompose_index_tensor_to_gather_pass.DecomposeIndexTensorToGatherPass": GUARDED,
    _AP + "decompose_int_pow_pass.DecomposeIntPowPass": GUARDED,
    _AP + "decompose_large_stride_maxpool2d_pass.DecomposeLargeStrideMaxPool2dForU55Pass": GUARDED,
    _AP + "decompose_leaky_relu_pass.DecomposeLeakyReLUPass": GUARDED,
    _AP + "decompose_linalg_vector_norm_pass.DecomposeLinalgVectorNormPass": GUARDED,
    _AP + "decompose_log1p_pass.DecomposeLog1pPass": GUARDED,
    _AP + "decompose_logit_pass.DecomposeLogitPass": GUARDED,
    _AP + "decompose_masked_fill_pass.DecomposeMaskedFillPass": GUARDED,
    _AP + "decompose_maxpool2d_with_dilation_pass.DecomposeMaxPool2dPass": GUARDED,
    _AP + "decompose_meandim_pass.DecomposeMeanDimPass": GUARDED,
    _AP + "decompose_ne_pass.DecomposeNotEqualPass": GUARDED,
    _AP + "decompose_permute_for_u55_pass.DecomposePermuteForU55Pass": GUARDED,
    _AP + "decompose_prelu_pass.DecomposePReLUPass": GUARDED,
    _AP + "decompose_prod_pass.DecomposeProdPass": GUARDED,
    _AP + "decompose_remainder_pass.DecomposeRemainderPass": GUARDED,
    _AP + "decompose_round_pass.DecomposeRoundPass": GUARDED,
    _AP + "decompose_select_scatter_pass.DecomposeSelectScatterPass": GUARDED,
    _AP + "decompose_sign_pass.DecomposeSignPass": GUARDED,
    _AP + "decompose_sinh_pass.DecomposeSinhPass": GUARDED,
    _AP + "decompose_slice_scatter_pass.DecomposeSliceScatterPass": GUARDED,
    _AP + "decompose_sqrt_pass.DecomposeSqrtPass": GUARDED,
    _AP + "decompose_strided_slice_copy_pass.DecomposeStridedSliceCopyPass": GUARDED,
    _AP + "decompose_sum_pass.DecomposeSumPass": GUARDED,
    _AP + "decompose_tan_pass.DecomposeTanPass": GUARDED,
    _AP + "decompose_tril_pass.DecomposeTrilPass": GUARDED,
    _AP + "decompose_unfold_to_gather_pass.DecomposeUnfoldToGatherPass": GUARDED,
    _AP + "decompose_var_pass.DecomposeVarPass": GUARDED,
    _AP + "decompose_where_scalar_other_pass.DecomposeWhereScalarOtherPass": GUARDED,
    _AP + "decorate_fp32_to_int32_casting_pass.DecorateFp32toInt32CastingPass": GUARDED,
    _AP + "fuse_consecutive_concat_shapes.FuseConsecutiveConcatShapesPass": GUARDED,
    _AP + "insert_data_layout_casts_pass.InsertDataLayoutCastsPass": GUARDED,
    _AP + "insert_dynamic_padding.InsertDynamicPaddingPass": GUARDED,
    _AP + "normalize_index_put_bool_index_tensor_pass.NormalizeIndexPutBoolIndexTensorPass": GUARDED,
    _AP + "normalize_index_put_none_indices_pass.NormalizeIndexPutNoneIndicesPass": GUARDED,
    _AP + "promote_bool_operands_pass.PromoteBoolOperandsPass": GUARDED,
    _AP + "rewrite_adaptive_avg_pool2d.RewriteAdaptiveAvgPool2dPass": GUARDED,
    _AP + "rewrite_avg_pool2d_pass.RewriteAvgPool2dPass": GUARDED,
    _AP + "rewrite_bool_bitwise_to_logical_pass.RewriteBoolBitwiseToLogicalPass": GUARDED,
    _AP + "rewrite_high_rank_singleton_permute_pass.RewriteHighRankSingletonPermutePass": GUARDED,
    _AP + "rewrite_index_put_pass.RewriteIndexPutPass": GUARDED,
    _AP + "rewrite_max_pool2d_pass.RewriteMaxPool2dPass": GUARDED,
    _AP + "rewrite_pad.RewritePadPass": GUARDED,
    _AP + "rewrite_slice.RewriteSlicePass": GUARDED,
    # Hand-read, guard is not the first statement but the cold path is the same:
    _AP + "decompose_tosa_unsupported_clamp_pass.DecomposeTOSAUnsupportedClampPass": Entry(
        UPSTREAM, skip_sound=True, copy_sound=True,
        why="reads meta['val'] first (no side effect), then `if op not in self.target_ops: return super()...`"),
    _AP + "decompose_grouped_conv_pass.DecomposeGroupedConvPass": Entry(
        UPSTREAM, skip_sound=True, copy_sound=True,
        why="_get_groups_and_transposed returns (None, None) for every op not in target_ops -> plain super()"),
    _AP + "decompose_softmax_pass.DecomposeSoftmaxPass": Entry(
        UPSTREAM, skip_sound=True, copy_sound=True,
        why="guard on self.target_ops; the only self state (_warned_safe_softmax) is written in the targeted branch"),
    _AP + "rewrite_inplace_arithmetic_pass.RewriteInplaceArithmeticPass": Entry(
        _opmap_plus_targets(_AP + "rewrite_inplace_arithmetic_pass", "RewriteInplaceArithmeticPass"),
        skip_sound=True, copy_sound=True,
        why="ops outside OP_MAP take plain super().call_operator"),
    _AP + "rewrite_le_lt_to_ge_gt_pass.RewriteLeLtToGeGtPass": Entry(
        _opmap_plus_targets(_AP + "rewrite_le_lt_to_ge_gt_pass", "RewriteLeLtToGeGtPass"),
        skip_sound=True, copy_sound=True,
        why="ops outside OP_MAP take plain super().call_operator"),
    # ---- retrace-only via an intermediate base that only overrides call() (checked: no
    # call_operator/callback override anywhere in the MRO besides ArmPass) ----
    _AP + "canonicalize_view_copy_permute_pass.CanonicalizeViewCopyPermutePass": RETRACE_ONLY,
    _AP + "decompose_einsum_pass.DecomposeEinsumPass": RETRACE_ONLY,
    _AP + "decompose_index_copy_pass.DecomposeIndexCopyPass": RETRACE_ONLY,
    _AP + "decompose_matmul.DecomposeMatmulPass": RETRACE_ONLY,
    _AP + "decompose_sdpa_pass.DecomposeScaledDotProductAttentionPass": RETRACE_ONLY,
    _AP + "exir_to_tosa_pass.ExirToTosaPass": RETRACE_ONLY,
    _AP + "fuse_duplicate_users_pass.FuseDuplicateUsersPass": RETRACE_ONLY,
    _AP + "fuse_identical_input_transforms_pass.FuseIdenticalInputTransformsPass": RETRACE_ONLY,
    _AP + "fuse_view_copy_transform_pass.FuseViewCopyTransformPass": RETRACE_ONLY,
    _AP + "propagate_view_copy_permute_pass.PropagateViewCopyPermuteUpPass": RETRACE_ONLY,
    _AP + "propagate_view_copy_permute_pass.PropagateViewCopyPermuteDownPass": RETRACE_ONLY,
    _AP + "remove_getitem_pass.RemoveGetItemPass": RETRACE_ONLY,
    _AP + "remove_permutes_around_elementwise_tosa_ops.RemovePermutesAroundElementwiseTosaOps": RETRACE_ONLY,
    # ---- call_operator guarded on target_ops plus a call() override ----
    _AP + "insert_const_shapes.InsertConstShapesPass": Entry(
        UPSTREAM, skip_sound=True, copy_sound=True,
        why="call() only clears _const_shape_cache around super().call(); the cache is used in the targeted branch only"),
    _AP + "remove_noop_pass.RemoveNoopPass": Entry(
        UPSTREAM, skip_sound=False, copy_sound=True,
        why="guard on target_ops; call() runs eliminate_dead_code after the retrace, so not skip-sound for fastpass"),
    _AP + "symbolic_to_tosa_shape_pass.SymbolicToTosaShapesPass": Entry(
        _shape_operand_calls, skip_sound=False, copy_sound=True,
        why="call_operator rewrites sym_size.int and calls with shape operands in a positional list argument "
            "(materialized as TOSA shape ops), else super().call_operator unchanged; call_sym only for sym "
            "nodes (never copied); skipping stays with upstream's should_run_pass"),
    # ---- backends/transforms helpers, called directly by PropagateViewCopyPermuteDown/UpPass ----
    _TR + "canonicalize_view_copy_permute_pass.CanonicalizeViewCopyPermutePass": HELPER_RETRACE_ONLY,
    _TR + "fuse_duplicate_users_pass.FuseDuplicateUsersPass": HELPER_RETRACE_ONLY,
    _TR + "fuse_identical_input_transforms_pass.FuseIdenticalInputTransformsPass": HELPER_RETRACE_ONLY,
    # ---- exir passes run by to_edge_transform_and_lower ----
    "executorch.exir.passes.normalize_transpose_pass.NormalizeTransposePass": Entry(
        _aten_t, skip_sound=True, copy_sound=True,
        why="call_operator rewrites only aten.t.default; everything else plain super()"),
    "executorch.exir.passes.memory_format_ops_pass.MemoryFormatOpsPass": Entry(
        _dim_order_ops, skip_sound=True, copy_sound=True,
        why="`if not (isinstance(op, EdgeOpOverload) and op in DimOrderOpsMap): return super()...`"),
    "executorch.exir.passes.remove_mixed_type_operators.RemoveMixedTypeOperators": Entry(
        _mixed_type_ops, skip_sound=True, copy_sound=True,
        why="call_operator returns plain super() unless op is in its 6-op promotion_type_allow_list; "
            "no call()/tracer overrides"),
    "executorch.exir.passes.replace_broken_ops_with_function_ops_pass.ReplaceBrokenOpsWithFunctionalOpsPass": Entry(
        _view_ops, skip_sound=True, copy_sound=True,
        why="call_operator rewrites only ops with op.is_view (an OpFamily: any namespace, by rule), else plain "
            "super(); no call()/tracer overrides"),
    "executorch.exir.passes.scalar_to_tensor_pass.ScalarToTensorPass": Entry(
        _scalar_calls, skip_sound=True, copy_sound=True,
        why="call_operator coerces only Python scalars in TensorType slots (map_args), else passes the call "
            "unchanged to super(); call() only resets _modified around super().call()"),
    "executorch.exir.passes.sym_to_tensor_pass.SymToTensorPass": Entry(
        _sym_calls, skip_sound=True, copy_sound=True,
        why="call_operator inserts scalar_tensor only for Sym* graph values in TensorType slots (map_args), "
            "else passes the call unchanged to super(); no call()/tracer overrides"),
    # ---- retrace-only ARM passes: copy-sound with no targeted op, never skipped ----
    _AP + "broadcast_args_pass.BroadcastArgsPass": RETRACE_ONLY,
    _AP + "cast_int64_pass.CastInt64BuffersToInt32Pass": RETRACE_ONLY,
    _AP + "constant_folding_pass.ConstantFoldingPass": RETRACE_ONLY,
    _AP + "control_flow_const_inline.ControlFlowConstInlinePass": RETRACE_ONLY,
    _AP + "convert_elu_params.ConvertELUParamsPass": RETRACE_ONLY,
    _AP + "convert_int64_const_ops_to_int32.ConvertInt64ConstOpsToInt32Pass": RETRACE_ONLY,
    _AP + "convert_int64_output_ops_to_int32.ConvertInt64OutputOpsToInt32Pass": RETRACE_ONLY,
    _AP + "convert_minmax_pass.ConvertMinMaxPass": Entry(
        _class_attr(_AP + "convert_minmax_pass", "ConvertMinMaxPass", "_TARGET_OPS"),
        skip_sound=True, copy_sound=True,
        why=_CALL_REWRITES_TARGETED_ONLY),
    _AP + "convert_split_to_slice.ConvertSplitToSlicePass": RETRACE_ONLY,
    _AP + "decompose_any_pass.DecomposeAnyPass": RETRACE_ONLY,
    _AP + "decompose_batch_norm_no_stats.DecomposeBatchNormNoStatsPass": RETRACE_ONLY,
    _AP + "decompose_cumsum_pass.DecomposeCumsumPass": RETRACE_ONLY,
    _AP + "decompose_embedding_pass.DecomposeEmbeddingPass": RETRACE_ONLY,
    _AP + "decompose_groupnorm_pass.DecomposeGroupNormPass": Entry(
        _class_attr(_AP + "decompose_groupnorm_pass", "DecomposeGroupNormPass", "_TARGET_OPS"),
        skip_sound=True, copy_sound=True,
        why=_CALL_REWRITES_TARGETED_ONLY),
    _AP + "decompose_gru_pass.DecomposeGruPass": RETRACE_ONLY,
    _AP + "decompose_layernorm_pass.DecomposeLayerNormPass": RETRACE_ONLY,
    _AP + "decompose_linear_pass.DecomposeLinearPass": RETRACE_ONLY,
    _AP + "decompose_lstm_pass.DecomposeLstmPass": RETRACE_ONLY,
    _AP + "decompose_quant_nodes.DecomposeQuantNodesPass": RETRACE_ONLY,
    _AP + "decompose_rnn_pass.DecomposeRnnPass": RETRACE_ONLY,
    _AP + "decompose_select.DecomposeSelectPass": RETRACE_ONLY,
    _AP + "decompose_unsupported_bilinear_resize_pass.DecomposeUnsupportedBilinearResizePass": RETRACE_ONLY,
    _AP + "deduplicate_get_attr_pass.DeduplicateGetAttrPass": RETRACE_ONLY,
    _AP + "ensure_unique_output_nodes_pass.EnsureUniqueOutputNodesPass": RETRACE_ONLY,
    _AP + "fold_dyt_affine_into_conv_pass.FoldDyTAffineIntoConvPass": RETRACE_ONLY,
    _AP + "fold_dyt_alpha_into_lut_pass.FoldDyTAlphaIntoLUTPass": RETRACE_ONLY,
    _AP + "fold_qdq_with_annotated_qparams_pass.FoldAndAnnotateQParamsPass": RETRACE_ONLY,
    _AP + "fold_qdq_with_annotated_qparams_pass.QuantizeClampArgumentsPass": RETRACE_ONLY,
    _AP + "fold_scalar_mul_into_conv_pass.FoldScalarMulIntoConvPass": RETRACE_ONLY,
    _AP + "fuse_batch_norm2d_pass.FuseBatchNorm2dPass": RETRACE_ONLY,
    _AP + "fuse_consecutive_clamps_pass.FuseConsecutiveClampsPass": RETRACE_ONLY,
    _AP + "fuse_consecutive_rescales_pass.FuseConsecutiveRescalesPass": RETRACE_ONLY,
    _AP + "fuse_consecutive_slices_pass.FuseConsecutiveSlicesPass": RETRACE_ONLY,
    _AP + "fuse_constant_ops_pass.ComputeConstantOpsAOTPass": RETRACE_ONLY,
    _AP + "fuse_constant_ops_pass.FuseConstantArgsPass": RETRACE_ONLY,
    _AP + "fuse_equal_placeholders_pass.FuseEqualPlaceholdersPass": RETRACE_ONLY,
    _AP + "fuse_quantized_activation_pass.FuseQuantizedActivationPass": RETRACE_ONLY,
    _AP + "get_decomposition_pass.GetDecompositionPass": RETRACE_ONLY,
    _AP + "insert_int32_casts_after_int64_placeholders.InsertInt32CastsAfterInt64PlaceholdersPass": RETRACE_ONLY,
    _AP + "insert_rescales_pass.InsertControlFlowRescalesPass": RETRACE_ONLY,
    _AP + "insert_rescales_pass.InsertRescaleInt32Pass": RETRACE_ONLY,
    _AP + "insert_rescales_pass.InsertRescalePass": RETRACE_ONLY,
    _AP + "insert_table_ops.InsertTableOpsPass": RETRACE_ONLY,
    _AP + "match_arg_dtype_pass.MatchArgDtypePass": RETRACE_ONLY,
    _AP + "match_arg_ranks_pass.MatchArgRanksPass": RETRACE_ONLY,
    _AP + "mm_to_bmm_pass.ConvertMmToBmmPass": RETRACE_ONLY,
    _AP + "move_data_movement_ops_to_smaller_dtype_pass.MoveDataMovementOpsToSmallerDtypePass": RETRACE_ONLY,
    _AP + "normalize_delegate_io_layout_pass.NormalizeDelegateIOLayoutPass": RETRACE_ONLY,
    _AP + "normalize_max_pool2d_input_rank_pass.NormalizeMaxPool2dInputRankPass": RETRACE_ONLY,
    _AP + "normalize_while_initial_args_pass.NormalizeWhileInitialArgsPass": RETRACE_ONLY,
    _AP + "remove_safe_softmax_guard_pass.RemoveSafeSoftmaxGuardPass": RETRACE_ONLY,
    _AP + "replace_inf_and_limit_values_pass.ReplaceInfAndLimitValuesPass": RETRACE_ONLY,
    _AP + "resolve_view_copy_inferred_dim_pass.ResolveViewCopyInferredDimPass": RETRACE_ONLY,
    _AP + "rewrite_bool_to_fp32_cast_via_int8_pass.RewriteBoolToFp32CastViaInt8Pass": RETRACE_ONLY,
    _AP + "rewrite_conv_pass.RewriteConvPass": RETRACE_ONLY,
    _AP + "rewrite_matmul.RewriteMatmulPass": RETRACE_ONLY,
    _AP + "rewrite_mxfp_conv2d.RewriteMXFPConv2dPass": RETRACE_ONLY,
    _AP + "rewrite_mxfp_linear.RewriteMXFPLinearPass": RETRACE_ONLY,
    _AP + "rewrite_upsample.RewriteUpsamplePass": RETRACE_ONLY,
    _AP + "scalars_to_attribute_pass.ScalarsToAttributePass": RETRACE_ONLY,
    _AP + "size_adjust_input_pass.SizeAdjustInputPass": RETRACE_ONLY,
    _AP + "unsqueeze_before_repeat_pass.UnsqueezeBeforeRepeatPass": RETRACE_ONLY,
    _AP + "unsqueeze_scalar_placeholders_pass.UnsqueezeScalarPlaceholdersPass": RETRACE_ONLY,
}
