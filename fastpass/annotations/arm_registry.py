"""Explicit pass annotations (ARM backend, executorch 1.5.1).

Each entry: qualified class name -> (ops, skip_sound, copy_sound, why)
where ``ops`` is ``UPSTREAM`` (the pass's own ``target_ops``, read from the
instance) or a zero-argument callable returning the op set (lazy, so importing
this module does not import the ARM backend).

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
from typing import Any, Callable, FrozenSet

UPSTREAM = object()

_STD = "call_operator guards on self.target_ops; cold path is plain super().call_operator; no call()/tracer overrides"


def _opmap_plus_targets(module: str, cls: str) -> Callable[[], FrozenSet[Any]]:
    def ops() -> FrozenSet[Any]:
        mod = importlib.import_module(module)
        return frozenset(getattr(mod, "OP_MAP")) | frozenset(getattr(getattr(mod, cls), "target_ops", ()))

    return ops


_RETRACE = (
    "no call_operator/callback override in the class or its bases: its retrace (if any, via "
    "super().call()) treats every node with the stock ArmPass.call_operator; the graph surgery in "
    "call() happens before/after the retrace and invalidates the creation signature of every node "
    "it touches, so those nodes are re-dispatched"
)


def _class_attr(module: str, cls: str, attr: str) -> Callable[[], FrozenSet[Any]]:
    def ops() -> FrozenSet[Any]:
        return frozenset(getattr(getattr(importlib.import_module(module), cls), attr))

    return ops


def _NONE() -> FrozenSet[Any]:
    return frozenset()


def _dim_order_ops() -> FrozenSet[Any]:
    from executorch.exir.passes.dim_order_ops_registry import DimOrderOpsMap

    return frozenset(DimOrderOpsMap)


def _aten_t() -> FrozenSet[Any]:
    import torch

    return frozenset({torch.ops.aten.t.default})


_AP = "executorch.backends.arm._passes."

REGISTRY: dict = {
    "executorch.backends.arm._passes.accumulate_index_put_pass.AccumulateIndexPutPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.canonicalize_gather_pass.CanonicalizeGatherPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.cast_int_comparison_inputs_pass.CastIntComparisonInputsPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.cast_to_int32_pass.CastToInt32Pass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.convert_expand_copy_to_repeat.ConvertExpandCopyToRepeatPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.convert_full_like_to_full_pass.ConvertFullLikeToFullPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.convert_permute_singleton_to_view_pass.ConvertPermuteSingletonToViewPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.convert_squeezes_to_view.ConvertSqueezesToViewPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.convert_to_clamp_pass.ConvertToClampPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_acosh_pass.DecomposeAcoshPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_adaptive_avg_pool2d_pass.DecomposeAdaptiveAvgPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_adaptive_max_pool2d_pass.DecomposeAdaptiveMaxPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_add_sub_alpha_pass.DecomposeAddSubAlphaPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_addmm_pass.DecomposeAddmmPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_as_strided_copy_pass.DecomposeAsStridedCopyPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_asin_and_acos_pass.DecomposeAsinAndAcosPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_asinh_pass.DecomposeAsinhPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_atan_pass.DecomposeAtanPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_atanh_pass.DecomposeAtanhPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_avg_pool2d_pass.DecomposeAvgPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_cosh_pass.DecomposeCoshPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_cosine_similarity_pass.DecomposeCosineSimilarityPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_div_pass.DecomposeDivPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_div_tensor_mode.DecomposeDivTensorModePass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_dynamic_full_pass.DecomposeDynamicFullPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_elu_pass.ConvertEluFamilyToEluPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_elu_pass.DecomposeEluPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_erfinv_pass.DecomposeErfinvPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_expm1_pass.DecomposeExpm1Pass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_flip_pass.DecomposeFlipPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_floor_divide_pass.DecomposeFloorDividePass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_gelu_pass.DecomposeGeluPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_glu_pass.DecomposeGluPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_index_select_to_gather_pass.DecomposeIndexSelectToGatherPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_index_tensor_to_gather_pass.DecomposeIndexTensorToGatherPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_int_pow_pass.DecomposeIntPowPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_large_stride_maxpool2d_pass.DecomposeLargeStrideMaxPool2dForU55Pass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_leaky_relu_pass.DecomposeLeakyReLUPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_linalg_vector_norm_pass.DecomposeLinalgVectorNormPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_log1p_pass.DecomposeLog1pPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_logit_pass.DecomposeLogitPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_masked_fill_pass.DecomposeMaskedFillPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_maxpool2d_with_dilation_pass.DecomposeMaxPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_meandim_pass.DecomposeMeanDimPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_ne_pass.DecomposeNotEqualPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_permute_for_u55_pass.DecomposePermuteForU55Pass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_prelu_pass.DecomposePReLUPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_prod_pass.DecomposeProdPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_remainder_pass.DecomposeRemainderPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_round_pass.DecomposeRoundPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_select_scatter_pass.DecomposeSelectScatterPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_sign_pass.DecomposeSignPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_sinh_pass.DecomposeSinhPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_slice_scatter_pass.DecomposeSliceScatterPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_sqrt_pass.DecomposeSqrtPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_strided_slice_copy_pass.DecomposeStridedSliceCopyPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_sum_pass.DecomposeSumPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_tan_pass.DecomposeTanPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_tril_pass.DecomposeTrilPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_unfold_to_gather_pass.DecomposeUnfoldToGatherPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_var_pass.DecomposeVarPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decompose_where_scalar_other_pass.DecomposeWhereScalarOtherPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.decorate_fp32_to_int32_casting_pass.DecorateFp32toInt32CastingPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.fuse_consecutive_concat_shapes.FuseConsecutiveConcatShapesPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.insert_data_layout_casts_pass.InsertDataLayoutCastsPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.insert_dynamic_padding.InsertDynamicPaddingPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.normalize_index_put_bool_index_tensor_pass.NormalizeIndexPutBoolIndexTensorPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.normalize_index_put_none_indices_pass.NormalizeIndexPutNoneIndicesPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.promote_bool_operands_pass.PromoteBoolOperandsPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_adaptive_avg_pool2d.RewriteAdaptiveAvgPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_avg_pool2d_pass.RewriteAvgPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_bool_bitwise_to_logical_pass.RewriteBoolBitwiseToLogicalPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_high_rank_singleton_permute_pass.RewriteHighRankSingletonPermutePass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_index_put_pass.RewriteIndexPutPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_max_pool2d_pass.RewriteMaxPool2dPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_pad.RewritePadPass": (UPSTREAM, True, True, _STD),
    "executorch.backends.arm._passes.rewrite_slice.RewriteSlicePass": (UPSTREAM, True, True, _STD),
    # Hand-read, guard is not the first statement but the cold path is the same:
    _AP + "decompose_tosa_unsupported_clamp_pass.DecomposeTOSAUnsupportedClampPass": (
        UPSTREAM, True, True,
        "reads meta['val'] first (no side effect), then `if op not in self.target_ops: return super()...`"),
    _AP + "decompose_grouped_conv_pass.DecomposeGroupedConvPass": (
        UPSTREAM, True, True,
        "_get_groups_and_transposed returns (None, None) for every op not in target_ops -> plain super()"),
    _AP + "decompose_softmax_pass.DecomposeSoftmaxPass": (
        UPSTREAM, True, True,
        "guard on self.target_ops; the only self state (_warned_safe_softmax) is written in the targeted branch"),
    _AP + "rewrite_inplace_arithmetic_pass.RewriteInplaceArithmeticPass": (
        _opmap_plus_targets(_AP + "rewrite_inplace_arithmetic_pass", "RewriteInplaceArithmeticPass"), True, True,
        "ops outside OP_MAP take plain super().call_operator"),
    _AP + "rewrite_le_lt_to_ge_gt_pass.RewriteLeLtToGeGtPass": (
        _opmap_plus_targets(_AP + "rewrite_le_lt_to_ge_gt_pass", "RewriteLeLtToGeGtPass"), True, True,
        "ops outside OP_MAP take plain super().call_operator"),
    # ---- retrace-only via an intermediate base that only overrides call() (checked: no
    # call_operator/callback override anywhere in the MRO besides ArmPass) ----
    _AP + "canonicalize_view_copy_permute_pass.CanonicalizeViewCopyPermutePass": (_NONE, False, True, _RETRACE),
    _AP + "decompose_einsum_pass.DecomposeEinsumPass": (_NONE, False, True, _RETRACE),
    _AP + "decompose_index_copy_pass.DecomposeIndexCopyPass": (_NONE, False, True, _RETRACE),
    _AP + "decompose_matmul.DecomposeMatmulPass": (_NONE, False, True, _RETRACE),
    _AP + "decompose_sdpa_pass.DecomposeScaledDotProductAttentionPass": (_NONE, False, True, _RETRACE),
    _AP + "exir_to_tosa_pass.ExirToTosaPass": (_NONE, False, True, _RETRACE),
    _AP + "fuse_duplicate_users_pass.FuseDuplicateUsersPass": (_NONE, False, True, _RETRACE),
    _AP + "fuse_identical_input_transforms_pass.FuseIdenticalInputTransformsPass": (_NONE, False, True, _RETRACE),
    _AP + "fuse_view_copy_transform_pass.FuseViewCopyTransformPass": (_NONE, False, True, _RETRACE),
    _AP + "propagate_view_copy_permute_pass.PropagateViewCopyPermuteUpPass": (_NONE, False, True, _RETRACE),
    _AP + "propagate_view_copy_permute_pass.PropagateViewCopyPermuteDownPass": (_NONE, False, True, _RETRACE),
    _AP + "remove_getitem_pass.RemoveGetItemPass": (_NONE, False, True, _RETRACE),
    _AP + "remove_permutes_around_elementwise_tosa_ops.RemovePermutesAroundElementwiseTosaOps": (_NONE, False, True, _RETRACE),
    # ---- call_operator guarded on target_ops plus a call() override ----
    _AP + "insert_const_shapes.InsertConstShapesPass": (
        UPSTREAM, True, True,
        "call() only clears _const_shape_cache around super().call(); the cache is used in the targeted branch only"),
    _AP + "remove_noop_pass.RemoveNoopPass": (
        UPSTREAM, False, True,
        "guard on target_ops; call() runs eliminate_dead_code after the retrace, so not skip-sound for fastpass"),
    # ---- exir passes run by to_edge_transform_and_lower ----
    "executorch.exir.passes.normalize_transpose_pass.NormalizeTransposePass": (
        _aten_t, True, True, "call_operator rewrites only aten.t.default; everything else plain super()"),
    "executorch.exir.passes.memory_format_ops_pass.MemoryFormatOpsPass": (
        _dim_order_ops, True, True,
        "`if not (isinstance(op, EdgeOpOverload) and op in DimOrderOpsMap): return super()...`"),
    # ---- retrace-only ARM passes: copy-sound with no targeted op, never skipped ----
    "executorch.backends.arm._passes.broadcast_args_pass.BroadcastArgsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.cast_int64_pass.CastInt64BuffersToInt32Pass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.constant_folding_pass.ConstantFoldingPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.control_flow_const_inline.ControlFlowConstInlinePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.convert_elu_params.ConvertELUParamsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.convert_int64_const_ops_to_int32.ConvertInt64ConstOpsToInt32Pass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.convert_int64_output_ops_to_int32.ConvertInt64OutputOpsToInt32Pass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.convert_minmax_pass.ConvertMinMaxPass": (
        _class_attr(_AP + "convert_minmax_pass", "ConvertMinMaxPass", "_TARGET_OPS"), True, True,
        "call() only rewrites nodes whose target is in _TARGET_OPS; with none present it returns "
        "PassResult(gm, False) without retracing; retrace (if any) is the stock one"),
    "executorch.backends.arm._passes.convert_split_to_slice.ConvertSplitToSlicePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_any_pass.DecomposeAnyPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_batch_norm_no_stats.DecomposeBatchNormNoStatsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_cumsum_pass.DecomposeCumsumPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_embedding_pass.DecomposeEmbeddingPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_groupnorm_pass.DecomposeGroupNormPass": (
        _class_attr(_AP + "decompose_groupnorm_pass", "DecomposeGroupNormPass", "_TARGET_OPS"), True, True,
        "call() only rewrites nodes whose target is in _TARGET_OPS; with none present it returns "
        "PassResult(gm, False) without retracing; retrace (if any) is the stock one"),
    "executorch.backends.arm._passes.decompose_gru_pass.DecomposeGruPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_layernorm_pass.DecomposeLayerNormPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_linear_pass.DecomposeLinearPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_lstm_pass.DecomposeLstmPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_quant_nodes.DecomposeQuantNodesPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_rnn_pass.DecomposeRnnPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_select.DecomposeSelectPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.decompose_unsupported_bilinear_resize_pass.DecomposeUnsupportedBilinearResizePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.deduplicate_get_attr_pass.DeduplicateGetAttrPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.ensure_unique_output_nodes_pass.EnsureUniqueOutputNodesPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fold_dyt_affine_into_conv_pass.FoldDyTAffineIntoConvPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fold_dyt_alpha_into_lut_pass.FoldDyTAlphaIntoLUTPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fold_qdq_with_annotated_qparams_pass.FoldAndAnnotateQParamsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fold_qdq_with_annotated_qparams_pass.QuantizeClampArgumentsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fold_scalar_mul_into_conv_pass.FoldScalarMulIntoConvPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_batch_norm2d_pass.FuseBatchNorm2dPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_consecutive_clamps_pass.FuseConsecutiveClampsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_consecutive_rescales_pass.FuseConsecutiveRescalesPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_consecutive_slices_pass.FuseConsecutiveSlicesPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_constant_ops_pass.ComputeConstantOpsAOTPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_constant_ops_pass.FuseConstantArgsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_equal_placeholders_pass.FuseEqualPlaceholdersPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.fuse_quantized_activation_pass.FuseQuantizedActivationPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.get_decomposition_pass.GetDecompositionPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.insert_int32_casts_after_int64_placeholders.InsertInt32CastsAfterInt64PlaceholdersPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.insert_rescales_pass.InsertControlFlowRescalesPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.insert_rescales_pass.InsertRescaleInt32Pass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.insert_rescales_pass.InsertRescalePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.insert_table_ops.InsertTableOpsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.match_arg_dtype_pass.MatchArgDtypePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.match_arg_ranks_pass.MatchArgRanksPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.mm_to_bmm_pass.ConvertMmToBmmPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.move_data_movement_ops_to_smaller_dtype_pass.MoveDataMovementOpsToSmallerDtypePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.normalize_delegate_io_layout_pass.NormalizeDelegateIOLayoutPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.normalize_max_pool2d_input_rank_pass.NormalizeMaxPool2dInputRankPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.normalize_while_initial_args_pass.NormalizeWhileInitialArgsPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.remove_safe_softmax_guard_pass.RemoveSafeSoftmaxGuardPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.replace_inf_and_limit_values_pass.ReplaceInfAndLimitValuesPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.resolve_view_copy_inferred_dim_pass.ResolveViewCopyInferredDimPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.rewrite_bool_to_fp32_cast_via_int8_pass.RewriteBoolToFp32CastViaInt8Pass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.rewrite_conv_pass.RewriteConvPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.rewrite_matmul.RewriteMatmulPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.rewrite_mxfp_conv2d.RewriteMXFPConv2dPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.rewrite_mxfp_linear.RewriteMXFPLinearPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.rewrite_upsample.RewriteUpsamplePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.scalars_to_attribute_pass.ScalarsToAttributePass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.size_adjust_input_pass.SizeAdjustInputPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.unsqueeze_before_repeat_pass.UnsqueezeBeforeRepeatPass": (_NONE, False, True, _RETRACE),
    "executorch.backends.arm._passes.unsqueeze_scalar_placeholders_pass.UnsqueezeScalarPlaceholdersPass": (_NONE, False, True, _RETRACE),
}
