"""fastpass end to end: a small quantized model lowered with the TOSA INT
backend, stock vs. fastpass (all features and each feature alone).

Output must be identical: delegate bytes, the edge graph (names, targets,
args, val shape/dtype/stride, meta keys) and ``from_node`` provenance
(``to_dict`` with the address-derived ``graph_id`` removed).

Run with a pinned hash seed (the stock output depends on it); the comparisons
here are within one process, so they hold for any seed.
"""

from __future__ import annotations

import copy

import pytest
import torch

import fastpass

pytestmark = pytest.mark.slow


class _Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.lin = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.lin(torch.relu(self.conv(x)).flatten(1))


@pytest.fixture(scope="module")
def quantized():
    """The harness's own quantization recipe and partitioner (verify.lowering), not a copy."""
    from verify.lowering.quantize import export_program
    from verify.lowering.targets import get_target

    torch.manual_seed(0)
    model, ex = _Small().eval(), (torch.randn(1, 3, 8, 8),)
    target = get_target("tosa-int")
    ep = export_program(model, ex, target)
    return ep, lambda: target.make_partitioner(target.make_spec())


def _lower(quantized):
    from executorch.exir import to_edge_transform_and_lower

    ep, part = quantized
    return to_edge_transform_and_lower(copy.deepcopy(ep), partitioner=[part()])


def _strip(d):
    return {k: ([_strip(x) for x in v] if k == "from_node" else v) for k, v in d.items() if k != "graph_id"}


def _fingerprint(edge):
    ep = edge.exported_program()
    blobs = [
        (name, bytes(mod.processed_bytes))
        for name, mod in ep.graph_module.named_modules()
        if hasattr(mod, "processed_bytes")
    ]
    nodes = []
    for n in ep.graph_module.graph.nodes:
        v = n.meta.get("val")
        vs = (tuple(v.shape), v.dtype, v.stride()) if isinstance(v, torch.Tensor) else repr(v)
        fn = n.meta.get("from_node")
        fns = None if fn is None else [_strip(x.to_dict()) for x in fn]
        nodes.append((n.name, n.op, str(n.target), str(n.args), str(n.kwargs), vs, sorted(n.meta), fns))
    return blobs, nodes, str(ep.graph_signature)


@pytest.fixture(scope="module")
def stock(quantized):
    assert not fastpass.is_enabled()
    fp = _fingerprint(_lower(quantized))
    assert fp[0] and len(fp[0][0][1]) > 0
    return fp


def _fast(quantized, features):
    fastpass.reset_stats()
    with fastpass.enabled(features, trust="all"):
        fp = _fingerprint(_lower(quantized))
    return fp, fastpass.stats()


def test_disabled_after_enable_is_stock(quantized, stock):
    fastpass.enable(trust="all")
    fastpass.disable()
    assert _fingerprint(_lower(quantized)) == stock


def test_all_features_identical(quantized, stock):
    fp, st = _fast(quantized, None)
    assert fp == stock
    assert st["passes_skipped"] > 0 and st["nodes_copied"] > 0 and st["fakecache_ext_hits"] > 0


def test_the_delegate_graph_keeps_the_signatures_partitioning_copied(quantized, stock):
    """Partitioning copies every node into the delegate's graph (Graph.node_copy); with the
    signatures handed on, the backend's first retrace (FuseQuantizedActivationPass) copies the
    nodes it does not target instead of dispatching them all."""
    fp, st = _fast(quantized, ["copy"])
    assert fp == stock
    first = next(p for p in st["per_pass"] if p["name"] == "FuseQuantizedActivationPass")
    assert first["copied"] > first["dispatched"], first


def test_a_helper_the_propagation_pass_calls_directly_copies(quantized, stock):
    """PropagateViewCopyPermuteDownPass runs CanonicalizeViewCopyPermutePass (backends/transforms)
    by calling its ``call`` directly; that helper's retrace gets a record of its own, nested in
    the caller's, and copies under the helper's own registry entry."""
    fp, st = _fast(quantized, ["copy"])
    assert fp == stock
    helper = [p for p in st["per_pass"] if p["name"] == "CanonicalizeViewCopyPermutePass" and p["depth"] > 0]
    assert helper and sum(p["copied"] for p in helper) > 0, helper


def test_skip_alone(quantized, stock, monkeypatch):
    from executorch.backends.arm._passes.convert_minmax_pass import ConvertMinMaxPass

    calls = []
    orig = ConvertMinMaxPass.call

    def spy(self, gm):
        calls.append(1)
        return orig(self, gm)

    monkeypatch.setattr(ConvertMinMaxPass, "call", spy)
    _lower(quantized)
    assert calls, "ConvertMinMaxPass should run in the stock pipeline"
    calls.clear()
    fp, st = _fast(quantized, ["skip"])
    assert fp == stock
    assert not calls, "no min/max in the graph: fastpass must not call the pass"
    fast_skipped = [p["name"] for p in st["per_pass"] if p["skip_reason"] == "no-targeted-ops"]
    assert "ConvertMinMaxPass" in fast_skipped
    assert st["nodes_copied"] == 0


def test_copy_alone(quantized, stock):
    fp, st = _fast(quantized, ["copy"])
    assert fp == stock
    assert st["nodes_copied"] > 0
    assert st["passes_skipped"] == sum(
        p["skip_reason"] == "upstream-should_run_pass" for p in st["per_pass"]
    )


def test_fakecache_alone(quantized, stock):
    from torch._subclasses.fake_tensor import FakeTensorMode

    from fastpass import _fakecache

    fp, st = _fast(quantized, ["fakecache"])
    assert fp == stock
    assert st["fakecache_ext_hits"] > 0
    assert not [k for k in FakeTensorMode.cache if _fakecache._is_ours(k)]


def test_provenance_alone(quantized, stock):
    fp, st = _fast(quantized, ["provenance"])
    assert fp == stock  # includes from_node to_dict of every node
    assert st["nodes_copied"] == 0 and st["passes_run"] > 0


def test_lazycode_alone(quantized, stock):
    fp, st = _fast(quantized, ["lazycode"])
    assert fp == stock
    assert st["code_deferred"] > st["code_generated"] >= 0
    assert st["nodes_copied"] == 0 and st["passes_skipped"] == sum(
        p["skip_reason"] == "upstream-should_run_pass" for p in st["per_pass"]
    )


def test_gc_alone(quantized, stock):
    fp, st = _fast(quantized, ["gc"])
    assert fp == stock
    assert st["nodes_copied"] == 0 and st["code_deferred"] == 0


def test_ciatable_alone(quantized, stock):
    fp, st = _fast(quantized, ["ciatable"])
    assert fp == stock
    assert st["cia_materializations_skipped"] > st["cia_materialized"] > 0
    assert st["cia_walks_fused"] > 0 and st["cia_walks_rerun"] == 0
    assert st["cia_ops_overridden"] > 0 and st["nodes_copied"] == 0


def test_retrace_alone(quantized, stock):
    fp, st = _fast(quantized, ["retrace"])
    assert fp == stock
    assert st["retraces_copied"] > 0
    assert st["nodes_copied"] == 0 and st["dtype_checks_skipped"] == 0


def test_verifyonce_alone(quantized, stock):
    fp, st = _fast(quantized, ["verifyonce"])
    assert fp == stock
    assert st["dtype_checks_skipped"] > 0 and st["dtype_checks_run"] > 0
    assert st["nodes_copied"] == 0 and st["cia_walks_fused"] == 0
