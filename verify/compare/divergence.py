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
    def from_json(cls, data: dict[str, Any] | str | None) -> "Divergence | None":
        """The inverse of to_json (the step without its digest and timing, which JSON does not
        keep); a bare label string, as reports before this type wrote, gives a label-only value."""
        if data is None:
            return None
        if isinstance(data, str):
            return cls(data)
        step = None
        if data.get("pass") is not None:
            step = PassStep(data.get("seq", -1), data["phase"], data["manager"], data["index"], data["pass"],
                            None, 0.0)
        return cls(data["label"], step, data.get("check"), tuple(data.get("details") or ()), data.get("delegate"))


@dataclass(frozen=True)
class OrderRecheck:
    """Stock lowered twice more, under opposite node-set iteration orders
    (verify.lowering.node_order), after stock and fastpass differed (crosscheck, run's recheck):
    does stock itself differ?

    `differing_checks` empty: stock is independent of that order, the divergence stands.
    Otherwise stock depends on it (an executorch finding) at `first_divergence`, and the verdict
    is NONDETERMINISTIC when what fastpass changed is within what the order changes."""

    differing_checks: tuple[str, ...]
    first_divergence: Divergence | None = None
    error: str | None = None  # a recheck that could not run (the divergence then stands)

    @property
    def stock_depends_on_order(self) -> bool:
        return bool(self.differing_checks)

    def explains(self, failed_checks: tuple[str, ...], first: Divergence | None) -> bool:
        """Is the stock-vs-fastpass difference one that the order alone produces in stock?"""
        if not self.stock_depends_on_order or not set(failed_checks) <= set(self.differing_checks):
            return False
        if first is None or first.step is None or self.first_divergence is None:
            return first is None or first.step is None
        return self.first_divergence.label == first.label

    def to_json(self) -> dict[str, Any]:
        return {"differing_checks": list(self.differing_checks),
                "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
                "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> "OrderRecheck | None":
        if data is None:
            return None
        return cls(tuple(data["differing_checks"]), Divergence.from_json(data.get("first_divergence")), data.get("error"))
