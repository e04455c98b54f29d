"""fastpass's `verifyonce` feature: the edge dtype verifier is not re-run on a graph state it passed.

Each test injects a change the key must see -- a val replaced (even by an equal one), a val of
another dtype, an argument rewired, a get_attr node -- and shows the check runs again (and, where
the change is a violation, raises as stock does). A key that ignored any of these would fail here.
"""

from __future__ import annotations

import pytest
import torch

import fastpass

pytestmark = pytest.mark.usefixtures("fastpass_disabled")


class _AddMul(torch.nn.Module):
    def forward(self, x, y):
        return (x + y) * y


def _edge_graph_module():
    from executorch.exir import to_edge

    inputs = (torch.randn(2, 3), torch.randn(2, 3))
    return to_edge(torch.export.export(_AddMul(), inputs)).exported_program().graph_module


def _check(gm):
    """The verifier's dtype check, looked up as its caller looks it up (a module global)."""
    import executorch.exir.verification.verifier as verifier

    return verifier._check_tensor_args_matching_op_allowed_dtype(gm)


def _counts():
    st = fastpass.stats()
    return st["dtype_checks_run"], st["dtype_checks_skipped"]


def _placeholder(gm, index):
    return [n for n in gm.graph.nodes if n.op == "placeholder"][index]


def test_a_passed_state_is_checked_once():
    gm = _edge_graph_module()
    with fastpass.enabled(["verifyonce"]):
        _check(gm)
        _check(gm)
        _check(gm)
        assert _counts() == (1, 2)


def test_a_replaced_val_is_checked_again_even_if_equal():
    gm = _edge_graph_module()
    with fastpass.enabled(["verifyonce"]):
        _check(gm)
        node = _placeholder(gm, 0)
        val = node.meta["val"]
        node.meta["val"] = _fake_like(val, val.dtype)
        _check(gm)
        assert _counts() == (2, 0)


def test_a_violation_made_after_a_passed_check_raises_as_stock():
    """The fault the feature must never hide: the graph passed once, then a val changed dtype
    (the same graph otherwise: a key without the vals would call it passed)."""
    from executorch.exir.verification.verifier import SpecViolationError

    stock_gm = _edge_graph_module()
    _check(stock_gm)
    _to_int32(stock_gm)
    with pytest.raises(SpecViolationError) as stock:
        _check(stock_gm)

    gm = _edge_graph_module()
    with fastpass.enabled(["verifyonce"]):
        _check(gm)
        _to_int32(gm)
        with pytest.raises(SpecViolationError) as fast:
            _check(gm)
        with pytest.raises(SpecViolationError):  # a violation is never remembered as passed
            _check(gm)
        assert _counts() == (3, 0)
    assert str(fast.value) == str(stock.value)


def _to_int32(gm):
    """The add's recorded result becomes int32 for float32 operands: add's dtype constraint fails."""
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    val = node.meta["val"]
    node.meta["val"] = _fake_like(val, torch.int32)


def _fake_like(val, dtype):
    """A new FakeTensor of `val`'s mode and static shape (from_tensor would make the shape symbolic)."""
    with val.fake_mode:
        return torch.empty(tuple(val.shape), dtype=dtype)


def test_a_rewired_argument_is_checked_again():
    gm = _edge_graph_module()
    with fastpass.enabled(["verifyonce"]):
        _check(gm)
        add = next(n for n in gm.graph.nodes if n.op == "call_function")
        x, y = add.args[:2]
        add.args = (y, x) + tuple(add.args[2:])
        _check(gm)
        assert _counts() == (2, 0)


def test_a_graph_with_module_state_is_always_checked():
    gm = _edge_graph_module()
    gm.register_buffer("offset", torch.zeros(2, 3))
    with gm.graph.inserting_before(next(n for n in gm.graph.nodes if n.op == "call_function")):
        gm.graph.get_attr("offset")
    gm.recompile()
    with fastpass.enabled(["verifyonce"]):
        _check(gm)
        _check(gm)
        assert _counts() == (2, 0)


def test_only_the_last_states_are_remembered(monkeypatch):
    """A caller who keeps fastpass enabled over many lowerings must not accumulate every graph
    state (each key keeps its vals alive): past REMEMBERED states, the oldest is forgotten and
    simply checked again."""
    from fastpass import _verifyonce

    monkeypatch.setattr(_verifyonce, "REMEMBERED", 2)
    gm = _edge_graph_module()
    node = _placeholder(gm, 0)
    with fastpass.enabled(["verifyonce"]):
        states = []
        for _ in range(3):  # three distinct states: a new val object each time
            node.meta["val"] = _fake_like(node.meta["val"], node.meta["val"].dtype)
            states.append(node.meta["val"])
            _check(gm)
        assert _counts() == (3, 0)
        _check(gm)  # the newest state: remembered
        assert _counts() == (3, 1)
        node.meta["val"] = states[0]  # the oldest: forgotten, checked again
        _check(gm)
        assert _counts() == (4, 1)
