"""fastpass's `ciatable` feature: run_decompositions' CIA op table, built once, installed directly.

Each test would fail if the feature did nothing (the counters and the py_impl spy), and each
fault the replacements must notice -- a new CIA registration, an op attribute deleted since the
last materialization -- is injected and shown to send the call back to the stock code.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch._export.utils as export_utils
import torch.export.exported_program as exported_program
from torch.library import Library

import fastpass
from fastpass import _ciatable

pytestmark = pytest.mark.usefixtures("fastpass_disabled")

_NAMESPACE = "fastpass_ciatest"


@pytest.fixture
def cia_library():
    """A throw-away op namespace whose ops get CIA kernels (destroyed after the test)."""
    libs = []

    def define(name: str) -> torch._ops.OpOverload:
        lib = Library(_NAMESPACE, "FRAGMENT")
        lib.define(f"{name}(Tensor x) -> Tensor")
        lib.impl(name, lambda x: x * 2, "CompositeImplicitAutograd")
        libs.append(lib)
        return getattr(getattr(torch.ops, _NAMESPACE), name).default

    yield define
    for lib in libs:
        lib._destroy()


def _valid_cia_ops():
    return set(export_utils._collect_all_valid_cia_ops())


@pytest.fixture(autouse=True)
def _imports_done():
    """Enabling fastpass imports executorch, which registers ops: do it before any stock baseline."""
    fastpass.enable(["ciatable"])
    fastpass.disable()


def test_ciatable_materializes_once_and_finds_the_stock_table():
    stock = _valid_cia_ops()
    with fastpass.enabled(["ciatable"]):
        first = _valid_cia_ops()
        second = _valid_cia_ops()
        st = fastpass.stats()
    assert first == stock and second == stock
    # each walk of ~43 namespaces materializes once, not once per namespace; the second
    # walk's materialization is skipped (nothing new), and both walks were verified unchanged
    assert st["cia_materialized"] == 1, st
    assert st["cia_materializations_skipped"] == 1, st
    assert (st["cia_walks_fused"], st["cia_walks_rerun"]) == (2, 0), st


def test_ciatable_walk_is_the_stock_one_in_every_module_that_binds_it():
    """run_decompositions reaches the walk through two modules' own bindings: both are replaced."""
    import torch.export.decomp_utils as decomp_utils

    stock = _valid_cia_ops()
    with fastpass.enabled(["ciatable"]):
        for module in (export_utils, exported_program, decomp_utils):
            before = fastpass.stats()["cia_walks_fused"]
            assert set(module._collect_all_valid_cia_ops()) == stock, module.__name__
            assert fastpass.stats()["cia_walks_fused"] == before + 1, module.__name__


def test_ciatable_walk_that_registers_an_op_is_rerun_stock(cia_library, monkeypatch):
    """The one materialization per walk rests on the walk changing nothing: a walk during which
    an op is registered (here by the preservability check, on its first call) must find that
    op as the stock walk does -- by re-running the stock walk."""
    real = export_utils._is_preservable_cia_op

    def registering_on_first_call(name):
        state = {"done": False}

        def check(op):
            if not state["done"]:
                state["done"] = True
                cia_library(name)
            return real(op)

        return check

    monkeypatch.setattr(export_utils, "_is_preservable_cia_op", registering_on_first_call("during_stock"))
    stock = {op.name() for op in _valid_cia_ops()}
    assert f"{_NAMESPACE}::during_stock" in stock
    with fastpass.enabled(["ciatable"]):
        _valid_cia_ops()  # materialized before the injection, so the walk below can be fused
        monkeypatch.setattr(export_utils, "_is_preservable_cia_op", registering_on_first_call("during_fast"))
        fast = {op.name() for op in _valid_cia_ops()}
        st = fastpass.stats()
    assert f"{_NAMESPACE}::during_fast" in fast
    assert st["cia_walks_rerun"] == 1, st


def test_ciatable_rematerializes_after_a_new_registration(cia_library):
    with fastpass.enabled(["ciatable"]):
        _valid_cia_ops()
        before = fastpass.stats()["cia_materialized"]
        late = cia_library("late")
        found = _valid_cia_ops()
        assert fastpass.stats()["cia_materialized"] > before
        assert late in found


def test_ciatable_rematerializes_an_op_attribute_deleted_since(cia_library):
    op = cia_library("gone")
    namespace = getattr(torch.ops, _NAMESPACE)
    with fastpass.enabled(["ciatable"]):
        _valid_cia_ops()
        # the dispatcher still lists the op, but its packet is no longer materialized
        delattr(namespace, "gone")
        namespace._dir.remove("gone")
        before = fastpass.stats()["cia_materialized"]
        found = _valid_cia_ops()
        assert fastpass.stats()["cia_materialized"] == before + 1
    assert "gone" in namespace.__dict__
    assert any(o.name() == op.name() for o in found)


def _describe(fn):
    """A comparable description of one kernel: fresh closures and partials compare by what they
    hold (the function's name, the ops and flags inside), everything else by identity."""
    if isinstance(fn, functools.partial):
        return ("partial", fn.func.__name__, tuple(_describe(a) for a in fn.args),
                tuple(sorted((k, _describe(v)) for k, v in fn.keywords.items())))
    if isinstance(fn, bool):
        return fn
    if getattr(fn, "__qualname__", "").startswith("autograd_not_implemented"):
        return ("autograd_not_implemented", tuple(_describe(c.cell_contents) for c in fn.__closure__))
    return ("object", id(fn))


def _state(ops):
    from torch._subclasses.fake_impls import _is_op_registered_to_fake_rule, op_implementations_dict

    out = {}
    for op in ops:
        fake = op_implementations_dict.get(op)
        out[op] = ([(k, _describe(v)) for k, v in op.py_kernels.items()],
                   _is_op_registered_to_fake_rule(op),
                   None if fake is None else _describe(fake))
    return out


def _cia_table():
    table = torch.export.default_decompositions().materialize()
    cia, _ = exported_program._split_decomp_table_to_cia_and_python_decomp(table)
    return cia


@pytest.fixture
def fake_rules_kept():
    """Upstream's override deregisters the fake rules of every op it patched on exit, even rules
    that were there before (aten.item's): put them back so that each run starts alike."""
    from torch._subclasses import fake_impls

    saved = dict(fake_impls.op_implementations_dict), list(fake_impls.op_implementations_checks)

    def restore():
        fake_impls.op_implementations_dict.clear()
        fake_impls.op_implementations_dict.update(saved[0])
        fake_impls.op_implementations_checks[:] = saved[1]

    yield restore
    restore()


def test_ciatable_override_installs_exactly_the_stock_kernels(monkeypatch, fake_rules_kept):
    cia = _cia_table()
    assert len(cia) > 100
    ops = list(cia)
    before = _state(ops)

    with exported_program._override_composite_implicit_decomp(cia):
        stock_inside = _state(ops)
    stock_after = _state(ops)
    fake_rules_kept()

    calls = []
    real_py_impl = torch._ops.OperatorBase.py_impl
    monkeypatch.setattr(torch._ops.OperatorBase, "py_impl",
                        lambda self, k: calls.append(k) or real_py_impl(self, k))
    assert _state(ops) == before
    with fastpass.enabled(["ciatable"]):
        with exported_program._override_composite_implicit_decomp(cia):
            fast_inside = _state(ops)
        overridden = fastpass.stats()["cia_ops_overridden"]
    assert fast_inside == stock_inside
    assert _state(ops) == stock_after
    assert not calls, "the fast override went through py_impl"
    assert overridden == len(cia)


def test_ciatable_run_decompositions_is_identical():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.nn.functional.gelu(self.linear(x)).softmax(-1)

    ep = torch.export.export(M(), (torch.randn(2, 4),))
    stock = ep.run_decompositions()
    with fastpass.enabled(["ciatable"]):
        fast = ep.run_decompositions()
        st = fastpass.stats()
    assert st["cia_materializations_skipped"] > 0 and st["cia_ops_overridden"] > 0, st
    assert fast.graph_module.code == stock.graph_module.code
    assert [str(n.meta.get("val")) for n in fast.graph.nodes] == [str(n.meta.get("val")) for n in stock.graph.nodes]
