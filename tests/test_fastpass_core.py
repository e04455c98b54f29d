"""fastpass: API, patch hygiene, version guard, and the per-feature unit checks.

No end-to-end lowering here (see test_fastpass_lowering.py); everything runs
on tiny hand-made graphs and takes a few seconds.
"""

from __future__ import annotations

import copy
import importlib.metadata

import pytest
import torch
from torch.fx.traceback import NodeSource, NodeSourceAction

import fastpass
from fastpass import _fakecache, _patches
from fastpass.annotations import lookup, register, unregister


pytestmark = pytest.mark.usefixtures("fastpass_disabled")


def _originals():
    return {(p.owner, p.attribute): vars(p.owner)[p.attribute] for p in _patches.patch_table()}


# --------------------------------------------------------------------------- API


def test_features_tuple():
    assert fastpass.FEATURES == ("skip", "copy", "emit", "fakecache", "provenance", "lazycode", "gc", "ciatable",
                                 "verifyonce", "retrace")


@pytest.mark.parametrize(
    "features", [None, ["skip"], ["copy"], ["emit"], ["fakecache"], ["provenance"], ("skip", "provenance")]
)
def test_disable_restores_every_patched_attribute(features):
    before = _originals()
    fastpass.enable(features, trust="all")
    assert fastpass.is_enabled()
    wanted = set(fastpass.FEATURES if features is None else features)
    changed = {k for k, v in _originals().items() if v is not before[k]}
    expected = {
        (p.owner, p.attribute)
        for p in _patches.patch_table()
        if not p.features or set(p.features) & wanted
    }
    assert changed == expected and changed
    fastpass.disable()
    assert not fastpass.is_enabled()
    after = _originals()
    for key, orig in before.items():
        assert after[key] is orig, key


def test_context_manager_restores_on_error():
    before = _originals()
    with pytest.raises(ZeroDivisionError):
        with fastpass.enabled(trust="all"):
            1 / 0
    assert not fastpass.is_enabled()
    assert all(_originals()[k] is v for k, v in before.items())


def test_unknown_feature_is_value_error():
    with pytest.raises(ValueError, match="unknown fastpass feature"):
        fastpass.enable(["skip", "warp"], trust="all")
    assert not fastpass.is_enabled()


def test_nesting_is_an_error():
    with fastpass.enabled(trust="all"):
        with pytest.raises(RuntimeError, match="already enabled"):
            fastpass.enable(trust="all")
        assert fastpass.is_enabled()
    assert not fastpass.is_enabled()


def test_stats_shape_is_json():
    import json

    with fastpass.enabled(trust="all"):
        pass
    st = fastpass.stats()
    json.dumps(st)
    for key in (
        "passes_run", "passes_skipped", "nodes_copied", "nodes_dispatched",
        "fakecache_hits", "fakecache_misses", "time_in_passes_s", "per_pass",
    ):
        assert key in st


# ------------------------------------------------------------------ version guard


def test_version_guard_refuses_and_override_works(monkeypatch):
    real = importlib.metadata.version

    def fake_version(dist):
        return "9.9.9" if dist == "executorch" else real(dist)

    monkeypatch.setattr(importlib.metadata, "version", fake_version)
    monkeypatch.delenv("FASTPASS_ALLOW_UNTESTED", raising=False)
    before = _originals()
    with pytest.raises(_patches.UntestedVersionError, match=r"executorch==9\.9\.9.*allow_untested_versions"):
        fastpass.enable(trust="all")
    assert not fastpass.is_enabled()
    assert all(_originals()[k] is v for k, v in before.items())

    fastpass.enable(allow_untested_versions=True, trust="all")
    assert fastpass.is_enabled()
    fastpass.disable()

    monkeypatch.setenv("FASTPASS_ALLOW_UNTESTED", "1")
    with fastpass.enabled(trust="all"):
        assert fastpass.is_enabled()


# -------------------------------------------------------------------- provenance


def _node_with_chain(depth: int) -> torch.fx.Node:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    chain = []
    for i in range(depth):
        ns = NodeSource(None, f"p{i}", NodeSourceAction.CREATE)
        ns.from_node = chain
        chain = [ns]
    x.meta["from_node"] = chain
    return x


def test_provenance_shares_chain_but_to_dict_equal():
    node = _node_with_chain(5)
    stock = NodeSource(node, "Interp", NodeSourceAction.CREATE)
    with fastpass.enabled(["provenance"], trust="all"):
        fast = NodeSource(node, "Interp", NodeSourceAction.CREATE)
    assert stock.to_dict() == fast.to_dict()
    # stock deep-copies the chain, fastpass shares its elements
    assert stock.from_node[0] is not node.meta["from_node"][0]
    assert fast.from_node[0] is node.meta["from_node"][0]
    # ...in a list of its own (appending must not leak into the node's meta)
    assert fast.from_node is not node.meta["from_node"]


def test_provenance_none_and_missing_like_stock():
    g = torch.fx.Graph()
    a = g.placeholder("a")
    b = g.placeholder("b")
    b.meta["from_node"] = None
    with fastpass.enabled(["provenance"], trust="all"):
        fa = NodeSource(a, "p")
        fb = NodeSource(b, "p")
    assert fa.from_node == [] and fb.from_node is None


# ---------------------------------------------------------------------- lazycode


class _Tiny(torch.nn.Module):
    def forward(self, x, scale):
        return torch.relu(x) * scale + 1


def _traced():
    return torch.fx.symbolic_trace(_Tiny())


def test_lazycode_defers_codegen_and_any_use_sees_stock_code():
    import inspect
    import pickle

    stock = _traced()
    x = torch.randn(3)
    with fastpass.enabled(["lazycode"], trust="all"):
        gm = torch.fx.GraphModule(stock, copy.deepcopy(stock.graph))
        assert "_code" not in gm.__dict__  # nothing generated yet
        assert fastpass.stats()["code_deferred"] >= 1
        assert inspect.signature(gm.forward) == inspect.signature(stock.forward)  # placeholder names
        assert gm.code == stock.code
        assert torch.equal(gm(x, 2.0), stock(x, 2.0))
        gm2 = torch.fx.GraphModule(stock, copy.deepcopy(stock.graph))
        assert torch.equal(pickle.loads(pickle.dumps(gm2))(x, 2.0), stock(x, 2.0))
        gm3 = torch.fx.GraphModule(stock, copy.deepcopy(stock.graph))
        assert copy.deepcopy(gm3).code == stock.code
        assert gm3._lineno_map == stock._lineno_map
    assert fastpass.stats()["code_generated"] >= 3


def test_lazycode_disable_leaves_stock_graph_modules():
    stock = _traced()
    with fastpass.enabled(["lazycode"], trust="all"):
        untouched = torch.fx.GraphModule(stock, copy.deepcopy(stock.graph))
        assert "__getattr__" in vars(type(untouched))
    # disable generated the pending code and removed the lazy class attributes
    assert untouched.__dict__["_code"] == stock.code
    assert "__getattr__" not in vars(type(untouched))
    assert "_fastpass_code_pending" not in untouched.__dict__
    assert inspect_sig(type(untouched).forward) == inspect_sig(type(stock).forward)
    with fastpass.enabled(["skip", "copy"], trust="all"):  # lazycode off: recompile is stock
        eager = torch.fx.GraphModule(stock, copy.deepcopy(stock.graph))
        assert eager.__dict__["_code"] == stock.code


def inspect_sig(fn):
    import inspect

    return inspect.signature(fn)


# ---------------------------------------------------------------------------- gc


def test_gc_freezes_the_heap_and_restores_collector_settings():
    import gc

    thresholds = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with fastpass.enabled(["gc"], trust="all"):
        assert gc.get_freeze_count() > 0  # objects alive at enable() are not re-scanned
        assert gc.get_threshold()[0] >= 10_000
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


def test_gc_leaves_a_callers_own_freeze_alone():
    import gc

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with fastpass.enabled(["gc"], trust="all"):  # (objects that die leave the permanent generation)
            assert 0 < gc.get_freeze_count() <= frozen
        assert 0 < gc.get_freeze_count() <= frozen  # not unfrozen by disable()
    finally:
        gc.unfreeze()


# --------------------------------------------------------------------- fakecache


def test_fakecache_caches_executorch_namespace_ops():
    import executorch.exir.passes.quant_fusion_pass  # noqa: F401  (registers quantized_decomposed)
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = torch.ops.quantized_decomposed.quantize_per_tensor.default

    def run():
        with FakeTensorMode() as mode:
            x = mode.from_tensor(torch.randn(2, 3))
            for _ in range(3):
                y = op(x, 0.1, 0, -128, 127, torch.int8)
        return y.shape, y.dtype

    stock = run()
    with fastpass.enabled(["fakecache"], trust="all"):
        fast = run()
        st = fastpass.stats()
    assert stock == fast
    assert st["fakecache_ext_hits"] >= 2, st
    assert st["fakecache_ext_misses"] >= 1, st
    # nothing of ours is left in the class-level cache after disable
    assert not [k for k in FakeTensorMode.cache if _fakecache._is_ours(k)]


# ----------------------------------------------------------- annotations registry


def test_registry_counts_and_lookup():
    from executorch.backends.arm._passes.convert_to_clamp_pass import ConvertToClampPass
    from executorch.backends.arm._passes.fold_qdq_with_annotated_qparams_pass import (
        FoldAndAnnotateQParamsPass,
    )
    from executorch.exir.dialects._ops import ops as exir_ops
    from fastpass.annotations import registered_names

    ann = lookup(ConvertToClampPass)
    assert ann.copy_sound and ann.skip_sound and ann.source == "registry"
    assert exir_ops.edge.aten.hardtanh.default in ann.targeted_ops
    ann = lookup(FoldAndAnnotateQParamsPass)
    assert ann.copy_sound and not ann.skip_sound and not ann.targeted_ops

    arm = [n for n in registered_names() if n.startswith("executorch.backends.arm.")]
    guarded = 0
    for name in arm:
        mod, cls = name.rsplit(".", 1)
        a = lookup(getattr(importlib.import_module(mod), cls))
        guarded += a.copy_sound and bool(a.targeted_ops)
    assert guarded >= 60


def test_upstream_target_ops_is_skip_only():
    from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass

    class _Tmp(ArmOpTargetedPass):
        _passes_required_after = set()
        target_ops = (torch.ops.aten.sigmoid.default,)

    ann = lookup(_Tmp)
    assert ann.skip_sound and not ann.copy_sound and ann.source == "upstream:target_ops"


# ------------------------------------------------- copy: the re-dispatch rule


def _aten_graph():
    class M(torch.nn.Module):
        def forward(self, x, y):
            a = torch.add(x, y)
            r = torch.relu(a)
            m = torch.mul(r, r)
            return torch.neg(m)

    ex = (torch.randn(2, 3), torch.randn(2, 3))
    return torch.export.export(M(), ex).graph_module


def _make_pass(mode):
    from executorch.exir.pass_base import ExportPass

    class AddRewrite(ExportPass):
        """Targets aten.add.Tensor; ``mode`` decides what it does with it."""

        def call_operator(self, op, args, kwargs, meta):
            if op != torch.ops.aten.add.Tensor:
                return super().call_operator(op, args, kwargs, meta)
            out = super().call_operator(op, args, kwargs, meta)
            if mode == "dtype":
                return super().call_operator(
                    torch.ops.aten._to_copy.default, (out,), {"dtype": torch.float64}, meta
                )
            if mode == "shape":
                return super().call_operator(torch.ops.aten.cat.default, ([out, out],), {}, meta)
            return out

    AddRewrite.__qualname__ = f"AddRewrite_{mode}"
    register(AddRewrite, {torch.ops.aten.add.Tensor}, skip_sound=True, copy_sound=True, why="test")
    return AddRewrite


def _describe(gm):
    out = []
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        vs = (tuple(v.shape), v.dtype, v.stride()) if isinstance(v, torch.Tensor) else None
        out.append((n.name, n.op, str(n.target), str(n.args), vs, sorted(n.meta)))
    return out


def _run(gm, passes):
    from executorch.exir.pass_base import ExportPass

    gm = ExportPass()(gm).graph_module  # a first retrace: records creation signatures
    for p in passes:
        gm = p()(gm).graph_module
    return gm


@pytest.mark.parametrize("mode", ["dtype", "shape", "noop"])
def test_copy_redispatches_downstream_of_changed_node(mode):
    cls = _make_pass(mode)
    try:
        stock = _run(_aten_graph(), [cls])
        with fastpass.enabled(["copy"], trust="all"):
            fast = _run(_aten_graph(), [cls])
            st = fastpass.stats()
        assert _describe(fast) == _describe(stock)
        rec = [r for r in st["per_pass"] if r["name"] == cls.__name__][0]
        # relu, mul, neg are downstream of add
        if mode == "noop":
            assert rec["copied"] == 3, rec
        else:
            assert rec["copied"] == 0, rec
            vals = {n.name: n.meta["val"] for n in fast.graph.nodes if n.op == "call_function"}
            if mode == "dtype":
                assert vals["neg"].dtype == torch.float64
            else:
                assert vals["neg"].shape[0] == 4
    finally:
        unregister(cls)


def test_copy_keeps_node_debug_str_as_stock_formats_it():
    """In copy-sound passes node_debug_str is formatted lazily: reading it gives stock's text."""
    from executorch.exir.pass_base import ExportPass

    class ReadsDebugStr(ExportPass):
        def call(self, graph_module):
            result = super().call(graph_module)
            self.seen = f"{self.node_debug_str}"
            return result

    register(ReadsDebugStr, {torch.ops.aten.add.Tensor}, skip_sound=False, copy_sound=True, why="test")
    try:
        stock_pass = ReadsDebugStr()
        _run(_aten_graph(), [lambda: stock_pass])
        with fastpass.enabled(["copy"], trust="all"):
            fast_pass = ReadsDebugStr()
            _run(_aten_graph(), [lambda: fast_pass])
            assert fastpass.stats()["nodes_copied"] > 0
        assert fast_pass.seen == stock_pass.seen == "return (neg,)"
    finally:
        unregister(ReadsDebugStr)


def test_copy_redispatches_when_a_scalar_argument_changes_type():
    """Found by the gate (QuantizeClampArgumentsPass): ``update_arg(1, 0)`` on clamp(int8, 0.0)
    must re-dispatch, since 0 == 0.0 yet the float min promotes the output to float32."""
    from executorch.exir.pass_base import ExportPass

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.neg(torch.clamp(x, min=0.0))

    class IntMin(ExportPass):
        def call(self, graph_module):
            for n in graph_module.graph.nodes:
                if n.target == torch.ops.aten.clamp.default:
                    n.update_arg(1, 0)
            return super().call(graph_module)

    register(IntMin, set(), skip_sound=False, copy_sound=True, why="test")
    try:
        def lowered():
            gm = torch.export.export(M(), (torch.ones(2, 3, dtype=torch.int8),)).graph_module
            return _run(gm, [IntMin])

        stock = lowered()
        with fastpass.enabled(["copy"], trust="all"):
            fast = lowered()
        assert _describe(fast) == _describe(stock)
        assert [n.meta["val"].dtype for n in fast.graph.nodes if n.op == "call_function"] == [torch.int8] * 2
    finally:
        unregister(IntMin)


def _rewire_relu(gm, to):
    """Surgery outside a retrace: relu reads ``x`` (``to="same"``: a value with the metadata of
    its old input) or a new ``sum(x, 1, keepdim)`` node (``"different"``: shape (2, 1))."""
    relu = next(n for n in gm.graph.nodes if n.target == torch.ops.aten.relu.default)
    x = next(n for n in gm.graph.nodes if n.op == "placeholder")
    if to == "same":
        relu.args = (x,)
        return
    with gm.graph.inserting_before(relu):
        s = gm.graph.call_function(torch.ops.aten.sum.dim_IntList, (x, [1], True))
    fake = x.meta["val"]
    with fake.fake_mode:
        s.meta["val"] = torch.ops.aten.sum.dim_IntList(fake, [1], True)
    relu.args = (s,)


@pytest.mark.parametrize("to", ["same", "different"])
def test_copy_after_inplace_surgery_follows_the_rewired_inputs(to):
    """A node whose args were rewired outside a retrace is copied only if its new input values
    are metadata-identical to those its val was computed from; otherwise it and everything
    downstream is re-dispatched.  Either way the graph is stock's."""
    from executorch.exir.pass_base import ExportPass

    cls = _make_pass("noop")
    try:
        gm = ExportPass()(_aten_graph()).graph_module
        _rewire_relu(gm, to)
        stock = cls()(gm).graph_module
        with fastpass.enabled(["copy"], trust="all"):
            gm = ExportPass()(_aten_graph()).graph_module
            _rewire_relu(gm, to)
            fastpass.reset_stats()
            fast = cls()(gm).graph_module
            rec = fastpass.stats()["per_pass"][0]
        assert _describe(fast) == _describe(stock)
        if to == "same":
            assert rec["copied"] == 3, rec  # relu (rewired), mul, neg
            assert rec["dispatched"] == 1, rec  # add: targeted
        else:
            assert rec["copied"] == 0, rec
            assert rec["dispatched"] == 5, rec  # add, the new sum, relu and everything after it
            relu = next(n for n in fast.graph.nodes if n.target == torch.ops.aten.relu.default)
            assert tuple(relu.meta["val"].shape) == (2, 1)
    finally:
        unregister(cls)


# ----------------------------------------------------------- skip: fixed points


def _sigmoid_pass():
    from executorch.exir.pass_base import ExportPass

    calls = []

    class SigmoidOnly(ExportPass):
        def call(self, graph_module):
            calls.append(1)
            return super().call(graph_module)

    register(SigmoidOnly, {torch.ops.aten.sigmoid.default}, skip_sound=True, copy_sound=False, why="test")
    return SigmoidOnly, calls


def _retraced_twice():
    from executorch.exir.pass_base import ExportPass

    # Two retraces: the first one adds provenance (from_node) to the output
    # node, so only the second output is a retrace fixed point.
    return ExportPass()(ExportPass()(_aten_graph()).graph_module).graph_module


def test_skip_only_on_retrace_fixed_point():
    from executorch.exir.pass_base import ExportPass

    cls, calls = _sigmoid_pass()
    try:
        stock = cls()(_retraced_twice()).graph_module
        n_stock = len(calls)
        with fastpass.enabled(["skip"], trust="all"):
            gm = _retraced_twice()
            fastpass.reset_stats()
            res = cls()(gm)
            st = fastpass.stats()
        assert len(calls) == n_stock  # not called under fastpass
        assert res.graph_module is gm and res.modified is False
        assert _describe(res.graph_module) == _describe(stock)
        assert st["passes_skipped"] == 1
        assert st["per_pass"][-1]["skip_reason"] == "no-targeted-ops"

        # After in-place surgery (a node removed -> names no longer canonical,
        # no creation signature for the rewired node) the pass must run.
        with fastpass.enabled(["skip"], trust="all"):
            gm = _retraced_twice()
            neg = [n for n in gm.graph.nodes if n.target == torch.ops.aten.neg.default][0]
            neg.replace_all_uses_with(neg.args[0])
            gm.graph.erase_node(neg)
            gm.recompile()
            before = len(calls)
            cls()(gm)
        assert len(calls) == before + 1
    finally:
        unregister(cls)


def test_skip_respects_targets_present():
    from executorch.exir.pass_base import ExportPass

    cls, calls = _sigmoid_pass()
    register(cls, {torch.ops.aten.relu.default}, skip_sound=True, copy_sound=False)
    try:
        with fastpass.enabled(["skip"], trust="all"):
            gm = _retraced_twice()
            cls()(gm)
        assert len(calls) == 1
    finally:
        unregister(cls)


def test_registry_classes_override_no_other_callbacks():
    """Copy soundness relies on cold nodes reaching the stock callbacks: no
    class in a registered pass's MRO (besides the pass's own guarded
    call_operator) may override an ExportPass callback."""
    import abc

    from executorch.backends.arm._passes.arm_pass import ArmOpTargetedPass, ArmPass
    from executorch.exir.pass_base import ExportPass, _ExportPassBase
    from torch.fx.passes.infra.pass_base import PassBase

    from fastpass.annotations import arm_registry

    callbacks = (
        "call_operator", "_fx", "call_getitem", "placeholder", "output", "call_submodule",
        "call_sym", "call_delegate", "call_cond", "call_map", "call_while", "call_scan",
        "ExportTracer", "ExportInterpreter", "inputs", "on_attr", "__call__",
    )
    allowed = {ArmPass, ArmOpTargetedPass, ExportPass, _ExportPassBase, PassBase, object, abc.ABC}
    # Reviewed exceptions: (class, callback) -> why copying stays exact.
    reviewed = {
        ("SymbolicToTosaShapesPass", "call_sym"): "call_sym sees only Python/sym operator nodes, which the copy "
        "path never copies (_copy_candidate: OpOverloads only); a value it rewrites reaches its users as a "
        "new input, compared with the signature's like any other",
    }
    bad = []
    for name, entry in arm_registry.REGISTRY.items():
        if not entry.copy_sound:
            continue
        mod, cls_name = name.rsplit(".", 1)
        cls = getattr(importlib.import_module(mod), cls_name)
        ann = lookup(cls)
        for base in cls.__mro__:
            if base in allowed:
                continue
            for k in callbacks:
                if k in vars(base) and not (base is cls and k == "call_operator" and ann.targeted_ops) \
                        and (base.__name__, k) not in reviewed:
                    bad.append((name, base.__name__, k))
    assert not bad


def test_mutating_and_view_ops_are_classified():
    from executorch.exir.dialects._ops import ops as exir_ops

    from fastpass._copy import _alias_kind

    assert _alias_kind(torch.ops.aten.add_.Tensor) == "mutable"  # never copied
    assert _alias_kind(torch.ops.aten.view.default) == "view"  # copied only with identical inputs
    assert _alias_kind(exir_ops.edge.aten.add.Tensor) == ""
    assert _alias_kind(exir_ops.edge.aten.view_copy.default) == ""


def test_signatures_do_not_keep_graphs_alive():
    import gc

    from executorch.exir.pass_base import ExportPass

    from fastpass import _sig

    with fastpass.enabled(["copy"], trust="all"):
        gm = ExportPass()(_aten_graph()).graph_module
        assert len(_sig._SIGS) > 0
        del gm
        gc.collect()
        assert len(_sig._SIGS) == 0
    assert len(_sig._SIGS) == 0
