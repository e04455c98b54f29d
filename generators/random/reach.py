"""Which vocabulary ops reach each annotated pass, and why the passes no op reaches cannot be.

A pass is *reached* when a drawn graph presents one of its targeted ops at the moment the pass
runs.  Three routes, in this order:

1. ``vocabulary``: a vocabulary op's expected ops (export, core ATen, and the forms to_edge
   gives them: view ops become ``*_copy``, ``_to_copy``/``clone`` become dim-order ops) meet
   the pass's targeted ops;
2. ``PRODUCED_IN_PIPELINE``: an earlier pass of the lowering creates the targeted op from a
   vocabulary op (``DecomposeLeakyReLUPass`` emits ``full_like``; the TOSA rewrites emit
   ``tosa.CONV2D``...);
3. no targeted ops: the pass (a retrace-only copy-sound annotation) acts on every graph a
   pipeline gives it.

``UNREACHABLE`` lists, with the reason, every annotated pass that no graph of ours can present
its ops to - also those a vocabulary op names but that never see it in a lowering (the op is
decomposed earlier, or the pass only runs inside the quantizer).  ``TARGET_ONLY`` names the
passes that act on one target only, so that the fuzz campaign knows which target to run;
``FORM_ROUTES`` the vocabulary ops that present a pass's op in the one form it acts on (graph
biasing by targeted ops alone draws those forms rarely or never).
``tests/test_generators_random.py`` checks that every annotated pass has a route or a reason,
and that no entry here is stale.  Keys are pass class names (unique among annotated passes).
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

# Quantizer-only: the harness quantizes once per case, outside fastpass, and lowers the result
# in both modes; a pass that runs only in the ARM quantizer's transform_for_annotation pipeline
# never runs with fastpass on, whatever the graph (checked against ArmPassManager's source).
QUANTIZER_ONLY: frozenset[str] = frozenset({
    "ConstantFoldingPass", "ConvertInt64ConstOpsToInt32Pass", "ConvertInt64OutputOpsToInt32Pass",
    "DecomposeCosineSimilarityPass", "DecomposeEinsumPass", "DecomposeGruPass", "DecomposeIndexCopyPass",
    "DecomposeLinalgVectorNormPass", "DecomposeLstmPass", "DecomposeMatmulPass", "DecomposeRnnPass",
    "DecomposeScaledDotProductAttentionPass", "DecomposeSelectScatterPass", "DecomposeTrilPass",
    "DecomposeWhereScalarOtherPass", "DeduplicateGetAttrPass", "InsertInt32CastsAfterInt64PlaceholdersPass",
    "ReplaceInfAndLimitValuesPass", "RewriteInplaceArithmeticPass", "ScalarsToAttributePass",
})
_QUANTIZER_ONLY_WHY = ("runs only in the ARM quantizer's transform_for_annotation pipeline, which the harness runs "
                       "once per case outside fastpass (shared by both modes); no lowering pipeline invokes it")

# Annotated, but no default pipeline of any target invokes them (checked the same way).
IN_NO_PIPELINE: dict[str, str] = {
    "FoldDyTAffineIntoConvPass": "opt-in: only a user's registered pass insertion adds it to a pipeline",
    "FoldDyTAlphaIntoLUTPass": "opt-in: only a user's registered pass insertion adds it to a pipeline",
    "GetDecompositionPass": "a base class: its subclasses are the passes the pipelines invoke",
    "ConvertPermuteSingletonToViewPass": "defined by the ARM backend, but no pipeline of executorch 1.5.1 adds it",
}

# The op is gone before the lowering pipeline runs: the quantizer's transform_for_annotation
# pipeline rewrites it on INT targets, to_edge's core-ATen decomposition on tosa-fp.
_DECOMPOSED_EARLIER = ("its op never reaches the lowering pipeline: on INT targets the quantizer's "
                       "transform_for_annotation pipeline (outside fastpass) decomposes it, on tosa-fp to_edge's "
                       "core-ATen decomposition does")

_MXFP_WHY = ("needs MXFP-quantized weights; none of the quantizers the targets use (TOSAQuantizer, "
             "EthosUQuantizer with the symmetric int8 config) produce them")

UNREACHABLE: dict[str, str] = {
    "DecomposeAsStridedCopyPass": "as_strided is quarantined from the default vocabulary (generators/random/_ops.py: a relu -> as_strided -> relu chain hit a RecursionError in stock INT quantization)",
    **{name: _QUANTIZER_ONLY_WHY for name in QUANTIZER_ONLY},
    **IN_NO_PIPELINE,
    "RewriteMXFPConv2dPass": _MXFP_WHY,
    "RewriteMXFPLinearPass": _MXFP_WHY,
    "DecomposeAdaptiveMaxPool2dPass": "acts on tosa.MAX_POOL2D_ADAPTIVE, which RewriteMaxPool2dPass emits only "
                                      "for symbolic (dynamic) shapes on TOSA >= 1.1 with the shape extension; "
                                      "every target here is static-shape TOSA-1.0",
    "FuseConsecutiveConcatShapesPass": "acts on tosa.CONCAT_SHAPE, which only the symbolic-shape lowering "
                                       "(dynamic shapes, TOSA shape extension) creates",
    "DecomposeErfinvPass": "aten.erfinv is not Core ATen and the ARM partitioner does not keep it: to_edge's "
                           "IR verifier rejects the graph before any ARM pass runs (generator op 'erfinv' "
                           "is quarantined for that reason, and so is adaptive_max_pool2d)",
    "NormalizeTransposePass": "aten.t is not Core ATen: to_edge decomposes it to permute before its "
                              "pre-op-replace passes (where this pass runs) see the graph",
    "ReplaceBrokenOpsWithFunctionalOpsPass": "it rewrites only view ops (op.is_view), and to_edge runs torch's "
                                             "ReplaceViewOpsWithViewCopyOpsPass just before it, which gives every "
                                             "ATen view op its *_copy form (`route` drops them: "
                                             "`reaches_lowering`); only a view op of another namespace would reach "
                                             "it, and no vocabulary op makes one (measured, relu -> permute -> relu "
                                             "on tosa-fp and tosa-int: fastpass skips it, no targeted op)",
    "DecomposeMaskedFillPass": _DECOMPOSED_EARLIER + " (masked_fill -> where)",
    "DecomposeGluPass": _DECOMPOSED_EARLIER + " (glu -> slice, sigmoid, mul)",
    "DecomposePReLUPass": _DECOMPOSED_EARLIER + " (prelu -> where)",
    "DecomposeFloorDividePass": _DECOMPOSED_EARLIER + " (floor_divide -> div.Tensor_mode, which "
                                "DecomposeDivTensorModePass then takes)",
    "DecomposeDynamicAdaptiveAvgPool2dPass": "acts on adaptive_avg_pool2d with symbolic (dynamic) shapes; "
                                             "DecomposeAdaptiveAvgPool2dPass, just before it, already "
                                             "rewrote every static one",
    "RemoveSafeSoftmaxGuardPass": "the default pass-pipeline config (sdpa_safe_softmax_guard=PRESERVE) "
                                  "drops it from the pipeline",
    "RewriteAdaptiveAvgPool2dPass": "acts only on adaptive_avg_pool2d with symbolic (dynamic) spatial shapes "
                                    "(TOSA >= 1.1 with the shape extension); DecomposeAdaptiveAvgPool2dPass, "
                                    "earlier in the same pipeline, rewrites every static one to avg_pool2d "
                                    "(measured: a relu -> adaptive_avg_pool2d(2, 2) -> relu graph hands this "
                                    "pass avg_pool2d and clamp on tosa-fp)",
    "DecomposeBatchNormNoStatsPass": "FuseBatchNorm2dPass, just before it, folds every float32 "
                                     "_native_batch_norm_legit_no_training into a convolution (it leaves only "
                                     "bfloat16 ones; the vocabulary is float32); the no_stats form (training-mode "
                                     "batch_norm without running stats) is in neither TOSA support list, so the "
                                     "partitioner leaves it on the CPU; on INT targets the quantizer's "
                                     "transform_for_annotation copy of the pass decomposes it first",
    "CastToInt32Pass": "acts on bitwise shifts of integer tensors; the vocabulary's values are float32 and "
                       "an int shift is neither quantizable nor delegated on the float targets",
    "RewriteBoolToFp32CastViaInt8Pass": "its call() returns unchanged unless the TOSA spec supports both the INT "
                                        "and the FP profile (TOSA-1.0+INT+FP); every target here has one profile "
                                        "only (tosa-fp: TOSA-1.0+FP; tosa-int, ethos-u55, ethos-u85: INT "
                                        "without FP, checked with support_integer()/support_float())",
    "InsertControlFlowRescalesPass": "rewrites only the submodules of torch.ops.higher_order.cond and "
                                     "while_loop nodes (its call() looks at no other node and retraces only "
                                     "after such a rewrite); the generator's graphs are straight-line DAGs "
                                     "with no control flow (no vocabulary op emits torch.cond or while_loop)",
    "DecomposeQuantNodesPass": "rewrites only a quantize/dequantize_per_tensor that survives "
                               "FoldAndAnnotateQParamsPass in a delegated graph and is not half of a dq -> q "
                               "pair: float ops delegated beside quantized ones, which only the combined "
                               "INT+FP profile allows (upstream's own test of the pass lowers with "
                               "tosa_extensions=['FP']); tosa-fp graphs hold no q/dq, and the INT-only targets "
                               "leave only dq -> q pairs or keep q/dq outside the delegate (measured: 0 "
                               "retraces in its 782 calls of the whole-registry gate at 697c109; relu -> "
                               "cast(int32) -> abs on tosa-int splits into two delegates with the q/dq "
                               "outside)",
}

# Targeted ops that an earlier pass of the lowering creates from vocabulary ops.
PRODUCED_IN_PIPELINE: dict[str, tuple[tuple[str, ...], str]] = {
    "ConvertFullLikeToFullPass": (("leaky_relu",), "DecomposeLeakyReLUPass emits full_like"),
    "DecomposeDynamicFullPass": (("leaky_relu", "asinh", "acosh", "logit"),
                                 "ConvertFullLikeToFullPass and the ARM decompositions emit full (static "
                                 "shapes: the pass runs and leaves it)"),
    "InsertDynamicPaddingPass": (("conv2d", "avg_pool2d", "max_pool2d", "adaptive_avg_pool2d"),
                                 "RewriteConvPass/RewriteAvgPool2dPass/RewriteMaxPool2dPass emit the TOSA ops"),
    "DecorateFp32toInt32CastingPass": (("cast",), "to_edge's MemoryFormatOpsPass turns _to_copy into "
                                                  "dim_order_ops._to_dim_order_copy"),
}

# Passes reached on some targets only, and why: their should_run/call_operator test the target, or
# on the other targets an earlier step (the quantizer's transform_for_annotation copy of the pass,
# outside fastpass) already rewrote the form they act on.  The coverage verdict counts them
# reachable on these targets only.
_U55_ONLY = "its should_run_pass/call_operator act only when the TOSA spec is the U55 subset"
TARGET_ONLY: dict[str, tuple[tuple[str, ...], str]] = {
    "DecomposePermuteForU55Pass": (("ethos-u55",), _U55_ONLY),
    "DecomposeLargeStrideMaxPool2dForU55Pass": (("ethos-u55",), _U55_ONLY),
    "BroadcastArgsPass": (("ethos-u55",), _U55_ONLY),
    "InsertRescalePass": (("tosa-int", "ethos-u55", "ethos-u85"),
                          "its should_run_pass returns False unless the TOSA spec supports integers "
                          "(get_context_spec().support_integer()), and it folds dq -> q pairs, which only "
                          "quantized graphs hold (measured: fastpass skipped it in every one of 48 tosa-fp "
                          "graphs of two fuzz campaigns; a tosa-fp-only campaign called it a generator gap)"),
    # retrace-only annotations (no targeted ops, so quantizer_first() cannot tell): measured
    "FuseBatchNorm2dPass": (("tosa-fp",),
                            "on INT targets no _native_batch_norm_legit_no_training reaches the lowering: the "
                            "quantizer's DecomposeBatchNormNoStatsPass(tfa_pass=True) decomposes one not fed by "
                            "a conv, PT2E quantization folds conv -> batch_norm (measured: batch_norm on x0 "
                            "hands it rsqrt/mul/sub on tosa-int, ethos-u55 and ethos-u85; relu -> conv2d -> "
                            "batch_norm hands it a convolution only on tosa-int)"),
    "DecomposeLayerNormPass": (("tosa-fp",),
                               "on INT targets its tfa_pass copy in the quantizer's transform_for_annotation "
                               "pipeline (outside fastpass) decomposes layer_norm first (measured: relu -> "
                               "layer_norm -> abs on tosa-int hands it add/mul/rsqrt/sub/sum, and upstream's "
                               "should_run_pass skips it)"),
    "DecomposeEmbeddingPass": (("tosa-fp",),
                               "on INT targets the quantizer's copy of the pass has already made embedding an "
                               "index_select (measured on tosa-int, relu -> embedding -> abs: 0 nodes copied)"),
    "MoveDataMovementOpsToSmallerDtypePass": (("tosa-int", "ethos-u55", "ethos-u85"),
                                              "it acts next to a RESCALE, which only INT lowerings have (measured "
                                              "on tosa-fp, relu -> rescaled_permute -> abs: 0 nodes copied)"),
    "DecomposeAnyPass": (("tosa-fp", "tosa-int", "ethos-u85"),
                         "on ethos-u55 the partitioner does not delegate any (measured, relu -> any_where -> abs: "
                         "0 nodes copied there, 7-12 on the other three)"),
    "DecomposeUnsupportedBilinearResizePass": (("tosa-fp", "tosa-int", "ethos-u85"),
                                               "on ethos-u55 the partitioner does not delegate the resize "
                                               "(measured, relu -> bilinear_down16 -> abs: 0 nodes copied there)"),
}

# The targets whose lowering starts from a quantized graph: the ARM quantizer's
# transform_for_annotation pipeline ran on it first (outside fastpass, shared by both modes).
INT_TARGETS = frozenset({"tosa-int", "ethos-u55", "ethos-u85"})
QUANTIZER_FIRST_WHY = ("on INT targets its tfa_pass copy in the quantizer's transform_for_annotation pipeline "
                       "(outside fastpass) rewrites the form first, so only tosa-fp presents it")


@functools.lru_cache(maxsize=1)
def quantizer_first() -> frozenset[str]:
    """Passes both pipelines invoke: ArmPassManager's transform_for_annotation_pipeline (the
    quantizer's, with tfa_pass=True) and its lowering pipeline.  On INT targets the first copy
    already rewrote their ops when the lowering copy runs; read off upstream's source, so that a
    pass executorch moves in or out of the quantizer's pipeline follows without an edit here."""
    import inspect

    from executorch.backends.arm._passes.arm_pass_manager import ArmPassManager

    annotation = inspect.getsource(ArmPassManager.transform_for_annotation_pipeline)
    lowering = inspect.getsource(ArmPassManager._tosa_pipeline)
    lowered = set(re.findall(r"\b([A-Z]\w+Pass)\(", lowering))
    return frozenset(n for n in re.findall(r"\b([A-Z]\w+Pass)\(", annotation) if n in lowered)

@functools.lru_cache(maxsize=1)
def annotation_pipeline() -> tuple[str, ...]:
    """The pass class names of ArmPassManager's transform_for_annotation_pipeline, in order (read
    off upstream's source, as `quantizer_first`)."""
    import inspect

    from executorch.backends.arm._passes.arm_pass_manager import ArmPassManager

    return tuple(re.findall(r"\b([A-Z]\w+Pass)\(", inspect.getsource(ArmPassManager.transform_for_annotation_pipeline)))


# Passes of the quantizer's transform_for_annotation pipeline that retrace the graph, and the
# vocabulary ops that make them: after one, the graph is a retrace fixed point, and fastpass may
# skip a later pass of that pipeline or copy nodes in it; before, it does neither (torch.export's
# graph and the meta keys the quantizer adds are not what a retrace writes). Measured: op ->
# group_norm (no affine) with DecomposeGroupNormPass's entry missing aten.group_norm: the group
# norm skipped and the pipeline's output changed, 3 of 3 draws each; log, sqrt, rsqrt, reciprocal,
# acosh, pow, add, sub, mul, div, where, slice/select_scatter, bool_logic, cast, outer,
# scalar_scale, permuted_pair, rescaled_permute: 0 of 3 (they retrace nothing before it, or only
# with a form these ops do not draw). Passes after DecomposeGroupNormPass were not measured.
ANNOTATION_RETRACERS: dict[str, tuple[str, ...]] = {
    "DecomposeLogitPass": ("logit",),
    "DecomposeSignPass": ("sign",),
    "DecomposeTrilPass": ("tril",),
    "DecomposeRemainderPass": ("remainder",),
    "DecomposeFloorDividePass": ("floor_divide",),
    "DecomposeAddSubAlphaPass": ("add_alpha",),
    "ConvertEluFamilyToEluPass": ("celu", "selu"),
}


# Passes that act on one form of their op only (an argument value, a broadcast, an op an earlier
# pass must have retraced), or whose annotation names no targeted op although the pass only
# retraces (the only time fastpass copies in it) when one op is present: the vocabulary ops that
# present that form, and why.  Matching targeted ops alone draws these forms rarely or never:
# every op with a "+ 0.1" presents add.Tensor, where's ne is one comparison in six.
FORM_ROUTES: dict[str, tuple[tuple[str, ...], str]] = {
    "DecomposeAddSubAlphaPass": (("add_alpha",),
                                 "its should_run_pass takes only add/sub with alpha != 1; tosa-fp only (on INT "
                                 "the quantizer's copy of the pass decomposes them first)"),
    "DecomposeNotEqualPass": (("ne", "where"),
                              "ne.Tensor (ne.Scalar becomes one in ReplaceScalarWithTensorByProfilePass); "
                              "tosa-fp only (on INT the quantizer's copy of the pass decomposes it first)"),
    "BroadcastArgsPass": (("outer",),
                          "ethos-u55 only; its should_run_pass needs an add/sub/mul with more than one "
                          "broadcast operand"),
    "ConvertSplitToSlicePass": (("split_sizes", "split", "chunk"),
                                "retrace-only annotation, but the pass retraces only when a split is present, "
                                "and fastpass copies only the nodes upstream of the splits it rewrites: a split "
                                "of a graph input or of another split leaves none (split_sizes: linear -> "
                                "split_with_sizes, all parts used)"),
    "DecomposeIndexTensorToGatherPass": (("index_rows",),
                                         "x[idx] along dim 0: IndexTensorSupported rejects x[:, idx] (None "
                                         "indices), which `index` draws for all but one of its dims"),
    "UnsqueezeScalarPlaceholdersPass": (("scalar_scale",),
                                        "retrace-only annotation, but its should_run_pass needs a placeholder of "
                                        "shape (): only scalar_scale's rank-0 parameter/buffer makes one (every "
                                        "other value the generator makes has rank >= 1)"),
    "RemoveGetItemPass": (("max_pool2d", "max_dim"),
                          "retrace-only annotation, but its should_run_pass needs max_pool2d_with_indices or "
                          "max.dim in the graph"),
    "CastInt64BuffersToInt32Pass": (("index_select", "index", "gather", "index_put", "index_rows"),
                                    "retrace-only annotation, but its should_run_pass needs an int64 buffer: "
                                    "only the index ops' int64 index tensors (registered buffers) make one"),
    "RemovePermutesAroundElementwiseTosaOps": (("permuted_pointwise",),
                                               "retrace-only annotation, but the pass (which the permute/view "
                                               "propagation passes call directly) retraces only when it removes "
                                               "permutes that enclose an elementwise region"),
    "RemoveMixedTypeOperators": (("int_add", "int_sub", "int_mul", "int_div", "int_minimum"),
                                 "retraces every graph, but rewrites only an add/sub/mul/div/minimum whose "
                                 "operands differ in dtype (it casts one): the int_* ops' float32 value and "
                                 "int32 buffer; every other vocabulary value is float32. Float targets only "
                                 "(on INT the quantizer would annotate the int operand)"),
    "CanonicalizeGatherPass": (("gather", "conv2d", "relu"),
                               "the pass runs 4th in the pipeline: fastpass can copy only nodes an earlier "
                               "retrace signed, which on INT targets FuseQuantizedActivationPass does for a "
                               "conv2d/linear -> relu; on tosa-fp the partitioner rejects the generator's int64 "
                               "gather index (GatherSupported wants int32; on INT the quantizer converts it)"),
    "DecomposeCumsumPass": (("cumsum",),
                            "retrace-only annotation, but the pass retraces only when it rewrites a cumsum, and "
                            "fastpass copies only nodes upstream of it (measured, relu -> cumsum -> abs: 2-3 "
                            "nodes copied on edge-fp, quantized, ethos-u55, ethos-u85; cumsum on x0: none on "
                            "INT)"),
    "DecomposeSelectPass": (("select",),
                            "retrace-only annotation, but upstream's should_run_pass runs it only with a select "
                            "in the graph (779 of 782 calls skipped in the last whole-registry gate; measured, "
                            "relu -> select -> abs: 2-4 nodes copied on all four stages)"),
    "MatchArgDtypePass": (("tril",),
                          "retrace-only annotation, but the pass retraces only when a sub.Tensor/where.self has "
                          "operands of different dtypes: on INT targets tril's decomposed where (measured, "
                          "relu -> tril -> abs: 11 nodes copied on quantized and ethos-u85; on ethos-u55 the "
                          "where is not delegated, on edge-fp every operand is float32 and it never retraces)"),
    "FuseBatchNorm2dPass": (("batch_norm",),
                            "retrace-only annotation, but the pass retraces only when it folds a float32 "
                            "_native_batch_norm_legit_no_training (tosa-fp only, see TARGET_ONLY), and copies "
                            "only nodes upstream of it (measured on edge-fp: relu -> batch_norm -> abs copies 1, "
                            "relu -> conv2d -> batch_norm -> abs 3; batch_norm on x0 none). Plain draws missed "
                            "it: none of the 174 edge-fp graphs of the last whole-registry gate held batch_norm"),
    "DecomposeLayerNormPass": (("layer_norm",),
                               "retrace-only annotation, but upstream's should_run_pass runs it only with a "
                               "native_layer_norm (tosa-fp only, see TARGET_ONLY; measured on edge-fp: relu -> "
                               "layer_norm -> abs copies 2 nodes). Plain draws missed it: no graph of the last "
                               "whole-registry gate held layer_norm"),
    "DecomposeAddmmPass": (("addmm",),
                           "addmm is FLOAT_ONLY (quarantined from quantized targets) and linear never presents "
                           "addmm (NOT_PRESENTING): only the addmm op does, on tosa-fp (measured on edge-fp: "
                           "relu -> addmm -> abs copies 4 nodes); on INT the pass is quantizer-first"),
    "DecomposeAnyPass": (("any_where",),
                         "retrace-only annotation, but the pass retraces only when it rewrites an "
                         "any/any.dim/any.dims, which no other vocabulary op presents (measured, relu -> "
                         "any_where -> abs: keepdim 7-8 nodes copied on edge-fp, 11-12 on quantized and ethos-u85; "
                         "on ethos-u55 it is not delegated and the pass copies none)"),
    "DecomposeEmbeddingPass": (("embedding",),
                               "retrace-only annotation, but the pass retraces only when it rewrites an "
                               "aten.embedding, delegated only with int32 indices (EmbeddingSupported rejects "
                               "int64): embedding's int32 index buffer (measured on edge-fp, relu -> embedding -> "
                               "abs: 3 nodes copied). FLOAT_ONLY: on INT the quantizer's copy of the pass has "
                               "already made it index_select (measured on quantized: 0 copied)"),
    "DecomposeUnsupportedBilinearResizePass": (("bilinear_down16",),
                                               "retrace-only annotation, but the pass acts only on an exact 1/16 "
                                               "bilinear downscale with align_corners=False (the TOSA RESIZE "
                                               "boundary case); upsample only scales by 2 or 1 (measured, relu -> "
                                               "bilinear_down16 -> abs: 3 nodes copied on edge-fp, 5 on quantized "
                                               "and ethos-u85; on ethos-u55 the resize is not delegated, 0)"),
    "FuseIdenticalInputTransformsPass": (("permuted_pair",),
                                         "retrace-only annotation, but the pass acts only on an elementwise op or "
                                         "cat whose inputs are identical permute/view nodes, each used by it only; "
                                         "two permutes of one value are merged first by FuseDuplicateUsersPass, so "
                                         "they need different producers (measured, relu -> permuted_pair -> abs: 3 "
                                         "nodes copied on all four stages)"),
    "CastIntComparisonInputsPass": (("int_gt", "int_lt", "int_ge", "int_le", "int_eq", "int_ne"),
                                    "the pass casts only the inputs of an int8/int16 comparison (FP-only TOSA has "
                                    "none); every other comparison the vocabulary draws is of float32 values "
                                    "(measured, int_le on (1, 3, 4, 5) then relu on edge-fp: 4 nodes copied; "
                                    "FLOAT_ONLY)"),
    "DecomposeTOSAUnsupportedClampPass": (("int_clamp",),
                                          "the pass rewrites only an int32 scalar clamp (and clamp.Tensor); `clamp` "
                                          "draws float32 ones. Measured, int_clamp then relu: stock lowering fails "
                                          "on every stage after the pass's rewrite (edge-fp: 'TOSA-1.0+FP doesn't "
                                          "support int32 for MAXIMUM'), so the form proves nothing sound, but an "
                                          "annotation without clamp.default fails differently (killed on all four "
                                          "stages). FLOAT_ONLY"),
    "PromoteBoolOperandsPass": (("bool_mul",),
                                "the pass rewrites only a mul with a bool operand; `mul` draws float32 ones, and a "
                                "bool times a float is cast by to_edge's RemoveMixedTypeOperators first (measured, "
                                "bool_mul then relu: 3 nodes copied on edge-fp, 12 on quantized and ethos-u85, 4 on "
                                "ethos-u55)"),
    "RewriteHighRankSingletonPermutePass": (("high_rank_permute",),
                                            "the pass acts only on a permute of rank > 4 with size-1 dims that "
                                            "leave at most four others; earlier passes make a permute of an "
                                            "unsqueezed value rank 4 first, and `permute` draws rank 5 rarely "
                                            "(measured, relu -> high_rank_permute -> abs on (1, 4, 6, 6): a rank-5 "
                                            "permute reaches the pass on edge-fp; on (1, 1, 2, 2) rank 4 only)"),
    "MoveDataMovementOpsToSmallerDtypePass": (("rescaled_permute",),
                                              "retrace-only annotation, but the pass acts only on a permute (or "
                                              "dim-order copy) next to a per-tensor RESCALE with a narrower side: "
                                              "on INT targets an add/sub of a constant then permute of a non-size-1 "
                                              "dim (measured, relu -> rescaled_permute -> abs: 8 nodes copied on "
                                              "quantized, ethos-u55, ethos-u85; edge-fp has no RESCALE, 0). A "
                                              "FORM_LINKS add/sub/mul -> permute/transpose copied in 1 of 10: x op x, "
                                              "scalar operands and size-1 permutes miss"),
}

# Passes that act only where a node of one op directly feeds a node of another: (producer ops,
# consumer ops, why). The gate draws that link on purpose (generators.random.graphs_linked): in
# plain draws of the same ops the consumer rarely takes the producer's value (0 of 150 measured).
FORM_LINKS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "FuseQuantizedActivationPass": (("conv2d", "linear"), ("relu",),
                                    "retrace-only annotation, but the pass retraces only when it fuses a relu "
                                    "(or hardtanh from 0) that directly follows a single-use conv2d/linear and is "
                                    "quantized: INT targets only (measured on ethos-u55: conv2d -> relu and "
                                    "linear -> relu each copy 5 nodes; without that link it never retraces)"),
}

# Vocabulary ops whose expected core-ATen form names a pass's targeted op, but that never present
# it in a lowering: left out of the pass's route, so that focused graphs do not spend draws on
# them and the coverage verdict does not count them as draws.
NOT_PRESENTING: dict[str, tuple[tuple[str, ...], str]] = {
    "DecomposeAddmmPass": (("linear",),
                           "the ARM partitioner keeps aten.linear whole (core ATen would make it addmm): measured "
                           "on tosa-fp, relu -> linear keeps aten.linear.default in every per-pass snapshot and never "
                           "presents addmm; on INT targets the pass is quantizer-first"),
}

# Passes fastpass runs that the harness's stock observation never sees (called directly, not
# through a pass manager): no per-pass input graph exists to tell whether their ops were
# presented.  They run first in to_edge, on the exported graph itself, so a graph holding their
# route presents their ops to them: the coverage verdict counts such a graph, run by fastpass,
# as exercised.
# Which passes: read off exir's _generate_edge_program, which to_edge_transform_and_lower calls
# (`called_by_to_edge`; tests/test_generators_random.py checks this table against it).
_CALLED_BY_TO_EDGE = ("exir's to_edge calls it directly (`for p in passes: p(gm)` in _generate_edge_program, "
                      "exir/program/_program.py), on the exported graph, outside any pass manager the stock "
                      "observation records")
RUN_OUTSIDE_MANAGERS: dict[str, str] = {
    "MemoryFormatOpsPass": _CALLED_BY_TO_EDGE + " (MemoryFormatOpsPass()(gm), after the op replacement)",
    "RemoveMixedTypeOperators": _CALLED_BY_TO_EDGE + " (the last of its pre-op-replace passes; measured, relu -> "
                                "int_add -> relu on tosa-fp: no stock step, fastpass ran it and copied 2 nodes)",
    "ReplaceBrokenOpsWithFunctionalOpsPass": _CALLED_BY_TO_EDGE + " (one of base_pre_op_replace_passes)",
    "ScalarToTensorPass": _CALLED_BY_TO_EDGE + " (one of base_pre_op_replace_passes)",
    "SymToTensorPass": _CALLED_BY_TO_EDGE + " (one of base_pre_op_replace_passes)",
    "NormalizeTransposePass": _CALLED_BY_TO_EDGE + " (one of base_pre_op_replace_passes)",
}


@functools.lru_cache(maxsize=1)
def called_by_to_edge() -> frozenset[type]:
    """The pass classes exir's _generate_edge_program (what to_edge_transform_and_lower runs) calls
    itself, one after another on the graph module: its pre-op-replace passes, then those it names
    (MemoryFormatOpsPass...).  Read off upstream, as `quantizer_first`: the annotated ones are what
    ``RUN_OUTSIDE_MANAGERS`` must list.  Classes, not names: exir's RemoveNoopPass is one of them,
    the ARM backend's (annotated, run by ArmPassManager) is not."""
    import inspect

    from executorch.exir import EdgeCompileConfig
    from executorch.exir.program import _program

    pre_op_replace, _ = _program._get_aten_to_edge_passes(EdgeCompileConfig())
    # the pass manager that built the list wraps each pass (functools.wraps: __wrapped__ is the pass)
    found = {type(getattr(p, "__wrapped__", p)) for p in pre_op_replace}
    for name in re.findall(r"\b([A-Z]\w+Pass)\(\)", inspect.getsource(_program._generate_edge_program)):
        found.add(getattr(_program, name))
    return frozenset(found)


# to_edge replaces view ops by their *_copy form and dtype/memory-format copies by dim-order ops.
VIEW_OPS = frozenset({
    "alias", "as_strided", "detach", "diagonal", "expand", "narrow", "permute", "select", "slice", "split",
    "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze", "view",
})
_DIM_ORDER = {
    "aten._to_copy.default": "dim_order_ops._to_dim_order_copy.default",
    "aten.clone.default": "dim_order_ops._clone_dim_order.default",
}


def edge_forms(name: str) -> set[str]:
    """`name` plus the names to_edge gives it (``aten.expand.default`` -> ``aten.expand_copy.default``)."""
    out = {name}
    parts = name.split(".")
    if len(parts) == 3 and parts[0] == "aten" and parts[1] in VIEW_OPS:
        out.add(f"aten.{parts[1]}_copy.{parts[2]}")
    if name in _DIM_ORDER:
        out.add(_DIM_ORDER[name])
    return out


def presented_ops(entry) -> set[str]:
    """Every op name a vocabulary entry (aten, core_aten) can present to a pass."""
    out: set[str] = set()
    for name in set(entry.aten) | set(entry.core_aten):
        out |= edge_forms(name)
    return out


@functools.lru_cache(maxsize=None)
def reaches_lowering(name: str) -> bool:
    """Can a lowering pass receive op `name` (``aten.permute.default``)?  Not an ATen view op: the
    first passes of to_edge (torch's ReplaceViewOpsWithViewCopyOpsPass, in _generate_edge_program)
    give every one its ``*_copy`` form, or refuse the graph, before any pass the campaign judges
    runs; upstream's own test (`is_view_op` on the schema) decides, so that the rule follows torch."""
    namespace, op, overload = (name.split(".") + ["", ""])[:3]
    if namespace != "aten":
        return True
    import torch
    from torch._export.passes.replace_view_ops_with_view_copy_ops_pass import (
        _NON_FUNCTIONAL_OPS_TO_FUNCTIONAL_OPS, is_view_op,
    )

    found = getattr(getattr(torch.ops.aten, op, None), overload or "default", None)
    if not isinstance(found, torch._ops.OpOverload):
        return True
    return not (is_view_op(found._schema) or found in _NON_FUNCTIONAL_OPS_TO_FUNCTIONAL_OPS)


def received(targeted: Iterable[str]) -> set[str]:
    """The targeted ops a lowering can hand the pass (`reaches_lowering`)."""
    return {op for op in targeted if reaches_lowering(op)}


def vocabulary_routes(targeted: Iterable[str], vocabulary: dict) -> list[str]:
    """Vocabulary ops whose presented ops meet `targeted` (op names like ``aten.add.Tensor``)."""
    names = set(targeted)
    return [op for op, entry in vocabulary.items() if presented_ops(entry) & names]


def unrouted(targeted_by_pass: dict[str, Iterable[str]], vocabulary: dict) -> list[str]:
    """Passes (class name -> targeted op names) with targeted ops that no vocabulary op presents in
    a form a lowering hands them (`received`), no earlier pass produces from one, and
    ``UNREACHABLE`` does not explain: generator gaps."""
    return sorted(name for name, targeted in targeted_by_pass.items()
                  if set(targeted) and name not in UNREACHABLE and name not in PRODUCED_IN_PIPELINE
                  and not vocabulary_routes(received(targeted), vocabulary))


def reachable_on(name: str, target: str) -> bool:
    """Does pass `name` act on `target` at all?  False for the passes ``UNREACHABLE`` lists and,
    off their targets, for those ``TARGET_ONLY`` names."""
    if name in UNREACHABLE:
        return False
    only = TARGET_ONLY.get(name)
    return only is None or target in only[0]


def presentable_on(name: str, target: str, targeted: Iterable[str]) -> bool:
    """Is a graph on `target` expected to present pass `name` its targeted ops?  As
    ``reachable_on``, and not on INT targets for a pass with targeted ops that the quantizer's
    pipeline runs first (``quantizer_first``): there its ops are normally gone (a pass whose op
    the lowering re-creates may still be presented, and then counts as exercised)."""
    if not reachable_on(name, target):
        return False
    return not (set(targeted) and target in INT_TARGETS and name in quantizer_first())


def route(name: str, targeted: Iterable[str], vocabulary: dict) -> tuple[str, ...] | None:
    """The vocabulary ops of which a graph must hold one for pass `name` to receive its ops: the
    ``FORM_ROUTES`` ops when the pass acts on one form only, else the ops that present a targeted
    op in a form a lowering hands it (`received`: not an ATen view op) and those from which an
    earlier pass produces one.  ``None`` for a pass without targeted ops: every graph a pipeline
    gives it presents it.  Empty when nothing reaches it."""
    if name in FORM_ROUTES:
        return tuple(op for op in FORM_ROUTES[name][0] if op in vocabulary)
    targeted = set(targeted)
    if not targeted:
        return None
    ops = vocabulary_routes(received(targeted), vocabulary) + list(PRODUCED_IN_PIPELINE.get(name, ((), ""))[0])
    never = set(NOT_PRESENTING.get(name, ((), ""))[0])
    return tuple(op for op in dict.fromkeys(ops) if op in vocabulary and op not in never)


def routes_on(target: str, targeted_by_pass: dict[str, Iterable[str]], vocabulary: dict) -> dict[str, tuple[str, ...]]:
    """Pass class name -> its ``route`` for every pass reachable on `target` that needs one (passes
    without targeted ops are presented by every graph and need no route)."""
    out = {}
    for name, targeted in targeted_by_pass.items():
        ops = route(name, targeted, vocabulary) if presentable_on(name, target, targeted) else None
        if ops:
            out[name] = ops
    return out
