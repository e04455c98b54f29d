"""The one comparison (verify/compare/comparison.py) and its divergence points
(verify/compare/divergence.py) on synthetic lowerings: when a difference is `divergent`, when
stock's own (`nondeterministic`), what a node-order recheck excuses and what it does not, and
how points and rechecks survive JSON. No model lowered: the mutation campaign (tests/mutation/)
judges these modules by these tests."""

from __future__ import annotations

import pytest

from verify.compare.checks import CheckResult
from verify.compare.comparison import (Comparison, StockRelowered, compare_lowerings, order_recheck,
                                       recheck_orders, relower_in_process)
from verify.compare.divergence import Divergence, OrderRecheck
from verify.lowering.lower import LoweringResult, Payload
from verify.lowering.mode import Mode
from verify.lowering.steps import PassStep
from verify.vocabulary import Verdict


def lowering(mode=Mode.STOCK, payload=b"a", **fields) -> LoweringResult:
    return LoweringResult(mode, (), "0", payloads=[Payload("T", payload, b"t")], **fields)


STOCK, FAST, OTHER = lowering(), lowering(Mode.FASTPASS), lowering(Mode.FASTPASS, payload=b"b")


def relowered(ascending, descending, again=None):
    calls = []

    def relower():
        calls.append(1)
        return StockRelowered((ascending, descending), again)

    return relower, calls


def test_identical_lowerings_are_identical_and_nothing_is_relowered():
    relower, calls = relowered(STOCK, STOCK)
    comparison = compare_lowerings(STOCK, FAST, relower)
    assert comparison.verdict is Verdict.IDENTICAL and calls == []
    assert comparison.failed == [] and not comparison.differs and not comparison.divergent
    assert comparison.order_recheck is None and comparison.first_divergence is None
    assert comparison.with_order_recheck(OrderRecheck(("payload",), None, "ascending")) is comparison


def test_a_difference_stock_does_not_make_is_divergent():
    relower, calls = relowered(STOCK, lowering())
    comparison = compare_lowerings(STOCK, OTHER, relower)
    assert calls == [1]
    assert comparison.verdict is Verdict.DIVERGENT and comparison.divergent and comparison.differs
    assert comparison.failed == ["payload"] and comparison.first_divergence.label == "delegate0"
    assert comparison.order_recheck == OrderRecheck(())
    assert not comparison.explained and not comparison.stock_differs_from_itself
    assert compare_lowerings(STOCK, OTHER).verdict is Verdict.DIVERGENT  # no recheck: the difference stands


def test_stock_giving_fastpass_result_under_another_order_is_nondeterministic():
    relower, _ = relowered(STOCK, lowering(payload=b"b"))
    comparison = compare_lowerings(STOCK, OTHER, relower)
    assert comparison.order_recheck.reproduces_fastpass == "descending"
    assert comparison.order_recheck.differing_checks == ("payload",)
    assert comparison.verdict is Verdict.NONDETERMINISTIC and comparison.explained and not comparison.divergent
    relower, _ = relowered(lowering(payload=b"b"), STOCK)
    assert compare_lowerings(STOCK, OTHER, relower).order_recheck.reproduces_fastpass == "ascending"


def test_stock_depending_on_order_without_giving_fastpass_result_excuses_nothing():
    relower, _ = relowered(STOCK, lowering(payload=b"c"))
    comparison = compare_lowerings(STOCK, OTHER, relower)
    assert comparison.order_recheck.stock_depends_on_order and comparison.order_recheck.reproduces_fastpass is None
    assert comparison.verdict is Verdict.DIVERGENT


def test_stock_differing_from_itself_is_nondeterministic():
    relower, _ = relowered(STOCK, STOCK, again=lowering(payload=b"c"))
    comparison = compare_lowerings(STOCK, OTHER, relower)
    assert comparison.stock_differs_from_itself and comparison.verdict is Verdict.NONDETERMINISTIC
    assert "lowered again as it ran differs from its first lowering in payload" in comparison.explanation
    relower, _ = relowered(STOCK, STOCK, again=lowering())
    comparison = compare_lowerings(STOCK, OTHER, relower)
    assert not comparison.stock_differs_from_itself and comparison.verdict is Verdict.DIVERGENT


def test_stock_differing_from_itself_elsewhere_excuses_nothing():
    # Vela's nondeterministic command stream must not hide a fastpass fault in another check.
    broken = lowering(Mode.FASTPASS, payload=b"b", error="E: x")
    relower, _ = relowered(STOCK, STOCK, again=lowering(payload=b"c"))
    comparison = compare_lowerings(STOCK, broken, relower)
    assert set(comparison.failed) > {"payload"}
    assert not comparison.stock_differs_from_itself and comparison.verdict is Verdict.DIVERGENT


def test_the_in_process_recheck_lowers_under_each_order_and_once_as_it_ran():
    from torch.fx import Node

    address_hash = Node.__hash__
    ordered = []  # per lowering: was it under a node order (Node.__hash__ patched)?

    def lower_stock():
        ordered.append(Node.__hash__ is not address_hash)
        return lowering(payload=b"c" if len(ordered) == 3 else b"a")

    comparison = compare_lowerings(STOCK, OTHER, relower_in_process(lower_stock))
    assert ordered == [True, True, False]  # ascending, descending, then as it first ran
    assert comparison.stock_differs_from_itself and comparison.verdict is Verdict.NONDETERMINISTIC


def test_a_recheck_made_elsewhere():
    comparison = compare_lowerings(STOCK, OTHER)
    excused = comparison.with_order_recheck(OrderRecheck(("payload",), Divergence("delegate0"), "ascending"))
    assert excused.verdict is Verdict.NONDETERMINISTIC and excused.order_recheck.reproduces_fastpass == "ascending"
    failed = comparison.with_order_recheck(OrderRecheck((), error="boom"))
    assert failed.verdict is Verdict.DIVERGENT


def test_both_failed_alike():
    a, b = lowering(error="E: x"), lowering(Mode.FASTPASS, error="E: x")
    assert Comparison(a, b, compare_lowerings(a, b).checks).both_failed_alike
    assert not compare_lowerings(a, lowering(Mode.FASTPASS, error="E: y")).both_failed_alike
    assert not compare_lowerings(STOCK, FAST).both_failed_alike
    assert not compare_lowerings(a, FAST).both_failed_alike
    assert not compare_lowerings(STOCK, lowering(Mode.FASTPASS, error="E: x")).both_failed_alike


def test_recheck_orders_over_any_value():
    def differences(x, y):
        return {} if x == y else {"value": [f"{x} vs {y}"]}

    def where(x, found):
        return Divergence(f"at {x}") if found else None

    assert recheck_orders((1, 1), 2, differences, where) == OrderRecheck(())
    assert recheck_orders((1, 2), 2, differences, where) == OrderRecheck(("value",), Divergence("at 1"), "descending")
    assert recheck_orders((2, 1), 2, differences, where) == OrderRecheck(("value",), Divergence("at 2"), "ascending")
    assert recheck_orders((1, 3), 2, differences, where) == OrderRecheck(("value",), Divergence("at 1"), None)
    assert recheck_orders((1, 3), 2, differences, lambda x, found: None).first_divergence == Divergence("unlocated")


def test_order_recheck_of_lowerings():
    recheck = order_recheck(STOCK, lowering(payload=b"b"), OTHER)
    assert recheck.differing_checks == ("payload",) and recheck.reproduces_fastpass == "descending"
    assert recheck.first_divergence.label == "delegate0" and recheck.first_divergence.check == "payload"


# ------------------------------------------------------------------------------ OrderRecheck


def test_order_recheck_says_what_it_found():
    assert OrderRecheck((), error="boom").describe() == "node-order recheck could not run: boom"
    assert OrderRecheck(()).describe() == "stock gives the same result under opposite node-set orders"
    assert not OrderRecheck((), None, "ascending").explains  # stock that does not depend on the order excuses nothing
    where = Divergence("delegate0")
    assert OrderRecheck(("payload", "tosa"), where).describe() == (
        "stock depends on node-set iteration order: under opposite orders it differs in payload, tosa, first at "
        "delegate0; neither order gives fastpass's result")
    assert OrderRecheck(("payload",), None, "descending").describe() == (
        "stock depends on node-set iteration order: under opposite orders it differs in payload; stock under "
        "descending order gives exactly fastpass's result")


def test_order_recheck_survives_json():
    recheck = OrderRecheck(("payload",), Divergence("delegate0", delegate=0), "descending", None)
    data = recheck.to_json()
    assert data == {"differing_checks": ["payload"], "first_divergence": Divergence("delegate0", delegate=0).to_json(),
                    "reproduces_fastpass": "descending", "error": None}
    assert OrderRecheck.from_json(data) == recheck
    assert OrderRecheck.from_json(None) is None
    bare = OrderRecheck((), error="boom")
    assert bare.to_json()["first_divergence"] is None and OrderRecheck.from_json(bare.to_json()) == bare


# ------------------------------------------------------------------------------- Divergence


def test_a_divergence_at_a_step_and_in_json():
    step = PassStep(7, "delegate1", "ArmPassManager#2", 3, "FoldPass", "digest", 1.5)
    where = Divergence.at_step(step, "graph", ["a", "b"])
    assert where == Divergence("delegate1/ArmPassManager#2[3] FoldPass", step, "graph", ("a", "b"))
    assert where.pass_name == "FoldPass" and str(where) == where.label
    data = where.to_json()
    assert data == {"label": "delegate1/ArmPassManager#2[3] FoldPass", "check": "graph", "pass": "FoldPass",
                    "phase": "delegate1", "manager": "ArmPassManager#2", "index": 3, "seq": 7, "delegate": None,
                    "details": ["a", "b"]}
    back = Divergence.from_json(data)
    assert back == Divergence(where.label, PassStep(7, "delegate1", "ArmPassManager#2", 3, "FoldPass", None, 0.0),
                              "graph", ("a", "b"))
    assert Divergence.at_step(step) == Divergence(step.label, step, None, ())


def test_a_divergence_outside_the_passes_in_json():
    where = Divergence("delegate2", delegate=2)
    assert where.pass_name is None and str(where) == "delegate2"
    data = where.to_json()
    assert data == {"label": "delegate2", "check": None, "pass": None, "phase": None, "manager": None,
                    "index": None, "seq": None, "delegate": 2, "details": []}
    assert Divergence.from_json(data) == where
    assert Divergence.from_json(None) is None
    assert Divergence.from_json({"label": "x"}) == Divergence("x")
    assert Divergence.from_json({"label": "x", "pass": "P", "phase": "edge", "manager": "M", "index": 0}).step.seq == -1


@pytest.mark.parametrize("name", ["StockRelowered", "Comparison"])
def test_the_comparison_types_are_frozen(name):
    import dataclasses

    from verify.compare import comparison

    assert getattr(comparison, name).__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        compare_lowerings(STOCK, FAST).checks = {}


def test_failed_lists_the_checks_in_check_order():
    checks = {"b": CheckResult("b", False), "a": CheckResult("a", True), "c": CheckResult("c", False)}
    assert Comparison(STOCK, FAST, checks).failed == ["b", "c"]
