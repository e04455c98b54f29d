"""Rule-based annotations (``OpFamily``): the four exir passes of ``to_edge`` that target a kind
of op or of call, not a list of ops.

Each rule is checked against the pass it describes: the pass itself, run stock on graphs where
it acts and where it does not, must change the graph exactly when the rule finds a target.
Then end to end: a TOSA FP lowering with a Python scalar in a Tensor slot (the one call
ScalarToTensorPass rewrites) must be identical with fastpass, which copies the other calls.
"""

from __future__ import annotations

import copy

import pytest
import torch

import fastpass
from fastpass import _skip
from fastpass.annotations import OpFamily, lookup


def _aten_graph(fn, *inputs, dynamic_shapes=None) -> torch.fx.GraphModule:
    class Wrapped(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    ep = torch.export.export(Wrapped(), inputs, dynamic_shapes=dynamic_shapes)
    return ep.run_decompositions({}).graph_module


def _family(pass_cls) -> OpFamily:
    ops = lookup(pass_cls).targeted_ops
    assert isinstance(ops, OpFamily)
    return ops


def _graph_text(gm) -> list:
    return [(n.op, str(n.target), str(n.args)) for n in gm.graph.nodes]


@pytest.fixture
def view_library():
    lib = torch.library.Library("fastpass_family_test", "DEF")  # noqa: TOR901 - a throwaway test op
    lib.define("my_view(Tensor(a) self) -> Tensor(a)")
    lib.impl("my_view", lambda x: x.view(x.shape), "CompositeExplicitAutograd")
    yield torch.ops.fastpass_family_test.my_view.default
    lib._destroy()


def test_view_family_asks_its_rule_for_a_view_op_registered_after_it_was_enumerated(view_library):
    from executorch.exir.passes.replace_broken_ops_with_function_ops_pass import ReplaceBrokenOpsWithFunctionalOpsPass

    family = _family(ReplaceBrokenOpsWithFunctionalOpsPass)
    assert view_library.is_view and view_library not in family.members()
    assert view_library in family  # a listed set would call it cold and copy it
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(view_library, (x,)))
    assert _skip.graph_has_targets(torch.fx.GraphModule(torch.nn.Module(), graph), family)


def test_view_family_members_are_the_aten_views_and_only_those():
    from executorch.exir.passes.replace_broken_ops_with_function_ops_pass import ReplaceBrokenOpsWithFunctionalOpsPass

    views = set()
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::"):
            op = getattr(getattr(torch.ops.aten, schema.name[6:], None), schema.overload_name or "default", None)
            if isinstance(op, torch._ops.OpOverload) and op.is_view:
                views.add(op)
    family = _family(ReplaceBrokenOpsWithFunctionalOpsPass)
    assert set(family.members()) == views and torch.ops.aten.permute.default in views
    assert torch.ops.aten.view_copy.default not in family and torch.ops.aten.add.Tensor not in family
    import operator

    assert operator.getitem not in family and torch.ops.aten.add in family  # a packet fails on is_view in stock


@pytest.mark.parametrize("fn, acts", [
    (lambda x: x.permute(1, 0) + 1, True),
    (lambda x: x + 1, False),
], ids=["permute", "add"])
def test_view_family_finds_what_the_pass_rewrites(fn, acts):
    from executorch.exir.passes.replace_broken_ops_with_function_ops_pass import ReplaceBrokenOpsWithFunctionalOpsPass

    gm = _aten_graph(fn, torch.randn(2, 3))
    before = _graph_text(gm)
    rewritten = ReplaceBrokenOpsWithFunctionalOpsPass()(copy.deepcopy(gm)).graph_module
    assert (_graph_text(rewritten) != before) is acts
    assert _skip.graph_has_targets(gm, _family(ReplaceBrokenOpsWithFunctionalOpsPass)) is acts


@pytest.mark.parametrize("fn, acts", [
    (lambda x: x * 0.5, True),
    (lambda x: torch.ops.aten.add.Tensor(x, 2), True),
    (lambda x: x * x, False),
    (lambda x: torch.clamp(x, min=0.0), False),  # a scalar in a Scalar slot: not coerced
], ids=["mul-float", "add-int", "mul-tensor", "clamp-scalar"])
def test_scalar_rule_finds_what_scalar_to_tensor_coerces(fn, acts):
    from executorch.exir.passes.scalar_to_tensor_pass import ScalarToTensorPass

    gm = _aten_graph(fn, torch.randn(2, 3))
    result = ScalarToTensorPass()(copy.deepcopy(gm))
    assert result.modified is acts
    assert _skip.graph_has_targets(gm, _family(ScalarToTensorPass)) is acts


@pytest.mark.parametrize("dynamic, acts", [(True, True), (False, False)], ids=["symbolic", "static"])
def test_sym_rule_finds_what_sym_to_tensor_converts(dynamic, acts):
    from executorch.exir.passes.sym_to_tensor_pass import SymToTensorPass

    def fn(x):
        return torch.ops.aten.mul.Tensor(x, x.shape[0])

    shapes = (({0: torch.export.Dim("n", min=2, max=8)},),) if dynamic else None  # forward(*xs)
    gm = _aten_graph(fn, torch.randn(3, 2), dynamic_shapes=shapes)
    before = _graph_text(gm)
    after = _graph_text(SymToTensorPass()(copy.deepcopy(gm)).graph_module)
    assert any("scalar_tensor" in target for _, target, _ in after) is acts and (after != before) is acts
    assert _skip.graph_has_targets(gm, _family(SymToTensorPass)) is acts


class _ScaledConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)) * 0.5  # mul.Tensor(_, 0.5): ScalarToTensorPass's one target


@pytest.mark.slow
def test_fp_lowering_with_a_scalar_in_a_tensor_slot_is_identical_and_copies_the_rest():
    from executorch.exir import to_edge_transform_and_lower

    from tests.test_fastpass_lowering import _fingerprint
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    torch.manual_seed(0)
    target = get_target("tosa-fp")
    program = export_program(_ScaledConv().eval(), (torch.randn(1, 3, 8, 8),), target)

    def lower():
        return _fingerprint(to_edge_transform_and_lower(
            copy.deepcopy(program), partitioner=[target.make_partitioner(target.make_spec())]))

    stock = lower()
    fastpass.reset_stats()
    with fastpass.enabled(trust="all"):
        fast = lower()
    assert fast == stock
    runs = {p["name"]: p for p in fastpass.stats()["per_pass"] if p["depth"] == 0}
    scalar = runs["ScalarToTensorPass"]
    assert scalar["ran"] and scalar["dispatched"] >= 1 and scalar["copied"] > 0
    assert runs["ReplaceBrokenOpsWithFunctionalOpsPass"]["skip_reason"] == "no-targeted-ops"
    # after ScalarToTensorPass the graph holds a get_attr constant, so it is no retrace fixed
    # point: SymToTensorPass runs, and has no target to dispatch
    sym = runs["SymToTensorPass"]
    assert sym["ran"] and sym["copied"] > 0 and sym["dispatched"] < sym["copied"], sym


def test_exir_retrace_after_torchs_view_copy_pass_copies_its_nodes():
    """torch's ReplaceViewOpsWithViewCopyOpsPass (its own export pass base) runs right before the
    exir passes of to_edge: the nodes it dispatches must carry creation signatures too, or the
    next exir retrace dispatches every one of them again."""
    from executorch.exir.passes.remove_mixed_type_operators import RemoveMixedTypeOperators
    from torch._export.passes import ReplaceViewOpsWithViewCopyOpsPass

    gm = _aten_graph(lambda x: torch.relu(x.permute(1, 0)).abs().neg(), torch.randn(2, 3))

    def run():
        viewless = ReplaceViewOpsWithViewCopyOpsPass()(copy.deepcopy(gm)).graph_module
        return RemoveMixedTypeOperators()(viewless).graph_module

    stock = _graph_text(run())
    fastpass.reset_stats()
    with fastpass.enabled(["copy"], trust="all"):
        fast = _graph_text(run())
    assert fast == stock and any("permute_copy" in target for _, target, _ in stock)
    mixed = [p for p in fastpass.stats()["per_pass"] if p["name"] == "RemoveMixedTypeOperators"]
    assert mixed and mixed[0]["dispatched"] == 0 and mixed[0]["copied"] == 4, mixed
