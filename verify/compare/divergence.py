"""Where two lowerings part, as a value: the pass step, or the point outside the pass sequence
(a delegate's bytes, the final graph, the serialized program), the check that saw it and what
it saw. Code reads its fields (`step.pass_name`, `delegate`); `label` is for people."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verify.lowering.steps import PassStep


@dataclass(frozen=True)
class Divergence:
    """`step` is the pass after which the two parted (None when the point is not a pass);
    `label` names the point for a reader: the step's label, or e.g. "final program graph
    (full provenance)", "delegate0", "serialized program"."""

    label: str
    step: PassStep | None = None
    check: str | None = None  # the check that found it (a key of verify.compare.CHECKS)
    details: tuple[str, ...] = ()  # what that check saw differ (first lines)
    delegate: int | None = None  # the delegate whose bytes or reference outputs differ

    @classmethod
    def at_step(cls, step: PassStep, check: str | None = None, details: tuple[str, ...] = ()) -> "Divergence":
        return cls(step.label, step, check, tuple(details))

    @property
    def pass_name(self) -> str | None:
        """The class name of the pass at which they part, if the point is a pass."""
        return self.step.pass_name if self.step is not None else None

    def __str__(self) -> str:
        return self.label

    def to_json(self) -> dict[str, Any]:
        step = self.step
        return {"label": self.label, "check": self.check, "pass": self.pass_name,
                "phase": step.phase if step else None, "manager": step.manager if step else None,
                "index": step.index if step else None, "seq": step.seq if step else None,
                "delegate": self.delegate, "details": list(self.details)}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> "Divergence | None":
        """The inverse of to_json (the step without its digest and timing, which JSON does not keep)."""
        if data is None:
            return None
        step = None
        if data.get("pass") is not None:
            step = PassStep(data.get("seq", -1), data["phase"], data["manager"], data["index"], data["pass"],
                            None, 0.0)
        return cls(data["label"], step, data.get("check"), tuple(data.get("details") or ()), data.get("delegate"))


@dataclass(frozen=True)
class OrderRecheck:
    """Stock lowered twice more, under opposite node-set iteration orders
    (verify.lowering.node_order), after stock and fastpass differed (crosscheck, run's recheck,
    the gate): does stock itself differ, and does one of those stock lowerings give exactly what
    fastpass gave?

    Only the latter excuses the difference (`explains`): fastpass's output is then one that stock
    produces too, and the verdict is NONDETERMINISTIC (stock's, an executorch finding). Stock
    merely depending on the order in the same check is not enough -- a real fastpass fault there
    would hide behind it."""

    differing_checks: tuple[str, ...]  # what stock changes with the order (empty: nothing)
    first_divergence: Divergence | None = None  # where the two stock lowerings part
    reproduces_fastpass: str | None = None  # the node order (its value) under which stock == fastpass
    error: str | None = None  # a recheck that could not run (the divergence then stands)

    @property
    def stock_depends_on_order(self) -> bool:
        return bool(self.differing_checks)

    @property
    def explains(self) -> bool:
        """Is fastpass's output exactly one that stock gives under another node order?"""
        return self.stock_depends_on_order and self.reproduces_fastpass is not None

    def describe(self) -> str:
        if self.error:
            return f"node-order recheck could not run: {self.error}"
        if not self.stock_depends_on_order:
            return "stock gives the same result under opposite node-set orders"
        where = f", first at {self.first_divergence.label}" if self.first_divergence else ""
        head = (f"stock depends on node-set iteration order: under opposite orders it differs in "
                f"{', '.join(self.differing_checks)}{where}")
        if self.reproduces_fastpass is None:
            return head + "; neither order gives fastpass's result"
        return head + f"; stock under {self.reproduces_fastpass} order gives exactly fastpass's result"

    def to_json(self) -> dict[str, Any]:
        return {"differing_checks": list(self.differing_checks),
                "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
                "reproduces_fastpass": self.reproduces_fastpass, "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> "OrderRecheck | None":
        if data is None:
            return None
        return cls(tuple(data["differing_checks"]), Divergence.from_json(data.get("first_divergence")),
                   data.get("reproduces_fastpass"), data.get("error"))
