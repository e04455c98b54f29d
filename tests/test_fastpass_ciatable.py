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
    # one walk of ~43 namespaces materializes once; the rest are skipped
    assert st["cia_materialized"] == 1, st
    assert st["cia_materializations_skipped"] > 10, st


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
