"""Three of fastpass's own rules, each with a case that fails when the rule is broken.

Each was broken once by a realistic single fault that no other test, no built-in model and no
random graph noticed; the faults are kept in tests/faults.py (`FASTPASS_FAULTS`) and
`test_each_rule_test_kills_its_fault` plants each one and requires its check to fail, so the
suite itself shows that every check here kills its fault:

- copy: a copied node whose `val` holds several tensors (split_with_sizes, var_mean, topk,
  max_pool2d_with_indices, native_layer_norm) must get `set_metadata`'s per-output
  `tensor_meta`, not the single-FakeTensor shortcut's `None`;
- ciatable: "nothing to materialize" must compare the registration *names*, not their number:
  one CIA registration swapped for another keeps the count;
- verifyonce: the graph-state key must hold every node's kwargs: a rewired keyword argument is
  a new state.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from executorch.exir.pass_base import ExportPass

import fastpass
from tests import faults
from tests.test_fastpass_dispatched import (check_a_dispatched_node_gets_the_value_its_dispatch_gave,
                                            check_a_pass_s_own_tracer_goes_the_stock_way,
                                            check_a_tensor_argument_goes_the_stock_way,
                                            check_meta_a_pass_changed_goes_the_stock_way)
from tests.test_fastpass_retrace import (check_a_decomposed_op_is_traced, check_a_dtype_conversion_is_written,
                                         check_a_one_op_decomposition_is_written, check_a_renamed_node_is_written_with_the_trace_s_name,
                                         check_arguments_given_by_keyword_are_written_as_the_trace_records,
                                         check_a_retargeted_nodes_dispatch_annotations_are_written,
                                         check_a_training_ir_mutation_is_traced,
                                         check_a_training_ir_program_is_written,
                                         check_the_trace_s_argument_convention)
from tests.test_fastpass_rules import _describe, _Registered, _stock_and_fast

A = torch.ops.aten

pytestmark = pytest.mark.usefixtures("fastpass_disabled")


# ----------------------------------------------------------------- copy: multi-output vals


class _MultiOutput(torch.nn.Module):
    """One node of each multi-output op a lowering meets, all cold for the pass under test."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(8))
        self.bias = torch.nn.Parameter(torch.rand(8))

    def forward(self, x):
        y = torch.relu(x)
        normed, mean, rstd = torch.ops.aten.native_layer_norm(y, [8], self.weight, self.bias, 1e-5)
        var, avg = torch.var_mean(normed, dim=-1, keepdim=True)
        left, right = torch.split(normed, [3, 5], dim=-1)
        top, index = torch.topk(normed, 2)
        pooled, where = torch.nn.functional.max_pool2d(normed.reshape(1, 2, 2, 8), 2, return_indices=True)
        return var + avg + mean + rstd, left.sum() + right.sum(), top, index, pooled, where


MULTI_OUTPUT_OPS = {"native_layer_norm", "var_mean", "split_with_sizes", "topk", "max_pool2d_with_indices"}


def _multi_output_graph():
    """Core ATen (run_decompositions: `split` becomes `split_with_sizes`, `var_mean.dim` becomes
    `var_mean.correction`, as a lowering sees them)."""
    ep = torch.export.export(_MultiOutput(), (torch.randn(4, 8),)).run_decompositions({})
    return ep.graph_module


def _packet(target) -> str | None:
    packet = getattr(target, "overloadpacket", None)
    return packet.__name__ if packet is not None else None


class _RewritesAdd(ExportPass):
    """A copy-sound pass whose targeted op (add) the graph does not hold: every node is cold."""


def check_multi_output_copy() -> None:
    """A copy-sound retrace copies every multi-output node (the same output FakeTensors, no
    dispatch) and writes each as stock does: `set_metadata` gives a tuple/list val one
    `tensor_meta` entry per output ((None, None) for fake outputs), where a single FakeTensor
    gets None. The graphs, vals and every meta key (tensor_meta included) must equal stock's."""
    seen: dict[str, tuple] = {}

    def run(gm):
        signed = ExportPass()(gm).graph_module  # a first retrace signs every node
        before = {n.name: n.meta.get("val") for n in signed.graph.nodes}
        out = _RewritesAdd()(signed).graph_module
        seen.clear()
        for n in out.graph.nodes:
            if n.op == "call_function" and _packet(n.target) in MULTI_OUTPUT_OPS:
                seen[n.name] = (_packet(n.target), before[n.name], n.meta["val"])
        return out

    fastpass.reset_stats()
    with _Registered(_RewritesAdd, (A.add.Tensor,), skip_sound=False, copy_sound=True):
        stock, fast, stats = _stock_and_fast(_multi_output_graph, run)
    assert {target for target, _, _ in seen.values()} == MULTI_OUTPUT_OPS, seen
    for name, (target, old, new) in seen.items():
        assert isinstance(new, (tuple, list)) and len(new) > 1, (name, new)
        # copied: the very same output tensors (a dispatch would have made new ones)
        assert all(a is b for a, b in zip(old, new)), f"{name} ({target}) was not copied"
    assert stats["nodes_copied"] >= len(MULTI_OUTPUT_OPS), stats
    for node in fast.graph.nodes:
        if node.name in seen:
            val, meta = node.meta["val"], node.meta["tensor_meta"]
            assert type(meta) is type(val) and len(meta) == len(val), (node.name, meta)
    assert _describe(fast) == _describe(stock)


def test_copy_writes_per_output_tensor_meta_for_multi_output_nodes():
    check_multi_output_copy()


# ------------------------------------------------- ciatable: same count, other registrations

_NAMESPACES = itertools.count()


def check_ciatable_sees_a_swapped_registration() -> None:
    """Two ops, `first` with a CIA kernel, `second` without; the table is built (materialized).
    Then `first`'s CIA kernel goes and `second` gets one: the dispatcher lists as many CIA
    names as before, but another one. A materialization now is not a no-op (it creates
    `second` in torch.ops), so fastpass must run it, and the walk must find `second` as stock's
    does. Judged by the number of names, fastpass skips it and the table lacks `second`."""
    import torch._export.utils as export_utils
    from torch.library import Library

    fastpass.enable(["ciatable"], trust="all")  # enabling imports executorch (it registers ops): before the baseline
    fastpass.disable()
    namespace = f"fastpass_ciaswap{next(_NAMESPACES)}"
    definitions, first_kernel, second_kernel = (Library(namespace, "FRAGMENT") for _ in range(3))
    try:
        definitions.define("first(Tensor x) -> Tensor")
        definitions.define("second(Tensor x) -> Tensor")
        first_kernel.impl("first", lambda x: x * 2, "CompositeImplicitAutograd")
        fastpass.reset_stats()
        with fastpass.enabled(["ciatable"], trust="all"):
            before = {op.name() for op in export_utils._collect_all_valid_cia_ops()}
            assert f"{namespace}::first" in before
            first_kernel._destroy()  # first's CIA kernel goes, its op stays ...
            second_kernel.impl("second", lambda x: x + 1, "CompositeImplicitAutograd")  # ... and second's comes
            after = {op.name() for op in export_utils._collect_all_valid_cia_ops()}
            stats = fastpass.stats()
        assert f"{namespace}::second" in after, "a swapped CIA registration was taken for no change"
        assert f"{namespace}::first" not in after
        assert stats["cia_materialized"] >= 2, stats  # the swap was materialized
    finally:
        for library in (second_kernel, first_kernel, definitions):
            library._destroy()


def test_ciatable_rematerializes_when_one_registration_is_swapped_for_another():
    check_ciatable_sees_a_swapped_registration()


# ------------------------------------------------------------------- verifyonce: kwargs


def _check_dtypes(gm) -> None:
    import executorch.exir.verification.verifier as verifier

    verifier._check_tensor_args_matching_op_allowed_dtype(gm)


def check_verifyonce_keys_kwargs() -> None:
    """An edge graph whose mul takes `other` as a keyword argument passes the dtype check; then
    that keyword argument is rewired to another node. A new graph state: checked again (a key
    without the kwargs would call it the state already checked and skip it)."""
    from executorch.exir import to_edge

    from tests.test_fastpass_verifyonce import _AddMul

    inputs = (torch.randn(2, 3), torch.randn(2, 3))
    gm = to_edge(torch.export.export(_AddMul(), inputs)).exported_program().graph_module
    mul = next(n for n in gm.graph.nodes if n.op == "call_function" and "mul" in str(n.target))
    add, y = mul.args
    mul.args, mul.kwargs = (add,), {"other": y}
    fastpass.reset_stats()
    with fastpass.enabled(["verifyonce"], trust="all"):
        _check_dtypes(gm)
        mul.kwargs = {"other": add}
        _check_dtypes(gm)
        stats = fastpass.stats()
    assert (stats["dtype_checks_run"], stats["dtype_checks_skipped"]) == (2, 0), stats


def test_verifyonce_checks_again_after_a_kwarg_is_rewired():
    check_verifyonce_keys_kwargs()


# ------------------------------------------------------------- each check kills its fault

_CHECKS = {"copy_multi_output_as_single": check_multi_output_copy,
           "emit_ignores_the_context": check_meta_a_pass_changed_goes_the_stock_way,
           "emit_takes_any_argument_as_a_leaf": check_a_tensor_argument_goes_the_stock_way,
           "emit_ignores_a_pass_s_own_tracer": check_a_pass_s_own_tracer_goes_the_stock_way,
           "emit_sets_metadata_before_the_update": check_a_dispatched_node_gets_the_value_its_dispatch_gave,
           "ciatable_unchanged_by_count": check_ciatable_sees_a_swapped_registration,
           "verifyonce_key_without_kwargs": check_verifyonce_keys_kwargs,
           "retrace_ignores_the_table": check_a_decomposed_op_is_traced,
           "retrace_keeps_names": check_a_renamed_node_is_written_with_the_trace_s_name,
           "retrace_skips_dispatch_annotations": check_a_retargeted_nodes_dispatch_annotations_are_written,
           "retrace_probes_around_the_lone_trace": check_a_one_op_decomposition_is_written,
           "retrace_records_view_ops_unchanged": check_a_training_ir_program_is_written,
           "retrace_describes_every_input_as_plain": check_a_training_ir_program_is_written,
           "retrace_keeps_the_tensor_meta": check_a_training_ir_program_is_written,
           "retrace_records_mutation": check_a_training_ir_mutation_is_traced,
           "retrace_keeps_the_arguments_as_written": check_arguments_given_by_keyword_are_written_as_the_trace_records,
           "retrace_takes_any_value_as_handed_back": check_the_trace_s_argument_convention,
           "retrace_gives_a_nothing_op_a_value": check_a_dtype_conversion_is_written}


@pytest.mark.parametrize("fault", sorted(faults.FASTPASS_FAULTS))
def test_each_rule_test_kills_its_fault(fault):
    """The fault planted (tests/faults.py), the rule's check fails; the fault removed, it passes
    (the very same fastpass objects are back: the check's own test above passes)."""
    assert set(_CHECKS) == set(faults.FASTPASS_FAULTS)
    with faults.FASTPASS_FAULTS[fault]():
        with pytest.raises(AssertionError):
            _CHECKS[fault]()
    _CHECKS[fault]()


# ------------------------------------------ the random graphs reach a multi-output copy


def test_random_graphs_send_a_multi_output_op_through_a_copy_and_the_harness_sees_the_fault(monkeypatch):
    """The vocabulary's max_pool2d lowers through max_pool2d_with_indices (a (values, indices)
    val), which the TOSA INT pipeline's copy-sound retraces copy (native_layer_norm from
    layer_norm too, on tosa-fp): so a random graph exercises the multi-output copy, and with the
    fault planted the harness's checks report the copied node's `tensor_meta` (`meta`). One
    stock lowering, compared with a fastpass lowering without and with the fault."""
    from hypothesis import find

    from fastpass import _copy
    from generators.random import graphs
    from verify.compare.checks import compare
    from verify.lowering.lower import lower
    from verify.lowering.mode import Mode
    from verify.lowering.quantize import RANDOM_GRAPH_CALIBRATION, export_program
    from verify.lowering.targets import get_target

    # the simplest such graph (find shrinks it: deterministic); measured: a graph of a lone
    # max_pool2d copies no multi-output node on tosa-int, one of layer_norm -> max_pool2d does
    spec = find(graphs(2, 2, ops=["layer_norm", "max_pool2d"]), lambda s: s.op_names() == ["layer_norm", "max_pool2d"])
    copied: list[str] = []
    real_emit = _copy._emit_copy

    def emit(interp, node, target, val, single, *rest):
        if isinstance(val, (tuple, list)):
            copied.append(str(getattr(target, "__name__", target)))
        return real_emit(interp, node, target, val, single, *rest)

    monkeypatch.setattr(_copy, "_emit_copy", emit)
    target = get_target("tosa-int")
    program = export_program(*spec.build(), target, RANDOM_GRAPH_CALIBRATION)
    stock = lower(program, target, Mode.STOCK)
    clean = compare(stock, lower(program, target, Mode.FASTPASS))
    assert all(r.passed for r in clean.values()), {k: r.details[:2] for k, r in clean.items() if not r.passed}
    assert any("max_pool2d_with_indices" in name for name in copied), copied
    with faults.copy_multi_output_as_single():
        planted = compare(stock, lower(program, target, Mode.FASTPASS))
    failed = sorted(k for k, r in planted.items() if not r.passed)
    assert "meta" in failed, failed
    assert any("tensor_meta" in str(detail) for detail in planted["meta"].details), planted["meta"].details[:3]
