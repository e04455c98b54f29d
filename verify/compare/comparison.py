"""The one comparison of two lowerings: every check, then -- only if they differ -- stock lowered
again, then a typed verdict. `run`, fuzz, the gate and crosscheck all compare through it.

Why the recheck is part of the comparison and not of each driver: a difference between stock and
fastpass is a fastpass fault only if stock cannot produce fastpass's result itself. Stock can
(verify.lowering.node_order says how: passes iterating sets of nodes in address order), so
before a difference is called `divergent` stock is lowered twice more, under opposite node-set
iteration orders, and -- where the driver can afford it (`run`'s recheck worker) -- once more as
it first ran. The policy, written once here:

* no check failed: `identical`, nothing relowered;
* stock under one of the orders gives exactly fastpass's result (`OrderRecheck.explains`), or
  stock lowered again as it ran differs from its first lowering in every check fastpass's
  lowering failed: `nondeterministic` (stock's own behaviour, an executorch finding: Vela compiles
  one TOSA graph of a vector_norm to two command streams in one process). Stock differing from
  itself elsewhere excuses nothing: a fastpass fault in a pass's graph must not hide behind
  nondeterministic delegate bytes;
* otherwise `divergent`. A recheck that could not run leaves the divergence standing.

How the drivers relower differs (in this process, in a worker, on a deep copy of an intercepted
call), so they pass a function; what they conclude from it does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence, TypeVar

from verify.compare.checks import CheckResult, compare, first_divergence
from verify.compare.divergence import Divergence, OrderRecheck
from verify.lowering.lower import LoweringResult
from verify.vocabulary import Verdict

T = TypeVar("T")


@dataclass(frozen=True)
class StockRelowered:
    """Stock lowered again after stock and fastpass differed: under each node-set iteration order
    (`verify.lowering.node_order.under_each_order`, ascending then descending) and, optionally,
    once more as it first ran (`again`)."""

    under_each_order: tuple[LoweringResult, LoweringResult]
    again: LoweringResult | None = None


@dataclass(frozen=True)
class Comparison:
    """Two lowerings of one program compared: the checks, and (made only when they failed) what
    relowering stock found. `verdict` is the typed answer every driver reports."""

    stock: LoweringResult
    fastpass: LoweringResult
    checks: dict[str, CheckResult]
    order_recheck: OrderRecheck | None = None
    stock_differs_from_itself: bool = False  # stock lowered again as it ran differed in every check fastpass did

    @property
    def failed(self) -> list[str]:
        """The names of the checks that failed, in check order."""
        return [name for name, r in self.checks.items() if not r.passed]

    @property
    def differs(self) -> bool:
        return bool(self.failed)

    @property
    def both_failed_alike(self) -> bool:
        """Neither lowering succeeded, and they failed the same way (the outcome check passed)."""
        return not self.stock.ok and not self.fastpass.ok and self.checks["outcome"].passed

    @property
    def first_divergence(self) -> Divergence | None:
        return first_divergence(self.stock, self.checks)

    @property
    def explained(self) -> bool:
        """The difference is stock's own (see the module docstring)."""
        return self.stock_differs_from_itself or (self.order_recheck is not None and self.order_recheck.explains)

    @property
    def explanation(self) -> str:
        """Why the difference is stock's own (`explained`), in words; else what the recheck saw."""
        if self.stock_differs_from_itself:
            return (f"stock lowered again as it ran differs from its first lowering in {', '.join(self.failed)} "
                    "(stock is nondeterministic there)")
        return self.order_recheck.describe() if self.order_recheck is not None else "not rechecked"

    @property
    def divergent(self) -> bool:
        """The lowerings differ and stock cannot give fastpass's result: a fastpass fault."""
        return self.differs and not self.explained

    @property
    def verdict(self) -> Verdict:
        if not self.differs:
            return Verdict.IDENTICAL
        return Verdict.NONDETERMINISTIC if self.explained else Verdict.DIVERGENT

    def rechecked(self, relower: Callable[[], StockRelowered]) -> Comparison:
        """The comparison with stock relowered (`relower()` runs only if the lowerings differ).
        What `relower` raises propagates: each driver says in its own report why it failed."""
        if not self.differs:
            return self
        again = relower()
        own = set() if again.again is None else set(_failed_checks(self.stock, again.again))
        differs_again = bool(own) and own >= set(self.failed)
        return replace(self, order_recheck=order_recheck(*again.under_each_order, self.fastpass),
                       stock_differs_from_itself=differs_again)

    def with_order_recheck(self, recheck: OrderRecheck) -> Comparison:
        """The comparison with a node-order recheck made elsewhere (crosscheck's, which must never
        raise into its caller's call); an `OrderRecheck` with an error leaves the divergence
        standing."""
        return replace(self, order_recheck=recheck) if self.differs else self


def compare_lowerings(stock: LoweringResult, fastpass: LoweringResult,
                      relower: Callable[[], StockRelowered] | None = None) -> Comparison:
    """Compare with every check (verify.compare.CHECKS); with `relower`, recheck a difference."""
    comparison = Comparison(stock, fastpass, compare(stock, fastpass))
    return comparison.rechecked(relower) if relower is not None else comparison


def relower_in_process(lower_stock: Callable[[], LoweringResult]) -> Callable[[], StockRelowered]:
    """The whole recheck for a driver that lowers in its own process (fuzz, the gate):
    `lower_stock()` under each node order, then once more as it first ran. `lower_stock` must
    copy the program inside (see verify.lowering.node_order.ordered_node_hashes)."""

    def relower() -> StockRelowered:
        from verify.lowering.node_order import under_each_order

        return StockRelowered(under_each_order(lower_stock), again=lower_stock())

    return relower


def recheck_orders(stock_under_each_order: Sequence[T], fastpass: T,
                   differences: Callable[[T, T], dict[str, object]],
                   where: Callable[[T, dict[str, object]], Divergence | None]) -> OrderRecheck:
    """The node-order recheck over any compared value (a lowering, or the gate's direct mode's
    snapshot of one pass's output): what the two stock results under opposite orders differ in
    (`differences`: failed check -> what it saw), where (`where`), and the first order under which
    stock gives no difference from fastpass's result."""
    ascending, descending = stock_under_each_order
    differing = differences(ascending, descending)
    if not differing:
        return OrderRecheck(())
    from verify.lowering.node_order import NodeOrder

    reproduces = next((order.value for order, stock in zip(NodeOrder, stock_under_each_order)
                       if not differences(stock, fastpass)), None)
    return OrderRecheck(tuple(differing), where(ascending, differing) or Divergence("unlocated"), reproduces)


def _failed_checks(a: LoweringResult, b: LoweringResult) -> dict[str, CheckResult]:
    return {name: r for name, r in compare(a, b).items() if not r.passed}


def order_recheck(ascending: LoweringResult, descending: LoweringResult, fastpass: LoweringResult) -> OrderRecheck:
    """Two stock lowerings of one input under opposite node-set iteration orders
    (verify.lowering.node_order), compared with each other (what stock changes with that order,
    and where) and with the fastpass lowering (does either give exactly its result?)."""
    return recheck_orders((ascending, descending), fastpass, _failed_checks, first_divergence)
