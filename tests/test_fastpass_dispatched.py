"""emit (fastpass/_dispatched.py): a node a pass dispatches is created without ``create_proxy``, exactly as stock creates it.

Each rule of ``fastpass/_dispatched.py`` has a check here that fails when the rule is broken; the
faults are kept in tests/faults.py (``FASTPASS_FAULTS``: ``emit_*``) and planted by
tests/test_fastpass_multioutput.py's ``test_each_rule_test_kills_its_fault``. Every check compares
a stock retrace with one under ``emit`` alone (no copy: every node is dispatched) on everything a
retrace decides (``_describe``: names, targets, arguments, meta keys in order, vals), and requires
that emit created the nodes it should (the rule must not hold by never acting).
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from executorch.exir.pass_base import ExportPass, NodeMetadata

import fastpass
from fastpass import _dispatched
from tests.test_fastpass_rules import _describe, _export, _ReluToDouble, _retrace

A = torch.ops.aten

pytestmark = pytest.mark.usefixtures("fastpass_disabled")


class _Model(torch.nn.Module):
    """add, a list argument (permute), a keyword argument (_to_copy's dtype), a view (reshape)."""

    def forward(self, x, y):
        z = torch.relu(torch.add(x, y)).permute(1, 0)
        return A._to_copy.default(z, dtype=torch.float64).reshape(6).neg()


def _graph():
    return _export(_Model(), torch.randn(2, 3), torch.randn(2, 3))


@contextlib.contextmanager
def _counting_emitted():
    """The number of nodes emit created, in a list of one (read after the block)."""
    count = [0]
    real = _dispatched._fx_emitting

    def counted(*args):
        res = real(*args)
        count[0] += res is not None
        return res

    _dispatched._fx_emitting = counted
    try:
        yield count
    finally:
        _dispatched._fx_emitting = real


def _aten_graph():
    """The model in ATen IR (``run_decompositions``): its reshape a ``view``."""
    return torch.export.export(_Model(), (torch.randn(2, 3), torch.randn(2, 3))).run_decompositions({}).graph_module


def _stock_and_emitted(run, graph=_graph):
    """``run(<the graph after a first retrace>)`` stock and under emit alone: the two graphs and
    how many nodes emit created."""
    stock = run(_retrace(graph()))
    retraced = _retrace(graph())
    with fastpass.enabled(["emit"], trust="all"), _counting_emitted() as count:
        fast = run(retraced)
    return stock, fast, count[0]


def check_dispatched_nodes_are_created_as_stock_creates_them():
    """The plain case: every node of a retrace dispatched, created by emit, identical."""
    stock, fast, emitted = _stock_and_emitted(lambda gm: ExportPass()(gm).graph_module)
    assert _describe(fast) == _describe(stock)
    assert emitted == sum(n.op == "call_function" for n in stock.graph.nodes) > 0


def test_dispatched_nodes_are_created_as_stock_creates_them():
    check_dispatched_nodes_are_created_as_stock_creates_them()


def check_a_dispatched_node_gets_the_value_its_dispatch_gave():
    """The update that copies the interpreted node's meta (its old ``val`` among it) comes before
    ``set_metadata``: a node whose input changed dtype upstream (relu cast to float64 here) gets
    the value its dispatch gave, not its old one."""

    stock, fast, emitted = _stock_and_emitted(lambda gm: _ReluToDouble()(gm).graph_module)
    assert _describe(fast) == _describe(stock)
    assert [n.meta["val"].dtype for n in stock.graph.nodes if n.name == "neg"] == [torch.float64]
    assert emitted > 0


def test_a_dispatched_node_gets_the_value_its_dispatch_gave():
    check_a_dispatched_node_gets_the_value_its_dispatch_gave()


def check_meta_a_pass_changed_goes_the_stock_way():
    """Rule ``_is_the_context``: a pass that hands ``_fx`` meta other than the interpreted node's
    (here: without ``nn_module_stack``) gets from ``create_node`` what the node's meta context
    holds and the update does not overwrite (the context's ``nn_module_stack``, first)."""

    class DropsModuleStack(ExportPass):
        def call_operator(self, op, args, kwargs, meta):
            if op == A.neg.default:
                meta = NodeMetadata({k: v for k, v in meta.data.items() if k != "nn_module_stack"})
            return super().call_operator(op, args, kwargs, meta)

    stock, fast, emitted = _stock_and_emitted(lambda gm: DropsModuleStack()(gm).graph_module)
    assert _describe(fast) == _describe(stock)
    neg = next(n for n in stock.graph.nodes if n.name == "neg")
    assert "nn_module_stack" in neg.meta and emitted > 0


def test_meta_a_pass_changed_goes_the_stock_way():
    check_meta_a_pass_changed_goes_the_stock_way()


def check_a_tensor_argument_goes_the_stock_way():
    """Rule ``_walk``: only proxies, plain leaves and their tuples, lists and str-keyed dicts are
    converted; a real tensor a pass passes becomes a ``get_attr`` node the stock way."""

    class ScalesByATensor(ExportPass):
        def call_operator(self, op, args, kwargs, meta):
            if op == A.neg.default:
                return super().call_operator(A.mul.Tensor, (args[0], torch.tensor(2.0)), {}, meta)
            return super().call_operator(op, args, kwargs, meta)

    stock, fast, emitted = _stock_and_emitted(lambda gm: ScalesByATensor()(gm).graph_module)
    assert _describe(fast) == _describe(stock)
    assert any(n.op == "get_attr" for n in stock.graph.nodes) and emitted > 0


def test_a_tensor_argument_goes_the_stock_way():
    check_a_tensor_argument_goes_the_stock_way()


def check_a_pass_s_own_tracer_goes_the_stock_way():
    """Rule ``_stock_tracer``: a pass whose tracer converts arguments its own way (here it counts
    each node argument it is handed) is traced through that tracer."""
    seen: list = []

    class CountingTracer(ExportPass.ExportTracer):
        def create_arg(self, a):
            if isinstance(a, torch.fx.Proxy):
                seen.append(a.node.name)
            return super().create_arg(a)

    class OwnTracer(ExportPass):
        ExportTracer = CountingTracer

    def run(gm):
        seen.clear()
        out = OwnTracer()(gm).graph_module
        return out, list(seen)

    (stock, stock_seen), (fast, fast_seen), _ = _stock_and_emitted(run)
    assert _describe(fast) == _describe(stock)
    assert fast_seen == stock_seen and stock_seen


def test_a_pass_s_own_tracer_goes_the_stock_way():
    check_a_pass_s_own_tracer_goes_the_stock_way()


def test_torch_s_export_pass_base_is_emitted_as_stock_creates_it():
    """to_edge's ReplaceViewOpsWithViewCopyOpsPass runs on torch's own export pass base, whose
    ``_fx`` also records unbacked-symbol bindings: its nodes, views turned into view copies,
    are emitted and identical."""
    from torch._export.passes.replace_view_ops_with_view_copy_ops_pass import ReplaceViewOpsWithViewCopyOpsPass

    stock, fast, emitted = _stock_and_emitted(lambda gm: ReplaceViewOpsWithViewCopyOpsPass()(gm).graph_module,
                                              _aten_graph)
    assert _describe(fast) == _describe(stock)
    assert any("view_copy" in str(n.target) for n in stock.graph.nodes)
    assert emitted == sum(n.op == "call_function" for n in stock.graph.nodes)


def test_emit_off_creates_no_node_and_leaves_fx_stock():
    """Without the feature nothing is emitted (the copy features alone keep the stock creation)."""
    stock = ExportPass()(_retrace(_graph())).graph_module
    with fastpass.enabled(["copy", "skip"], trust="all"), _counting_emitted() as count:
        fast = ExportPass()(_retrace(_graph())).graph_module
    assert count[0] == 0
    assert _describe(fast) == _describe(stock)


def test_a_lowering_emits_its_dispatched_nodes_and_the_harness_sees_an_emit_fault():
    """A real lowering (a random add -> relu graph, tosa-int) under emit alone: identical to stock
    by every check of the harness, with nodes emitted; with a fault planted in emit (the old
    `val` put back: tests/faults.py emit_sets_metadata_before_the_update) the harness reports the
    `val` divergence at a pass of the lowering. One stock lowering, two fastpass ones."""
    from hypothesis import find

    from generators.random import graphs
    from tests import faults
    from verify.compare.checks import compare
    from verify.lowering.lower import lower
    from verify.lowering.mode import Mode
    from verify.lowering.quantize import RANDOM_GRAPH_CALIBRATION, export_program
    from verify.lowering.targets import get_target

    spec = find(graphs(2, 2, ops=["add", "relu"]), lambda s: s.op_names() == ["add", "relu"])
    target = get_target("tosa-int")
    program = export_program(*spec.build(), target, RANDOM_GRAPH_CALIBRATION)
    stock = lower(program, target, Mode.STOCK)
    with _counting_emitted() as count:
        clean = compare(stock, lower(program, target, Mode.FASTPASS, ("emit",)))
    assert all(r.passed for r in clean.values()), {k: r.details[:2] for k, r in clean.items() if not r.passed}
    assert count[0] > 0
    with faults.emit_sets_metadata_before_the_update():
        planted = compare(stock, lower(program, target, Mode.FASTPASS, ("emit",)))
    assert not planted["val"].passed, {k: r.passed for k, r in planted.items()}
    assert planted["val"].first_divergence is not None
